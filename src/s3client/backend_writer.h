// BackendWriter: the store::ObjectWriter S3BackendStore::Put returns; it writes one whole object
// to the backend. Up to multipart_threshold bytes are buffered and sent as ONE PUT at Commit
// (atomic in S3). Past that, a multipart upload is created and its parts stream out as the
// buffer fills part_bytes; Commit sends the last part and completes it (S3 publishes
// atomically). The upload is aborted if a check fails or the writer is dropped uncommitted.
//
// Verification: Commit checks the declared size, SHA-256 and MD5, and stores the SHA-256 in
// x-amz-meta-kvcs-sha256 (for multipart writes only when known up front,
// PutOptions::expected_sha256). Every PUT and part is sent with its SHA-256 signed and its
// Content-MD5.
//
// Thread-safety: one thread at a time. The client must outlive the writer.
#ifndef KVCS_S3CLIENT_BACKEND_WRITER_H_
#define KVCS_S3CLIENT_BACKEND_WRITER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/crypto.h"
#include "s3client/s3_client.h"
#include "store/object_store.h"

namespace kvcs::s3client {

class BackendWriter final : public store::ObjectWriter {
 public:
  // `bucket` is the backend bucket. part_bytes is raised to S3's 5 MiB minimum.
  BackendWriter(S3Client* client, uint64_t part_bytes, uint64_t multipart_threshold,
                std::string bucket, std::string key, store::PutOptions options);
  ~BackendWriter() override;

  Status Write(ByteSpan data) override;
  Result<store::ObjectMeta> Commit() override;
  uint64_t bytes_written() const override { return written_; }

 private:
  // Marks the writer failed, aborts the upload (best effort) and returns `s`.
  Status Fail(Status s);
  // Uploads `data` as the next part.
  Status SendPart(ByteSpan data);

  S3Client* const client_;
  const uint64_t part_bytes_;
  const uint64_t multipart_threshold_;
  const std::string bucket_, key_;
  const store::PutOptions options_;
  Bytes buf_;
  Sha256 sha_;
  store::Md5Hasher md5_;
  uint64_t written_ = 0;
  std::string upload_id_;  // empty until the object goes multipart
  std::vector<CompletedPart> parts_;
  std::vector<store::Md5> part_md5s_;
  bool committed_ = false;
  bool failed_ = false;
};

}  // namespace kvcs::s3client

#endif  // KVCS_S3CLIENT_BACKEND_WRITER_H_
