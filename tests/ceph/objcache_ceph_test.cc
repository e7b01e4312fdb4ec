// The ObjectCache aggregated extension with radosgw behind `kvcs store`: the S3 server and the
// objcache Service (in-process, ephemeral port) over S3BackendStore, driven by objcache::Client.
// The same behaviours tests/objcache pins on local disk, plus backend faults: radosgw killed and
// restarted mid-request. Each test states the behaviour it pins.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "ceph_env.h"
#include "common/hex.h"
#include "objcache/block_layout.h"
#include "objcache/client.h"
#include "objcache/service.h"
#include "objcache/synthetic.h"
#include "s3/config.h"
#include "s3/server.h"
#include "s3client/backend_store.h"

namespace kvcs::objcache {
namespace {

const std::string kBucket = kDefaultKvBucket;

class ObjcacheCeph : public ::testing::Test {
 protected:
  void Start(uint32_t blocks, uint32_t layers) {
    blocks_ = blocks;
    layers_ = layers;
    auto env = ceph_test::LoadCephEnv();
    ASSERT_TRUE(env.ok()) << env.status().ToString();
    env_ = *env;
    s3client::S3BackendOptions so;
    so.client = ceph_test::RgwClientOptions(env_);
    so.client.parallel_gets = 32;
    static int n = 0;
    so.bucket_prefix = "oc" + std::to_string(::getpid()) + "-" + std::to_string(n++) + "-";
    prefix_ = so.bucket_prefix;
    auto st = s3client::S3BackendStore::Open(so);
    ASSERT_TRUE(st.ok()) << st.status().ToString();
    store_ = std::move(*st);
    s3::ServerConfig cfg;
    cfg.port = 0;
    cfg.secrets[s3::kDevAccessKey] = s3::kDevSecretKey;
    cfg.io_threads = 2;
    server_ = std::make_unique<s3::Server>(cfg, *store_);
    service_ = std::make_unique<Service>(ServiceOptions{});
    for (auto& e : service_->Extensions()) server_->AddExtension(std::move(e));
    ASSERT_TRUE(server_->Start().ok());
    runner_ = std::thread([this] { server_->Run(false); });
    client_ = std::make_unique<Client>(Options(s3::kDevSecretKey));
    ASSERT_TRUE(client_->CreateBucket(kBucket).ok());
    auto cache = MakeSyntheticCache(blocks, layers);
    ASSERT_TRUE(cache.ok());
    cache_ = *cache;
    for (uint32_t i = 0; i < blocks; ++i) {
      auto c = MakeSyntheticContainer(cache_, i);
      ASSERT_TRUE(c.ok());
      containers_.push_back(*c);
    }
  }
  void TearDown() override {
    client_.reset();
    if (server_) server_->Stop();
    if (runner_.joinable()) runner_.join();
    server_.reset();
    service_.reset();
    if (store_ && ceph_test::RgwAnswers(env_)) {
      for (int i = 0; i < 40; ++i) {
        auto l = store_->List(kBucket, {});
        if (!l.ok() || l->objects.empty()) break;
        for (const auto& o : l->objects) (void)store_->Delete(kBucket, o.key);
      }
      (void)store_->DeleteBucket(kBucket);
    }
    store_.reset();
  }
  ClientOptions Options(const std::string& secret) {
    ClientOptions o;
    o.port = server_->port();
    o.access_key = s3::kDevAccessKey;
    o.secret_key = secret;
    return o;
  }
  void PutAll() {
    std::vector<ByteSpan> spans(containers_.begin(), containers_.end());
    auto r = client_->AggregatePut(kBucket, cache_.scope_id, spans, true);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->stored, blocks_);
  }
  AggregateRequest Req(std::vector<Digest> keys, uint32_t first, uint32_t count,
                       Components c = Components::kKV) {
    AggregateRequest r;
    r.scope_id = cache_.scope_id;
    r.compat_id = cache_.compat_id;
    r.codec = 1;
    r.layer_first = first;
    r.layer_count = count;
    r.components = c;
    r.block_keys = std::move(keys);
    r.compute_us_per_layer = 500;
    r.stall_target_us = 100;
    return r;
  }
  struct Got {
    uint16_t layer;
    std::vector<BlockStatus> status;
    std::vector<Bytes> data;
  };
  Result<std::vector<Got>> Get(const AggregateRequest& r, AggregateStats* stats = nullptr) {
    std::vector<Got> got;
    auto s = client_->AggregateGet(kBucket, r, [&](const DeliveredLayer& l) {
      Got g{l.layer, {}, {}};
      for (const auto& b : l.blocks) {
        g.status.push_back(b.status);
        g.data.emplace_back(b.data.begin(), b.data.end());
      }
      got.push_back(std::move(g));
      return Status::Ok();
    });
    if (!s.ok()) return s.status();
    if (stats) *stats = *s;
    return got;
  }
  Bytes K(uint32_t block, uint32_t layer) {
    Bytes b = SyntheticLayerBytes(cache_, block, layer);
    return Bytes(b.begin(), b.begin() + static_cast<ptrdiff_t>(cache_.section_bytes));
  }
  // Overwrites the stored container of `block` in radosgw directly (bypassing the store and the
  // front server) with one byte of `layer` flipped.
  void CorruptInBackend(uint32_t block, uint32_t layer) {
    std::string key =
        BlockObjectKey(cache_.scope_id, cache_.compat_id, cache_.block_keys[block], "raw");
    Bytes bad = containers_[block];
    Bytes needle = SyntheticLayerBytes(cache_, block, layer);
    auto it = std::search(bad.begin(), bad.end(), needle.begin(), needle.begin() + 64);
    ASSERT_NE(it, bad.end());
    it[100] ^= 0x40;
    auto r = store_->client().PutObject(prefix_ + kBucket, key, bad, {});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  ceph_test::CephEnv env_;
  std::string prefix_;
  uint32_t blocks_ = 0, layers_ = 0;
  std::unique_ptr<s3client::S3BackendStore> store_;
  std::unique_ptr<s3::Server> server_;
  std::unique_ptr<Service> service_;
  std::thread runner_;
  std::unique_ptr<Client> client_;
  SyntheticCache cache_;
  std::vector<Bytes> containers_;
};

// One aggregated PUT stores every block in radosgw; one aggregated GET returns them layer-major,
// in order, byte-exact (layer l gathered by parallel range GETs from the backend).
TEST_F(ObjcacheCeph, PutThenGetAllPresentLayerMajor) {
  Start(8, 4);
  PutAll();
  AggregateStats stats;
  auto got = Get(Req(cache_.block_keys, 0, layers_), &stats);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), layers_);
  for (uint32_t l = 0; l < layers_; ++l) {
    EXPECT_EQ((*got)[l].layer, l);
    ASSERT_EQ((*got)[l].status.size(), blocks_);
    for (uint32_t b = 0; b < blocks_; ++b) {
      EXPECT_EQ((*got)[l].status[b], BlockStatus::kPresent);
      EXPECT_EQ((*got)[l].data[b], SyntheticLayerBytes(cache_, b, l)) << "block " << b;
    }
  }
  EXPECT_EQ(stats.corrupt_blocks, 0u);
  EXPECT_EQ(stats.payload_bytes, uint64_t{blocks_} * layers_ * 2 * cache_.section_bytes);
}

