// The ObjectCache aggregated extension with radosgw behind `kvcs store`: the S3 server and the
// objcache Service (in-process, ephemeral port) over S3BackendStore, driven by objcache::Client.
// The SAME cases tests/objcache runs on local disk (tests/objcache_common/extension_cases.h),
// instantiated here with a radosgw backend, plus backend faults: radosgw killed and restarted
// mid-request. Each test states the behaviour it pins.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "ceph_env.h"
#include "extension_cases.h"
#include "objcache/block_layout.h"
#include "s3client/backend_store.h"

namespace kvcs::objcache {
namespace {

// S3BackendStore over the fixture's radosgw, under a bucket prefix of its own; corruption is a
// PUT of altered bytes straight to radosgw. The destructor empties and removes its bucket.
struct CephBackend final : ExtensionBackend {
  CephBackend() {
    auto e = ceph_test::LoadCephEnv();
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    if (!e.ok()) return;
    env = *e;
    s3client::S3BackendOptions so;
    so.client = ceph_test::RgwClientOptions(env);
    so.client.parallel_gets = 32;
    static int n = 0;
    so.bucket_prefix = "oc" + std::to_string(::getpid()) + "-" + std::to_string(n++) + "-";
    prefix = so.bucket_prefix;
    auto st = s3client::S3BackendStore::Open(so);
    EXPECT_TRUE(st.ok()) << st.status().ToString();
    if (st.ok()) s3 = std::move(*st);
  }
  ~CephBackend() override {
    if (!s3 || !ceph_test::RgwAnswers(env)) return;
    const std::string bucket = kDefaultKvBucket;
    for (int i = 0; i < 40; ++i) {
      auto l = s3->List(bucket, {});
      if (!l.ok() || l->objects.empty()) break;
      for (const auto& o : l->objects) (void)s3->Delete(bucket, o.key);
    }
    (void)s3->DeleteBucket(bucket);
  }
  store::ObjectStore& store() override { return *s3; }
  void Corrupt(const std::string& bucket, const std::string& key, const Bytes& stored,
               size_t offset) override {
    Bytes bad = stored;
    bad[offset] ^= 0x40;
    auto r = s3->client().PutObject(prefix + bucket, key, bad, {});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  ceph_test::CephEnv env;
  std::string prefix;
  std::unique_ptr<s3client::S3BackendStore> s3;
};

// The cases also run with the block bytes written into a shared buffer (same-host delivery, the
// reads going to radosgw through S3BackendStore::ReadMany).
INSTANTIATE_TEST_SUITE_P(
    Ceph, ExtensionCases,
    ::testing::Values(ExtensionBackendParam{"Ceph", [] { return std::make_unique<CephBackend>(); }},
                      ExtensionBackendParam{"CephSharedMemory",
                                            [] { return std::make_unique<CephBackend>(); }, true}),
    BackendName);
INSTANTIATE_TEST_SUITE_P(Ceph, SmallWindowCases,
                         ::testing::Values(ExtensionBackendParam{
                             "Ceph", [] { return std::make_unique<CephBackend>(); }}),
                         BackendName);

class ObjcacheCephFaults : public ExtensionFixture {
 protected:
  CephBackend* ceph() { return static_cast<CephBackend*>(backend_.get()); }
};

// Fault: radosgw is killed (SIGKILL) while an aggregated GET is being served and restarted at
// once. The request either completes or fails cleanly; every block handed to the callback is
// byte-exact (nothing corrupt is ever delivered); afterwards the same request succeeds in full.
// The kill lands mid-request by construction: the callback holds layer 0 until radosgw is dead,
// so the server, blocked on its socket, cannot have read the last window (layers 24..31 of 32 x
// 32 x 64 KiB = 4 windows of 16 MiB, more than the socket buffers hold) before it.
TEST_F(ObjcacheCephFaults, RgwKilledAndRestartedMidAggregateGet) {
  Start(std::make_unique<CephBackend>(), 32, 32);
  PutAll();
  std::atomic<bool> finished{false}, killed{false};
  std::atomic<int> wrong{0}, delivered{0}, layers_seen{0};
  Result<AggregateStats> result = Status(Code::kInternal, "not run");
  std::thread t([&] {
    Client c(Options(s3::kDevSecretKey));
    result =
        c.AggregateGet(kBucket, Req(cache_.block_keys, 0, layers_), [&](const DeliveredLayer& l) {
          if (++layers_seen == 1) {
            for (int i = 0; i < 100000 && !killed; ++i) {  // bounded: 20 s
              std::this_thread::sleep_for(std::chrono::microseconds(200));
            }
          }
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
  // Wait (bounded) until layer 0 reached the callback (which then waits), then kill radosgw.
  for (int i = 0; i < 100000 && !finished && layers_seen == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  const bool finished_before_kill = finished;
  EXPECT_FALSE(finished_before_kill);
  const uint64_t retries_before = ceph()->s3->client().stats().retries;
  const Status kill = ceph_test::KillRgw(ceph()->env);
  killed = true;
  const Status restart = ceph_test::StartRgw(ceph()->env);
  t.join();  // before any ASSERT: the thread must not outlive this frame
  ASSERT_TRUE(kill.ok()) << kill.ToString();
  ASSERT_TRUE(restart.ok()) << restart.ToString();
  EXPECT_EQ(wrong, 0) << "corrupt or misplaced bytes were delivered";
  if (result.ok()) {
    EXPECT_EQ(result->corrupt_blocks, 0u);
    EXPECT_EQ(layers_seen, static_cast<int>(layers_));
  } else {
    EXPECT_NE(result.status().code(), Code::kOk);  // a clean, typed failure
  }
  if (!finished_before_kill) {
    EXPECT_GT(ceph()->s3->client().stats().retries, retries_before)
        << "the kill should have hit in-flight backend requests";
  }
  std::printf(
      "fault: aggregated GET %s after radosgw restart; %d block-layers delivered, "
      "%llu backend retries\n",
      result.ok() ? "completed" : result.status().ToString().c_str(), delivered.load(),
      static_cast<unsigned long long>(ceph()->s3->client().stats().retries));
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
TEST_F(ObjcacheCephFaults, RgwKilledAndRestartedMidPut) {
  Start(std::make_unique<CephBackend>(), 1, 1);
  Bytes data(24 << 20);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
  std::atomic<bool> finished{false};
  Result<store::ObjectMeta> committed = Status(Code::kInternal, "not run");
  const uint64_t requests_before = ceph()->s3->client().stats().requests;
  std::thread t([&] {
    auto w = ceph()->s3->Put(kBucket, "big-object", {});
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
  for (int i = 0;
       i < 20000 && !finished && ceph()->s3->client().stats().requests < requests_before + 2; ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  ASSERT_TRUE(ceph_test::KillRgw(ceph()->env).ok());
  ASSERT_TRUE(ceph_test::StartRgw(ceph()->env).ok());
  t.join();
  auto head = ceph()->s3->Head(kBucket, "big-object");
  if (committed.ok()) {
    ASSERT_TRUE(head.ok()) << head.status().ToString();
    EXPECT_EQ(head->size, data.size());
    auto r = ceph()->s3->Open(kBucket, "big-object");
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
