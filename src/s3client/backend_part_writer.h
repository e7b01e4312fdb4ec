// BackendPartWriter: the store::ObjectWriter S3BackendStore::PutPart returns, one part of a
// front-end multipart upload. S3 needs a part's length up front and we sign its SHA-256, so the
// part is buffered (at most kMaxBufferedPartBytes, kEntityTooLarge beyond) and sent as one
// UploadPart, with Content-MD5, at Commit, after the declared size and digests are checked.
//
// Thread-safety: one thread at a time. The client must outlive the writer.
#ifndef KVCS_S3CLIENT_BACKEND_PART_WRITER_H_
#define KVCS_S3CLIENT_BACKEND_PART_WRITER_H_

#include <cstdint>
#include <string>

#include "common/bytes.h"
#include "s3client/s3_client.h"
#include "store/object_store.h"

namespace kvcs::s3client {

class BackendPartWriter final : public store::ObjectWriter {
 public:
  // `bucket` is the backend bucket.
  BackendPartWriter(S3Client* client, std::string bucket, std::string key, std::string upload_id,
                    int part_number, store::PutOptions options);

  Status Write(ByteSpan data) override;
  Result<store::ObjectMeta> Commit() override;
  uint64_t bytes_written() const override { return buf_.size(); }

 private:
  S3Client* const client_;
  const std::string bucket_, key_, upload_id_;
  const int part_number_;
  const store::PutOptions options_;
  Bytes buf_;
};

}  // namespace kvcs::s3client

#endif  // KVCS_S3CLIENT_BACKEND_PART_WRITER_H_
