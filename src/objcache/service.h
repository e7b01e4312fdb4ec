// The ObjectCache service: the aggregated layer-major GET and the aggregated PUT
// (docs/protocols/objectcache-aggregated.md) and the KVSP retrieval endpoints (shared/specs/
// kvsp.md §8, KVSP v1 as defined by the project), served by the S3 server through its extension
// hook (s3/extension.h) on the same port and the same ObjectStore.
//
//   POST /<bucket>?kvcs-aggregate      JSON request → layer-major stream   (SigV4)
//   POST /<bucket>?kvcs-aggregate-put  KVAP body → JSON per-block results  (SigV4)
//   GET|HEAD /_kvsp/blocks/<compat_id>/<block_key>?codec=&layers=a-b        (KVSP-Scope-ID)
//   GET /_kvsp/prefix/<compat_id>/<anchor_key>?from=i&codec=                (KVSP-Scope-ID)
//
// ("_kvsp" cannot be an S3 bucket name, so these paths never shadow a bucket.)
//
// Memory per aggregated GET is bounded by two read windows (window_bytes each, plus 52 bytes of
// record per block): one being written to the socket while the next is read. Reads of a window
// run in parallel on the store's I/O threads (ObjectStore::ReadMany), offloaded from the
// connection's thread. Writes are paced at the rate the shared BandwidthScheduler grants the
// request (when a cap is configured).
//
// Lifetime: the Service must outlive the Server it is registered with. Thread-safe: handlers run
// concurrently on the server's threads; the scheduler is guarded by a mutex.
#ifndef KVCS_OBJCACHE_SERVICE_H_
#define KVCS_OBJCACHE_SERVICE_H_

#include <memory>
#include <string>
#include <vector>

#include "objcache/block_layout.h"
#include "s3/extension.h"
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
};

class Service {
 public:
  explicit Service(ServiceOptions options = {});
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // The extensions to register with s3::Server::AddExtension (they capture `this`).
  std::vector<s3::Extension> Extensions();

  // Starts same-host delivery (docs §8): clients on this host register shared buffers on a Unix
  // socket at `path` (created mode 0600; a stale socket there is replaced), and aggregated GETs
  // that name one get their block bytes written into it instead of the HTTP body.
  Status ListenShm(const std::string& path);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvcs::objcache

#endif  // KVCS_OBJCACHE_SERVICE_H_
