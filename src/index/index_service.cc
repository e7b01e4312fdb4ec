// The KVSP Index Service over HTTP: routes, authorization, the worker pool and metrics.
#include "index/index_service.h"

#include "common/asio.h"  // first: fixes the Boost 1.74 + GCC 12 trap (shared/style.md §0)

#include <array>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "common/log.h"
#include "common/strings.h"
#include "http/response_writer.h"
#include "index/index_wire.h"

namespace kvcs::index {
namespace {

constexpr std::string_view kLookupPath = "/kvsp/v1/lookup";
constexpr std::string_view kAnchorsPrefix = "/kvsp/v1/anchors/";
constexpr std::string_view kReplicasPath = "/kvsp/v1/replicas";
constexpr std::string_view kWithdrawPath = "/kvsp/v1/replicas/withdraw";
constexpr std::string_view kMetricsPath = "/metrics";

uint64_t SystemNowMs() {
  return uint64_t(std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count());
}

// The error body's name for a status the HTTP server (or the service) answers without an
// IndexError of its own.
std::string_view NameForStatus(int status) {
  switch (status) {
    case 400:
      return "bad_request";
    case 403:
      return IndexErrorName(IndexError::kForbidden);
    case 404:
      return "not_found";
    case 405:
      return "method_not_allowed";
    case 413:
      return IndexErrorName(IndexError::kTooLarge);
    case 503:
      return IndexErrorName(IndexError::kStoreFailed);
    default:
      return status >= 500 ? "internal" : "bad_request";
  }
}

ServiceReply ErrorReply(int status, std::string_view name, std::string message) {
  return {status, "application/json", ToJson(ErrorBody{std::string(name), std::move(message)})};
}

ServiceReply StatusReply(const Status& s) {
  return {HttpStatusFor(s), "application/json", ErrorJson(s)};
}

// The refusal cause for metrics: the IndexError name of a failed status.
std::string CauseOf(const ServiceReply& r) {
  auto e = ParseErrorBody(r.body);
  return e.ok() ? e->error : std::string(NameForStatus(r.status));
}

auth::Action ActionOf(Endpoint e) {
  return (e == Endpoint::kRegister || e == Endpoint::kWithdraw) ? auth::Action::kRegister
                                                                : auth::Action::kLookup;
}

}  // namespace

std::string_view EndpointName(Endpoint e) {
  switch (e) {
    case Endpoint::kLookup:
      return "lookup";
    case Endpoint::kAnchors:
      return "anchors";
    case Endpoint::kRegister:
      return "register";
    case Endpoint::kWithdraw:
      return "withdraw";
    case Endpoint::kMetrics:
      return "metrics";
    case Endpoint::kServer:
      return "server";
  }
  return "unknown";
}

struct IndexService::Impl {
  RecordStore& store;
  IndexServiceOptions options;
  boost::asio::thread_pool pool;

  // Metrics.
  mutable std::mutex metrics_mu;
  std::map<std::pair<int, int>, uint64_t> requests;  // (endpoint, status) -> count
  std::map<std::string, uint64_t> refusals;          // cause -> count
  std::atomic<uint64_t> lookups{0}, lookup_keys{0}, matched_keys{0};
  std::atomic<uint64_t> anchor_lookups{0}, registrations{0}, registered_keys{0};
  std::atomic<uint64_t> withdrawals{0}, withdrawn_keys{0}, expire_failures{0};

  // Expiry sweep.
  std::mutex sweep_mu;
  std::condition_variable sweep_cv;
  bool stopping = false;
  std::thread sweeper;

  Impl(RecordStore& s, IndexServiceOptions o)
      : store(s), options(std::move(o)), pool(size_t(std::max(1, options.worker_threads))) {
    if (!options.now_ms) options.now_ms = SystemNowMs;
    sweeper = std::thread([this] { Sweep(); });
  }
  ~Impl() {
    {
      std::lock_guard lock(sweep_mu);
      stopping = true;
    }
    sweep_cv.notify_all();
    sweeper.join();
    pool.join();
  }

  void Sweep() {
    std::unique_lock lock(sweep_mu);
    while (!stopping) {
      sweep_cv.wait_for(lock, options.expire_interval);
      if (stopping) break;
      lock.unlock();
      Status s = store.Expire(options.now_ms());
      if (!s.ok()) {
        expire_failures++;
        KVCS_LOG_WARN("[index] expiry sweep failed: {}", s.message());
      }
      lock.lock();
    }
  }

