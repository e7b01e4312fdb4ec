// LocalStore: the embedded, durable local-disk ObjectStore.
//
// Layout under the root directory (docs/protocols/s3-api.md "Local storage"):
//   <root>/tmp/                        temporary files being written; emptied by Open()
//   <root>/buckets/<bucket>/bucket.json  creation time, owner, ACL (written atomically)
//   <root>/buckets/<bucket>/obj/<hh>/<sha256(key) hex>   one object file (object_file.h) per key
//   <root>/buckets/<bucket>/mpu/<upload id>/upload.json + part-NNNNN   multipart uploads
//
// Durability: every file is written under tmp/, fsynced, renamed into place, and the target
// directory is fsynced before the call returns. A crash therefore leaves either the previous
// version or the new one (plus, perhaps, a temporary file that the next Open() deletes); a torn
// object is never visible. Metadata lives in the object file's trailer, so data and metadata
// change together with one rename.
//
// Verification: the trailer carries its own SHA-256 (checked on every open) and the SHA-256 of the
// object bytes. Open() checks the trailer; whole-object readers should hash what they read and
// compare with meta().sha256 (the S3 server does, and aborts the response on a mismatch).
// Multipart completion re-hashes every part and checks it against the part's digest.
//
// Index: Open() scans the buckets once and keeps every object's metadata in memory (sorted by key)
// for Head and List; the files stay the source of truth.
//
// Thread-safety: all methods are thread-safe (one mutex guards the index; I/O runs outside it
// except the renames that publish a version, so the index and the directory never disagree).
#ifndef KVCS_STORE_LOCAL_STORE_H_
#define KVCS_STORE_LOCAL_STORE_H_

#include <memory>
#include <string>

#include "store/object_store.h"

namespace kvcs::store {

struct LocalStoreOptions {
  // Threads serving ReadMany. 16 in-flight reads saturate NVMe for 64 KiB ranges (the
  // ObjectCache prototype used 16 as well).
  int read_threads = 16;
  // fsync files and directories (tests of logic may turn it off; crash tests must not).
  bool sync = true;
};

class LocalStore final : public ObjectStore {
 public:
  // Opens (creating if needed) the store at `root`; removes leftover temporary files and loads
  // the index. Fails with kIo if the directory cannot be used.
  static Result<std::unique_ptr<LocalStore>> Open(const std::string& root,
                                                  LocalStoreOptions options = {});
  ~LocalStore() override;

  // Temporary files removed by the last Open() (for logs and tests).
  int removed_temp_files() const;
  // Object files skipped by the last Open() because they failed verification.
  int corrupt_files() const;

  Status CreateBucket(std::string_view bucket) override;
  // Persists the owner in the bucket's bucket.json.
  Status CreateBucketOwnedBy(std::string_view bucket, std::string_view owner) override;
  bool RecordsOwners() const override { return true; }
  // Rewrites bucket.json.
  Status SetBucketAcl(std::string_view bucket, std::string_view acl) override;
  Status DeleteBucket(std::string_view bucket) override;
  Result<BucketInfo> HeadBucket(std::string_view bucket) override;
  Result<std::vector<BucketInfo>> ListBuckets() override;
  Result<std::unique_ptr<ObjectWriter>> Put(std::string_view bucket, std::string_view key,
                                            PutOptions options) override;
  Result<std::shared_ptr<const ObjectReader>> Open(std::string_view bucket,
                                                   std::string_view key) override;
  Result<ObjectMeta> Head(std::string_view bucket, std::string_view key) override;
  // Writes a new object file with the same bytes and the new trailer (a copy of the object).
  Status SetObjectAcl(std::string_view bucket, std::string_view key, std::string_view acl) override;
  Status Delete(std::string_view bucket, std::string_view key) override;
  Result<ListResult> List(std::string_view bucket, const ListOptions& options) override;
  Result<ObjectMeta> Copy(std::string_view src_bucket, std::string_view src_key,
                          std::string_view dst_bucket, std::string_view dst_key,
                          std::optional<PutOptions> options) override;
  void ReadMany(std::span<RangeRead> ranges) override;
  // Opens on the ReadMany pool: a file open, fstat and two small reads each, in parallel.
  std::vector<Result<std::shared_ptr<const ObjectReader>>> OpenMany(
      std::string_view bucket, std::span<const std::string> keys) override;
  Result<std::string> CreateMultipart(std::string_view bucket, std::string_view key,
                                      PutOptions options) override;
  Result<std::unique_ptr<ObjectWriter>> PutPart(std::string_view bucket, std::string_view key,
                                                std::string_view upload_id, int part_number,
                                                PutOptions options) override;
  Result<std::vector<PartInfo>> ListParts(std::string_view bucket, std::string_view key,
                                          std::string_view upload_id) override;
  Result<ObjectMeta> CompleteMultipart(std::string_view bucket, std::string_view key,
                                       std::string_view upload_id,
                                       std::span<const CompletePart> parts) override;
  Status AbortMultipart(std::string_view bucket, std::string_view key,
                        std::string_view upload_id) override;
  Result<std::vector<UploadInfo>> ListMultipartUploads(std::string_view bucket,
                                                       std::string_view prefix) override;

  struct Impl;

 private:
  explicit LocalStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvcs::store

#endif  // KVCS_STORE_LOCAL_STORE_H_
