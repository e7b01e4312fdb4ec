// RadosStore: the store::ObjectStore kept directly in a Ceph RADOS pool through librados (no
// radosgw), so `kvcs store` serves its S3 API and the aggregated extension from RADOS at RADOS
// speed, and any number of `kvcs store` processes on one pool serve the same buckets and objects
// (they keep no state of their own). docs/protocols/rados-backend.md is the design.
//
//   Layout          rados_layout.h: a bucket registry in omap, a bucket index sharded over N omap
//                   objects by key hash, every written version under a fresh random name,
//                   striped over stripe_bytes objects, metadata in xattrs of stripe 0.
//   Put             RadosWriter writes the version, then the index entry is compare-and-set
//                   (omap cmp + set in one op): the write is visible whole or not at all, at once
//                   to every store; the replaced version's objects are removed after.
//   Open / ReadAt   one omap read gives the version (RadosReader); reads go straight to its
//                   stripe objects, which never change.
//   OpenMany        the index reads of all keys in flight at once.
//   ReadMany        every range cut into per-stripe pieces; the pieces of one RADOS object go in
//                   ONE read op (adjacent layers of a block: one request), many ops in flight
//                   within max_reads_in_flight and max_read_bytes_in_flight.
//   List            MergeShardLists over the index shards (rados_list_merge.h).
//   Multipart       parts are versions of their own; Complete publishes an index entry whose
//                   segments ARE the parts: the data is never copied.
//   Copy            reads and writes the bytes (a new version; no sharing between keys).
//   ACLs            BucketInfo::acl in the bucket record, ObjectMeta::acl in the index entry
//                   (SetBucketAcl / SetObjectAcl: compare-and-set of the record; no data moves).
//   Conditions      PutOptions::condition is checked against the entry the publishing
//                   compare-and-set replaces: of two If-None-Match "*" writers, one wins.
//
// Thread-safety: all methods are thread-safe. Writers: one thread at a time.
#ifndef KVCS_RADOS_STORE_RADOS_STORE_H_
#define KVCS_RADOS_STORE_RADOS_STORE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "rados_store/rados_io.h"
#include "rados_store/rados_layout.h"
#include "store/object_store.h"

namespace kvcs::rados_store {

// Bounds of the options.
inline constexpr uint64_t kMinStripeBytes = 64 << 10;
inline constexpr uint64_t kMaxStripeBytes = 64ull << 20;
inline constexpr size_t kMaxReadsInFlight = 1024;
inline constexpr uint64_t kMaxReadBytesInFlight = 4ull << 30;

struct RadosStoreOptions {
  RadosConnectOptions connect;
  // Index shards of buckets this store creates (a bucket keeps the count it was made with).
  uint32_t index_shards = kDefaultIndexShards;
  // Stripe size of new versions: 4 MiB keeps a KV container (a few MiB) in one RADOS object and
  // stays far below osd_max_object_size (128 MiB) and osd_max_write_size (90 MiB).
  uint64_t stripe_bytes = 4ull << 20;
  // ReadMany's budget: read ops in flight, and their bytes.
  size_t max_reads_in_flight = 64;
  uint64_t max_read_bytes_in_flight = 64ull << 20;
};

class RadosStore final : public store::ObjectStore {
 public:
  // Connects to the cluster and opens the pool (which must exist).
  static Result<std::unique_ptr<RadosStore>> Open(RadosStoreOptions options);
  ~RadosStore() override;

  // Read ops ReadMany sent, and range pieces that shared an op with another piece.
  uint64_t read_ops() const { return read_ops_.load(std::memory_order_relaxed); }
  uint64_t coalesced_reads() const { return coalesced_.load(std::memory_order_relaxed); }
  RadosIo& io() { return *io_; }

