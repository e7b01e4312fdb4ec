// RelayCache: whole publications, LRU, never in use, refusal when nothing can go.
#include "relay/relay_cache.h"

#include <gtest/gtest.h>

namespace kvcs::relay {
namespace {

moqt::FullTrackName Name(const std::string& pub, const std::string& track) {
  return {{"kvcs-1", pub}, track};
}

// Fills `t` with `n` objects of `bytes` each in group 0.
void Fill(moqt::Track& t, int n, size_t bytes) {
  for (int i = 0; i < n; ++i) {
    moqt::PublishedObject o;
    o.location = {0, static_cast<uint64_t>(i)};
    o.payload = std::make_shared<const Bytes>(bytes, 7);
    ASSERT_TRUE(t.InsertObject(std::move(o)).ok());
  }
}

constexpr uint64_t kObj = 1000 + moqt::kTrackObjectOverheadBytes;

std::shared_ptr<moqt::Track> MustCreate(RelayCache& c, const moqt::FullTrackName& n, uint64_t now,
                                        std::vector<moqt::TrackNamespace>* ev) {
  auto t = c.Create(n, {}, now, ev);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? *t : nullptr;
}

TEST(RelayCacheTest, EvictsTheLeastRecentlyUsedIdlePublicationWhole) {
  RelayCache c(10 * kObj);
  for (const char* p : {"a", "b", "c"}) {
    for (const char* tr : {"k", "v"}) {
      auto t = c.Create(Name(p, tr), {}, /*now_ms=*/p[0], nullptr);
      ASSERT_TRUE(t.ok());
      Fill(**t, 1, 1000);
    }
  }
  (void)c.Find(Name("a", "k"), 100);  // a is now the most recently used
  std::vector<moqt::TrackNamespace> evicted;
  ASSERT_TRUE(c.MakeRoom(6 * kObj, &evicted));
  ASSERT_EQ(evicted.size(), 2u);  // b, then c: each publication goes whole (k and v)
  EXPECT_EQ(evicted[0][1], "b");
  EXPECT_EQ(evicted[1][1], "c");
  EXPECT_NE(c.Find(Name("a", "v"), 101), nullptr);
  EXPECT_EQ(c.Find(Name("b", "v"), 101), nullptr);
  EXPECT_EQ(c.evictions(), 2u);
  EXPECT_LE(c.budget()->used(), c.budget()->limit());
}

TEST(RelayCacheTest, APublicationInUseIsNeverEvictedAndAFullCacheRefuses) {
  RelayCache c(4 * kObj);
  std::shared_ptr<moqt::Track> a = MustCreate(c, Name("a", "k"), 1, nullptr);  // a reader holds it
  Fill(*a, 2, 1000);
  std::shared_ptr<moqt::Track> b = MustCreate(c, Name("b", "k"), 2, nullptr);
  Fill(*b, 1, 1000);
  EXPECT_TRUE(c.InUse({"kvcs-1", "a"}));
  std::vector<moqt::TrackNamespace> evicted;
  EXPECT_FALSE(c.MakeRoom(2 * kObj, &evicted));  // both in use: refused, nothing evicted
  EXPECT_TRUE(evicted.empty());
  // The track refuses the write itself rather than evicting its own groups.
  moqt::PublishedObject o;
  o.location = {0, 9};
  o.payload = std::make_shared<const Bytes>(2000, 1);
  EXPECT_TRUE(b->InsertObject(std::move(o)).Is(moqt::TrackError::kBudgetExhausted));
  EXPECT_NE(b->Find({0, 0}), nullptr);
  b.reset();  // b is idle now
  ASSERT_TRUE(c.MakeRoom(kObj, &evicted));
  ASSERT_EQ(evicted.size(), 1u);
  EXPECT_EQ(evicted[0][1], "b");
  EXPECT_NE(c.Find(Name("a", "k"), 3), nullptr);
}

TEST(RelayCacheTest, ACachedTrackIsBoundedByTheBudgetAloneNotByItsOwnByteBound) {
  RelayCache c(20 * (kObj + moqt::kTrackGroupOverheadBytes));
  moqt::TrackOptions o;
  o.max_bytes = 3000;  // a caller's (or the default, 1 GiB) per-track bound: not for the cache
  auto t = c.Create(Name("a", "k"), o, 0, nullptr);
  ASSERT_TRUE(t.ok()) << t.status().message();
  for (uint64_t g = 0; g < 10; ++g) {
    moqt::PublishedObject obj;
    obj.location = {g, 0};
    obj.payload = std::make_shared<const Bytes>(1000, 7);
    ASSERT_TRUE((*t)->InsertObject(std::move(obj)).ok()) << g;
  }
  EXPECT_EQ((*t)->oldest_group(), std::optional<uint64_t>(0));
  EXPECT_EQ((*t)->stored_bytes(), 10000u);
}

TEST(RelayCacheTest, PublicationCountIsBounded) {
  RelayCache c(100 * kObj, /*max_publications=*/2);
  std::shared_ptr<moqt::Track> a = MustCreate(c, Name("a", "k"), 1, nullptr);
  std::shared_ptr<moqt::Track> b = MustCreate(c, Name("b", "k"), 2, nullptr);
  EXPECT_EQ(c.Create(Name("c", "k"), {}, 3, nullptr).status().code(), Code::kResourceExhausted);
  a.reset();
  std::vector<moqt::TrackNamespace> evicted;
  EXPECT_NE(MustCreate(c, Name("c", "k"), 4, &evicted), nullptr);
  ASSERT_EQ(evicted.size(), 1u);
  EXPECT_EQ(evicted[0][1], "a");
  EXPECT_EQ(c.Create(Name("c", "k"), {}, 5, nullptr).status().code(), Code::kAlreadyExists);
}

}  // namespace
}  // namespace kvcs::relay