  // The claims of the bearer token, or the 403 reply.
  Result<auth::Claims> Authenticate(std::optional<std::string_view> authorization) const {
    auto forbidden = [](std::string message) {
      return IndexStatus(IndexError::kForbidden, std::move(message));
    };
    if (!authorization) return forbidden("missing Authorization: Bearer <token>");
    std::string_view v = Trim(*authorization);
    constexpr std::string_view kScheme = "bearer ";
    if (v.size() <= kScheme.size() || !AsciiIEquals(v.substr(0, kScheme.size()), kScheme)) {
      return forbidden("Authorization must be \"Bearer <token>\"");
    }
    std::string_view token = Trim(v.substr(kScheme.size()));
    if (!options.verifier) return forbidden("no token keys configured");
    auto claims = options.verifier->Verify(token, int64_t(options.now_ms() / 1000));
    if (!claims.ok()) return forbidden("token not accepted: " + claims.status().message());
    return claims;
  }

  Status Authorize(const std::optional<auth::Claims>& claims, Endpoint e,
                   const Digest& scope_id) const {
    if (options.open) return Status();
    if (claims && claims->Allows(ActionOf(e), auth::ScopeNamespace(scope_id))) return Status();
    // The same refusal whether the scope exists or not: nothing about the index is consulted.
    return IndexStatus(IndexError::kForbidden, "the token does not grant " +
                                                   std::string(auth::ActionName(ActionOf(e))) +
                                                   " on this scope");
  }

  ServiceReply Serve(Endpoint e, std::optional<std::string_view> authorization,
                     std::string_view path, std::optional<std::string_view> scope_q,
                     std::string_view body) {
    if (e == Endpoint::kMetrics) return {200, "text/plain; version=0.0.4", MetricsText()};
    std::optional<auth::Claims> claims;
    if (!options.open) {
      auto c = Authenticate(authorization);
      if (!c.ok()) return StatusReply(c.status());
      claims = std::move(*c);
    }
    uint64_t now = options.now_ms();
    switch (e) {
      case Endpoint::kLookup: {
        auto r = ParseLookupRequest(body);
        if (!r.ok()) return StatusReply(r.status());
        if (Status s = Authorize(claims, e, r->scope_id); !s.ok()) return StatusReply(s);
        auto resp = store.Lookup(*r, now);
        if (!resp.ok()) return StatusReply(resp.status());
        lookups++;
        lookup_keys += r->block_keys.size();
        matched_keys += resp->matched;
        return {200, "application/json", ToJson(*resp)};
      }
      case Endpoint::kAnchors: {
        std::string_view rest = path.substr(kAnchorsPrefix.size());
        size_t slash = rest.find('/');
        if (slash == std::string_view::npos) {
          return ErrorReply(400, "bad_request",
                            "expected /kvsp/v1/anchors/{compat_id}/{anchor_key}?scope_id=…");
        }
        if (!scope_q) {
          return StatusReply(IndexStatus(IndexError::kMissingField, "scope_id query is required"));
        }
        auto r = ParseAnchorsRequest(rest.substr(0, slash), rest.substr(slash + 1), *scope_q);
        if (!r.ok()) return StatusReply(r.status());
        if (Status s = Authorize(claims, e, r->scope_id); !s.ok()) return StatusReply(s);
        auto resp = store.Anchors(*r, now);
        if (!resp.ok()) return StatusReply(resp.status());
        anchor_lookups++;
        return {200, "application/json", ToJson(*resp)};
      }
      case Endpoint::kRegister: {
        auto r = ParseRegisterRequest(body);
        if (!r.ok()) return StatusReply(r.status());
        if (Status s = Authorize(claims, e, r->scope_id); !s.ok()) return StatusReply(s);
        if (Status s = store.Register(*r, now); !s.ok()) return StatusReply(s);
        registrations++;
        registered_keys += r->block_keys.size();
        return {204, "", ""};
      }
      case Endpoint::kWithdraw: {
        auto r = ParseWithdrawRequest(body);
        if (!r.ok()) return StatusReply(r.status());
        if (Status s = Authorize(claims, e, r->scope_id); !s.ok()) return StatusReply(s);
        if (Status s = store.Withdraw(*r, now); !s.ok()) return StatusReply(s);
        withdrawals++;
        withdrawn_keys += r->block_keys.size();
        return {204, "", ""};
      }
      case Endpoint::kMetrics:
      case Endpoint::kServer:
        break;
    }
    return ErrorReply(500, "internal", "unknown endpoint");
  }

