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
// The Service owns what the handlers share (service_resources.h) and routes each request to its
// handler: AggregatedGetHandler (aggregated_get_handler.h, with same-host delivery in
// shm_delivery.h), AggregatedPutHandler (aggregated_put_handler.h) and KvspEndpoints
// (kvsp_endpoints.h). Their headers say how each bounds memory and uses the threads.
//
// Lifetime: the Service must outlive the Server it is registered with. Thread-safe: handlers run
// concurrently on the server's threads; the scheduler is guarded by a mutex.
#ifndef KVCS_OBJCACHE_SERVICE_H_
#define KVCS_OBJCACHE_SERVICE_H_

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "objcache/service_options.h"
#include "s3/extension.h"

namespace kvcs::objcache {

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
