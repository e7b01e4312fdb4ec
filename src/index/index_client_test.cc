// IndexClient, LeaseRenewer, LeaseKeeper and RegistrationQueue against an in-process index
// (IndexService on http::Server over 127.0.0.1, in-memory store, --open mode).
#include "index/index_client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "index/embedded_store.h"
#include "index/index_service.h"
#include "index/lease_keeper.h"
#include "index/lease_renewer.h"
#include "index/registration_queue.h"
#include "index/test_tools/live_index.h"

namespace kvcs::index {
namespace {

Digest D(uint8_t b) {
  Digest d{};
  d.fill(b);
  return d;
}

std::vector<Digest> Keys(size_t n, uint8_t salt) {
  std::vector<Digest> k(n);
  for (size_t i = 0; i < n; ++i) {
    k[i].fill(salt);
    k[i][0] = uint8_t(i);
    k[i][1] = uint8_t(i >> 8);
  }
  return k;
}

// An in-process index with an in-memory store and a clock the test moves.
class LiveIndex {
 public:
  LiveIndex()
      : store_(std::move(*EmbeddedRecordStore::Open("", now_ms()))),
        live_(*store_, [this] { return now_ms(); }) {
    EXPECT_TRUE(live_.ok());
  }
  std::string url() const { return live_.url(); }
  IndexClient Client() const { return live_.Client(); }
  uint64_t now_ms() const { return now_.load(); }
  void Advance(uint64_t ms) { now_ += ms; }

 private:
  std::atomic<uint64_t> now_{1'000'000};
  std::unique_ptr<EmbeddedRecordStore> store_;
  testing::LiveIndex live_;
};

RegisterRequest Registration(const std::string& holder, std::vector<Digest> keys,
                             uint64_t ttl = 60'000) {
  RegisterRequest r;
  r.compat_id = D(1);
  r.scope_id = D(2);
  r.replica.holder = holder;
  r.replica.tier = Tier::kObjectStore;
  r.replica.codecs = {kvsp::Codec::kRaw};
  r.replica.layer_first = 0;
  r.replica.layer_count = 32;
  r.block_keys = std::move(keys);
  r.ttl_ms = ttl;
  return r;
}

LookupRequest Ask(std::vector<Digest> keys) {
  LookupRequest q;
  q.compat_id = D(1);
  q.scope_id = D(2);
  q.block_keys = std::move(keys);
  return q;
}

TEST(IndexClientTest, BadUrls) {
  for (const char* u : {"", "https:/x:1", "http://x", "http://:1", "http://x:0", "http://x:99999",
                        "ftp://x:1", "http://x:1/base?q"}) {
    auto c = IndexClient::Create({u});
    EXPECT_TRUE(!c.ok() && c.status().Is(IndexClientError::kBadUrl)) << u;
  }
  EXPECT_TRUE(IndexClient::Create({"http://127.0.0.1:7070/base/"}).ok());
  EXPECT_TRUE(IndexClient::Create({"https://[::1]:7070"}).ok());
}

TEST(IndexClientTest, RegisterLookupWithdrawAndTypedErrors) {
  LiveIndex ix;
  IndexClient c = ix.Client();
  auto none = c.Lookup(Ask(Keys(3, 9)));
  ASSERT_FALSE(none.ok());
  EXPECT_TRUE(none.status().Is(IndexError::kUnknownCompat)) << none.status().ToString();
  EXPECT_EQ(none.status().code(), Code::kNotFound);

  ASSERT_TRUE(c.Register(Registration("https://store-a/_kvsp", Keys(3, 9))).ok());
  auto r = c.Lookup(Ask(Keys(5, 9)));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->matched, 3u);
  ASSERT_EQ(r->entries.size(), 3u);
  EXPECT_EQ(r->entries[2].replicas.at(0).info.holder, "https://store-a/_kvsp");

  RegisterRequest bad = Registration("ftp://nope", Keys(1, 9));
  Status s = c.Register(bad);
  EXPECT_TRUE(s.Is(IndexError::kBadHolder)) << s.ToString();

  WithdrawRequest w = WithdrawalOf(Registration("https://store-a/_kvsp", Keys(1, 9)));
  ASSERT_TRUE(c.Withdraw(w).ok());
  r = c.Lookup(Ask(Keys(5, 9)));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->matched, 0u);  // the first key is gone: no prefix
}

TEST(IndexClientTest, UnreachableIsTypedAndBounded) {
  uint16_t port;
  {
    LiveIndex gone;  // a port that answered once and is closed now
    port = uint16_t(std::stoi(gone.url().substr(gone.url().rfind(':') + 1)));
  }
  auto c = *IndexClient::Create(
      {"http://127.0.0.1:" + std::to_string(port), "", std::chrono::milliseconds(2000)});
  auto t0 = std::chrono::steady_clock::now();
  Status s = c.Register(Registration("https://x", Keys(1, 1)));
  EXPECT_EQ(s.code(), Code::kUnavailable);
  EXPECT_TRUE(s.Is(IndexClientError::kUnreachable)) << s.ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
}

