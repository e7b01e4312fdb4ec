// ObjectStore: the storage seam under the S3 server (and under objcache's aggregated reads).
//
// An ObjectStore holds buckets of immutable objects named by keys (S3 semantics: a PUT replaces
// the whole object atomically; readers see either the old or the new version, never a mix). It is
// an interface so that the embedded local-disk store (local_store.h) and, later, a Ceph/AWS S3
// backend can sit behind the same server.
//
// Streaming: objects are written through an ObjectWriter (Write chunks, then Commit) and read
// through an ObjectReader (pread-style ReadAt into a caller buffer), so nothing ever needs to hold
// a whole object in memory. An ObjectReader is a snapshot: once opened, it keeps reading the
// version it opened even if the key is overwritten or deleted meanwhile.
//
// Parallel range reads: ReadMany() reads many (reader, offset, length) ranges, possibly of
// different objects, on the store's own I/O threads and returns when all are done. objcache uses it
// to read layer l of N blocks at once.
//
// Errors: every failure is a Status whose detail() is a StoreError (use
// status.Is(StoreError::k..)).
//
// Thread-safety: all ObjectStore methods are thread-safe. An ObjectWriter must be used by one
// thread at a time. ObjectReader::ReadAt and meta() are thread-safe (pread on a shared fd).
// Blocking: every call may block on disk I/O (fsync on Commit). Callers on an event loop should
// keep that in mind (the S3 server runs several I/O threads for this reason).
#ifndef KVCS_STORE_OBJECT_STORE_H_
#define KVCS_STORE_OBJECT_STORE_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/bytes.h"
#include "common/crypto.h"
#include "common/status.h"

namespace kvcs::store {

// S3's limit on key length (bytes of UTF-8); longer keys are refused with kKeyTooLong.
inline constexpr size_t kMaxKeyBytes = 1024;
// S3's bucket-name rules: 3..63 characters of [a-z0-9.-].
inline constexpr size_t kMinBucketNameBytes = 3;
inline constexpr size_t kMaxBucketNameBytes = 63;
// S3 allows 2 KiB of user metadata (x-amz-meta-* names and values together).
inline constexpr size_t kMaxUserMetadataBytes = 2048;
// S3's multipart limits: part numbers 1..10000, parts 5 MiB..5 GiB except the last one.
inline constexpr int kMaxPartNumber = 10000;
inline constexpr uint64_t kMinPartBytes = 5ull << 20;
inline constexpr uint64_t kMaxPartBytes = 5ull << 30;
// S3's maximum object size (5 TiB); also bounds a single PUT's declared length.
inline constexpr uint64_t kMaxObjectBytes = 5ull << 40;
// S3 returns at most 1000 keys per list page; we never materialize more than this per call.
inline constexpr int kMaxListKeys = 1000;
// S3's limit on keys in one DeleteObjects request.
inline constexpr int kMaxDeleteKeys = 1000;
// Ranges in one ReadMany call: bounds the bookkeeping, not the bytes (the caller owns buffers).
inline constexpr size_t kMaxReadManyRanges = 1 << 20;

enum class StoreError {
  kNone = 0,
  kNoSuchBucket = 1,
  kNoSuchKey,
  kBucketAlreadyExists,  // CreateBucket on an existing bucket (we own all buckets: "OwnedByYou")
  kBucketNotEmpty,
  kInvalidBucketName,
  kKeyTooLong,
  kInvalidKey,  // empty key
  kMetadataTooLarge,
  kBadDigest,       // Content-MD5 did not match the bytes written
  kSha256Mismatch,  // x-amz-content-sha256 did not match the bytes written
  kIncompleteBody,  // fewer bytes committed than declared
  kEntityTooLarge,
  kEntityTooSmall,  // a non-last multipart part below kMinPartBytes
  kNoSuchUpload,
  kInvalidPart,       // CompleteMultipartUpload names a missing part or a wrong ETag
  kInvalidPartOrder,  // part numbers not strictly ascending
  kInvalidPartNumber,
  kInvalidRange,
  kCorrupt,  // stored bytes fail their digest or the file format is damaged
  kIo,       // the OS refused (ENOSPC, EIO, ...)
  kInvalidArgument,
  kPreconditionFailed,   // a conditional write's If-Match / If-None-Match did not hold
  kNotImplemented,       // this store cannot do what was asked (e.g. the S3 backend and ACLs)
  kInsufficientStorage,  // no room for the write (a full RADOS pool or one over its quota)
};

using Md5 = std::array<uint8_t, 16>;

// What the store keeps about each committed object. Survives restarts.
struct ObjectMeta {
  std::string key;
  uint64_t size = 0;
  // S3 ETag without quotes: lowercase hex MD5 of the bytes, or "<hex md5 of part md5s>-<N>" for an
  // object completed from N multipart parts.
  std::string etag;
  // SHA-256 of the whole object's bytes (always known for local-disk objects).
  std::optional<Digest> sha256;
  std::string content_type;  // as given on PUT ("binary/octet-stream" when none)
  // A few representation headers S3 stores and returns verbatim (empty = absent).
  std::string content_encoding;
  std::string content_disposition;
  std::string cache_control;
  // x-amz-meta-* pairs: names lowercased WITHOUT the "x-amz-meta-" prefix, in sorted order.
  std::vector<std::pair<std::string, std::string>> user_meta;
  std::string expires;           // the Expires header given on PUT, verbatim (empty = absent)
  int64_t last_modified_ms = 0;  // Unix epoch milliseconds of the commit
  int parts_count = 0;           // N for multipart objects, 0 otherwise
  // The object's access control list, opaque to the store (s3/acl.h encodes it; empty = the
  // default, private). Persisted with the object.
  std::string acl;
};

// A conditional write (S3 PUT with If-Match / If-None-Match). The store evaluates it atomically
// with publishing the new version: of two writers racing on one key with if_none_match = {"*"},
// exactly one commits, the other fails with kPreconditionFailed.
struct WriteCondition {
  // Commit only if the key exists and its ETag is one of these ("*": any existing version).
  // Absent key: kNoSuchKey (as S3 answers). Empty: no If-Match.
  std::vector<std::string> if_match;
  // Commit only if the key's ETag is none of these ("*": only if the key does not exist).
  std::vector<std::string> if_none_match;

