// AggregatedGetHandler: POST /<bucket>?kvcs-aggregate (docs/protocols/objectcache-aggregated.md
// §1-§4, §8): parses the JSON request, probes every block's container, and streams the requested
// layers layer-major, either in the HTTP body or, for a request that names a registered shared
// buffer, into that buffer (ShmDelivery, shm_delivery.h) with only the records in the body.
//
// Memory per request is bounded by two read windows (window_bytes each, plus 52 bytes of record
// per block): one being written to the socket while the next is read. Reads of a window run in
// parallel on the store's I/O threads (ObjectStore::ReadMany), offloaded from the connection's
// thread. Writes are paced at the rate the shared BandwidthScheduler grants the request (when a
// cap is configured).
//
// Thread-safe: Handle runs concurrently on the server's threads, one call per request.
#ifndef KVCS_OBJCACHE_AGGREGATED_GET_HANDLER_H_
#define KVCS_OBJCACHE_AGGREGATED_GET_HANDLER_H_

#include <memory>
#include <vector>

#include "objcache/aggregate_plan.h"
#include "objcache/aggregate_wire.h"
#include "objcache/bandwidth_share.h"
#include "s3/extension.h"

namespace kvcs::objcache {

struct ServiceResources;

class AggregatedGetHandler {
 public:
  // `res` must outlive the handler.
  explicit AggregatedGetHandler(ServiceResources& res) : res_(res) {}

  s3::Awaitable<void> Handle(s3::ExtensionContext& ctx);

 private:
  // Starts the 200 stream and writes its header.
  static s3::Awaitable<Status> StartStream(s3::ExtensionContext& ctx, const AggregateRequest& req,
                                           Delivery delivery);
  // Streams the layers in the HTTP body, window by window (Delivery::kInline), after the header.
  s3::Awaitable<void> StreamInline(s3::ExtensionContext& ctx,
                                   std::shared_ptr<const AggregateRequest> req,
                                   std::shared_ptr<std::vector<BlockSlot>> slots,
                                   BandwidthShare& paced);

  ServiceResources& res_;
};

}  // namespace kvcs::objcache

#endif  // KVCS_OBJCACHE_AGGREGATED_GET_HANDLER_H_