// Missing blocks are reported as missing, the others still delivered; layer subsets and
// components work as on local disk.
TEST_F(ObjcacheCeph, MissingBlocksLayerRangesAndComponents) {
  Start(4, 4);
  PutAll();
  Digest unknown{};
  unknown.fill(0x5a);
  auto got = Get(Req({cache_.block_keys[0], unknown, cache_.block_keys[2]}, 0, layers_));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  for (const auto& g : *got) {
    EXPECT_EQ(g.status[0], BlockStatus::kPresent);
    EXPECT_EQ(g.status[1], BlockStatus::kMissing);
    EXPECT_TRUE(g.data[1].empty());
    EXPECT_EQ(g.data[2], SyntheticLayerBytes(cache_, 2, g.layer));
  }
  auto k = Get(Req({cache_.block_keys[1], cache_.block_keys[3]}, 1, 2, Components::kK));
  ASSERT_TRUE(k.ok());
  ASSERT_EQ(k->size(), 2u);
  for (const auto& g : *k) {
    EXPECT_EQ(g.data[0], K(1, g.layer));
    EXPECT_EQ(g.data[1], K(3, g.layer));
  }
  auto beyond = Get(Req({cache_.block_keys[0]}, 3, 2));
  ASSERT_TRUE(beyond.ok());
  ASSERT_EQ(beyond->size(), 2u);
  EXPECT_EQ((*beyond)[0].status[0], BlockStatus::kPresent);
  EXPECT_EQ((*beyond)[1].status[0], BlockStatus::kLayerNotHeld);
}