  bool empty() const { return if_match.empty() && if_none_match.empty(); }
};

// Options for a PUT (or an UploadPart, which ignores the representation fields).
struct PutOptions {
  std::string content_type;
  std::string content_encoding;
  std::string content_disposition;
  std::string cache_control;
  std::string expires;
  std::vector<std::pair<std::string, std::string>> user_meta;
  std::string acl;  // ObjectMeta::acl of the new object
  // Checked when the object is published (Put only; ignored by parts and copies).
  WriteCondition condition;
  // When set, Commit fails with kBadDigest / kSha256Mismatch unless the bytes match.
  std::optional<Md5> expected_md5;
  std::optional<Digest> expected_sha256;
  // When set, Commit fails with kIncompleteBody unless exactly this many bytes were written.
  std::optional<uint64_t> expected_size;
};

// Streams one object (or one multipart part) to durable storage.
// Nothing is visible to readers until Commit() succeeds; destroying the writer without a
// successful Commit() discards everything written (a crash leaves only a temporary file, which
// the store removes when it next opens).
class ObjectWriter {
 public:
  virtual ~ObjectWriter() = default;
  // Appends bytes. Fails with kEntityTooLarge past the size bound, kIo on disk errors.
  virtual Status Write(ByteSpan data) = 0;
  // Verifies the expected digests/size, makes the bytes durable (fsync file, rename, fsync
  // directory) and returns the new object's metadata. After Commit returns OK the object survives
  // a crash. REQUIRES: called at most once.
  virtual Result<ObjectMeta> Commit() = 0;
  virtual uint64_t bytes_written() const = 0;
};

// An open, immutable snapshot of one object version. Shared by readers; lives as long as the
// last shared_ptr to it.
class ObjectReader {
 public:
  virtual ~ObjectReader() = default;
  virtual const ObjectMeta& meta() const = 0;
  // Reads min(out.size(), size - offset) bytes at `offset` into `out` (pread; no copy inside the
  // store). Returns the count; 0 at or past the end. Does NOT verify a digest: a range cannot be
  // checked against a whole-object digest (see VerifyingReader in local_store.h and
  // docs/protocols/s3-api.md "Verification on read"). Thread-safe.
  virtual Result<size_t> ReadAt(uint64_t offset, std::span<uint8_t> out) const = 0;
};

// One range of a ReadMany batch. The caller owns `out` and `reader` and keeps them alive until
// ReadMany returns. On return `result` holds the byte count read or the error.
struct RangeRead {
  const ObjectReader* reader = nullptr;
  uint64_t offset = 0;
  std::span<uint8_t> out;
  Result<size_t> result = Status(Code::kInternal, "not run");
};

struct BucketInfo {
  std::string name;
  int64_t created_ms = 0;
  // The user id that created the bucket, persisted with it; empty when none was recorded (a bucket
  // made before owners existed, or by a store that cannot keep one: see CreateBucketOwnedBy).
  std::string owner;
  // The bucket's access control list, opaque to the store (s3/acl.h; empty = private).
  std::string acl;
};

struct ListOptions {
  std::string prefix;
  std::string delimiter;        // empty: no grouping
  std::string start_after;      // exclusive; keys and common prefixes > this are returned
  int max_keys = kMaxListKeys;  // clamped to [0, kMaxListKeys]
};

struct ListResult {
  std::vector<ObjectMeta> objects;           // key order (bytewise)
  std::vector<std::string> common_prefixes;  // key order; each ends with the delimiter
  bool truncated = false;
  // When truncated: the last key or common prefix returned; pass it as start_after to continue.
  std::string next_marker;
};

struct PartInfo {
  int part_number = 0;
  uint64_t size = 0;
  std::string etag;  // hex MD5 of the part, no quotes
  int64_t last_modified_ms = 0;
};

struct UploadInfo {
  std::string key;
  std::string upload_id;
  int64_t initiated_ms = 0;
};

// One entry of a CompleteMultipartUpload request.
struct CompletePart {
  int part_number = 0;
  std::string etag;  // with or without quotes; compared without them
};

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;

