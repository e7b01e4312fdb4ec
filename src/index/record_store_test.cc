// The RecordStore contract, run on every store (memory, embedded SQLite, Redis), plus what only
// one store does: the embedded store's restart, Redis's server-side expiry and shared nodes.
#include "index/record_store.h"

#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <thread>

#include "common/hex.h"
#include "index/embedded_store.h"
#include "index/redis_store.h"
#include "index/test_tools/redis_server.h"

namespace kvcs::index {
namespace {

uint64_t WallNowMs() {
  return uint64_t(std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count());
}

Digest Key(uint8_t tag, uint32_t i) {
  Digest d{};
  d[0] = tag;
  StoreBe32(d.data() + 28, i);
  return d;
}
const Digest kScope = Key(0xa0, 0), kCompat = Key(0xc0, 0);

std::vector<Digest> Keys(uint32_t from, uint32_t to) {
  std::vector<Digest> v;
  for (uint32_t i = from; i < to; ++i) v.push_back(Key(0xb0, i));
  return v;
}

RegisterRequest Reg(std::string holder, Tier tier, std::vector<Digest> keys, uint64_t ttl_ms) {
  RegisterRequest r;
  r.compat_id = kCompat;
  r.scope_id = kScope;
  r.replica = {std::move(holder), tier, {kvsp::Codec::kRaw, kvsp::Codec::kZstd}, 0, 32};
  r.block_keys = std::move(keys);
  r.ttl_ms = ttl_ms;
  return r;
}

LookupRequest Look(std::vector<Digest> keys) { return {kCompat, kScope, std::move(keys), 4}; }

std::string TempPath(const char* name) {
  char tmpl[] = "/tmp/kvcs-index-test-XXXXXX";
  EXPECT_NE(::mkdtemp(tmpl), nullptr);
  return std::string(tmpl) + "/" + name;
}

enum class Kind { kMemory, kEmbedded, kRedis };

class IndexRecordStoreTest : public ::testing::TestWithParam<Kind> {
 protected:
  void SetUp() override { Open({}); }
  // (Re)opens the store of this parameter, empty, with `limits`.
  void Open(RegistryLimits limits) {
    store_.reset();
    switch (GetParam()) {
      case Kind::kMemory:
        store_ = std::move(*EmbeddedRecordStore::Open("", WallNowMs(), limits));
        break;
      case Kind::kEmbedded: {
        if (path_.empty()) path_ = TempPath("index.db");
        for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path_ + suffix);
        auto s = EmbeddedRecordStore::Open(path_, WallNowMs(), limits);
        ASSERT_TRUE(s.ok()) << s.status().ToString();
        store_ = std::move(*s);
        break;
      }
      case Kind::kRedis: {
        if (!redis_) redis_ = std::make_unique<testing::RedisServer>();
        ASSERT_TRUE(redis_->ok()) << redis_->error();
        RedisOptions o;
        o.unix_socket = redis_->socket();
        o.prefix = "kvsp" + std::to_string(++opened_);  // a fresh key space
        o.limits = limits;
        auto s = RedisRecordStore::Connect(o);
        ASSERT_TRUE(s.ok()) << s.status().ToString();
        store_ = std::move(*s);
        break;
      }
    }
  }
  void TearDown() override {
    store_.reset();
    if (!path_.empty()) std::filesystem::remove_all(std::filesystem::path(path_).parent_path());
  }

