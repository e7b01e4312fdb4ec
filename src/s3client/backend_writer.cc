#include "s3client/backend_writer.h"

#include <algorithm>

#include "s3client/backend_mapping.h"

namespace kvcs::s3client {

using store::StoreError;

BackendWriter::BackendWriter(S3Client* client, uint64_t part_bytes, uint64_t multipart_threshold,
                             std::string bucket, std::string key, store::PutOptions options)
    : client_(client),
      part_bytes_(std::max<uint64_t>(part_bytes, store::kMinPartBytes)),
      multipart_threshold_(multipart_threshold),
      bucket_(std::move(bucket)),
      key_(std::move(key)),
      options_(std::move(options)) {}

BackendWriter::~BackendWriter() {
  if (!upload_id_.empty() && !committed_) {
    (void)client_->AbortMultipartUpload(bucket_, key_, upload_id_);  // best effort
  }
}

Status BackendWriter::Write(ByteSpan data) {
  if (failed_) return Status(Code::kFailedPrecondition, "writer failed earlier");
  if (written_ + data.size() > store::kMaxObjectBytes) {
    return Fail(
        StoreErr(Code::kResourceExhausted, StoreError::kEntityTooLarge, "object exceeds 5 TiB"));
  }
  sha_.Update(data);
  md5_.Update(data);
  written_ += data.size();
  buf_.insert(buf_.end(), data.begin(), data.end());
  if (upload_id_.empty() && buf_.size() > multipart_threshold_) {
    auto id = client_->CreateMultipartUpload(bucket_, key_,
                                             ToClientOptions(options_, options_.expected_sha256));
    if (!id.ok()) return Fail(ToStoreStatus(id.status()));
    upload_id_ = *id;
  }
  // Keep at least one byte back so the last part is never empty.
  while (!upload_id_.empty() && buf_.size() > part_bytes_) {
    KVCS_RETURN_IF_ERROR(SendPart(ByteSpan(buf_.data(), part_bytes_)));
    buf_.erase(buf_.begin(), buf_.begin() + static_cast<ptrdiff_t>(part_bytes_));
  }
  return Status::Ok();
}

Result<store::ObjectMeta> BackendWriter::Commit() {
  if (failed_ || committed_) return Status(Code::kFailedPrecondition, "writer not usable");
  if (options_.expected_size && *options_.expected_size != written_) {
    return Fail(StoreErr(Code::kInvalidArgument, StoreError::kIncompleteBody,
                         "wrote " + std::to_string(written_) + " bytes, declared " +
                             std::to_string(*options_.expected_size)));
  }
  const Digest sha = sha_.Finish();
  const store::Md5 md5 = md5_.Finish();
  if (options_.expected_sha256 && *options_.expected_sha256 != sha) {
    return Fail(StoreErr(Code::kCorruption, StoreError::kSha256Mismatch,
                         "body does not match x-amz-content-sha256"));
  }
  if (options_.expected_md5 && *options_.expected_md5 != md5) {
    return Fail(
        StoreErr(Code::kCorruption, StoreError::kBadDigest, "body does not match Content-MD5"));
  }
  store::ObjectMeta m;
  m.key = key_;
  m.size = written_;
  m.content_type = options_.content_type.empty() ? "binary/octet-stream" : options_.content_type;
  m.content_encoding = options_.content_encoding;
  m.content_disposition = options_.content_disposition;
  m.cache_control = options_.cache_control;
  m.expires = options_.expires;
  for (const auto& kv : options_.user_meta) {
    if (kv.first != kSha256MetaName) m.user_meta.push_back(kv);
  }
  std::sort(m.user_meta.begin(), m.user_meta.end());
  if (upload_id_.empty()) {
    auto etag = client_->PutObject(bucket_, key_, buf_, ToClientOptions(options_, sha), md5);
    if (!etag.ok()) return Fail(ToStoreStatus(etag.status()));
    m.etag = *etag;
    m.sha256 = sha;
  } else {
    KVCS_RETURN_IF_ERROR(SendPart(buf_));
    auto etag = client_->CompleteMultipartUpload(bucket_, key_, upload_id_, parts_);
    if (!etag.ok()) return Fail(ToStoreStatus(etag.status()));
    committed_ = true;  // the upload is consumed: never abort it now
    m.etag = *etag;
    if (m.etag.empty()) m.etag = store::MultipartEtag(part_md5s_);
    m.parts_count = static_cast<int>(parts_.size());
    m.sha256 = options_.expected_sha256;  // stored only when known at CreateMultipart
  }
  committed_ = true;
  buf_.clear();
  buf_.shrink_to_fit();
  m.last_modified_ms = NowMs();
  return m;
}

Status BackendWriter::Fail(Status s) {
  failed_ = true;
  if (!upload_id_.empty()) {
    (void)client_->AbortMultipartUpload(bucket_, key_, upload_id_);
    upload_id_.clear();
  }
  return s;
}

Status BackendWriter::SendPart(ByteSpan data) {
  const int n = static_cast<int>(parts_.size()) + 1;
  if (n > store::kMaxPartNumber) {
    return Fail(StoreErr(Code::kResourceExhausted, StoreError::kEntityTooLarge,
                         "object needs more than 10,000 parts; raise part_bytes"));
  }
  store::Md5Hasher h;
  h.Update(data);
  const store::Md5 md5 = h.Finish();
  auto etag = client_->UploadPart(bucket_, key_, upload_id_, n, data, md5);
  if (!etag.ok()) return Fail(ToStoreStatus(etag.status()));
  parts_.push_back({n, *etag});
  part_md5s_.push_back(md5);
  return Status::Ok();
}

}  // namespace kvcs::s3client
