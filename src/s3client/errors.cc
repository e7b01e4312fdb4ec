#include "s3client/errors.h"

#include <algorithm>

#include "s3/xml.h"

namespace kvcs::s3client {

ClientError ClassifyS3Code(std::string_view code, int http_status) {
  struct Entry {
    std::string_view code;
    ClientError error;
  };
  static constexpr Entry kTable[] = {
      {"AccessDenied", ClientError::kAccessDenied},
      {"SignatureDoesNotMatch", ClientError::kSignatureDoesNotMatch},
      {"InvalidAccessKeyId", ClientError::kInvalidAccessKeyId},
      {"RequestTimeTooSkewed", ClientError::kRequestTimeTooSkewed},
      {"NoSuchBucket", ClientError::kNoSuchBucket},
      {"NoSuchKey", ClientError::kNoSuchKey},
      {"NoSuchUpload", ClientError::kNoSuchUpload},
      {"BucketAlreadyExists", ClientError::kBucketAlreadyExists},
      {"BucketAlreadyOwnedByYou", ClientError::kBucketAlreadyOwnedByYou},
      {"BucketNotEmpty", ClientError::kBucketNotEmpty},
      {"InvalidBucketName", ClientError::kInvalidBucketName},
      {"KeyTooLongError", ClientError::kKeyTooLong},
      {"InvalidRange", ClientError::kInvalidRange},
      {"PreconditionFailed", ClientError::kPreconditionFailed},
      {"InvalidPart", ClientError::kInvalidPart},
      {"InvalidPartOrder", ClientError::kInvalidPartOrder},
      {"EntityTooSmall", ClientError::kEntityTooSmall},
      {"EntityTooLarge", ClientError::kEntityTooLarge},
      {"BadDigest", ClientError::kBadDigest},
      {"InvalidDigest", ClientError::kBadDigest},
      {"XAmzContentSHA256Mismatch", ClientError::kSha256Mismatch},
      {"IncompleteBody", ClientError::kIncompleteBody},
      {"MetadataTooLarge", ClientError::kMetadataTooLarge},
      {"InvalidArgument", ClientError::kInvalidArgument},
  };
  if (http_status >= 500) return ClientError::kServerError;
  // S3 answers some throttling and timeouts with 4xx codes that are worth retrying.
  if (code == "SlowDown" || code == "RequestTimeout" || http_status == 429) {
    return ClientError::kServerError;
  }
  for (const Entry& e : kTable) {
    if (e.code == code) return e.error;
  }
  if (code.empty()) {  // HEAD responses carry no body
    switch (http_status) {
      case 403:
        return ClientError::kAccessDenied;
      case 404:
        return ClientError::kNoSuchKey;  // the caller refines for bucket HEADs
      case 412:
        return ClientError::kPreconditionFailed;
      case 416:
        return ClientError::kInvalidRange;
      default:
        break;
    }
  }
  return ClientError::kOtherClientError;
}

Code StatusCodeFor(ClientError e) {
  switch (e) {
    case ClientError::kNone:
      return Code::kOk;
    case ClientError::kConnect:
    case ClientError::kTimeout:
    case ClientError::kConnectionLost:
    case ClientError::kServerError:
    case ClientError::kDeadlineExceeded:
      return Code::kUnavailable;
    case ClientError::kProtocol:
    case ClientError::kMalformedXml:
      return Code::kIoError;
    case ClientError::kResponseTooLarge:
      return Code::kResourceExhausted;
    case ClientError::kAccessDenied:
    case ClientError::kSignatureDoesNotMatch:
    case ClientError::kInvalidAccessKeyId:
    case ClientError::kRequestTimeTooSkewed:
      return Code::kPermissionDenied;
    case ClientError::kNoSuchBucket:
    case ClientError::kNoSuchKey:
    case ClientError::kNoSuchUpload:
      return Code::kNotFound;
    case ClientError::kBucketAlreadyExists:
    case ClientError::kBucketAlreadyOwnedByYou:
      return Code::kAlreadyExists;
    case ClientError::kBucketNotEmpty:
    case ClientError::kPreconditionFailed:
      return Code::kFailedPrecondition;
    case ClientError::kInvalidRange:
      return Code::kOutOfRange;
    case ClientError::kBadDigest:
    case ClientError::kSha256Mismatch:
      return Code::kCorruption;
    case ClientError::kEntityTooLarge:
    case ClientError::kMetadataTooLarge:
      return Code::kResourceExhausted;
    case ClientError::kTlsCertificate:
      return Code::kPermissionDenied;
    case ClientError::kTlsHandshake:
      return Code::kIoError;
    default:
      return Code::kInvalidArgument;
  }
}

Status ClientStatus(ClientError e, std::string message) {
  return Status(StatusCodeFor(e), std::move(message), static_cast<int>(e));
}

bool IsRetryable(ClientError e) {
  return e == ClientError::kConnect || e == ClientError::kTimeout ||
         e == ClientError::kConnectionLost || e == ClientError::kServerError;
}

Result<S3ErrorBody> ParseErrorBody(std::string_view xml) {
  auto doc = s3::ParseXml(xml);
  if (!doc.ok() || doc->name != "Error") {
    return ClientStatus(ClientError::kMalformedXml, "S3 error body is not an <Error> document");
  }
  S3ErrorBody out;
  if (const auto* c = doc->Child("Code")) out.code = c->text;
  if (const auto* m = doc->Child("Message")) out.message = m->text;
  if (const auto* r = doc->Child("RequestId")) out.request_id = r->text;
  if (out.code.empty()) {
    return ClientStatus(ClientError::kMalformedXml, "S3 error body has no <Code>");
  }
  return out;
}

std::chrono::milliseconds BackoffDelay(const RetryPolicy& policy, int retry, double u01) {
  retry = std::clamp(retry, 1, kMaxAttempts);
  const int64_t base = std::max<int64_t>(1, policy.base_backoff.count());
  const int64_t cap = std::max<int64_t>(base, policy.max_backoff.count());
  int64_t d = base;
  for (int i = 1; i < retry && d < cap; ++i) d *= 2;
  d = std::min(d, cap);
  u01 = std::clamp(u01, 0.0, 1.0);
  return std::chrono::milliseconds(d / 2 +
                                   static_cast<int64_t>(u01 * static_cast<double>(d - d / 2)));
}

}  // namespace kvcs::s3client