// Bytes altered inside radosgw are caught: that block-layer never reaches the callback.
TEST_F(ObjcacheCeph, BackendCorruptionNeverReachesTheCallback) {
  Start(4, 4);
  PutAll();
  CorruptInBackend(3, 2);
  AggregateStats stats;
  auto got = Get(Req(cache_.block_keys, 0, layers_), &stats);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(stats.corrupt_blocks, 1u);
  for (const auto& g : *got) {
    for (uint32_t b = 0; b < blocks_; ++b) {
      if (g.layer == 2 && b == 3) {
        EXPECT_EQ(g.status[b], BlockStatus::kCorrupt);
        EXPECT_TRUE(g.data[b].empty());
      } else {
        EXPECT_EQ(g.data[b], SyntheticLayerBytes(cache_, b, g.layer));
      }
    }
  }
  auto k = Get(Req({cache_.block_keys[3]}, 2, 1, Components::kK));
  ASSERT_TRUE(k.ok());
  EXPECT_EQ((*k)[0].status[0], BlockStatus::kCorrupt);
  EXPECT_TRUE((*k)[0].data[0].empty());
}

// An aggregated PUT refuses a corrupt container and stores the others; any S3 client can GET a
// whole block at its predictable key through the front server.
TEST_F(ObjcacheCeph, AggregatePutAndPlainGet) {
  Start(3, 2);
  Bytes bad = containers_[1];
  bad[bad.size() - 10] ^= 1;
  std::vector<ByteSpan> spans = {containers_[0], bad, containers_[2]};
  auto r = client_->AggregatePut(kBucket, cache_.scope_id, spans, false);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->stored, 2u);
  std::string key = BlockObjectKey(cache_.scope_id, cache_.compat_id, cache_.block_keys[2], "raw");
  auto g = client_->Request("GET", "/" + kBucket + "/" + key, "", {});
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->status, 200);
  EXPECT_EQ(g->body, containers_[2]);
  auto missing = client_->Request(
      "GET",
      "/" + kBucket + "/" +
          BlockObjectKey(cache_.scope_id, cache_.compat_id, cache_.block_keys[1], "raw"),
      "", {});
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->status, 404);
}