  std::unique_ptr<testing::RedisServer> redis_;
  std::string path_;
  int opened_ = 0;
  std::unique_ptr<RecordStore> store_;
};

TEST_P(IndexRecordStoreTest, RegisterLookupWithdraw) {
  uint64_t t = WallNowMs();
  EXPECT_TRUE(store_->Lookup(Look(Keys(0, 1)), t).status().Is(IndexError::kUnknownCompat));
  ASSERT_TRUE(
      store_->Register(Reg("https://store", Tier::kObjectStore, Keys(0, 4), 60000), t).ok());
  RegisterRequest pub = Reg("moqt://pub/ns", Tier::kGpu, Keys(0, 6), 30000);
  pub.anchor_key = Key(0xb0, 5);
  ASSERT_TRUE(store_->Register(pub, t).ok());
  auto r = store_->Lookup(Look(Keys(0, 8)), t + 1);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->matched, 6u);
  ASSERT_EQ(r->entries[0].replicas.size(), 2u);
  EXPECT_EQ(r->entries[0].replicas[0].info.holder, "moqt://pub/ns");
  EXPECT_EQ(r->entries[0].replicas[1].info,
            Reg("https://store", Tier::kObjectStore, {}, 1).replica);
  EXPECT_EQ(r->entries[0].replicas[1].expires_ms, t + 60000);
  auto a = store_->Anchors({kCompat, Key(0xb0, 5), kScope}, t + 1);
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->replicas.size(), 1u);
  EXPECT_EQ(a->replicas[0].info.holder, "moqt://pub/ns");
  // The publisher's lease ends first: the prefix shrinks to the store's 4 blocks.
  EXPECT_EQ(store_->Lookup(Look(Keys(0, 8)), t + 30000)->matched, 4u);
  EXPECT_TRUE(store_->Anchors({kCompat, Key(0xb0, 5), kScope}, t + 30000)->replicas.empty());
  ASSERT_TRUE(store_->Withdraw({kCompat, kScope, "https://store", Keys(2, 4)}, t).ok());
  auto w = store_->Lookup(Look(Keys(0, 8)), t + 30000);
  EXPECT_EQ(w->matched, 2u);
  ASSERT_TRUE(store_->Expire(t + 30000).ok());
  EXPECT_EQ(store_->Lookup(Look(Keys(0, 8)), t + 30000)->matched, 2u);
}

TEST_P(IndexRecordStoreTest, RenewalReplacesAndExtends) {
  uint64_t t = WallNowMs();
  ASSERT_TRUE(store_->Register(Reg("https://a", Tier::kDisk, Keys(0, 2), 1000), t).ok());
  ASSERT_TRUE(store_->Register(Reg("https://a", Tier::kCpu, Keys(0, 2), 50000), t + 500).ok());
  auto r = store_->Lookup(Look(Keys(0, 2)), t + 2000);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->matched, 2u);
  ASSERT_EQ(r->entries[1].replicas.size(), 1u);
  EXPECT_EQ(r->entries[1].replicas[0].info.tier, Tier::kCpu);
  EXPECT_EQ(r->entries[1].replicas[0].expires_ms, t + 50500);
}

TEST_P(IndexRecordStoreTest, LargeLookupIsOneCall) {
  uint64_t t = WallNowMs();
  ASSERT_TRUE(store_->Register(Reg("https://a", Tier::kCpu, Keys(0, 4096), 60000), t).ok());
  auto r = store_->Lookup(Look(Keys(0, 4096)), t);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->matched, 4096u);
}

