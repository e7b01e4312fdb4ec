// ShmDelivery: the same-host delivery of one aggregated GET (docs/protocols/objectcache-
// aggregated.md §8). Layer i of the request goes into slot i mod S of the client's registered
// buffer (shm_server.h), each block at a cache-line-aligned offset; the stream carries only the
// records, with offsets. Before writing layer i >= S it waits until the client released layer
// i - S; a client that cancels, closes its registration or does not release in time ends the
// stream with the abandoned status.
//
// Used by AggregatedGetHandler (aggregated_get_handler.h) for one request, on its coroutine.
#ifndef KVCS_OBJCACHE_SHM_DELIVERY_H_
#define KVCS_OBJCACHE_SHM_DELIVERY_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "objcache/aggregate_plan.h"
#include "objcache/aggregate_wire.h"
#include "objcache/bandwidth_share.h"
#include "objcache/shm_server.h"
#include "s3/extension.h"

namespace kvcs::objcache {

struct ServiceResources;

// How a request waits for its client to release a slot (or for the buffer to be free) before it
// gives up; an engine computes one layer in milliseconds, so this only ends requests whose client
// stopped without cancelling.
inline constexpr auto kShmWaitTimeout = std::chrono::seconds(30);

class ShmDelivery {
 public:
  // REQUIRES: req->shm is set and `reg` claimed for req->shm->nonce; `res` outlives this.
  ShmDelivery(ServiceResources& res, std::shared_ptr<const AggregateRequest> req,
              std::shared_ptr<std::vector<BlockSlot>> slots, std::shared_ptr<ShmRegistration> reg);

  // Empty when a slot of the buffer holds any requested layer (Σ over blocks of its largest
  // carried layer, from the probed tables); otherwise the 400 message. Checked before a byte is
  // sent.
  std::string CheckFits() const;

  // Writes the layers into the buffer and their frames to the stream, whose header the caller
  // has written, then the end frame, and finishes the response.
  s3::Awaitable<void> Run(s3::ExtensionContext& ctx, BandwidthShare& paced);

 private:
  ServiceResources& res_;
  const std::shared_ptr<const AggregateRequest> req_;
  const std::shared_ptr<std::vector<BlockSlot>> slots_;
  const std::shared_ptr<ShmRegistration> reg_;
  const uint32_t nslots_;
  const uint64_t slot_bytes_;
};

}  // namespace kvcs::objcache

#endif  // KVCS_OBJCACHE_SHM_DELIVERY_H_
