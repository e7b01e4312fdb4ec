// Tests of Track: group-by-group production, relay insertion, eviction, shared payloads.
#include "moqt_session/moqt_track.h"

#include <gtest/gtest.h>

#include "moqt_session/moqt_byte_budget.h"
#include "moqt_session/moqt_track_store.h"

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

// A relay's copy of a track takes the upstream's defaults from SUBSCRIBE_OK's track properties:
// what it writes itself (End of Track, an empty group's priority) is scheduled like the
// original's. Out-of-range values are passed on but not applied.
TEST(TrackTest, UpstreamTrackPropertiesBecomeTheDefaults) {
  Track t({{"ns"}, "t"}, {});
  EXPECT_EQ(t.GroupPriority(3), 128);
  t.SetTrackProperties(
      {KeyValuePair::Int(static_cast<uint64_t>(PropertyType::kDefaultPublisherPriority), 0),
       KeyValuePair::Int(static_cast<uint64_t>(PropertyType::kDefaultPublisherGroupOrder), 2)});
  EXPECT_EQ(t.GroupPriority(3), 0);
  EXPECT_EQ(t.options().group_order, GroupOrder::kDescending);
  ASSERT_TRUE(t.EndTrack().ok());
  EXPECT_EQ(t.Find({0, 0})->publisher_priority, 0);
  Track u({{"ns"}, "u"}, {});
  u.SetTrackProperties(
      {KeyValuePair::Int(static_cast<uint64_t>(PropertyType::kDefaultPublisherPriority), 300),
       KeyValuePair::Int(static_cast<uint64_t>(PropertyType::kDefaultPublisherGroupOrder), 7)});
  EXPECT_EQ(u.GroupPriority(0), 128);
  EXPECT_EQ(u.options().group_order, GroupOrder::kAscending);
  EXPECT_EQ(u.options().track_properties.size(), 2u);
}

