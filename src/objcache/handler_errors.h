// The answers the aggregated handlers (aggregated_get_handler.h, aggregated_put_handler.h,
// aggregated_exists_handler.h) share: reading the aggregate request body, S3-style errors (a 400
// for a malformed request, and the answer to a store failure: 404 NoSuchBucket / NoSuchKey, 403
// AccessDenied, else 500) and a 200 JSON body. The KVSP endpoints answer in plain text instead
// (kvsp_endpoints.cc).
#ifndef KVCS_OBJCACHE_HANDLER_ERRORS_H_
#define KVCS_OBJCACHE_HANDLER_ERRORS_H_

#include <optional>
#include <string>

#include "common/status.h"
#include "objcache/aggregate_wire.h"
#include "s3/extension.h"

namespace kvcs::objcache {

// Reads and parses the request body (at most kMaxRequestJsonBytes) of an aggregated GET or
// existence query; on failure answers 400 InvalidRequest with the reason and returns nullopt.
s3::Awaitable<std::optional<AggregateRequest>> ReadAggregateRequest(s3::ExtensionContext& ctx);
// 400 InvalidRequest with the status's message.
s3::Awaitable<void> BadRequest(s3::ExtensionContext& ctx, const Status& s);
// 404 NoSuchBucket or NoSuchKey for those store errors, 403 AccessDenied for s3's
// S3Error::kAccessDenied (s3/access.h), 500 InternalError otherwise.
s3::Awaitable<void> StoreError(s3::ExtensionContext& ctx, const Status& s);
// 200 application/json with `text` as the whole body.
s3::Awaitable<void> SendJson(s3::ExtensionContext& ctx, const std::string& text);

}  // namespace kvcs::objcache

#endif  // KVCS_OBJCACHE_HANDLER_ERRORS_H_
