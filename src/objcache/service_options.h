// ServiceOptions: how an ObjectCache Service (service.h) is configured: the KVSP bucket, the
// shared bandwidth cap of aggregated GETs, their read window and the thread pools the handlers
// offload blocking work to. Plain data.
#ifndef KVCS_OBJCACHE_SERVICE_OPTIONS_H_
#define KVCS_OBJCACHE_SERVICE_OPTIONS_H_

#include <cstddef>
#include <string>

#include "objcache/block_events.h"
#include "objcache/block_layout.h"
#include "sched/scheduler.h"

namespace kvcs::objcache {

struct ServiceOptions {
  // Bucket the KVSP endpoints serve from (aggregated requests name their bucket in the path).
  std::string kv_bucket = kDefaultKvBucket;
  // Shared bandwidth cap for aggregated GETs in bytes/s; 0 disables pacing.
  double bandwidth_cap = 0;
  sched::Options sched;
  // One read window: the prototype's delivery groups were 4–16 MiB (4 MiB amortizes per-read cost,
  // 16 MiB caps head-of-line blocking); 16 MiB of 64 KiB block-layers is 256 parallel reads.
  size_t window_bytes = 16u << 20;
  // Threads that run ReadMany batches and opens off the connection threads.
  int offload_threads = 4;
  // Threads that verify and commit aggregated PUT containers (all PUT requests together): enough
  // for fsyncs to overlap (4 concurrent durable writers reach the dev VM disk's ceiling) and for
  // hashing to use every core of a small machine. Separate from offload_threads so that a PUT's
  // fsyncs never delay an aggregated GET.
  int put_threads = 4;
  // Told which blocks each aggregated PUT stored (block_events.h); null: nobody. Not owned; it
  // outlives the Service.
  BlockEvents* events = nullptr;
};

}  // namespace kvcs::objcache

#endif  // KVCS_OBJCACHE_SERVICE_OPTIONS_H_
