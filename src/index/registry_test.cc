#include "index/registry.h"

#include <gtest/gtest.h>

namespace kvcs::index {
namespace {

Digest Key(uint8_t tag, uint32_t i) {
  Digest d{};
  d[0] = tag;
  StoreBe32(d.data() + 28, i);
  return d;
}
const Digest kScope = Key(0xa0, 0), kOtherScope = Key(0xa1, 0);
const Digest kCompat = Key(0xc0, 0), kOtherCompat = Key(0xc1, 0);

std::vector<Digest> Keys(uint32_t from, uint32_t to) {
  std::vector<Digest> v;
  for (uint32_t i = from; i < to; ++i) v.push_back(Key(0xb0, i));
  return v;
}

RegisterRequest Reg(std::string holder, Tier tier, std::vector<Digest> keys, uint64_t ttl_ms,
                    const Digest& scope = kScope) {
  RegisterRequest r;
  r.compat_id = kCompat;
  r.scope_id = scope;
  r.replica = {std::move(holder), tier, {kvsp::Codec::kRaw}, 0, 32};
  r.block_keys = std::move(keys);
  r.ttl_ms = ttl_ms;
  return r;
}

LookupRequest Look(std::vector<Digest> keys, uint32_t max = 4, const Digest& scope = kScope) {
  return {kCompat, scope, std::move(keys), max};
}

TEST(IndexRegistry, LongestPrefixAcrossHolders) {
  Registry reg;
  ASSERT_TRUE(reg.Register(Reg("https://store", Tier::kObjectStore, Keys(0, 4), 1000), 0).ok());
  ASSERT_TRUE(reg.Register(Reg("moqt://pub/ns", Tier::kGpu, Keys(2, 6), 2000), 0).ok());
  auto r = reg.Lookup(Look(Keys(0, 8)), 10);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->matched, 6u);
  ASSERT_EQ(r->entries.size(), 6u);
  EXPECT_EQ(r->entries[0].replicas.size(), 1u);
  // Keys 2 and 3 have both: the faster tier first.
  ASSERT_EQ(r->entries[2].replicas.size(), 2u);
  EXPECT_EQ(r->entries[2].replicas[0].info.holder, "moqt://pub/ns");
  EXPECT_EQ(r->entries[2].replicas[0].expires_ms, 2000u);
  EXPECT_EQ(r->entries[2].replicas[1].info.holder, "https://store");
  EXPECT_EQ(r->entries[5].block_key, Key(0xb0, 5));
  // A gap stops the prefix even when later keys are held.
  auto gap = reg.Lookup(Look({Key(0xb0, 0), Key(0xb0, 9), Key(0xb0, 1)}), 10);
  ASSERT_TRUE(gap.ok());
  EXPECT_EQ(gap->matched, 1u);
  // The first key missing: 200 with matched 0.
  auto none = reg.Lookup(Look({Key(0xb0, 99)}), 10);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->matched, 0u);
  EXPECT_TRUE(none->entries.empty());
}

TEST(IndexRegistry, ReplicasOrderedByTierThenLongerLeaseAndTruncated) {
  Registry reg;
  ASSERT_TRUE(reg.Register(Reg("https://d", Tier::kDisk, Keys(0, 1), 5000), 0).ok());
  ASSERT_TRUE(reg.Register(Reg("https://c1", Tier::kCpu, Keys(0, 1), 1000), 0).ok());
  ASSERT_TRUE(reg.Register(Reg("https://c2", Tier::kCpu, Keys(0, 1), 3000), 0).ok());
  ASSERT_TRUE(reg.Register(Reg("https://g", Tier::kGpu, Keys(0, 1), 100), 0).ok());
  auto r = reg.Lookup(Look(Keys(0, 1), 3), 0);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->entries[0].replicas.size(), 3u);
  EXPECT_EQ(r->entries[0].replicas[0].info.holder, "https://g");
  EXPECT_EQ(r->entries[0].replicas[1].info.holder, "https://c2");
  EXPECT_EQ(r->entries[0].replicas[2].info.holder, "https://c1");
}

TEST(IndexRegistry, LeasesExpireAndRenew) {
  Registry reg;
  ASSERT_TRUE(reg.Register(Reg("https://a", Tier::kCpu, Keys(0, 3), 100), 1000).ok());
  EXPECT_EQ(reg.Lookup(Look(Keys(0, 3)), 1099)->matched, 3u);
  // Live while now < expires_ms: at 1100 the lease has ended, even before Expire runs.
  EXPECT_EQ(reg.Lookup(Look(Keys(0, 3)), 1100)->matched, 0u);
  // Renewal moves the lease; renewing one key only keeps only that one.
  ASSERT_TRUE(reg.Register(Reg("https://a", Tier::kCpu, Keys(0, 1), 500), 1050).ok());
  EXPECT_EQ(reg.Lookup(Look(Keys(0, 3)), 1200)->matched, 1u);
  EXPECT_EQ(reg.size(), 3u);
  EXPECT_EQ(reg.Expire(1100), 2u);
  EXPECT_EQ(reg.size(), 1u);
  EXPECT_EQ(reg.Expire(1549), 0u);
  EXPECT_EQ(reg.Expire(1550), 1u);
  EXPECT_EQ(reg.size(), 0u);
  EXPECT_EQ(reg.HolderRecords(kScope, "https://a"), 0u);
  // Everything gone: the compat is unknown again.
  EXPECT_TRUE(reg.Lookup(Look(Keys(0, 1)), 2000).status().Is(IndexError::kUnknownCompat));
}