// The bounds: holders per key and records per holder (per scope in the embedded store, per
// scope and compat in Redis: this test stays in one compat); a refused registration writes
// nothing; withdrawals and ended leases make room again.
TEST_P(IndexRecordStoreTest, BoundsHoldersPerKeyAndRecordsPerHolder) {
  Open({.max_holders_per_key = 2, .max_records_per_holder = 5});
  uint64_t t = WallNowMs();
  auto reg = [&](const char* holder, uint32_t from, uint32_t to, uint64_t ttl, uint64_t at) {
    return store_->Register(Reg(holder, Tier::kCpu, Keys(from, to), ttl), at);
  };
  ASSERT_TRUE(reg("https://a", 0, 2, 60000, t).ok());
  ASSERT_TRUE(reg("https://b", 0, 1, 1000, t).ok());
  Status full = reg("https://c", 0, 1, 60000, t);
  EXPECT_TRUE(full.Is(IndexError::kKeyFull)) << full.ToString();
  ASSERT_TRUE(reg("https://a", 0, 1, 60000, t).ok());  // a renewal is no new holder
  // b's lease ends: its place on key 0 is free again.
  ASSERT_TRUE(reg("https://c", 0, 1, 60000, t + 1000).ok());
  // a holds keys 0, 1; 4 more would be 6 records: refused whole.
  Status more = reg("https://a", 2, 6, 60000, t + 1000);
  EXPECT_TRUE(more.Is(IndexError::kHolderFull)) << more.ToString();
  EXPECT_EQ(store_->Lookup(Look(Keys(2, 3)), t + 1000)->matched, 0u);
  ASSERT_TRUE(reg("https://a", 2, 5, 60000, t + 1000).ok());  // 5 records: at the bound
  EXPECT_TRUE(reg("https://a", 5, 6, 60000, t + 1000).Is(IndexError::kHolderFull));
  ASSERT_TRUE(store_->Withdraw({kCompat, kScope, "https://a", Keys(4, 5)}, t + 1000).ok());
  ASSERT_TRUE(reg("https://a", 5, 6, 60000, t + 1000).ok());
  EXPECT_EQ(store_->Lookup(Look(Keys(0, 6)), t + 1000)->matched, 4u);
}

INSTANTIATE_TEST_SUITE_P(Stores, IndexRecordStoreTest,
                         ::testing::Values(Kind::kMemory, Kind::kEmbedded, Kind::kRedis),
                         [](const auto& info) {
                           switch (info.param) {
                             case Kind::kMemory:
                               return "Memory";
                             case Kind::kEmbedded:
                               return "Embedded";
                             default:
                               return "Redis";
                           }
                         });

TEST(IndexEmbeddedStore, RestartKeepsLiveRecordsAndDropsExpired) {
  std::string path = TempPath("index.db");
  uint64_t t = 1'700'000'000'000;
  {
    auto s = EmbeddedRecordStore::Open(path, t);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ASSERT_TRUE((*s)->Register(Reg("https://long", Tier::kCpu, Keys(0, 3), 10000), t).ok());
    RegisterRequest shortr = Reg("https://short", Tier::kGpu, Keys(0, 3), 100);
    shortr.anchor_key = Key(0xb0, 2);
    ASSERT_TRUE((*s)->Register(shortr, t).ok());
    ASSERT_TRUE((*s)->Withdraw({kCompat, kScope, "https://long", Keys(2, 3)}, t).ok());
    EXPECT_EQ((*s)->size(), 6u);
  }
  {
    // Reopened before the short lease ends: everything but the withdrawn record is back.
    auto s = EmbeddedRecordStore::Open(path, t + 50);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ((*s)->size(), 6u);
    auto r = (*s)->Lookup(Look(Keys(0, 3)), t + 50);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->matched, 3u);
    EXPECT_EQ(r->entries[0].replicas[0].info.holder, "https://short");
    EXPECT_EQ(r->entries[0].replicas[0].expires_ms, t + 100);
    EXPECT_EQ(r->entries[0].replicas[0].info.codecs,
              (std::vector<kvsp::Codec>{kvsp::Codec::kRaw, kvsp::Codec::kZstd}));
    EXPECT_EQ((*s)->Anchors({kCompat, Key(0xb0, 2), kScope}, t + 50)->replicas.size(), 1u);
  }
  {
    // Reopened after it: leases are absolute, so the short holder is gone.
    auto s = EmbeddedRecordStore::Open(path, t + 100);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ((*s)->size(), 2u);
    EXPECT_EQ((*s)->Lookup(Look(Keys(0, 3)), t + 100)->matched, 2u);
    EXPECT_EQ((*s)->skipped_rows(), 0u);
  }
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST(IndexEmbeddedStore, RefusesAFileThatIsNotAnIndex) {
  std::string path = TempPath("junk.db");
  {
    FILE* f = std::fopen(path.c_str(), "w");
    std::fputs("this is not sqlite, not at all, really it is not", f);
    std::fclose(f);
  }
  auto s = EmbeddedRecordStore::Open(path, 0);
  EXPECT_TRUE(s.status().Is(IndexError::kStoreFailed)) << s.status().ToString();
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST(IndexRedisStore, ValueEncodingRoundTripsAndRefusesJunk) {
  Replica r{{"https://a", Tier::kRelay, {kvsp::Codec::kZstd, kvsp::Codec::kInt8}, 4, 28}, 123};
  std::string v = RedisRecordStore::EncodeValue(r);
  EXPECT_EQ(v, "123 relay 4 28 zstd,int8");
  auto back = RedisRecordStore::DecodeValue("https://a", v);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, r);
  for (const char* junk : {"", "123", "123 relay 4 28", "x relay 4 28 raw", "1 tape 0 1 raw",
                           "1 cpu 0 0 raw", "1 cpu 65535 2 raw", "1 cpu 0 1 gzip", "1 cpu 0 1 "}) {
    EXPECT_FALSE(RedisRecordStore::DecodeValue("https://a", junk).ok()) << junk;
  }
}

