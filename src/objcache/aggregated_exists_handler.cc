// The aggregated existence handler. See aggregated_exists_handler.h.
#include "objcache/aggregated_exists_handler.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kvsp/codec.h"
#include "objcache/aggregate_plan.h"
#include "objcache/aggregate_wire.h"
#include "objcache/handler_errors.h"
#include "objcache/offload_job.h"
#include "objcache/service_resources.h"
#include "s3/access.h"

namespace kvcs::objcache {

using s3::Awaitable;
using s3::ExtensionContext;

Awaitable<void> AggregatedExistsHandler::Handle(ExtensionContext& ctx) {
  std::optional<AggregateRequest> parsed = co_await ReadAggregateRequest(ctx);
  if (!parsed) co_return;
  if (parsed->shm) {
    co_await ctx.response.SendError(400, "InvalidRequest",
                                    "an existence query takes no shm_* (nothing is delivered)");
    co_return;
  }
  // Only the bucket's owner (s3/access.h), as the aggregated GET: others get 403 AccessDenied.
  Status bucket_ok = s3::CheckBucketAccess(ctx.store, ctx.request.bucket, ctx.request.user_id);
  if (!bucket_ok.ok()) {
    co_await StoreError(ctx, bucket_ok);
    co_return;
  }
  auto req = std::make_shared<const AggregateRequest>(std::move(*parsed));
  auto slots = std::make_shared<std::vector<BlockSlot>>();
  {
    // Strings reach the job through the heap (see the NOTE on OffloadJob).
    auto names = std::make_shared<std::pair<std::string, std::string>>(
        ctx.request.bucket, std::string(kvsp::CodecName(*kvsp::CodecFromValue(req->codec))));
    store::ObjectStore* store = &ctx.store;
    OffloadJob job = OffloadJob::Start(res_.pool, [store, names, req, slots] {
      ProbeBlocks(*store, names->first, *req, names->second, slots.get());
    });
    co_await job.Wait(ctx.executor);
  }
  std::string status(slots->size(), '0');
  size_t leading = 0;
  bool hole = false;
  for (size_t i = 0; i < slots->size(); ++i) {
    BlockSlot& slot = (*slots)[i];
    // Held means held with every requested layer (as PlanItem decides per layer).
    for (uint32_t l = req->layer_first;
         slot.status == BlockStatus::kPresent && l < req->layer_first + req->layer_count; ++l) {
      if (!slot.view.Find(l)) slot.status = BlockStatus::kLayerNotHeld;
    }
    status[i] = static_cast<char>('0' + static_cast<int>(slot.status));
    hole = hole || slot.status != BlockStatus::kPresent;
    if (!hole) ++leading;
  }
  nlohmann::json resp = {{"blocks", slots->size()}, {"leading", leading}, {"status", status}};
  co_await SendJson(ctx, resp.dump());
}

}  // namespace kvcs::objcache
