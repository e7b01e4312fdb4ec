#include "s3/s3_error.h"

#include "store/object_store.h"

namespace kvcs::s3 {

S3ErrorInfo Describe(S3Error e) {
  switch (e) {
    case S3Error::kNone:
      return {"OK", 200};
    case S3Error::kAccessDenied:
      return {"AccessDenied", 403};
    case S3Error::kSignatureDoesNotMatch:
      return {"SignatureDoesNotMatch", 403};
    case S3Error::kInvalidAccessKeyId:
      return {"InvalidAccessKeyId", 403};
    case S3Error::kRequestTimeTooSkewed:
      return {"RequestTimeTooSkewed", 403};
    case S3Error::kAuthorizationHeaderMalformed:
      return {"AuthorizationHeaderMalformed", 400};
    case S3Error::kAuthorizationQueryParametersError:
      return {"AuthorizationQueryParametersError", 400};
    case S3Error::kExpiredPresignedRequest:
      return {"AccessDenied", 403};
    case S3Error::kMissingSecurityHeader:
      return {"MissingSecurityHeader", 400};
    case S3Error::kXAmzContentSHA256Mismatch:
      return {"XAmzContentSHA256Mismatch", 400};
    case S3Error::kInvalidDigest:
      return {"InvalidDigest", 400};
    case S3Error::kBadDigest:
      return {"BadDigest", 400};
    case S3Error::kNoSuchBucket:
      return {"NoSuchBucket", 404};
    case S3Error::kNoSuchKey:
      return {"NoSuchKey", 404};
    case S3Error::kNoSuchUpload:
      return {"NoSuchUpload", 404};
    case S3Error::kBucketAlreadyOwnedByYou:
      return {"BucketAlreadyOwnedByYou", 409};
    case S3Error::kBucketAlreadyExists:
      return {"BucketAlreadyExists", 409};
    case S3Error::kBucketNotEmpty:
      return {"BucketNotEmpty", 409};
    case S3Error::kInvalidBucketName:
      return {"InvalidBucketName", 400};
    case S3Error::kKeyTooLongError:
      return {"KeyTooLongError", 400};
    case S3Error::kInvalidArgument:
      return {"InvalidArgument", 400};
    case S3Error::kInvalidRequest:
      return {"InvalidRequest", 400};
    case S3Error::kInvalidRange:
      return {"InvalidRange", 416};
    case S3Error::kPreconditionFailed:
      return {"PreconditionFailed", 412};
    case S3Error::kNotModified:
      return {"NotModified", 304};
    case S3Error::kEntityTooSmall:
      return {"EntityTooSmall", 400};
    case S3Error::kEntityTooLarge:
      return {"EntityTooLarge", 400};
    case S3Error::kInvalidPart:
      return {"InvalidPart", 400};
    case S3Error::kInvalidPartOrder:
      return {"InvalidPartOrder", 400};
    case S3Error::kMalformedXML:
      return {"MalformedXML", 400};
    case S3Error::kMetadataTooLarge:
      return {"MetadataTooLarge", 400};
    case S3Error::kIncompleteBody:
      return {"IncompleteBody", 400};
    case S3Error::kMissingContentLength:
      return {"MissingContentLength", 411};
    case S3Error::kMethodNotAllowed:
      return {"MethodNotAllowed", 405};
    case S3Error::kNotImplemented:
      return {"NotImplemented", 501};
    case S3Error::kRequestTimeout:
      return {"RequestTimeout", 400};
    case S3Error::kUnexpectedContent:
      return {"UnexpectedContent", 400};
    case S3Error::kSlowDown:
      return {"SlowDown", 503};
    case S3Error::kInsufficientStorage:
      return {"InsufficientStorage", 507};
    case S3Error::kInternalError:
      return {"InternalError", 500};
  }
  return {"InternalError", 500};
}

Status S3Status(S3Error e, std::string message) {
  Code code = Code::kInvalidArgument;
  int http = Describe(e).http_status;
  if (http == 403) code = Code::kPermissionDenied;
  if (http == 404) code = Code::kNotFound;
  if (http >= 500) code = Code::kInternal;
  return Status(code, std::move(message), static_cast<int>(e));
}

S3Error ToS3Error(const Status& status) {
  using store::StoreError;
  int d = status.detail();
  if (d >= static_cast<int>(S3Error::kAccessDenied) &&
      d <= static_cast<int>(S3Error::kInternalError)) {
    return static_cast<S3Error>(d);
  }
  switch (static_cast<StoreError>(d)) {
    case StoreError::kNoSuchBucket:
      return S3Error::kNoSuchBucket;
    case StoreError::kNoSuchKey:
      return S3Error::kNoSuchKey;
    case StoreError::kBucketAlreadyExists:
      return S3Error::kBucketAlreadyOwnedByYou;
    case StoreError::kBucketNotEmpty:
      return S3Error::kBucketNotEmpty;
    case StoreError::kInvalidBucketName:
      return S3Error::kInvalidBucketName;
    case StoreError::kKeyTooLong:
      return S3Error::kKeyTooLongError;
    case StoreError::kInvalidKey:
      return S3Error::kInvalidArgument;
    case StoreError::kMetadataTooLarge:
      return S3Error::kMetadataTooLarge;
    case StoreError::kBadDigest:
      return S3Error::kBadDigest;
    case StoreError::kSha256Mismatch:
      return S3Error::kXAmzContentSHA256Mismatch;
    case StoreError::kIncompleteBody:
      return S3Error::kIncompleteBody;
    case StoreError::kEntityTooLarge:
      return S3Error::kEntityTooLarge;
    case StoreError::kEntityTooSmall:
      return S3Error::kEntityTooSmall;
    case StoreError::kNoSuchUpload:
      return S3Error::kNoSuchUpload;
    case StoreError::kInvalidPart:
      return S3Error::kInvalidPart;
    case StoreError::kInvalidPartOrder:
      return S3Error::kInvalidPartOrder;
    case StoreError::kInvalidPartNumber:
      return S3Error::kInvalidArgument;
    case StoreError::kInvalidRange:
      return S3Error::kInvalidRange;
    case StoreError::kInvalidArgument:
      return S3Error::kInvalidArgument;
    case StoreError::kPreconditionFailed:
      return S3Error::kPreconditionFailed;
    case StoreError::kNotImplemented:
      return S3Error::kNotImplemented;
    case StoreError::kInsufficientStorage:
      return S3Error::kInsufficientStorage;
    default:
      break;
  }
  switch (status.code()) {
    case Code::kNotFound:
      return S3Error::kNoSuchKey;
    case Code::kPermissionDenied:
      return S3Error::kAccessDenied;
    case Code::kInvalidArgument:
      return S3Error::kInvalidArgument;
    case Code::kResourceExhausted:
      return S3Error::kEntityTooLarge;
    case Code::kUnsupported:
      return S3Error::kNotImplemented;
    default:
      return S3Error::kInternalError;
  }
}

}  // namespace kvcs::s3