  void Count(Endpoint e, const ServiceReply& r) {
    std::string cause = r.status >= 400 ? CauseOf(r) : std::string();
    std::lock_guard lock(metrics_mu);
    requests[{int(e), r.status}]++;
    if (!cause.empty()) refusals[cause]++;
  }

  std::string MetricsText() const {
    std::string out;
    auto counter = [&out](std::string_view name, std::string_view help, uint64_t v) {
      out += "# HELP " + std::string(name) + " " + std::string(help) + "\n# TYPE " +
             std::string(name) + " counter\n" + std::string(name) + " " + std::to_string(v) + "\n";
    };
    {
      std::lock_guard lock(metrics_mu);
      out += "# HELP kvcs_index_requests_total Requests by endpoint and HTTP status.\n";
      out += "# TYPE kvcs_index_requests_total counter\n";
      for (const auto& [k, v] : requests) {
        out += "kvcs_index_requests_total{endpoint=\"" +
               std::string(EndpointName(Endpoint(k.first))) + "\",status=\"" +
               std::to_string(k.second) + "\"} " + std::to_string(v) + "\n";
      }
      out += "# HELP kvcs_index_refusals_total Requests answered with an error, by cause.\n";
      out += "# TYPE kvcs_index_refusals_total counter\n";
      for (const auto& [cause, v] : refusals) {
        out += "kvcs_index_refusals_total{cause=\"" + cause + "\"} " + std::to_string(v) + "\n";
      }
    }
    counter("kvcs_index_lookups_total", "Successful lookups.", lookups);
    counter("kvcs_index_lookup_keys_total", "Block keys asked in successful lookups.", lookup_keys);
    counter("kvcs_index_lookup_matched_keys_total", "Block keys matched by lookups.", matched_keys);
    counter("kvcs_index_anchor_lookups_total", "Successful anchor lookups.", anchor_lookups);
    counter("kvcs_index_registrations_total", "Successful registrations.", registrations);
    counter("kvcs_index_registered_keys_total", "Block keys registered.", registered_keys);
    counter("kvcs_index_withdrawals_total", "Successful withdrawals.", withdrawals);
    counter("kvcs_index_withdrawn_keys_total", "Block keys withdrawn.", withdrawn_keys);
    counter("kvcs_index_expire_failures_total", "Failed expiry sweeps.", expire_failures);
    if (options.records) {
      out += "# HELP kvcs_index_records Replica records held (live or not yet swept).\n";
      out += "# TYPE kvcs_index_records gauge\nkvcs_index_records " +
             std::to_string(options.records()) + "\n";
    }
    out += std::string("# HELP kvcs_index_store_info The record store.\n") +
           "# TYPE kvcs_index_store_info gauge\nkvcs_index_store_info{kind=\"" + store.kind() +
           "\"} 1\n";
    return out;
  }

  // Serve() on the worker pool; the caller resumes on its own executor. Not a coroutine itself,
  // so the arguments live in the spawned lambda, not in temporaries of the caller's co_await.
  http::Awaitable<ServiceReply> OnPool(Endpoint e, std::optional<std::string> authorization,
                                       std::string path, std::optional<std::string> scope,
                                       std::string body) {
    auto job = [this, e, authorization = std::move(authorization), path = std::move(path),
                scope = std::move(scope),
                body = std::move(body)]() -> http::Awaitable<ServiceReply> {
      co_return Serve(e, authorization, path, scope, body);
    };
    return boost::asio::co_spawn(boost::asio::any_io_executor(pool.get_executor()), std::move(job),
                                 boost::asio::use_awaitable);
  }

