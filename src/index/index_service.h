// The KVSP Index Service over HTTP (KVSP v1 as defined by the project, spec §7): mounts the four
// §7 endpoints and GET /metrics on an http::Server and answers them from a RecordStore.
//
//   POST /kvsp/v1/lookup                                          lookup     -> 200 LookupResponse
//   GET  /kvsp/v1/anchors/{compat_id}/{anchor_key}?scope_id=…     lookup     -> 200 AnchorsResponse
//   POST /kvsp/v1/replicas                                        register   -> 204
//   POST /kvsp/v1/replicas/withdraw                               register   -> 204
//   GET  /metrics                                                 (no token) -> Prometheus text
//
// Authorization: "Authorization: Bearer <ES256 JWT>" (auth/token.h) whose claims grant the
// endpoint's action on the namespace ("kvcs-1", hex(scope_id)) or a prefix of it. Every refusal
// is 403 "forbidden" (no token, bad or expired token, or a token without the grant) and is decided
// before the store is asked, so the answer is the same whether the scope exists or not. With
// options.open (explicit only) every request is allowed.
//
// Errors are §7 JSON bodies {"error","message"}: 400 malformed, 403, 404 unknown compat_id,
// 405 wrong method, 413 body above kMaxRequestBytes, 503 store failed. Store calls block (SQLite
// fsync, a Redis round trip): they run on a small worker pool, never on the I/O threads. An
// expiry sweep calls RecordStore::Expire every options.expire_interval.
//
// Thread-safe; the store must outlive the service, and the service the server it is mounted on.
#ifndef KVCS_INDEX_INDEX_SERVICE_H_
#define KVCS_INDEX_INDEX_SERVICE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "auth/token.h"
#include "http/server.h"
#include "index/record_store.h"

namespace kvcs::index {

struct IndexServiceOptions {
  // Tokens are checked against these keys. REQUIRES: set unless open.
  std::shared_ptr<const auth::Verifier> verifier;
  // No authorization at all; only when configured explicitly (kvcs index --open).
  bool open = false;
  // Threads that run store calls.
  int worker_threads = 2;
  std::chrono::milliseconds expire_interval = std::chrono::seconds(1);
  // Milliseconds since the Unix epoch; the system clock when empty (tests pass their own).
  std::function<uint64_t()> now_ms;
  // Records held, for the kvcs_index_records gauge; omitted when empty (Redis: shared, unknown).
  std::function<size_t()> records;
};

// The §7 endpoints, for metrics and tests; kServer labels what the HTTP server answers itself
// (no route, a head or declared body over the bounds).
enum class Endpoint { kLookup, kAnchors, kRegister, kWithdraw, kMetrics, kServer };
std::string_view EndpointName(Endpoint e);

// One answer, before it is written to the connection.
struct ServiceReply {
  int status = 500;
  std::string content_type = "application/json";
  std::string body;
};

class IndexService {
 public:
  IndexService(RecordStore& store, IndexServiceOptions options);
  ~IndexService();
  IndexService(const IndexService&) = delete;
  IndexService& operator=(const IndexService&) = delete;

  // The server options the service needs: bodies bounded by kMaxRequestBytes, small heads.
  static void ConfigureLimits(http::Limits* limits);
  // Adds the routes and the JSON error responder. REQUIRES: before server.Start().
  void Mount(http::Server& server);

  // Answers one request synchronously (what the worker pool runs; also for tests).
  // `authorization` is the Authorization header, `path` the decoded path, `scope_id` the query
  // value of the anchors endpoint.
  ServiceReply Serve(Endpoint e, std::optional<std::string_view> authorization,
                     std::string_view path, std::optional<std::string_view> scope_id,
                     std::string_view body);
  // Prometheus text exposition of the counters.
  std::string MetricsText() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvcs::index

#endif  // KVCS_INDEX_INDEX_SERVICE_H_
