// Typed errors of the S3 client (s3client::ClientError travels as a Status detail) and the pure
// parts of its failure handling: S3 <Error> document parsing, the mapping of S3 error codes to
// ClientError, and the retry policy (what is retried, how long to back off).
//
// Pure logic; thread-safe.
#ifndef KVCS_S3CLIENT_ERRORS_H_
#define KVCS_S3CLIENT_ERRORS_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace kvcs::s3client {

// Status::detail() of every client failure. Values start at 3000 so they never collide with
// store::StoreError or s3::S3Error details.
enum class ClientError {
  kNone = 0,
  // Transport and service availability (retried until the attempts or the deadline run out).
  kConnect = 3000,    // TCP connect/resolve failed
  kTimeout,           // one attempt exceeded its timeout
  kConnectionLost,    // the connection broke mid-request
  kServerError,       // 5xx (InternalError, ServiceUnavailable, SlowDown, ...)
  kDeadlineExceeded,  // the total deadline ran out before an attempt succeeded
  kProtocol,          // malformed HTTP or a response that contradicts the request
  kResponseTooLarge,  // a response header or body exceeded its bound
  kMalformedXml,      // a response body that should be S3 XML is not
  // S3 4xx error codes (never retried).
  kAccessDenied,
  kSignatureDoesNotMatch,
  kInvalidAccessKeyId,
  kRequestTimeTooSkewed,
  kNoSuchBucket,
  kNoSuchKey,
  kNoSuchUpload,
  kBucketAlreadyExists,
  kBucketAlreadyOwnedByYou,
  kBucketNotEmpty,
  kInvalidBucketName,
  kKeyTooLong,
  kInvalidRange,
  kPreconditionFailed,  // If-Match failed: the object changed
  kInvalidPart,
  kInvalidPartOrder,
  kEntityTooSmall,
  kEntityTooLarge,
  kBadDigest,
  kSha256Mismatch,  // XAmzContentSHA256Mismatch
  kIncompleteBody,
  kMetadataTooLarge,
  kInvalidArgument,
  kOtherClientError,  // any other 4xx
  // TLS (https endpoints; never retried: the same server presents the same certificate).
  kTlsCertificate,  // the server's certificate chain or name failed verification
  kTlsHandshake,    // the TLS handshake failed for another reason (version, cipher, not TLS)
};

// Maps an S3 <Code> (and the HTTP status, for bodiless HEAD errors) to a ClientError.
ClientError ClassifyS3Code(std::string_view code, int http_status);
// The Status code class for a ClientError (kNotFound, kPermissionDenied, kUnavailable, ...).
Code StatusCodeFor(ClientError e);
Status ClientStatus(ClientError e, std::string message);
bool IsRetryable(ClientError e);

// The <Error> document S3 sends with a 4xx/5xx (and sometimes with a 200, for
// CompleteMultipartUpload).
struct S3ErrorBody {
  std::string code;
  std::string message;
  std::string request_id;
};
// Parses "<Error><Code>..</Code><Message>..</Message>...</Error>". Fails (kMalformedXml) when the
// body is not such a document.
Result<S3ErrorBody> ParseErrorBody(std::string_view xml);

// Retries with exponential backoff and jitter.
struct RetryPolicy {
  // Attempts per request including the first (bounded by kMaxAttempts).
  int max_attempts = 5;
  // Backoff before retry n (n = 1, 2, ...) is drawn from [d/2, d] with d = min(max_backoff,
  // base_backoff * 2^(n-1)) ("equal jitter": never zero, never synchronized across clients).
  std::chrono::milliseconds base_backoff{50};
  std::chrono::milliseconds max_backoff{2000};
  // Each attempt (connect + send + receive) must finish within this.
  std::chrono::milliseconds attempt_timeout{10000};
  // No attempt starts after this much time since the request began; a running attempt is cut
  // at the deadline too.
  std::chrono::milliseconds total_deadline{30000};
};
// A request is never tried more than this many times whatever the policy says.
inline constexpr int kMaxAttempts = 16;

// The backoff before retry `retry` (1-based), with `u01` a uniform draw in [0, 1). Pure.
std::chrono::milliseconds BackoffDelay(const RetryPolicy& policy, int retry, double u01);

}  // namespace kvcs::s3client

#endif  // KVCS_S3CLIENT_ERRORS_H_
