// The ObjectCache service: routing to the handlers. See service.h and
// docs/protocols/objectcache-aggregated.md.
#include "objcache/service.h"

#include <utility>

#include "objcache/aggregated_exists_handler.h"
#include "objcache/aggregated_get_handler.h"
#include "objcache/aggregated_put_handler.h"
#include "objcache/kvsp_endpoints.h"
#include "objcache/service_resources.h"
#include "objcache/shm_server.h"

namespace kvcs::objcache {

namespace {

constexpr char kAggregateQuery[] = "kvcs-aggregate";
constexpr char kAggregatePutQuery[] = "kvcs-aggregate-put";
constexpr char kAggregateExistsQuery[] = "kvcs-aggregate-exists";

}  // namespace

struct Service::Impl {
  explicit Impl(ServiceOptions o)
      : res(std::move(o)),
        aggregated_get(res),
        aggregated_put(res),
        aggregated_exists(res),
        kvsp(res) {}

  ServiceResources res;
  AggregatedGetHandler aggregated_get;
  AggregatedPutHandler aggregated_put;
  AggregatedExistsHandler aggregated_exists;
  KvspEndpoints kvsp;
};

Service::Service(ServiceOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Service::~Service() = default;

Status Service::ListenShm(const std::string& path) {
  std::unique_ptr<ShmServer>& shm = impl_->res.shm;
  if (shm) return InvalidArgument("shm socket: already listening on " + shm->path());
  ShmServerOptions o;
  o.path = path;
  KVCS_ASSIGN_OR_RETURN(shm, ShmServer::Start(std::move(o)));
  return Status::Ok();
}

std::vector<s3::Extension> Service::Extensions() {
  Impl* impl = impl_.get();
  std::vector<s3::Extension> ext;
  ext.push_back(s3::Extension{
      "objcache-aggregate", s3::ExtensionAuth::kSigV4,
      [](const s3::ExtensionRequest& r) {
        return r.method == "POST" && !r.bucket.empty() && r.key.empty() &&
               r.HasQuery(kAggregateQuery);
      },
      [impl](s3::ExtensionContext& ctx) { return impl->aggregated_get.Handle(ctx); }});
  ext.push_back(s3::Extension{
      "objcache-aggregate-put", s3::ExtensionAuth::kSigV4,
      [](const s3::ExtensionRequest& r) {
        return r.method == "POST" && !r.bucket.empty() && r.key.empty() &&
               r.HasQuery(kAggregatePutQuery);
      },
      [impl](s3::ExtensionContext& ctx) { return impl->aggregated_put.Handle(ctx); }});
  ext.push_back(s3::Extension{
      "objcache-aggregate-exists", s3::ExtensionAuth::kSigV4,
      [](const s3::ExtensionRequest& r) {
        return r.method == "POST" && !r.bucket.empty() && r.key.empty() &&
               r.HasQuery(kAggregateExistsQuery);
      },
      [impl](s3::ExtensionContext& ctx) { return impl->aggregated_exists.Handle(ctx); }});
  ext.push_back(s3::Extension{
      "kvsp-blocks", s3::ExtensionAuth::kNone,
      [](const s3::ExtensionRequest& r) {
        return (r.method == "GET" || r.method == "HEAD") && r.path.rfind(kKvspBlocksPrefix, 0) == 0;
      },
      [impl](s3::ExtensionContext& ctx) { return impl->kvsp.ServeBlock(ctx); }});
  ext.push_back(
      s3::Extension{"kvsp-prefix", s3::ExtensionAuth::kNone,
                    [](const s3::ExtensionRequest& r) {
                      return r.method == "GET" && r.path.rfind(kKvspPrefixPrefix, 0) == 0;
                    },
                    [impl](s3::ExtensionContext& ctx) { return impl->kvsp.ServePrefix(ctx); }});
  return ext;
}

}  // namespace kvcs::objcache
