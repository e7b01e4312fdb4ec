#include "s3client/backend_part_writer.h"

#include "s3client/backend_mapping.h"
#include "s3client/backend_store.h"  // kMaxBufferedPartBytes

namespace kvcs::s3client {

using store::StoreError;

BackendPartWriter::BackendPartWriter(S3Client* client, std::string bucket, std::string key,
                                     std::string upload_id, int part_number,
                                     store::PutOptions options)
    : client_(client),
      bucket_(std::move(bucket)),
      key_(std::move(key)),
      upload_id_(std::move(upload_id)),
      part_number_(part_number),
      options_(std::move(options)) {}

Status BackendPartWriter::Write(ByteSpan data) {
  if (buf_.size() + data.size() > kMaxBufferedPartBytes) {
    return StoreErr(Code::kResourceExhausted, StoreError::kEntityTooLarge,
                    "S3 backend buffers parts up to 128 MiB; use smaller parts");
  }
  buf_.insert(buf_.end(), data.begin(), data.end());
  return Status::Ok();
}

Result<store::ObjectMeta> BackendPartWriter::Commit() {
  if (options_.expected_size && *options_.expected_size != buf_.size()) {
    return StoreErr(Code::kInvalidArgument, StoreError::kIncompleteBody,
                    "part shorter or longer than declared");
  }
  store::Md5Hasher h;
  h.Update(buf_);
  const store::Md5 md5 = h.Finish();
  if (options_.expected_md5 && *options_.expected_md5 != md5) {
    return StoreErr(Code::kCorruption, StoreError::kBadDigest, "part does not match Content-MD5");
  }
  if (options_.expected_sha256 && *options_.expected_sha256 != Sha256::Hash(buf_)) {
    return StoreErr(Code::kCorruption, StoreError::kSha256Mismatch,
                    "part does not match x-amz-content-sha256");
  }
  auto etag = client_->UploadPart(bucket_, key_, upload_id_, part_number_, buf_, md5);
  if (!etag.ok()) return ToStoreStatus(etag.status());
  store::ObjectMeta m;
  m.key = key_;
  m.size = buf_.size();
  m.etag = *etag;
  m.last_modified_ms = NowMs();
  return m;
}

}  // namespace kvcs::s3client