// A relay receives a track's group streams in any order: the End of Track (its own group) may
// come before the rest of an earlier group, which is still stored; above a group's own End of
// Group nothing is.
TEST(TrackTest, RelayInsertionAfterTheEndOfTrackFillsEarlierGroups) {
  Track t({{"ns"}, "t"}, {});
  auto obj = [](uint64_t g, uint64_t o, ObjectStatus st = ObjectStatus::kNormal) {
    PublishedObject p;
    p.location = {g, o};
    p.status = st;
    if (st == ObjectStatus::kNormal) p.payload = std::make_shared<const Bytes>(B("x"));
    return p;
  };
  ASSERT_TRUE(t.InsertObject(obj(0, 0)).ok());
  ASSERT_TRUE(t.InsertObject(obj(1, 0)).ok());
  ASSERT_TRUE(t.InsertObject(obj(2, 0, ObjectStatus::kEndOfTrack)).ok());
  EXPECT_TRUE(t.InsertObject(obj(0, 1)).ok());
  EXPECT_TRUE(t.InsertObject(obj(0, 2, ObjectStatus::kEndOfGroup)).ok());
  EXPECT_TRUE(t.InsertObject(obj(1, 1)).ok());
  EXPECT_TRUE(t.InsertObject(obj(0, 3)).Is(TrackError::kGroupEnded));
  EXPECT_TRUE(t.InsertObject(obj(2, 1)).Is(TrackError::kTrackEnded));
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

// Regression: an object for a group below the retained ones used to create that group, evict it
// at once (it was the oldest) and then notify listeners with the freed object. Now it is refused
// with a typed error and nothing changes (ASan-clean).
TEST(TrackTest, ObjectBelowTheRetainedGroupsIsRefusedNotEvictedWhileWritten) {
  TrackOptions o;
  o.max_groups = 2;
  Track t({{"ns"}, "t"}, o);
  auto obj = [](uint64_t g, uint64_t id, size_t size = 3) {
    PublishedObject p;
    p.location = {g, id};
    p.payload = std::make_shared<const Bytes>(Bytes(size, 1));
    return p;
  };
  struct Seen : TrackListener {
    std::vector<Location> locs;
    void OnObjectAdded(Track&, const PublishedObject& o) override { locs.push_back(o.location); }
  } seen;
  t.AddListener(&seen);
  ASSERT_TRUE(t.AddObject(obj(5, 0)).ok());
  ASSERT_TRUE(t.AddObject(obj(6, 0)).ok());
  EXPECT_TRUE(t.AddObject(obj(4, 0)).Is(TrackError::kBelowRetained));
  EXPECT_EQ(t.oldest_group(), 5u);
  EXPECT_EQ(t.Find({4, 0}), nullptr);
  EXPECT_NE(t.Find({5, 0}), nullptr);
  EXPECT_EQ(t.stored_bytes(), 6u);
  EXPECT_EQ(seen.locs, (std::vector<Location>{{5, 0}, {6, 0}}));
  // The same through the byte bound: filling the oldest group past max_bytes would evict it.
  TrackOptions b;
  b.max_bytes = 8;
  Track u({{"ns"}, "u"}, b);
  u.AddListener(&seen);
  ASSERT_TRUE(u.AddObject(obj(5, 0, 4)).ok());
  ASSERT_TRUE(u.AddObject(obj(6, 0, 4)).ok());
  EXPECT_TRUE(u.AddObject(obj(5, 1, 4)).Is(TrackError::kBelowRetained));
  EXPECT_EQ(u.Find({5, 1}), nullptr);
  EXPECT_EQ(u.stored_bytes(), 8u);
  // A new newest group still evicts the oldest.
  ASSERT_TRUE(u.AddObject(obj(7, 0, 4)).ok());
  EXPECT_EQ(u.oldest_group(), 6u);
  u.RemoveListener(&seen);
  t.RemoveListener(&seen);
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

// One ByteBudget shared by two tracks: payload plus fixed overheads are charged; a write evicts
// its own track's oldest groups when that frees enough, is refused (kBudgetExhausted) when the
// bytes are held elsewhere, and a track's death releases what it held.
TEST(TrackTest, SharedByteBudgetChargesOverheadsEvictsOwnGroupsOrRefuses) {
  constexpr uint64_t kObj = 100 + kTrackObjectOverheadBytes;
  constexpr uint64_t kGroup = kTrackGroupOverheadBytes;
  auto budget = std::make_shared<ByteBudget>(3 * (kGroup + kObj));
  TrackStore store(budget);
  auto a = *store.CreateTrack({{"ns"}, "a"});
  auto b = *store.CreateTrack({{"ns"}, "b"});
  ASSERT_TRUE(a->StartGroup(0).ok());
  ASSERT_TRUE(a->AppendObject(Bytes(100, 1)).ok());
  ASSERT_TRUE(a->StartGroup(1).ok());  // End of Group of group 0 is an object too
  EXPECT_EQ(budget->used(), 2 * kGroup + kObj + kTrackObjectOverheadBytes);
  ASSERT_TRUE(a->AppendObject(Bytes(100, 1)).ok());
  // Track b cannot fit a group: a holds the bytes and b has nothing of its own to evict.
  ASSERT_TRUE(b->StartGroup(0).ok());
  EXPECT_TRUE(b->AppendObject(Bytes(100, 1)).status().Is(TrackError::kBudgetExhausted));
  EXPECT_EQ(b->Find({0, 0}), nullptr);
  // Track a's next group evicts a's own oldest group instead.
  ASSERT_TRUE(a->StartGroup(2).ok());
  EXPECT_EQ(a->oldest_group(), 1u);
  EXPECT_LE(budget->used(), budget->limit());
  // Dropping track a releases everything it held; b now fits.
  store.RemoveTrack(a->name());
  a.reset();
  EXPECT_EQ(budget->used(), kGroup);  // b's empty group 0
  ASSERT_TRUE(b->AppendObject(Bytes(100, 1)).ok());
  EXPECT_EQ(budget->used(), kGroup + kObj);
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

}  // namespace
}  // namespace kvcs::moqt
