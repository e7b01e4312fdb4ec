// KvspEndpoints: the KVSP retrieval endpoints (shared/specs/kvsp.md §8, KVSP v1 as defined by the
// project), served from ServiceOptions::kv_bucket without SigV4 (the KVSP-Scope-ID header names
// the scope):
//
//   GET|HEAD /_kvsp/blocks/<compat_id>/<block_key>?codec=&layers=a-b   one container (ServeBlock)
//   GET /_kvsp/prefix/<compat_id>/<anchor_key>?from=i&codec=           a prefix's containers
//                                                                       (ServePrefix)
//
// ("_kvsp" cannot be an S3 bucket name, so these paths never shadow a bucket.) Every container is
// read whole and verified before a byte of it is sent; errors are a plain status and a short text.
//
// Thread-safe: both run concurrently on the server's threads, one call per request.
#ifndef KVCS_OBJCACHE_KVSP_ENDPOINTS_H_
#define KVCS_OBJCACHE_KVSP_ENDPOINTS_H_

#include "s3/extension.h"

namespace kvcs::objcache {

struct ServiceResources;

// Path prefixes of the two endpoints.
inline constexpr char kKvspBlocksPrefix[] = "/_kvsp/blocks/";
inline constexpr char kKvspPrefixPrefix[] = "/_kvsp/prefix/";

class KvspEndpoints {
 public:
  // `res` must outlive the endpoints.
  explicit KvspEndpoints(ServiceResources& res) : res_(res) {}

  s3::Awaitable<void> ServeBlock(s3::ExtensionContext& ctx);
  s3::Awaitable<void> ServePrefix(s3::ExtensionContext& ctx);

 private:
  ServiceResources& res_;
};

}  // namespace kvcs::objcache

#endif  // KVCS_OBJCACHE_KVSP_ENDPOINTS_H_