  // Buckets.
  virtual Status CreateBucket(std::string_view bucket) = 0;
  // CreateBucket recording `owner` (a user id, 1..128 bytes) as BucketInfo::owner. This default
  // records nothing (the bucket is owner-less); LocalStore overrides it and persists the owner.
  virtual Status CreateBucketOwnedBy(std::string_view bucket, std::string_view owner) {
    (void)owner;
    return CreateBucket(bucket);
  }
  // True when the store persists BucketInfo::owner and the ACLs (SetBucketAcl, PutOptions::acl,
  // SetObjectAcl). A store that does not answers kNotImplemented to ACL changes, and the S3
  // server refuses to serve more than one user over it (every bucket would be everyone's).
  virtual bool RecordsOwners() const { return false; }
  // Replaces BucketInfo::acl. This default: kNotImplemented.
  virtual Status SetBucketAcl(std::string_view bucket, std::string_view acl);
  virtual Status DeleteBucket(std::string_view bucket) = 0;  // kBucketNotEmpty if objects/uploads
  virtual Result<BucketInfo> HeadBucket(std::string_view bucket) = 0;
  virtual Result<std::vector<BucketInfo>> ListBuckets() = 0;  // name order

  // Objects.
  virtual Result<std::unique_ptr<ObjectWriter>> Put(std::string_view bucket, std::string_view key,
                                                    PutOptions options) = 0;
  virtual Result<std::shared_ptr<const ObjectReader>> Open(std::string_view bucket,
                                                           std::string_view key) = 0;
  // Opens many objects of one bucket: element i is what Open(bucket, keys[i]) returns (a missing
  // key is kNoSuchKey there, the others still open). This default opens them one by one; a store
  // whose Open costs a network round trip (s3client::S3BackendStore) overrides it to open them
  // concurrently. Thread-safe.
  virtual std::vector<Result<std::shared_ptr<const ObjectReader>>> OpenMany(
      std::string_view bucket, std::span<const std::string> keys) {
    std::vector<Result<std::shared_ptr<const ObjectReader>>> out;
    out.reserve(keys.size());
    for (const std::string& key : keys) out.push_back(Open(bucket, key));
    return out;
  }
  virtual Result<ObjectMeta> Head(std::string_view bucket, std::string_view key) = 0;
  // Replaces the ACL of the current version of `key` (nothing else changes but the trailer).
  // kNoSuchKey when absent. This default: kNotImplemented.
  virtual Status SetObjectAcl(std::string_view bucket, std::string_view key, std::string_view acl);
  // Deleting a missing key succeeds (S3 semantics); a missing bucket is kNoSuchBucket.
  virtual Status Delete(std::string_view bucket, std::string_view key) = 0;
  virtual Result<ListResult> List(std::string_view bucket, const ListOptions& options) = 0;
  // Server-side copy; `options` gives the destination's representation when replacing metadata,
  // or nullopt to copy the source's metadata (x-amz-metadata-directive COPY).
  virtual Result<ObjectMeta> Copy(std::string_view src_bucket, std::string_view src_key,
                                  std::string_view dst_bucket, std::string_view dst_key,
                                  std::optional<PutOptions> options) = 0;