TEST(IndexRegistry, RenewalReplacesTheRecord) {
  Registry reg;
  ASSERT_TRUE(reg.Register(Reg("https://a", Tier::kDisk, Keys(0, 2), 100), 0).ok());
  RegisterRequest again = Reg("https://a", Tier::kCpu, Keys(0, 2), 300);
  again.replica.layer_count = 16;
  ASSERT_TRUE(reg.Register(again, 50).ok());
  auto r = reg.Lookup(Look(Keys(0, 2)), 60);
  ASSERT_EQ(r->entries[0].replicas.size(), 1u);
  EXPECT_EQ(r->entries[0].replicas[0].info.tier, Tier::kCpu);
  EXPECT_EQ(r->entries[0].replicas[0].info.layer_count, 16u);
  EXPECT_EQ(r->entries[0].replicas[0].expires_ms, 350u);
  EXPECT_EQ(reg.size(), 2u);
  EXPECT_EQ(reg.Expire(100), 0u);  // the old lease's index entry went with the renewal
}

TEST(IndexRegistry, WithdrawRemovesOnlyThatHolder) {
  Registry reg;
  ASSERT_TRUE(reg.Register(Reg("https://a", Tier::kCpu, Keys(0, 4), 1000), 0).ok());
  ASSERT_TRUE(reg.Register(Reg("https://b", Tier::kDisk, Keys(0, 2), 1000), 0).ok());
  EXPECT_EQ(reg.Withdraw({kCompat, kScope, "https://a", Keys(1, 3)}), 2u);
  auto r = reg.Lookup(Look(Keys(0, 4)), 0);
  EXPECT_EQ(r->matched, 2u);
  EXPECT_EQ(r->entries[1].replicas[0].info.holder, "https://b");
  EXPECT_EQ(reg.Withdraw({kCompat, kScope, "https://nobody", Keys(0, 4)}), 0u);
  EXPECT_EQ(reg.HolderRecords(kScope, "https://a"), 2u);
}

TEST(IndexRegistry, AnchorsNameHoldersOfTheWholePrefix) {
  Registry reg;
  RegisterRequest r = Reg("moqt://pub/ns", Tier::kGpu, Keys(0, 4), 1000);
  r.anchor_key = Key(0xb0, 3);
  ASSERT_TRUE(reg.Register(r, 0).ok());
  ASSERT_TRUE(reg.Register(Reg("https://partial", Tier::kCpu, Keys(3, 4), 1000), 0).ok());
  auto a = reg.Anchors({kCompat, Key(0xb0, 3), kScope}, 10);
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->replicas.size(), 1u);
  EXPECT_EQ(a->replicas[0].info.holder, "moqt://pub/ns");
  EXPECT_TRUE(reg.Anchors({kCompat, Key(0xb0, 2), kScope}, 10)->replicas.empty());
  EXPECT_TRUE(reg.Anchors({kCompat, Key(0xb0, 3), kScope}, 1000)->replicas.empty());
  // Withdrawing the anchor's block withdraws the anchor record.
  EXPECT_EQ(reg.Withdraw({kCompat, kScope, "moqt://pub/ns", {Key(0xb0, 3)}}), 2u);
  EXPECT_TRUE(reg.Anchors({kCompat, Key(0xb0, 3), kScope}, 10)->replicas.empty());
}

TEST(IndexRegistry, ScopesAndCompatsAreSeparate) {
  Registry reg;
  ASSERT_TRUE(reg.Register(Reg("https://a", Tier::kCpu, Keys(0, 2), 1000), 0).ok());
  EXPECT_TRUE(
      reg.Lookup(Look(Keys(0, 2), 4, kOtherScope), 0).status().Is(IndexError::kUnknownCompat));
  LookupRequest other = Look(Keys(0, 2));
  other.compat_id = kOtherCompat;
  auto s = reg.Lookup(other, 0);
  EXPECT_TRUE(s.status().Is(IndexError::kUnknownCompat));
  EXPECT_EQ(HttpStatusFor(s.status()), 404);
  ASSERT_TRUE(reg.Register(Reg("https://a", Tier::kCpu, Keys(5, 6), 1000, kOtherScope), 0).ok());
  EXPECT_EQ(reg.Lookup(Look(Keys(0, 2), 4, kOtherScope), 0)->matched, 0u);
  EXPECT_TRUE(reg.HasCompat(kOtherScope, kCompat));
}

