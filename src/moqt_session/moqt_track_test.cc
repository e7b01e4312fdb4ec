#include "moqt_session/moqt_track.h"

#include <gtest/gtest.h>

#include "moqt_session/moqt_filters.h"

namespace kvcs::moqt {
namespace {

Bytes B(std::string_view s) { return Bytes(s.begin(), s.end()); }

TEST(TrackTest, AppendObjectByMoveOrSharedKeepsTheProducersBuffer) {
  Track t({{"ns"}, "t"}, {});
  ASSERT_TRUE(t.StartGroup(0).ok());
  Bytes moved = B("moved payload");
  const uint8_t* moved_data = moved.data();
  ASSERT_TRUE(t.AppendObject(std::move(moved)).ok());
  auto shared = std::make_shared<const Bytes>(B("shared payload"));
  ASSERT_TRUE(t.AppendObject(shared).ok());
  Bytes copied = B("copied");
  ASSERT_TRUE(t.AppendObject(ByteSpan(copied)).ok());
  EXPECT_EQ(t.Find({0, 0})->payload->data(), moved_data);  // no copy
  EXPECT_EQ(*t.Find({0, 0})->payload, B("moved payload"));
  EXPECT_EQ(t.Find({0, 1})->payload, shared);  // the same buffer, shared
  EXPECT_NE(t.Find({0, 2})->payload->data(), copied.data());
  EXPECT_EQ(*t.Find({0, 2})->payload, copied);
}

TEST(TrackTest, GroupByGroupWithEndOfGroupAndEndOfTrack) {
  Track t({{"ns"}, "t"}, {});
  EXPECT_TRUE(t.AppendObject(B("x")).status().Is(TrackError::kNoOpenGroup));
  ASSERT_TRUE(t.StartGroup(0).ok());
  EXPECT_EQ(*t.AppendObject(B("a")), (Location{0, 0}));
  EXPECT_EQ(*t.AppendObject(B("b")), (Location{0, 1}));
  ASSERT_TRUE(t.StartGroup(1).ok());  // ends group 0 with End of Group at {0,2}
  ASSERT_NE(t.Find({0, 2}), nullptr);
  EXPECT_EQ(t.Find({0, 2})->status, ObjectStatus::kEndOfGroup);
  EXPECT_TRUE(t.GroupEnded(0));
  EXPECT_FALSE(t.GroupEnded(1));
  EXPECT_TRUE(t.StartGroup(1).Is(TrackError::kGroupNotAscending));
  EXPECT_EQ(*t.AppendObject(B("c")), (Location{1, 0}));
  ASSERT_TRUE(t.EndTrack().ok());
  // End of Group closes group 1, End of Track sits alone at {2,0}.
  EXPECT_EQ(t.Find({1, 1})->status, ObjectStatus::kEndOfGroup);
  EXPECT_EQ(t.Find({2, 0})->status, ObjectStatus::kEndOfTrack);
  EXPECT_EQ(t.largest(), (Location{2, 0}));
  EXPECT_EQ(t.largest_normal(), (Location{1, 0}));
  EXPECT_TRUE(t.ended());
  EXPECT_TRUE(t.StartGroup(5).Is(TrackError::kTrackEnded));
  EXPECT_EQ(t.LastNormalObject(0), 1u);
  EXPECT_EQ(t.NextGroup(std::nullopt, GroupOrder::kAscending), 0u);
  EXPECT_EQ(t.NextGroup(0, GroupOrder::kAscending), 1u);
  EXPECT_EQ(t.NextGroup(std::nullopt, GroupOrder::kDescending), 2u);
  EXPECT_EQ(t.NextGroup(1, GroupOrder::kDescending), 0u);
  EXPECT_EQ(t.NextGroup(0, GroupOrder::kDescending), std::nullopt);
}

TEST(TrackTest, RelayInsertionRulesAndEviction) {
  TrackOptions o;
  o.max_groups = 2;
  Track t({{"ns"}, "t"}, o);
  auto obj = [](uint64_t g, uint64_t id) {
    PublishedObject p;
    p.location = {g, id};
    p.payload = std::make_shared<const Bytes>(Bytes{1, 2, 3});
    return p;
  };
  ASSERT_TRUE(t.AddObject(obj(5, 3)).ok());
  EXPECT_TRUE(t.AddObject(obj(5, 3)).Is(TrackError::kObjectNotAscending));
  ASSERT_TRUE(t.AddObject(obj(6, 0)).ok());
  ASSERT_TRUE(t.AddObject(obj(5, 4)).ok());  // relays may fill older groups
  ASSERT_TRUE(t.AddObject(obj(7, 0)).ok());  // evicts group 5
  EXPECT_TRUE(t.GroupEvicted(5));
  EXPECT_EQ(t.Find({5, 3}), nullptr);
  EXPECT_EQ(t.oldest_group(), 6u);
  EXPECT_EQ(t.stored_bytes(), 6u);
  EXPECT_TRUE(t.AddObject(obj(5, 9)).Is(TrackError::kGroupNotAscending));
}

TEST(TrackTest, ByteBudgetEvictsOldestGroups) {
  TrackOptions o;
  o.max_bytes = 10;
  Track t({{"ns"}, "t"}, o);
  for (uint64_t g = 0; g < 5; ++g) {
    ASSERT_TRUE(t.StartGroup(g).ok());
    ASSERT_TRUE(t.AppendObject(Bytes(4, 0)).ok());
  }
  EXPECT_LE(t.stored_bytes(), 10u);
  EXPECT_EQ(t.oldest_group(), 3u);
  EXPECT_TRUE(t.AppendObject(Bytes(11, 0)).status().Is(TrackError::kTooLarge));
}

struct NsLog : NamespaceListener {
  void OnNamespaceAdded(const TrackNamespace& ns) override { added.push_back(ns); }
  void OnNamespaceRemoved(const TrackNamespace& ns) override { removed.push_back(ns); }
  std::vector<TrackNamespace> added, removed;
};

TEST(TrackStoreTest, NamespacesFromTracksAndAnnouncements) {
  TrackStore s;
  NsLog log;
  s.AddNamespaceListener(&log);
  ASSERT_TRUE(s.CreateTrack({{"a", "b"}, "t1"}).ok());
  ASSERT_TRUE(s.CreateTrack({{"a", "b"}, "t2"}).ok());  // same namespace: one notification
  EXPECT_EQ(s.CreateTrack({{"a", "b"}, "t2"}).status().code(), Code::kAlreadyExists);
  EXPECT_EQ(s.CreateTrack({{""}, "t"}).status().code(), Code::kInvalidArgument);
  ASSERT_TRUE(s.AddAnnouncedNamespace({"c"}).ok());
  EXPECT_EQ(log.added, (std::vector<TrackNamespace>{{"a", "b"}, {"c"}}));
  EXPECT_EQ(s.ListNamespaces(), (std::vector<TrackNamespace>{{"a", "b"}, {"c"}}));
  s.RemoveTrack({{"a", "b"}, "t1"});
  EXPECT_TRUE(log.removed.empty());
  s.RemoveTrack({{"a", "b"}, "t2"});
  s.RemoveAnnouncedNamespace({"c"});
  EXPECT_EQ(log.removed, (std::vector<TrackNamespace>{{"a", "b"}, {"c"}}));
  EXPECT_EQ(s.FindTrack({{"a", "b"}, "t1"}), nullptr);
  s.RemoveNamespaceListener(&log);
  EXPECT_TRUE(NamespaceHasPrefix({"a", "b"}, {"a"}));
  EXPECT_TRUE(NamespaceHasPrefix({"a", "b"}, {}));
  EXPECT_FALSE(NamespaceHasPrefix({"a"}, {"a", "b"}));
}

TEST(TrackTest, AppendObjectCanTakeOverTheProducersBuffer) {
  Track t({{"a"}, "b"}, {});
  ASSERT_TRUE(t.StartGroup(0).ok());
  auto buf = std::make_shared<const Bytes>(Bytes(1000, 7));
  auto loc = t.AppendObject(buf);
  ASSERT_TRUE(loc.ok());
  ASSERT_NE(t.Find(*loc), nullptr);
  EXPECT_EQ(t.Find(*loc)->payload.get(), buf.get());  // kept, not copied
  EXPECT_EQ(t.stored_bytes(), 1000u);
  Track closed({{"a"}, "c"}, {});
  EXPECT_FALSE(closed.AppendObject(buf).ok());  // no open group
}

TEST(TrackStoreTest, RemovingAndRecreatingTracksKeepsNamespaceCountsExact) {
  TrackStore s;
  NsLog log;
  s.AddNamespaceListener(&log);
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 50; ++i) ASSERT_TRUE(s.CreateTrack({{"n"}, std::to_string(i)}).ok());
    for (int i = 0; i < 50; ++i) s.RemoveTrack({{"n"}, std::to_string(i)});
    s.RemoveTrack({{"n"}, "never created"});
  }
  EXPECT_EQ(log.added.size(), 3u);
  EXPECT_EQ(log.removed.size(), 3u);
  EXPECT_TRUE(s.ListNamespaces().empty());
  s.RemoveNamespaceListener(&log);
}

// ---------------------------------------------------------------------------------- filters
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