TEST(LeaseRenewerTest, RenewsAtHalfAndBacksOff) {
  LeaseRenewer r({.ttl_ms = 1000, .renew_fraction = 0.5, .retry_min_ms = 10, .retry_max_ms = 40});
  EXPECT_TRUE(r.Due(0));
  r.OnRegistered(100);
  EXPECT_EQ(r.lease_end_ms(), 1100u);
  EXPECT_EQ(r.next_attempt_ms(), 600u);
  EXPECT_FALSE(r.Due(599));
  EXPECT_TRUE(r.Due(600));
  EXPECT_TRUE(r.Live(1099));
  EXPECT_FALSE(r.Live(1100));
  r.OnFailed(600);
  EXPECT_EQ(r.next_attempt_ms(), 610u);
  r.OnFailed(610);
  EXPECT_EQ(r.next_attempt_ms(), 630u);
  r.OnFailed(630);
  r.OnFailed(670);
  EXPECT_EQ(r.next_attempt_ms(), 710u);  // capped at 40
  EXPECT_EQ(r.failures(), 4u);
  r.OnRegistered(710);
  EXPECT_EQ(r.failures(), 0u);
  EXPECT_EQ(r.lease_end_ms(), 1710u);
  r.OnFailed(1210);
  EXPECT_EQ(r.next_attempt_ms(), 1220u);  // backoff reset by the success
}

TEST(LeaseKeeperTest, ChunksRegistersAndWithdrawsOnStop) {
  RegisterRequest whole = Registration("moqt://pub:1/?ns=x", Keys(kMaxKeysPerRequest + 5, 3));
  whole.anchor_key = whole.block_keys.back();
  auto chunks = ChunkRegistration(whole);
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(chunks[0].block_keys.size(), kMaxKeysPerRequest);
  EXPECT_FALSE(chunks[0].anchor_key.has_value());
  EXPECT_EQ(chunks[1].anchor_key, whole.anchor_key);

  LiveIndex ix;
  LeaseKeeper keeper(ix.Client(), chunks, {.ttl_ms = 60'000}, [&ix] { return ix.now_ms(); });
  keeper.Start();
  IndexClient c = ix.Client();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (keeper.stats().registered == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // poll, bounded
  }
  ASSERT_EQ(keeper.stats().registered, 1u);
  EXPECT_TRUE(keeper.stats().live);
  auto r = c.Lookup(Ask(chunks[0].block_keys));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->matched, kMaxKeysPerRequest);
  r = c.Lookup(Ask(chunks[1].block_keys));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->matched, 5u);
  ASSERT_TRUE(keeper.Stop().ok());
  r = c.Lookup(Ask({whole.block_keys.front()}));
  EXPECT_TRUE(!r.ok() && r.status().Is(IndexError::kUnknownCompat));
}

TEST(LeaseKeeperTest, KeepsALeaseAliveAcrossTtls) {
  LiveIndex ix;
  // The keeper and the index share a test clock that only moves when the test moves it.
  LeaseKeeper keeper(ix.Client(), {Registration("https://a", Keys(2, 4))}, {.ttl_ms = 100},
                     [&ix] { return ix.now_ms(); });
  keeper.Start();
  auto wait_rounds = [&](uint64_t n) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (keeper.stats().registered < n && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // poll, bounded
    }
    return keeper.stats().registered >= n;
  };
  ASSERT_TRUE(wait_rounds(1));
  for (int i = 2; i <= 4; ++i) {
    ix.Advance(60);  // past the renewal point (half the lease), inside the lease
    ASSERT_TRUE(wait_rounds(i));
    auto r = ix.Client().Lookup(Ask(Keys(2, 4)));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->matched, 2u);
  }
}

TEST(RegistrationQueueTest, SendsInOrderAndCountsFailures) {
  LiveIndex ix;
  {
    RegistrationQueue q(ix.Client());
    EXPECT_TRUE(q.Enqueue(Registration("https://s", Keys(4, 5))));
    EXPECT_TRUE(q.Enqueue(WithdrawalOf(Registration("https://s", Keys(2, 5)))));
    ASSERT_TRUE(q.WaitIdle(std::chrono::seconds(10)));
    EXPECT_EQ(q.stats().sent, 2u);
    auto r = ix.Client().Lookup(Ask(Keys(4, 5)));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->matched, 0u);  // K_1, K_2 withdrawn after the registration
    EXPECT_TRUE(q.Enqueue(Registration("bad://holder", Keys(1, 5))));
    ASSERT_TRUE(q.WaitIdle(std::chrono::seconds(10)));
    EXPECT_EQ(q.stats().failed, 1u);
    EXPECT_EQ(q.stats().retries, 0u);  // a 400 is not retried
  }
  // Unreachable: bounded retries, a full queue drops, nothing blocks.
  auto dead = *IndexClient::Create({"http://127.0.0.1:1", "", std::chrono::milliseconds(500)});
  RegistrationQueue q(
      std::move(dead),
      {.max_pending = 2, .max_attempts = 2, .retry_delay = std::chrono::milliseconds(1)});
  int accepted = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 10; ++i) accepted += q.Enqueue(Registration("https://s", Keys(1, 6)));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(100));
  EXPECT_GE(accepted, 2);
  ASSERT_TRUE(q.WaitIdle(std::chrono::seconds(10)));
  auto st = q.stats();
  EXPECT_EQ(st.dropped + st.failed, 10u);
  EXPECT_EQ(st.retries, st.failed);  // one retry each
  EXPECT_FALSE(st.last_error.empty());
}

}  // namespace
}  // namespace kvcs::index