TEST(IndexRedisStore, TwoNodesShareRecordsAndRedisExpiresThem) {
  testing::RedisServer redis;
  ASSERT_TRUE(redis.ok()) << redis.error();
  RedisOptions o;
  o.unix_socket = redis.socket();
  auto a = RedisRecordStore::Connect(o);
  auto b = RedisRecordStore::Connect(o);
  ASSERT_TRUE(a.ok() && b.ok());
  uint64_t t = WallNowMs();
  ASSERT_TRUE((*a)->Register(Reg("https://x", Tier::kCpu, Keys(0, 3), 60000), t).ok());
  ASSERT_TRUE((*b)->Register(Reg("https://y", Tier::kDisk, Keys(0, 5), 150), t).ok());
  auto seen = (*b)->Lookup(Look(Keys(0, 5)), t);
  ASSERT_TRUE(seen.ok());
  EXPECT_EQ(seen->matched, 5u);
  EXPECT_EQ(seen->entries[0].replicas.size(), 2u);
  // Keys 3 and 4 only have the 150 ms lease: Redis itself deletes them (no sweeper runs here).
  redisContext* c = redisConnectUnix(redis.socket().c_str());
  ASSERT_TRUE(c && !c->err);
  std::string k4 = "kvsp:b:{" + ToHex(kScope) + ":" + ToHex(kCompat) + "}:" + ToHex(Key(0xb0, 4));
  auto exists = [&] {
    auto* r = static_cast<redisReply*>(redisCommand(c, "EXISTS %b", k4.data(), k4.size()));
    long long n = r ? r->integer : -1;
    if (r) freeReplyObject(r);
    return n;
  };
  EXPECT_EQ(exists(), 1);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (exists() != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // poll, bounded
  }
  EXPECT_EQ(exists(), 0);
  redisFree(c);
  uint64_t later = WallNowMs();
  auto after = (*a)->Lookup(Look(Keys(0, 5)), later);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->matched, 3u);
  EXPECT_EQ(after->entries[0].replicas.size(), 1u);  // y's field in a live key is ignored
  // b withdraws nothing of a's: only its own holder's fields go.
  ASSERT_TRUE((*b)->Withdraw({kCompat, kScope, "https://y", Keys(0, 3)}, later).ok());
  EXPECT_EQ((*a)->Lookup(Look(Keys(0, 5)), later)->matched, 3u);
}

TEST(IndexRedisStore, UnreachableServerIsUnavailable) {
  RedisOptions o;
  o.unix_socket = "/nonexistent/kvcs/redis.sock";
  auto s = RedisRecordStore::Connect(o);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(s.status().Is(IndexError::kStoreFailed));
  EXPECT_EQ(HttpStatusFor(s.status()), 503);
}

}  // namespace
}  // namespace kvcs::index
