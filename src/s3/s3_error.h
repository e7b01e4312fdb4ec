// S3 error codes: the one place that maps a failure to the S3 error <Code> and its HTTP status.
//
// An S3Error travels as the detail of a Status (status.detail() == int(S3Error::k...)); StoreError
// details from the ObjectStore are mapped with FromStoreStatus. Pure; thread-safe.
#ifndef KVCS_S3_S3_ERROR_H_
#define KVCS_S3_S3_ERROR_H_

#include <string_view>

#include "common/status.h"

namespace kvcs::s3 {

enum class S3Error {
  kNone = 0,
  kAccessDenied = 1000,  // distinct from StoreError values
  kSignatureDoesNotMatch,
  kInvalidAccessKeyId,
  kRequestTimeTooSkewed,
  kAuthorizationHeaderMalformed,
  kAuthorizationQueryParametersError,
  kExpiredPresignedRequest,  // S3 answers AccessDenied "Request has expired"
  kMissingSecurityHeader,
  kXAmzContentSHA256Mismatch,
  kInvalidDigest,
  kBadDigest,
  kNoSuchBucket,
  kNoSuchKey,
  kNoSuchUpload,
  kBucketAlreadyOwnedByYou,
  kBucketAlreadyExists,  // another user owns the name
  kBucketNotEmpty,
  kInvalidBucketName,
  kKeyTooLongError,
  kInvalidArgument,
  kInvalidRequest,
  kInvalidRange,
  kPreconditionFailed,
  kNotModified,
  kEntityTooSmall,
  kEntityTooLarge,
  kInvalidPart,
  kInvalidPartOrder,
  kMalformedXML,
  kMetadataTooLarge,
  kIncompleteBody,
  kMissingContentLength,
  kMethodNotAllowed,
  kNotImplemented,
  kRequestTimeout,
  kUnexpectedContent,
  kSlowDown,
  kInsufficientStorage,  // 507: the store has no room for the write (a full pool)
  kInternalError,
};

struct S3ErrorInfo {
  std::string_view code;  // the <Code> element
  int http_status;
};

S3ErrorInfo Describe(S3Error e);

// A Status carrying an S3Error.
Status S3Status(S3Error e, std::string message);

// Maps any Status (with an S3Error or store::StoreError detail, or only a Code) to an S3Error.
S3Error ToS3Error(const Status& status);

}  // namespace kvcs::s3

#endif  // KVCS_S3_S3_ERROR_H_
