// The ObjectCache extension's end-to-end behaviours, written once and run against every storage
// backend: the S3 server (in-process, ephemeral port) with the objcache Service in front of an
// ObjectStore supplied by an ExtensionBackend, driven by objcache::Client over 127.0.0.1.
//
// A backend says how to make its store and how to corrupt a stored object behind the server's
// back. Each test binary instantiates the parameterised suite with its backends:
//   INSTANTIATE_TEST_SUITE_P(LocalDisk, ExtensionCases,
//                            ::testing::Values(ExtensionBackendParam{"LocalDisk", MakeLocal}));
// tests/objcache (local disk, local_disk_cases.cc) and tests/ceph (radosgw through
// S3BackendStore) run the same cases. Backend-specific tests (faults) derive from
// ExtensionFixture and call Start() themselves.
//
// Not thread-safe (gtest fixtures); the server runs on its own thread.
#ifndef KVCS_TESTS_OBJCACHE_COMMON_EXTENSION_CASES_H_
#define KVCS_TESTS_OBJCACHE_COMMON_EXTENSION_CASES_H_

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "objcache/client.h"
#include "objcache/service.h"
#include "objcache/synthetic.h"
#include "s3/server.h"
#include "store/object_store.h"

namespace kvcs::objcache {

// A storage backend under test. Lives for one test; its destructor removes what it stored.
class ExtensionBackend {
 public:
  virtual ~ExtensionBackend() = default;
  virtual store::ObjectStore& store() = 0;
  // Replaces the stored bytes of `key` in `bucket` (whose content is `stored`) by the same bytes
  // with the byte at `offset` flipped, bypassing the S3 server and the store's write path.
  virtual void Corrupt(const std::string& bucket, const std::string& key, const Bytes& stored,
                       size_t offset) = 0;
};

struct ExtensionBackendParam {
  std::string name;
  std::function<std::unique_ptr<ExtensionBackend>()> make;
  // Same-host delivery: the Service listens on a Unix socket and the client has the block bytes
  // written into a shared buffer (every case then runs through that path).
  bool shm = false;
};
inline std::string BackendName(const ::testing::TestParamInfo<ExtensionBackendParam>& info) {
  return info.param.name;
}
// The embedded default backend: a LocalStore in a fresh temporary directory (removed with it).
// Defined by kvcs_objcache_cases_local (local_disk_cases.cc).
std::unique_ptr<ExtensionBackend> MakeLocalDiskBackend();

// What gtest prints for a parameter (the name, rather than the struct's bytes).
inline void PrintTo(const ExtensionBackendParam& p, std::ostream* os) { *os << p.name; }

// Server + Service + client over one backend, with the synthetic cache's containers at hand.
class ExtensionFixture : public ::testing::Test {
 protected:
  // Starts the server over `backend` and makes a blocks x layers synthetic cache (not stored).
  // With `shm`, the Service also listens on a Unix socket (shm_path_) and Options() makes
  // clients that use it with a 4 MiB buffer of 2 slots.
  void Start(std::unique_ptr<ExtensionBackend> backend, uint32_t blocks, uint32_t layers,
             ServiceOptions service_options = {}, bool shm = false);
  void TearDown() override;

  ClientOptions Options(const std::string& secret) const;
  // One aggregated PUT of every container (with the prefix record).
  void PutAll();
  AggregateRequest Req(std::vector<Digest> keys, uint32_t first, uint32_t count,
                       Components c = Components::kKV) const;
  // Every delivered layer, copied; and per block the bytes the client's block callback got before
  // the layer's callback (empty if it was not called). Get fails if the block callback ran twice
  // for a block or after its layer's callback.
  struct Got {
    uint16_t layer;
    std::vector<BlockStatus> status;
    std::vector<Bytes> data;
    std::vector<Bytes> verified;
  };
  Result<std::vector<Got>> Get(const AggregateRequest& r, AggregateStats* stats = nullptr);
  Bytes K(uint32_t block, uint32_t layer) const;
  Bytes V(uint32_t block, uint32_t layer) const;
  std::string BlockKey(uint32_t block) const;
  // Flips one byte inside (block, layer)'s stored bytes, through the backend.
  void CorruptStored(uint32_t block, uint32_t layer);

  static const std::string kBucket;
  // A second user's key (its own user, owner of nothing): refused on kBucket.
  static constexpr char kOtherAccessKey[] = "objcache-other-user";
  static constexpr char kOtherSecretKey[] = "objcache-other-secret";
  std::unique_ptr<ExtensionBackend> backend_;
  uint32_t blocks_ = 0, layers_ = 0;
  std::string shm_path_;  // empty unless started with shm
  std::unique_ptr<s3::Server> server_;
  std::unique_ptr<Service> service_;
  std::thread runner_;
  std::unique_ptr<Client> client_;
  SyntheticCache cache_;
  std::vector<Bytes> containers_;
};

// The shared cases: 8 blocks x 4 layers over GetParam()'s backend.
class ExtensionCases : public ExtensionFixture,
                       public ::testing::WithParamInterface<ExtensionBackendParam> {
 protected:
  static constexpr uint32_t kBlocks = 8;
  static constexpr uint32_t kLayers = 4;
  void SetUp() override {
    Start(GetParam().make(), kBlocks, kLayers, MakeServiceOptions(), GetParam().shm);
  }
  virtual ServiceOptions MakeServiceOptions() { return ServiceOptions{}; }
};

// The same cases' data with service windows far smaller than a layer.
class SmallWindowCases : public ExtensionCases {
 protected:
  ServiceOptions MakeServiceOptions() override {
    ServiceOptions o;
    o.window_bytes = 3 * 64 * 1024 + 100;  // three block-layers and a bit: cuts inside layers
    return o;
  }
};

}  // namespace kvcs::objcache

#endif  // KVCS_TESTS_OBJCACHE_COMMON_EXTENSION_CASES_H_
