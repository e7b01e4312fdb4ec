// AggregatedPutHandler: POST /<bucket>?kvcs-aggregate-put (docs/protocols/objectcache-
// aggregated.md §5): a KVAP body of containers in, JSON per-block results out, and optionally the
// prefix record of the stored chain.
//
// An aggregated PUT is a pipeline: the connection's thread reads the next container from the socket
// while earlier ones are verified (structure and every layer digest) and committed durably on the
// put_threads, several at once so that their fsyncs overlap. At most kMaxPutInFlight containers
// and kMaxPutInFlightBytes of container buffers are held per request. Results come back in index
// order; the answer (or a 400 for a malformed body) is sent only once every container read so far
// has been stored or refused.
//
// Thread-safe: Handle runs concurrently on the server's threads, one call per request.
#ifndef KVCS_OBJCACHE_AGGREGATED_PUT_HANDLER_H_
#define KVCS_OBJCACHE_AGGREGATED_PUT_HANDLER_H_

#include <cstddef>
#include <cstdint>

#include "s3/extension.h"

namespace kvcs::objcache {

struct ServiceResources;

// Containers of one aggregated PUT in flight (read, waiting for or being verified and committed on
// the put threads): enough concurrent commits for their fsyncs to overlap (measured on the
// 2-core dev VM: 4 to 8 concurrent durable writers reach the disk's ceiling, one alone gets about
// half of it) while the socket reader stays a few containers ahead.
inline constexpr size_t kMaxPutInFlight = 8;
// Container bytes one aggregated PUT may hold at once (in flight plus buffers kept for reuse):
// kMaxPutInFlight of the usual 2 MiB containers fit four times over; a container larger than this
// (up to kMaxPutContainerBytes) is read only when nothing else is held, so it is processed alone.
inline constexpr uint64_t kMaxPutInFlightBytes = 64ull << 20;

class AggregatedPutHandler {
 public:
  // `res` must outlive the handler.
  explicit AggregatedPutHandler(ServiceResources& res) : res_(res) {}

  s3::Awaitable<void> Handle(s3::ExtensionContext& ctx);

 private:
  ServiceResources& res_;
};

}  // namespace kvcs::objcache

#endif  // KVCS_OBJCACHE_AGGREGATED_PUT_HANDLER_H_