  Status CreateBucket(std::string_view bucket) override;
  Status CreateBucketOwnedBy(std::string_view bucket, std::string_view owner) override;
  bool RecordsOwners() const override { return true; }
  Status SetBucketAcl(std::string_view bucket, std::string_view acl) override;
  Status DeleteBucket(std::string_view bucket) override;
  Result<store::BucketInfo> HeadBucket(std::string_view bucket) override;
  Result<std::vector<store::BucketInfo>> ListBuckets() override;
  Result<std::unique_ptr<store::ObjectWriter>> Put(std::string_view bucket, std::string_view key,
                                                   store::PutOptions options) override;
  Result<std::shared_ptr<const store::ObjectReader>> Open(std::string_view bucket,
                                                          std::string_view key) override;
  std::vector<Result<std::shared_ptr<const store::ObjectReader>>> OpenMany(
      std::string_view bucket, std::span<const std::string> keys) override;
  Result<store::ObjectMeta> Head(std::string_view bucket, std::string_view key) override;
  Status SetObjectAcl(std::string_view bucket, std::string_view key, std::string_view acl) override;
  Status Delete(std::string_view bucket, std::string_view key) override;
  Result<store::ListResult> List(std::string_view bucket,
                                 const store::ListOptions& options) override;
  Result<store::ObjectMeta> Copy(std::string_view src_bucket, std::string_view src_key,
                                 std::string_view dst_bucket, std::string_view dst_key,
                                 std::optional<store::PutOptions> options) override;
  void ReadMany(std::span<store::RangeRead> ranges) override;
  Result<std::string> CreateMultipart(std::string_view bucket, std::string_view key,
                                      store::PutOptions options) override;
  Result<std::unique_ptr<store::ObjectWriter>> PutPart(std::string_view bucket,
                                                       std::string_view key,
                                                       std::string_view upload_id, int part_number,
                                                       store::PutOptions options) override;
  Result<std::vector<store::PartInfo>> ListParts(std::string_view bucket, std::string_view key,
                                                 std::string_view upload_id) override;
  Result<store::ObjectMeta> CompleteMultipart(std::string_view bucket, std::string_view key,
                                              std::string_view upload_id,
                                              std::span<const store::CompletePart> parts) override;
  Status AbortMultipart(std::string_view bucket, std::string_view key,
                        std::string_view upload_id) override;
  Result<std::vector<store::UploadInfo>> ListMultipartUploads(std::string_view bucket,
                                                              std::string_view prefix) override;

 private:
  struct Upload {
    std::string raw;
    UploadRecord record;
  };
  RadosStore(RadosStoreOptions options, std::shared_ptr<RadosIo> io);
  Result<BucketRecord> Bucket(std::string_view bucket);
  // The index entry of `key` (raw value and decoded), nullopt when absent.
  Result<std::optional<std::pair<std::string, ObjectRecord>>> Entry(const BucketRecord& b,
                                                                    std::string_view key);
  // Compare-and-set of `key`'s index entry to `value` (empty: remove), retried on conflicts,
  // when `condition` holds against the entry it replaces (kPreconditionFailed / kNoSuchKey
  // otherwise); removes the replaced version's objects.
  Status Publish(const BucketRecord& b, std::string_view key, const std::string& value,
                 const store::WriteCondition& condition = {});
  Result<Upload> GetUpload(const BucketRecord& b, std::string_view key, std::string_view upload_id);
  Result<std::vector<PartRecord>> Parts(const BucketRecord& b, std::string_view upload_id);
  // Every omap entry of `oid` whose key begins with `prefix` (paged), at most `limit`.
  Result<std::vector<std::pair<std::string, std::string>>> OmapAll(const std::string& oid,
                                                                   const std::string& prefix,
                                                                   size_t limit,
                                                                   store::StoreError missing);

  const RadosStoreOptions options_;
  const std::shared_ptr<RadosIo> io_;
  std::atomic<uint64_t> read_ops_{0}, coalesced_{0};
};

}  // namespace kvcs::rados_store

#endif  // KVCS_RADOS_STORE_RADOS_STORE_H_
