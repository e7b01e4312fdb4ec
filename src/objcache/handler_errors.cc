// Answers the aggregated handlers share. See handler_errors.h.
#include "objcache/handler_errors.h"

#include <utility>

#include "s3/s3_error.h"
#include "store/object_store.h"

namespace kvcs::objcache {

s3::Awaitable<std::optional<AggregateRequest>> ReadAggregateRequest(s3::ExtensionContext& ctx) {
  auto body = co_await ctx.body.ReadAll(kMaxRequestJsonBytes);
  if (!body.ok()) {
    co_await BadRequest(ctx, body.status());
    co_return std::nullopt;
  }
  auto parsed = ParseAggregateRequest(AsStringView(*body));
  if (!parsed.ok()) {
    co_await BadRequest(ctx, parsed.status());
    co_return std::nullopt;
  }
  co_return std::move(*parsed);
}

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

s3::Awaitable<void> SendJson(s3::ExtensionContext& ctx, const std::string& text) {
  s3::HeaderList headers = {{"Content-Type", "application/json"}};
  Status s = co_await ctx.response.Start(200, std::move(headers), text.size());
  if (!s.ok()) co_return;
  s = co_await ctx.response.Write(AsBytes(text));
  if (!s.ok()) co_return;
  co_await ctx.response.Finish();
}

}  // namespace kvcs::objcache