  // The route handler: reads the body on the I/O thread, answers on the worker pool, writes the
  // reply on the I/O thread.
  http::Awaitable<void> Handle(Endpoint e, const char* method, http::HandlerContext& hc) {
    ServiceReply reply;
    if (hc.request.method != method) {
      reply = ErrorReply(405, NameForStatus(405), "use " + std::string(method) + " for this path");
    } else {
      std::string body;
      bool body_ok = true;
      if (e != Endpoint::kAnchors && e != Endpoint::kMetrics) {
        auto b = co_await hc.body.ReadAll(kMaxRequestBytes);
        if (!b.ok()) {
          body_ok = false;
          bool too_large = b.status().code() == Code::kResourceExhausted ||
                           b.status().Is(http::BodyError::kTooLarge);
          reply = too_large
                      ? ErrorReply(413, NameForStatus(413),
                                   "request body larger than " + std::to_string(kMaxRequestBytes) +
                                       " bytes")
                      : ErrorReply(400, "bad_request", "request body: " + b.status().message());
          hc.body.Abandon();
        } else {
          body.assign(b->begin(), b->end());
        }
      }
      if (body_ok) {
        std::optional<std::string> authorization, scope;
        if (auto a = hc.request.Header("Authorization")) authorization.emplace(*a);
        if (auto q = hc.request.Query("scope_id")) scope.emplace(*q);
        std::string path = hc.request.path;
        reply = co_await OnPool(e, std::move(authorization), std::move(path), std::move(scope),
                                std::move(body));
      }
    }
    Count(e, reply);
    if (reply.status >= 400 && reply.status != 403) {
      KVCS_LOG_DEBUG("[index] {} {} -> {} {}", hc.request.method, hc.request.path, reply.status,
                     reply.body);
    } else if (reply.status == 403) {
      KVCS_LOG_INFO("[index] {} {} refused: {}", hc.request.method, hc.request.path, reply.body);
    }
    http::HeaderList headers;
    if (!reply.content_type.empty()) headers.emplace_back("Content-Type", reply.content_type);
    headers.emplace_back("Cache-Control", "no-store");
    co_await http::SendComplete(hc.response, reply.status, std::move(headers), reply.body);
  }
};

IndexService::IndexService(RecordStore& store, IndexServiceOptions options)
    : impl_(std::make_unique<Impl>(store, std::move(options))) {}
IndexService::~IndexService() = default;

void IndexService::ConfigureLimits(http::Limits* limits) {
  limits->max_body_bytes = kMaxRequestBytes;
  limits->max_drain_bytes = kMaxRequestBytes;
  // A request head is a path of ~200 bytes and a token of at most auth::kMaxTokenBytes.
  limits->max_header_bytes = 16 * 1024;
}

void IndexService::Mount(http::Server& server) {
  Impl* impl = impl_.get();
  auto add = [&](Endpoint e, const char* method, http::Matcher m) {
    server.router().Add(http::Route{
        std::string(EndpointName(e)), std::move(m),
        [impl, e, method](http::HandlerContext& hc) { return impl->Handle(e, method, hc); }});
  };
  auto exact = [](std::string_view p) {
    return [p](const http::Request& r) { return r.path == p; };
  };
  add(Endpoint::kLookup, "POST", exact(kLookupPath));
  add(Endpoint::kWithdraw, "POST", exact(kWithdrawPath));
  add(Endpoint::kRegister, "POST", exact(kReplicasPath));
  add(Endpoint::kAnchors, "GET", http::Router::PathPrefix(std::string(kAnchorsPrefix)));
  add(Endpoint::kMetrics, "GET", exact(kMetricsPath));
  server.SetErrorResponder([impl](http::ResponseWriter& w, int status,
                                  std::string_view message) -> http::Awaitable<Status> {
    std::string body = ToJson(ErrorBody{std::string(NameForStatus(status)), std::string(message)});
    impl->Count(Endpoint::kServer, ServiceReply{status, "application/json", body});
    http::HeaderList headers;
    headers.emplace_back("Content-Type", "application/json");
    co_return co_await http::SendComplete(w, status, std::move(headers), body);
  });
}

ServiceReply IndexService::Serve(Endpoint e, std::optional<std::string_view> authorization,
                                 std::string_view path, std::optional<std::string_view> scope_id,
                                 std::string_view body) {
  return impl_->Serve(e, authorization, path, scope_id, body);
}

std::string IndexService::MetricsText() const { return impl_->MetricsText(); }

}  // namespace kvcs::index