// Fault: radosgw is killed (SIGKILL) while an aggregated GET is being served and restarted at
// once. The request either completes or fails cleanly; every block handed to the callback is
// byte-exact (nothing corrupt is ever delivered); afterwards the same request succeeds in full.
TEST_F(ObjcacheCeph, RgwKilledAndRestartedMidAggregateGet) {
  Start(32, 32);
  PutAll();
  std::atomic<bool> finished{false};
  std::atomic<int> wrong{0}, delivered{0}, layers_seen{0};
  Result<AggregateStats> result = Status(Code::kInternal, "not run");
  const uint64_t requests_before = store_->client().stats().requests;
  std::thread t([&] {
    Client c(Options(s3::kDevSecretKey));
    result =
        c.AggregateGet(kBucket, Req(cache_.block_keys, 0, layers_), [&](const DeliveredLayer& l) {
          ++layers_seen;
          for (uint32_t b = 0; b < l.blocks.size(); ++b) {
            const DeliveredBlock& d = l.blocks[b];
            if (d.status != BlockStatus::kPresent) {
              if (!d.data.empty()) ++wrong;
              continue;
            }
            Bytes want = SyntheticLayerBytes(cache_, b, l.layer);
            if (!std::equal(d.data.begin(), d.data.end(), want.begin(), want.end())) {
              ++wrong;
            }
            ++delivered;
          }
          return Status::Ok();
        });
    finished = true;
  });
  // Wait (bounded) until the backend has served part of the request, then kill radosgw.
  for (int i = 0;
       i < 20000 && !finished && store_->client().stats().requests < requests_before + 200; ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  const bool finished_before_kill = finished;
  const uint64_t retries_before = store_->client().stats().retries;
  ASSERT_TRUE(ceph_test::KillRgw(env_).ok());
  ASSERT_TRUE(ceph_test::StartRgw(env_).ok());
  t.join();
  EXPECT_EQ(wrong, 0) << "corrupt or misplaced bytes were delivered";
  if (result.ok()) {
    EXPECT_EQ(result->corrupt_blocks, 0u);
    EXPECT_EQ(layers_seen, static_cast<int>(layers_));
  } else {
    EXPECT_NE(result.status().code(), Code::kOk);  // a clean, typed failure
  }
  if (!finished_before_kill) {
    EXPECT_GT(store_->client().stats().retries, retries_before)
        << "the kill should have hit in-flight backend requests";
  }
  std::printf(
      "fault: aggregated GET %s after radosgw restart; %d block-layers delivered, "
      "%llu backend retries\n",
      result.ok() ? "completed" : result.status().ToString().c_str(), delivered.load(),
      static_cast<unsigned long long>(store_->client().stats().retries));
  // After the restart everything is there and byte-exact.
  auto again = Get(Req(cache_.block_keys, 0, layers_));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ASSERT_EQ(again->size(), layers_);
  for (const auto& g : *again) {
    for (uint32_t b = 0; b < blocks_; ++b) {
      ASSERT_EQ(g.status[b], BlockStatus::kPresent);
      ASSERT_EQ(g.data[b], SyntheticLayerBytes(cache_, b, g.layer));
    }
  }
}

// Fault: radosgw killed and restarted while a PUT streams into the backend. Commit either
// succeeds (then the object reads back exactly) or fails (then no object, or the previous one, is
// visible): never a torn object.
TEST_F(ObjcacheCeph, RgwKilledAndRestartedMidPut) {
  Start(1, 1);
  Bytes data(24 << 20);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
  std::atomic<bool> finished{false};
  Result<store::ObjectMeta> committed = Status(Code::kInternal, "not run");
  const uint64_t requests_before = store_->client().stats().requests;
  std::thread t([&] {
    auto w = store_->Put(kBucket, "big-object", {});
    if (!w.ok()) {
      committed = w.status();
    } else {
      Status s;
      for (size_t off = 0; off < data.size() && s.ok(); off += 1 << 20) {
        s = (*w)->Write(ByteSpan(data.data() + off, 1 << 20));
      }
      committed = s.ok() ? (*w)->Commit() : Result<store::ObjectMeta>(s);
    }
    finished = true;
  });
  for (int i = 0; i < 20000 && !finished && store_->client().stats().requests < requests_before + 2;
       ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  ASSERT_TRUE(ceph_test::KillRgw(env_).ok());
  ASSERT_TRUE(ceph_test::StartRgw(env_).ok());
  t.join();
  auto head = store_->Head(kBucket, "big-object");
  if (committed.ok()) {
    ASSERT_TRUE(head.ok()) << head.status().ToString();
    EXPECT_EQ(head->size, data.size());
    auto r = store_->Open(kBucket, "big-object");
    ASSERT_TRUE(r.ok());
    Bytes back(data.size());
    auto n = (*r)->ReadAt(0, back);
    ASSERT_TRUE(n.ok());
    EXPECT_EQ(back, data);
  } else {
    EXPECT_TRUE(head.status().Is(store::StoreError::kNoSuchKey)) << head.status().ToString();
  }
  std::printf("fault: PUT %s\n",
              committed.ok() ? "committed" : committed.status().ToString().c_str());
}

}  // namespace
}  // namespace kvcs::objcache
