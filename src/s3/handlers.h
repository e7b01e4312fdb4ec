// The built-in S3 operations, written against the same abstract request/body/response types as
// extensions (extension.h), so that they never touch Beast or sockets.
//
// HandleS3 dispatches on method, addressing (bucket, key) and sub-resource query parameters
// (?uploads, ?uploadId, ?partNumber, ?delete, ?list-type, ?location, ...) and always produces a
// complete response (an S3 XML error on failure). The caller has already authenticated the
// request (SigV4, or none: an anonymous request has an empty user_id) and set request.access_key
// and user_id; HandleS3 lets the bucket's owner do everything with a bucket, its objects and
// uploads, and others what the bucket's or the object's ACL grants (s3/access.h), AccessDenied
// otherwise.
#ifndef KVCS_S3_HANDLERS_H_
#define KVCS_S3_HANDLERS_H_

#include <string>

#include "s3/config.h"
#include "s3/extension.h"

namespace kvcs::s3 {

// PUT/GET bodies move through buffers of this size (bounded memory per connection; 1 MiB
// amortizes syscalls and keeps up with NVMe and loopback).
inline constexpr size_t kStreamBufferBytes = 1 << 20;
// Request bodies we parse whole (XML, CreateBucket configuration).
inline constexpr size_t kMaxSmallBodyBytes = 4 << 20;

struct S3Context {
  const ExtensionRequest& request;
  BodyReader& body;
  ResponseWriter& response;
  store::ObjectStore& store;
  const ServerConfig& config;
  std::string request_id;
  // The request's bucket, looked up once by HandleS3 before the operation runs (empty for
  // ListBuckets and CreateBucket).
  store::BucketInfo bucket = {};
};

Awaitable<void> HandleS3(S3Context& ctx);

// Sends an S3 XML error for `status` (mapped through ToS3Error), with the right HTTP status.
// HEAD requests get the status line and headers only.
Awaitable<void> SendS3Error(S3Context& ctx, const Status& status);

}  // namespace kvcs::s3

#endif  // KVCS_S3_HANDLERS_H_
