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
// An aggregated PUT is a pipeline: the connection's thread reads the next container from the socket
// while earlier ones are verified (structure and every layer digest) and committed durably on the
// put_threads, several at once so that their fsyncs overlap. At most kMaxPutInFlight containers
// and kMaxPutInFlightBytes of container buffers are held per request. Results come back in index
// order; the answer (or a 400 for a malformed body) is sent only once every container read so far
// has been stored or refused.
//
// Lifetime: the Service must outlive the Server it is registered with. Thread-safe: handlers run
// concurrently on the server's threads; the scheduler is guarded by a mutex.
#ifndef KVCS_OBJCACHE_SERVICE_H_
#define KVCS_OBJCACHE_SERVICE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "objcache/block_layout.h"
#include "s3/extension.h"
#include "sched/scheduler.h"

namespace kvcs::objcache {

// Containers of one aggregated PUT in flight (read, waiting for or being verified and committed on
// the put threads): enough concurrent commits for their fsyncs to overlap (measured on the
// 2-core dev VM: 4 to 8 concurrent durable writers reach the disk's ceiling, one alone gets about
// half of it) while the socket reader stays a few containers ahead.
inline constexpr size_t kMaxPutInFlight = 8;
// Container bytes one aggregated PUT may hold at once (in flight plus buffers kept for reuse):
// kMaxPutInFlight of the usual 2 MiB containers fit four times over; a container larger than this
// (up to kMaxPutContainerBytes) is read only when nothing else is held, so it is processed alone.
inline constexpr uint64_t kMaxPutInFlightBytes = 64ull << 20;

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
