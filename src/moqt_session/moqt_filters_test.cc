// Tests of the LOCATION_FILTER and range-filter evaluation (moqt_filters.h).
#include "moqt_session/moqt_filters.h"

#include <gtest/gtest.h>

namespace kvcs::moqt {
namespace {

LocationFilter LF(LocationFilterType t, uint64_t sg = 0, uint64_t so = 0, uint64_t d = 0,
                  uint64_t eo = 0) {
  return {t, sg, so, d, eo};
}

TEST(FiltersTest, EveryLocationFilterType) {
  const Location largest{10, 5};
  using T = LocationFilterType;
  EXPECT_EQ(SubscriptionRange(LF(T::kNone), largest), (LocationRange{{0, 0}, std::nullopt}));
  EXPECT_EQ(FilterStart(LF(T::kRelativeStart, 0), largest), (Location{11, 0}));  // next group
  EXPECT_EQ(FilterStart(LF(T::kRelativeStart, 1), largest), (Location{10, 0}));  // current
  EXPECT_EQ(FilterStart(LF(T::kRelativeStart, 3), largest), (Location{8, 0}));
  EXPECT_EQ(FilterStart(LF(T::kRelativeStart, 99), largest), (Location{0, 0}));  // clamped
  EXPECT_EQ(FilterStart(LF(T::kRelativeStart, 1), std::nullopt), (Location{0, 0}));
  EXPECT_EQ(SubscriptionRange(LF(T::kAbsoluteStart, 3, 4), largest),
            (LocationRange{{3, 4}, std::nullopt}));
  EXPECT_EQ(SubscriptionRange(LF(T::kAbsoluteStartGroupEnd, 3, 4, 2), largest),
            (LocationRange{{3, 4}, Location{5, UINT64_MAX}}));
  EXPECT_EQ(SubscriptionRange(LF(T::kAbsoluteRange, 3, 4, 2, 7), largest),
            (LocationRange{{3, 4}, Location{5, 7}}));
  EXPECT_EQ(FilterStart(LF(T::kNextObject), largest), (Location{10, 6}));
  EXPECT_EQ(FilterStart(LF(T::kNextObject), std::nullopt), (Location{0, 0}));
  // Fetch ranges clamp an open end to the Largest Object; nothing published = empty.
  EXPECT_EQ(FetchRange(LF(T::kAbsoluteStart, 3, 0), largest), (LocationRange{{3, 0}, largest}));
  EXPECT_EQ(FetchRange(LF(T::kAbsoluteRange, 3, 0, 20, 1), largest),
            (LocationRange{{3, 0}, largest}));
  EXPECT_TRUE(FetchRange(LF(T::kNextObject), largest).empty());
  EXPECT_TRUE(FetchRange(LF(T::kNone), std::nullopt).empty());
}

TEST(FiltersTest, RangeFiltersAndSetsOrSetsAnd) {
  RangeFilters f;
  EXPECT_TRUE(PassesRangeFilters(f, 0, 7, 128, {}));
  RangeFilter ids;
  ids.set_id = 0;
  ids.ranges = {{2, 4}, {10, std::nullopt}};
  f.object_id.push_back(ids);
  EXPECT_FALSE(PassesRangeFilters(f, 0, 1, 128, {}));
  EXPECT_TRUE(PassesRangeFilters(f, 0, 3, 128, {}));
  EXPECT_TRUE(PassesRangeFilters(f, 0, 1000, 128, {}));
  RangeFilter prio;  // set 0: AND with the object IDs
  prio.set_id = 0;
  prio.ranges = {{0, 10}};
  f.priority.push_back(prio);
  EXPECT_FALSE(PassesRangeFilters(f, 0, 3, 128, {}));
  EXPECT_TRUE(PassesRangeFilters(f, 0, 3, 5, {}));
  RangeFilter prop;  // set 1: OR with set 0
  prop.set_id = 1;
  prop.property_type = 0x40;
  prop.ranges = {{7, 7}};
  f.object_property.push_back(prop);
  EXPECT_TRUE(PassesRangeFilters(f, 0, 1, 200, {KeyValuePair::Int(0x40, 7)}));
  EXPECT_FALSE(PassesRangeFilters(f, 0, 1, 200, {KeyValuePair::Int(0x40, 8)}));
  EXPECT_EQ(CountRanges(f), 4u);
}

}  // namespace
}  // namespace kvcs::moqt
