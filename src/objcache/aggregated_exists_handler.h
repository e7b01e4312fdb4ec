// AggregatedExistsHandler: POST /<bucket>?kvcs-aggregate-exists
// (docs/protocols/objectcache-aggregated.md §3a): which blocks of a list the bucket holds, in one
// request: the request JSON of the aggregated GET (§3), the answer one JSON object with the status
// of every block (held with the requested layers, or why not) and the count of leading held ones.
// Authorization as the aggregated GET: SigV4, the bucket's owner only.
// Thread-safe: Handle runs concurrently on the server's threads, one call per request.
#ifndef KVCS_OBJCACHE_AGGREGATED_EXISTS_HANDLER_H_
#define KVCS_OBJCACHE_AGGREGATED_EXISTS_HANDLER_H_

#include "s3/extension.h"

namespace kvcs::objcache {

struct ServiceResources;

class AggregatedExistsHandler {
 public:
  // `res` must outlive the handler.
  explicit AggregatedExistsHandler(ServiceResources& res) : res_(res) {}

  s3::Awaitable<void> Handle(s3::ExtensionContext& ctx);

 private:
  ServiceResources& res_;
};

}  // namespace kvcs::objcache

#endif  // KVCS_OBJCACHE_AGGREGATED_EXISTS_HANDLER_H_
