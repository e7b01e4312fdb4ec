#include "s3client/backend_mapping.h"

#include <algorithm>
#include <chrono>

#include "common/hex.h"
#include "s3client/xml_responses.h"

namespace kvcs::s3client {

using store::StoreError;

Status StoreErr(Code code, StoreError e, std::string message) {
  return Status(code, std::move(message), static_cast<int>(e));
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int PartsCountFromEtag(std::string_view etag) {
  size_t dash = etag.rfind('-');
  if (dash == std::string_view::npos) return 0;
  int n = 0;
  for (char c : etag.substr(dash + 1)) {
    if (c < '0' || c > '9' || n > store::kMaxPartNumber) return 0;
    n = n * 10 + (c - '0');
  }
  return n;
}

PutObjectOptions ToClientOptions(const store::PutOptions& o, const std::optional<Digest>& sha) {
  PutObjectOptions p;
  p.content_type = o.content_type;
  p.content_encoding = o.content_encoding;
  p.content_disposition = o.content_disposition;
  p.cache_control = o.cache_control;
  p.expires = o.expires;
  for (const auto& [k, v] : o.user_meta) {
    if (k == kSha256MetaName) continue;  // reserved: only the store writes it
    p.user_meta.emplace_back(k, v);
  }
  if (sha) p.user_meta.emplace_back(kSha256MetaName, ToHex(*sha));
  // Passed on as the backend's own condition (S3BackendStore::Put admits only these forms).
  if (!o.condition.if_match.empty()) p.if_match = StripQuotes(o.condition.if_match.front());
  if (!o.condition.if_none_match.empty()) p.if_none_match = o.condition.if_none_match.front();
  return p;
}

store::ObjectMeta MetaFromHead(std::string_view key, ObjectHead h) {
  store::ObjectMeta m;
  m.key = std::string(key);
  m.size = h.size;
  m.etag = h.etag;
  m.content_type = h.content_type.empty() ? "binary/octet-stream" : h.content_type;
  m.content_encoding = h.content_encoding;
  m.content_disposition = h.content_disposition;
  m.cache_control = h.cache_control;
  m.expires = h.expires;
  for (auto& [k, v] : h.user_meta) {
    if (k == kSha256MetaName) {
      auto d = FromHexFixed<kDigestSize>(v);
      if (d.ok()) m.sha256 = *d;
      continue;
    }
    m.user_meta.emplace_back(std::move(k), std::move(v));
  }
  m.last_modified_ms = h.last_modified_ms;
  m.parts_count = PartsCountFromEtag(m.etag);
  return m;
}

Status ToStoreStatus(const Status& s) {
  if (s.ok()) return s;
  StoreError e = StoreError::kIo;
  switch (static_cast<ClientError>(s.detail())) {
    case ClientError::kNoSuchBucket:
      e = StoreError::kNoSuchBucket;
      break;
    case ClientError::kNoSuchKey:
      e = StoreError::kNoSuchKey;
      break;
    case ClientError::kNoSuchUpload:
      e = StoreError::kNoSuchUpload;
      break;
    case ClientError::kBucketAlreadyExists:
    case ClientError::kBucketAlreadyOwnedByYou:
      e = StoreError::kBucketAlreadyExists;
      break;
    case ClientError::kBucketNotEmpty:
      e = StoreError::kBucketNotEmpty;
      break;
    case ClientError::kInvalidBucketName:
      e = StoreError::kInvalidBucketName;
      break;
    case ClientError::kKeyTooLong:
      e = StoreError::kKeyTooLong;
      break;
    case ClientError::kInvalidRange:
      e = StoreError::kInvalidRange;
      break;
    case ClientError::kInvalidPart:
      e = StoreError::kInvalidPart;
      break;
    case ClientError::kInvalidPartOrder:
      e = StoreError::kInvalidPartOrder;
      break;
    case ClientError::kEntityTooSmall:
      e = StoreError::kEntityTooSmall;
      break;
    case ClientError::kEntityTooLarge:
      e = StoreError::kEntityTooLarge;
      break;
    case ClientError::kBadDigest:
      e = StoreError::kBadDigest;
      break;
    case ClientError::kSha256Mismatch:
      e = StoreError::kSha256Mismatch;
      break;
    case ClientError::kIncompleteBody:
      e = StoreError::kIncompleteBody;
      break;
    case ClientError::kMetadataTooLarge:
      e = StoreError::kMetadataTooLarge;
      break;
    case ClientError::kPreconditionFailed:
      e = StoreError::kPreconditionFailed;
      break;
    case ClientError::kInvalidArgument:
      e = StoreError::kInvalidArgument;
      break;
    default:
      break;
  }
  return Status(s.code(), "S3 backend: " + s.message(), static_cast<int>(e));
}

}  // namespace kvcs::s3client
