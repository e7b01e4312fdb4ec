// ServiceResources: what the handlers of one ObjectCache Service (service.h) share: its options,
// the offload pools blocking work runs on, the bandwidth cap aggregated GETs share, the read
// windows they reuse, and the same-host registration socket once listening. Each handler
// (aggregated_get_handler.h, aggregated_put_handler.h, kvsp_endpoints.h) holds a reference.
//
// Lifetime: outlives every handler call (the Service owns it; it must outlive the Server). The
// destructor joins the pools, so no offloaded job outlives it. Thread-safe: the pools, the
// bandwidth and the window pool are; `shm` is set before the server starts and only read after.
#ifndef KVCS_OBJCACHE_SERVICE_RESOURCES_H_
#define KVCS_OBJCACHE_SERVICE_RESOURCES_H_

#include <algorithm>
#include <cstddef>
#include <memory>
#include <utility>

#include "common/asio.h"
#include "objcache/bandwidth_share.h"
#include "objcache/read_window.h"
#include "objcache/service_options.h"
#include "objcache/shm_server.h"

namespace kvcs::objcache {

struct ServiceResources {
  explicit ServiceResources(ServiceOptions o)
      : options(std::move(o)),
        pool(static_cast<size_t>(std::max(1, options.offload_threads))),
        put_pool(static_cast<size_t>(std::max(1, options.put_threads))),
        bandwidth(options.bandwidth_cap, options.sched),
        windows(options.window_bytes) {}
  ~ServiceResources() {
    pool.join();
    put_pool.join();
  }
  ServiceResources(const ServiceResources&) = delete;
  ServiceResources& operator=(const ServiceResources&) = delete;

  const ServiceOptions options;
  // Reads (ReadMany batches, probes, whole containers) and opens, off the connection threads.
  boost::asio::thread_pool pool;
  // Aggregated PUT containers are verified and committed here, not on `pool`: a PUT's jobs wait
  // on fsync for milliseconds each and must never queue ahead of an aggregated GET's reads.
  boost::asio::thread_pool put_pool;
  SharedBandwidth bandwidth;
  // Windows of finished aggregated GETs, reused by the next ones.
  WindowPool windows;
  std::unique_ptr<ShmServer> shm;  // same-host delivery, when listening
};

}  // namespace kvcs::objcache

#endif  // KVCS_OBJCACHE_SERVICE_RESOURCES_H_
