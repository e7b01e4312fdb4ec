// The shared extension cases (extension_cases.h) on the embedded default: a LocalStore in a
// temporary directory. Corruption flips the byte in the object's file on disk.
#include <filesystem>
#include <fstream>

#include "common/crypto.h"
#include "extension_cases.h"
#include "objcache/aggregated_put_handler.h"
#include "objcache/block_layout.h"
#include "store/local_store.h"

namespace kvcs::objcache {
namespace {

namespace fs = std::filesystem;

class LocalDiskBackend final : public ExtensionBackend {
 public:
  LocalDiskBackend() {
    char tmpl[] = "/tmp/kvcs-objcache-cases-XXXXXX";
    EXPECT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    store::LocalStoreOptions so;
    so.sync = false;
    auto st = store::LocalStore::Open(dir_, so);
    EXPECT_TRUE(st.ok()) << st.status().ToString();
    if (st.ok()) store_ = std::move(*st);
  }
  ~LocalDiskBackend() override {
    store_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  store::ObjectStore& store() override { return *store_; }
  // Finds the one file holding the bytes around `offset` and flips that byte in place.
  void Corrupt(const std::string&, const std::string&, const Bytes& stored,
               size_t offset) override {
    const size_t from = offset >= 100 ? offset - 100 : 0;
    const std::string needle(stored.begin() + static_cast<ptrdiff_t>(from),
                             stored.begin() + static_cast<ptrdiff_t>(from + 164));
    int hits = 0;
    for (const auto& e : fs::recursive_directory_iterator(dir_)) {
      if (!e.is_regular_file()) continue;
      std::ifstream in(e.path(), std::ios::binary);
      std::string all((std::istreambuf_iterator<char>(in)), {});
      auto pos = all.find(needle);
      if (pos == std::string::npos) continue;
      std::fstream io(e.path(), std::ios::binary | std::ios::in | std::ios::out);
      io.seekp(static_cast<std::streamoff>(pos + offset - from));
      char c = static_cast<char>(all[pos + offset - from] ^ 0x40);
      io.write(&c, 1);
      ++hits;
    }
    ASSERT_EQ(hits, 1);
  }

 private:
  std::string dir_;
  std::unique_ptr<store::LocalStore> store_;
};

// Local disk only (a 64 MiB container is too slow a case for a remote backend).
class LocalDiskPut : public ExtensionFixture {
 protected:
  void SetUp() override { Start(std::make_unique<LocalDiskBackend>(), 2, 2); }
};

// The aggregated GET, PUT and existence query are the bucket owner's alone (s3/access.h): a
// second user's key, validly signed, gets 403 AccessDenied on each and stores nothing. Local disk
// only: the S3 backend records no owner (docs/protocols/s3-api.md "Ownership").
TEST_F(LocalDiskPut, SecondUserIsRefusedOnAggregatedGetAndPut) {
  ClientOptions o = Options(kOtherSecretKey);
  o.access_key = kOtherAccessKey;
  Client other(o);
  std::vector<ByteSpan> spans(containers_.begin(), containers_.end());
  auto put = other.AggregatePut(kBucket, cache_.scope_id, spans, false);
  // Refused: the client sees the 403 AccessDenied, or a broken pipe when the server's answer
  // (sent before the body is read) closes the connection first. Either way nothing is stored.
  ASSERT_FALSE(put.ok());
  for (uint32_t b = 0; b < 2; ++b) {
    EXPECT_TRUE(
        backend_->store().Head(kBucket, BlockKey(b)).status().Is(store::StoreError::kNoSuchKey));
  }
  PutAll();
  auto get = other.AggregateGet(kBucket, Req(cache_.block_keys, 0, 2),
                                [](const DeliveredLayer&) { return Status::Ok(); });
  EXPECT_EQ(get.status().code(), Code::kPermissionDenied) << get.status().ToString();
  auto exists = other.AggregateExists(kBucket, Req(cache_.block_keys, 0, 2));
  ASSERT_FALSE(exists.ok());
  EXPECT_NE(exists.status().message().find("HTTP 403"), std::string::npos)
      << exists.status().ToString();
  auto raw = other.Request("GET", "/" + kBucket + "/" + BlockKey(0), "", {});
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(raw->status, 403);
  // The owner still reads everything.
  auto mine = Get(Req(cache_.block_keys, 0, 2));
  ASSERT_TRUE(mine.ok()) << mine.status().ToString();
  EXPECT_EQ(mine->size(), 2u);
}

// An aggregated PUT holds at most kMaxPutInFlightBytes of container buffers; a container larger
// than that is read only once everything before it is done and its buffers freed, and is then
// processed alone: a small one, one over the bound, a small one are all stored whole.
TEST_F(LocalDiskPut, ContainerOverTheInFlightBoundIsStoredAlone) {
  auto big_cache = MakeSyntheticCache(1, 1024, 21);
  ASSERT_TRUE(big_cache.ok());
  ASSERT_EQ(big_cache->scope_id, cache_.scope_id);  // one PUT carries one scope
  auto big = MakeSyntheticContainer(*big_cache, 0);
  ASSERT_TRUE(big.ok());
  ASSERT_GT(big->size(), kMaxPutInFlightBytes);
  std::vector<ByteSpan> spans = {containers_[0], *big, containers_[1]};
  auto r = client_->AggregatePut(kBucket, cache_.scope_id, spans, false);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->stored, 3u);
  const std::vector<std::string> keys = {
      BlockKey(0),
      BlockObjectKey(big_cache->scope_id, big_cache->compat_id, big_cache->block_keys[0], "raw"),
      BlockKey(1)};
  for (size_t i = 0; i < spans.size(); ++i) {
    ASSERT_EQ(r->blocks[i].key, keys[i]);
    auto meta = backend_->store().Head(kBucket, keys[i]);
    ASSERT_TRUE(meta.ok()) << i;
    EXPECT_EQ(meta->size, spans[i].size()) << i;
    EXPECT_EQ(meta->sha256, Sha256::Hash(spans[i])) << i;
  }
}

}  // namespace

std::unique_ptr<ExtensionBackend> MakeLocalDiskBackend() {
  return std::make_unique<LocalDiskBackend>();
}

namespace {

// Every case twice: the block bytes in the HTTP body, and written into a shared buffer.
const auto kLocalDisk = ::testing::Values(
    ExtensionBackendParam{"LocalDisk", [] { return std::make_unique<LocalDiskBackend>(); }},
    ExtensionBackendParam{"LocalDiskSharedMemory",
                          [] { return std::make_unique<LocalDiskBackend>(); }, true});
INSTANTIATE_TEST_SUITE_P(LocalDisk, ExtensionCases, kLocalDisk, BackendName);
INSTANTIATE_TEST_SUITE_P(LocalDisk, SmallWindowCases, kLocalDisk, BackendName);

}  // namespace
}  // namespace kvcs::objcache
