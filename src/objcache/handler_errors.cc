// Error answers of the aggregated handlers. See handler_errors.h.
#include "objcache/handler_errors.h"

#include "s3/s3_error.h"
#include "store/object_store.h"

namespace kvcs::objcache {

s3::Awaitable<void> BadRequest(s3::ExtensionContext& ctx, const Status& s) {
  co_await ctx.response.SendError(400, "InvalidRequest", s.message());
}

s3::Awaitable<void> StoreError(s3::ExtensionContext& ctx, const Status& s) {
  if (s.Is(store::StoreError::kNoSuchBucket)) {
    co_await ctx.response.SendError(404, "NoSuchBucket", s.message());
  } else if (s.detail() == static_cast<int>(s3::S3Error::kAccessDenied)) {
    co_await ctx.response.SendError(403, "AccessDenied", s.message());
  } else if (s.Is(store::StoreError::kNoSuchKey)) {
    co_await ctx.response.SendError(404, "NoSuchKey", s.message());
  } else {
    co_await ctx.response.SendError(500, "InternalError", s.message());
  }
}

}  // namespace kvcs::objcache
