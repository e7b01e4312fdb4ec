// The ObjectCache aggregated extension with RADOS behind `kvcs store`: the S3 server and the
// objcache Service (in-process, ephemeral port) over RadosStore on the fixture's monitor and OSD.
// The SAME cases tests/objcache runs on local disk and tests/ceph on radosgw
// (tests/objcache_common/extension_cases.h), plus the RADOS faults: the OSD stopped mid-request,
// (a full pool is not testable on this fixture: docs/protocols/rados-backend.md "Faults"). Each
// test states the behaviour it pins.
#include <gtest/gtest.h>
#include <rados/librados.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "extension_cases.h"
#include "objcache/block_layout.h"
#include "rados_env.h"
#include "rados_store/rados_reader.h"
#include "rados_store/rados_store.h"

namespace kvcs::objcache {
namespace {

// RadosStore in a namespace of its own; corruption rewrites one byte of the stripe object that
// holds it, behind the store's back. The destructor removes every object of the namespace.
struct RadosBackend final : ExtensionBackend {
  explicit RadosBackend(int op_timeout_s = 10) {
    auto e = ceph_test::LoadRadosEnv();
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    if (!e.ok()) return;
    env = *e;
    rados_store::RadosStoreOptions o =
        ceph_test::RadosTestOptions(env, ceph_test::UniqueNamespace("oc"));
    o.connect.op_timeout_s = op_timeout_s;
    auto st = rados_store::RadosStore::Open(o);
    EXPECT_TRUE(st.ok()) << st.status().ToString();
    if (st.ok()) rados = std::move(*st);
  }
  ~RadosBackend() override {
    if (rados) (void)rados->io().RemoveAll(ceph_test::ObjectsIn(rados->io()));
  }
  store::ObjectStore& store() override { return *rados; }
  void Corrupt(const std::string& bucket, const std::string& key, const Bytes& stored,
               size_t offset) override {
    auto r = rados->Open(bucket, key);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const auto* reader = dynamic_cast<const rados_store::RadosReader*>(r->get());
    ASSERT_NE(reader, nullptr);
    std::vector<rados_store::RadosReader::Piece> pieces;
    reader->Locate(offset, 1, &pieces);
    ASSERT_EQ(pieces.size(), 1u);
    const char bad = static_cast<char>(stored[offset] ^ 0x40);
    ASSERT_EQ(rados_write(rados->io().ioctx(), pieces[0].oid.c_str(), &bad, 1, pieces[0].offset),
              0);
  }

  ceph_test::RadosEnv env;
  std::unique_ptr<rados_store::RadosStore> rados;
};

// Every case with the bytes in the HTTP body and written into a shared buffer (ReadMany from
// RADOS straight into the client's memory).
INSTANTIATE_TEST_SUITE_P(
    Rados, ExtensionCases,
    ::testing::Values(ExtensionBackendParam{"Rados",
                                            [] { return std::make_unique<RadosBackend>(); }},
                      ExtensionBackendParam{"RadosSharedMemory",
                                            [] { return std::make_unique<RadosBackend>(); }, true}),
    BackendName);
INSTANTIATE_TEST_SUITE_P(Rados, SmallWindowCases,
                         ::testing::Values(ExtensionBackendParam{
                             "Rados", [] { return std::make_unique<RadosBackend>(); }}),
                         BackendName);

class ObjcacheRadosFaults : public ExtensionFixture {
 protected:
  RadosBackend* rados() { return static_cast<RadosBackend*>(backend_.get()); }
};

// Fault: the OSD is stopped (SIGSTOP) while an aggregated GET is being served and kept stopped
// until the request ends; RADOS ops then time out (op timeout 3 s). The request fails cleanly or
// reports what it could not read; every block handed to the callback is byte-exact. Once the OSD
// runs again the same request succeeds in full. The stop lands mid-request by construction: the
// callback holds layer 0 until the OSD is stopped, and the server cannot have read every window
// of 16 blocks x 32 layers by then.
TEST_F(ObjcacheRadosFaults, OsdStoppedMidAggregateGetFailsCleanly) {
  Start(std::make_unique<RadosBackend>(3), 16, 32);
  PutAll();
  std::atomic<bool> finished{false}, paused{false};
  std::atomic<int> wrong{0}, delivered{0}, layers_seen{0};
  Result<AggregateStats> result = Status(Code::kInternal, "not run");
  std::thread t([&] {
    Client c(Options(s3::kDevSecretKey));
    result =
        c.AggregateGet(kBucket, Req(cache_.block_keys, 0, layers_), [&](const DeliveredLayer& l) {
          if (++layers_seen == 1) {
            for (int i = 0; i < 100000 && !paused; ++i) {  // bounded: 20 s
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
            if (!std::equal(d.data.begin(), d.data.end(), want.begin(), want.end())) ++wrong;
            ++delivered;
          }
          return Status::Ok();
        });
    finished = true;
  });
  for (int i = 0; i < 100000 && !finished && layers_seen == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  const bool finished_before = finished;
  const Status pause = ceph_test::PauseOsd(rados()->env);
  paused = true;
  // The OSD stays stopped until the request has ended (bounded: 60 s).
  for (int i = 0; i < 300000 && !finished; ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  const Status resume = ceph_test::ResumeOsd(rados()->env);
  t.join();
  ASSERT_TRUE(pause.ok()) << pause.ToString();
  ASSERT_TRUE(resume.ok()) << resume.ToString();
  EXPECT_FALSE(finished_before);
  EXPECT_EQ(wrong, 0) << "corrupt or misplaced bytes were delivered";
  const bool complete = result.ok() && delivered == static_cast<int>(blocks_ * layers_);
  EXPECT_FALSE(complete && layers_seen != static_cast<int>(layers_));
  std::printf("fault: aggregated GET with the OSD stopped: %s, %d of %u block-layers delivered\n",
              result.ok() ? "ended" : result.status().ToString().c_str(), delivered.load(),
              blocks_ * layers_);
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

}  // namespace
}  // namespace kvcs::objcache