  // Parallel range reads (see RangeRead). Returns when every range is done; per-range errors are
  // in RangeRead::result. Thread-safe; uses a bounded pool of I/O threads.
  virtual void ReadMany(std::span<RangeRead> ranges) = 0;

  // Multipart uploads. Parts are written through ObjectWriter (Commit makes the part durable and
  // returns its size and MD5 ETag); CompleteMultipart assembles them into one object atomically.
  virtual Result<std::string> CreateMultipart(std::string_view bucket, std::string_view key,
                                              PutOptions options) = 0;
  virtual Result<std::unique_ptr<ObjectWriter>> PutPart(std::string_view bucket,
                                                        std::string_view key,
                                                        std::string_view upload_id, int part_number,
                                                        PutOptions options) = 0;
  virtual Result<std::vector<PartInfo>> ListParts(std::string_view bucket, std::string_view key,
                                                  std::string_view upload_id) = 0;
  virtual Result<ObjectMeta> CompleteMultipart(std::string_view bucket, std::string_view key,
                                               std::string_view upload_id,
                                               std::span<const CompletePart> parts) = 0;
  virtual Status AbortMultipart(std::string_view bucket, std::string_view key,
                                std::string_view upload_id) = 0;
  virtual Result<std::vector<UploadInfo>> ListMultipartUploads(std::string_view bucket,
                                                               std::string_view prefix) = 0;
};

// Validates an S3 bucket name by S3's rules: 3..63 of [a-z0-9.-], starts and ends alphanumeric,
// no "..", ".-" or "-.", not an IPv4 address, no reserved prefix ("xn--", "sthree-") or suffix
// ("-s3alias", "--ol-s3"). Pure.
Status ValidateBucketName(std::string_view name);
// The representation of `m` (content type, encoding, disposition, cache control, expires, user
// metadata) as the options of a new version; no ACL, condition or checks. Pure.
PutOptions RepresentationOf(const ObjectMeta& m);
// Whether `current` (nullptr: the key does not exist) lets a write with condition `c` commit:
// OK, kPreconditionFailed, or kNoSuchKey (If-Match on an absent key). Pure.
Status CheckWriteCondition(const WriteCondition& c, const ObjectMeta* current);
// Validates a key: 1..kMaxKeyBytes bytes, no NUL. Pure.
Status ValidateKey(std::string_view key);
// The multipart ETag: hex(MD5(concat(part MD5s))) + "-" + N. Pure.
std::string MultipartEtag(std::span<const Md5> part_md5s);

// For stores whose Copy streams the bytes (LocalStore, rados_store::RadosStore): the destination's
// PutOptions (`replace`, or the source's representation and user metadata for COPY), expecting
// the source's size and SHA-256 so that the copied bytes are verified again. Pure.
PutOptions CopyPutOptions(const ObjectMeta& source, std::optional<PutOptions> replace);
// Streams all of `source` into `dest` in chunks of `chunk_bytes` and commits; a SHA-256 mismatch
// (the source's bytes do not match its digest) is kCorrupt.
Result<ObjectMeta> StreamCopy(const ObjectReader& source, ObjectWriter& dest, size_t chunk_bytes);

// Incremental MD5 (OpenSSL EVP). Not thread-safe; one per stream.
class Md5Hasher {
 public:
  Md5Hasher();
  ~Md5Hasher();
  Md5Hasher(const Md5Hasher&) = delete;
  Md5Hasher& operator=(const Md5Hasher&) = delete;
  void Update(ByteSpan data);
  Md5 Finish();

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

}  // namespace kvcs::store

#endif  // KVCS_STORE_OBJECT_STORE_H_
