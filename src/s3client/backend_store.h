// S3BackendStore: a store::ObjectStore kept in an existing S3 service (Ceph RGW, MinIO, AWS ...)
// through S3Client, so that `kvcs store` (its S3 API and the aggregated extension) can run in
// front of a distributed object store. docs/protocols/s3-backend.md has the design.
//
// Mapping (path-style): front bucket B is backend bucket bucket_prefix + B; keys are unchanged.
//   Put (ObjectWriter)  small objects: one PUT at Commit (atomic in S3); above
//                       multipart_threshold: a multipart upload whose parts stream out as the
//                       writer fills part_bytes, completed at Commit (S3 publishes atomically),
//                       aborted if the writer is dropped or a check fails.
//   Open / ReadAt       ONE range GET of the first open_prefix_bytes pins the ETag and gives the
//                       metadata (Content-Range's total is the size) and the first bytes, which
//                       the reader keeps (a KVSP container's header+table: the aggregated
//                       extension's probe costs no second request). Every later ReadAt is a range
//                       GET with If-Match on that ETag, so a reader never mixes two versions: if
//                       the key is overwritten, reads fail (kIo, "object changed") instead of
//                       returning other bytes.
//   OpenMany            the same opens run concurrently on the client's workers.
//   ReadMany            parallel range GETs (S3Client::ParallelGet, bounded concurrency): layer l
//                       of N blocks is gathered by N concurrent range reads; adjacent or
//                       overlapping ranges of one object in a batch are coalesced into one GET.
//   Multipart API       passes through (parts are buffered up to kMaxBufferedPartBytes).
//
// Verification: Commit stores the object's SHA-256 in x-amz-meta-kvcs-sha256 (for multipart
// writes when it is known up front, i.e. PutOptions::expected_sha256); HEAD returns it as
// ObjectMeta::sha256 so whole-object readers verify exactly as with the local store. Payloads are
// sent with their SHA-256 signed and Content-MD5, so the service refuses altered bytes; range GETs
// check Content-Range, length and ETag. The aggregated extension verifies each layer against the
// KVSP container's layer digests, so a corrupt range is never delivered.
//
// Code: this class (bucket mapping, the store operations, ReadMany's coalescing) and its parts:
// BackendReader (backend_reader.h: the pinned reader and its read-ahead), BackendWriter
// (backend_writer.h: one PUT or a streamed multipart upload), BackendPartWriter
// (backend_part_writer.h: one front-end part), and backend_mapping.h (errors, metadata and PUT
// options between the client's types and the store's).
//
// Thread-safety: all methods are thread-safe (the client is). Writers: one thread at a time.
#ifndef KVCS_S3CLIENT_BACKEND_STORE_H_
#define KVCS_S3CLIENT_BACKEND_STORE_H_

#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "s3client/backend_mapping.h"  // kSha256MetaName, ToStoreStatus
#include "s3client/s3_client.h"
#include "store/object_store.h"

namespace kvcs::s3client {

// A multipart part written through PutPart is buffered before it is sent (S3 needs its length
// and we sign its SHA-256); clients use 5–64 MiB parts; larger ones are refused (kEntityTooLarge).
inline constexpr uint64_t kMaxBufferedPartBytes = 128ull << 20;
// Pages fetched by ListParts / ListMultipartUploads (10 × 1,000 = S3's 10,000-part maximum).
inline constexpr int kMaxListPages = 10;
// ReadMany coalesces adjacent ranges of one object into GETs of at most this many bytes: large
// enough to merge a block's consecutive layers (64 KiB..1 MiB each), small enough that the
// scratch buffer of one GET stays modest (and below kMaxRangeGetBytes, so it is one request).
inline constexpr uint64_t kMaxCoalescedGetBytes = 8ull << 20;
// Bounds on the read-ahead options (a factor past 16 only adds memory; 4 GiB of kept bytes is far
// beyond any sensible budget).
inline constexpr uint32_t kMaxReadAheadFactor = 16;
inline constexpr uint64_t kMaxReadAheadBudget = 4ull << 30;
// Open keeps at most this many first bytes of an object (see S3BackendOptions::open_prefix_bytes).
inline constexpr size_t kMaxOpenPrefixBytes = 1 << 20;

struct S3BackendOptions {
  ClientOptions client;
  // Backend bucket = bucket_prefix + front bucket (lets several stores share one service).
  std::string bucket_prefix;
  // Objects up to this size go in one PUT; larger ones as multipart (S3 limits one PUT to 5 GiB;
  // 16 MiB keeps one request's memory small while KV containers of 2 MiB stay single PUTs).
  uint64_t multipart_threshold = 16ull << 20;
  // Part size of multipart writes (S3 minimum 5 MiB).
  uint64_t part_bytes = 8ull << 20;
  // Open reads the object's first bytes with one range GET instead of a HEAD (the same round
  // trip) and keeps them for reads inside them. 4 KiB holds a KVSP container's header and table
  // (objcache's kContainerProbeBytes); 0 opens with HEAD and keeps nothing. At most
  // kMaxOpenPrefixBytes.
  size_t open_prefix_bytes = 4096;
  // ReadMany read-ahead: a GET that continues a reader's previous read also fetches up to
  // read_ahead_factor times its length beyond it (1x, 2x, .. growing with the run of consecutive
  // reads), kept by the reader for its next reads (a block's next layers): with 3, 32 per-layer
  // GETs of a block become 10. 0 disables. The bytes all
  // readers keep are bounded by read_ahead_budget (when it is spent, reads fetch only what they
  // ask). The first read of a reader never reads ahead, so the first layer is not delayed.
  uint32_t read_ahead_factor = 3;
  uint64_t read_ahead_budget = 64ull << 20;
  // Conditional PUTs (If-None-Match: *, one If-Match) are passed to the service, which must
  // evaluate them atomically (AWS S3 does; so does Ceph radosgw 16.2, tested). Off: they are
  // refused (NotImplemented), as a service that ignored the headers would silently overwrite.
  bool conditional_writes = false;
};

class S3BackendStore final : public store::ObjectStore {
 public:
  // Creates the client and checks that the service answers with these credentials (one
  // ListBuckets). Fails with the client's typed error otherwise.
  static Result<std::unique_ptr<S3BackendStore>> Open(S3BackendOptions options);
  ~S3BackendStore() override;

  S3Client& client();

  Status CreateBucket(std::string_view bucket) override;
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
  // Ranges ReadMany served without a GET of their own (coalesced into another range's GET).
  uint64_t coalesced_reads() const { return coalesced_gets_.load(std::memory_order_relaxed); }
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

  struct Impl;

 private:
  explicit S3BackendStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  std::atomic<uint64_t> coalesced_gets_{0};
};

}  // namespace kvcs::s3client

#endif  // KVCS_S3CLIENT_BACKEND_STORE_H_