TEST(IndexRegistry, BoundsRefuseTheWholeRegistration) {
  RegistryLimits limits;
  limits.max_holders_per_key = 2;
  limits.max_records_per_holder = 5;
  Registry reg(limits);
  ASSERT_TRUE(reg.Register(Reg("https://a", Tier::kCpu, Keys(0, 1), 100), 0).ok());
  ASSERT_TRUE(reg.Register(Reg("https://b", Tier::kCpu, Keys(0, 1), 1000), 0).ok());
  auto full = reg.Register(Reg("https://c", Tier::kCpu, Keys(0, 2), 1000), 0);
  EXPECT_TRUE(full.Is(IndexError::kKeyFull)) << full.ToString();
  EXPECT_EQ(reg.HolderRecords(kScope, "https://c"), 0u);  // key 1 was not written either
  // A renewal of a present holder is always allowed; an expired holder frees its place.
  EXPECT_TRUE(reg.Register(Reg("https://b", Tier::kCpu, Keys(0, 1), 1000), 0).ok());
  EXPECT_TRUE(reg.Register(Reg("https://c", Tier::kCpu, Keys(0, 2), 1000), 100).ok());
  // Per holder: 5 records; repeated keys count once.
  ASSERT_TRUE(reg.Register(Reg("https://d", Tier::kCpu, Keys(10, 14), 1000), 0).ok());
  auto more = reg.Register(Reg("https://d", Tier::kCpu, Keys(13, 16), 1000), 0);
  EXPECT_TRUE(more.Is(IndexError::kHolderFull)) << more.ToString();
  auto dup = Reg("https://d", Tier::kCpu, {Key(0xb0, 20), Key(0xb0, 20)}, 1000);
  EXPECT_TRUE(reg.Register(dup, 0).ok());
  EXPECT_EQ(reg.HolderRecords(kScope, "https://d"), 5u);
}

TEST(IndexRegistry, RefusesInvalidRegistrations) {
  Registry reg;
  EXPECT_FALSE(reg.Register(Reg("ftp://a", Tier::kCpu, Keys(0, 1), 100), 0).ok());
  EXPECT_FALSE(reg.Register(Reg("https://a", Tier::kCpu, {}, 100), 0).ok());
  EXPECT_FALSE(reg.Register(Reg("https://a", Tier::kCpu, Keys(0, 1), 0), 0).ok());
  EXPECT_FALSE(reg.Register(Reg("https://a", Tier::kCpu, Keys(0, 1), kMaxTtlMs + 1), 0).ok());
  RegisterRequest r = Reg("https://a", Tier::kCpu, Keys(0, 1), 100);
  r.replica.codecs.clear();
  EXPECT_FALSE(reg.Register(r, 0).ok());
  EXPECT_EQ(reg.size(), 0u);
}

TEST(IndexRegistry, RestoreSkipsExpiredAndKeepsAbsoluteLease) {
  Registry reg;
  Record live{RecordKind::kBlock,
              kScope,
              kCompat,
              Key(0xb0, 0),
              {{"https://a", Tier::kCpu, {kvsp::Codec::kRaw}, 0, 32}, 5000}};
  Record dead = live;
  dead.key = Key(0xb0, 1);
  dead.replica.expires_ms = 100;
  ASSERT_TRUE(reg.Restore(live, 1000).ok());
  ASSERT_TRUE(reg.Restore(dead, 1000).ok());
  EXPECT_EQ(reg.size(), 1u);
  EXPECT_EQ(reg.Lookup(Look(Keys(0, 2)), 1000)->entries[0].replicas[0].expires_ms, 5000u);
  auto recs = Registry::RecordsOf(Reg("https://a", Tier::kCpu, Keys(0, 2), 10), 7);
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[1].replica.expires_ms, 17u);
}

// Lookup touches only the keys asked: with a million other records it stays as cheap.
TEST(IndexRegistry, LookupCostDoesNotGrowWithTheIndex) {
  Registry reg;
  for (uint32_t h = 0; h < 32; ++h) {
    RegisterRequest r = Reg("https://h" + std::to_string(h), Tier::kDisk, {}, 100000);
    for (uint32_t i = 0; i < 4096; ++i)
      r.block_keys.push_back(Key(0xe0 + uint8_t(h % 8), h * 4096 + i));
    ASSERT_TRUE(reg.Register(r, 0).ok());
  }
  ASSERT_TRUE(reg.Register(Reg("https://mine", Tier::kCpu, Keys(0, 256), 100000), 0).ok());
  EXPECT_EQ(reg.size(), 32u * 4096 + 256);
  auto r = reg.Lookup(Look(Keys(0, 256)), 1);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->matched, 256u);
  // Expiring everything costs one step per record, and leaves nothing behind.
  EXPECT_EQ(reg.Expire(100000), 32u * 4096 + 256);
  EXPECT_EQ(reg.size(), 0u);
}

}  // namespace
}  // namespace kvcs::index
