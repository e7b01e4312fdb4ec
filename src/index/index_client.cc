// The KVSP Index Service client. See index_client.h.
#include "index/index_client.h"

#include "common/asio.h"  // first: fixes the Boost 1.74 + GCC 12 trap (shared/style.md §0)

#include <algorithm>
#include <mutex>
#include <utility>

#include "common/strings.h"
#include "s3client/connection_pool.h"
#include "s3client/errors.h"

namespace kvcs::index {
namespace {

namespace bhttp = boost::beast::http;

Status ClientStatus(Code code, IndexClientError e, std::string message) {
  return Status(code, std::move(message), static_cast<int>(e));
}

// The typed index error of a transport failure (s3client's ClientError).
Status FromTransport(const Status& s, const std::string& url, size_t max_response_bytes) {
  using s3client::ClientError;
  std::string where = "index " + url + ": ";
  if (s.Is(ClientError::kTimeout) || s.Is(ClientError::kDeadlineExceeded)) {
    return ClientStatus(Code::kUnavailable, IndexClientError::kTimeout,
                        where + "timed out: " + s.message());
  }
  if (s.Is(ClientError::kResponseTooLarge)) {
    return ClientStatus(Code::kResourceExhausted, IndexClientError::kBadResponse,
                        where + "response above " + std::to_string(max_response_bytes) + " bytes");
  }
  if (s.Is(ClientError::kTlsCertificate) || s.Is(ClientError::kTlsHandshake)) {
    return ClientStatus(Code::kUnavailable, IndexClientError::kTls, where + s.message());
  }
  if (s.code() == Code::kInvalidArgument) {  // an unreadable ca_file
    return ClientStatus(Code::kInvalidArgument, IndexClientError::kTls, where + s.message());
  }
  if (s.Is(ClientError::kProtocol)) {
    return ClientStatus(Code::kUnavailable, IndexClientError::kBadResponse, where + s.message());
  }
  return ClientStatus(Code::kUnavailable, IndexClientError::kUnreachable, where + s.message());
}

}  // namespace

// The connection pool every copy of one client shares. Made at the first exchange (it resolves
// the name and reads the CA file); a failure is returned and tried again on the next call.
struct IndexClient::Transport {
  std::mutex mu;
  std::unique_ptr<s3client::ConnectionPool> pool;  // guarded by mu until set, then immutable
};

std::string_view IndexClientErrorName(IndexClientError e) {
  switch (e) {
    case IndexClientError::kNone:
      return "none";
    case IndexClientError::kBadUrl:
      return "bad_url";
    case IndexClientError::kUnreachable:
      return "unreachable";
    case IndexClientError::kTimeout:
      return "timeout";
    case IndexClientError::kBadResponse:
      return "bad_response";
    case IndexClientError::kTls:
      return "tls";
  }
  return "unknown";
}

IndexError IndexErrorFromName(std::string_view name) {
  for (int i = 1; i <= static_cast<int>(IndexError::kStoreFailed); ++i) {
    if (IndexErrorName(static_cast<IndexError>(i)) == name) return static_cast<IndexError>(i);
  }
  return IndexError::kNone;
}

IndexClient::IndexClient(IndexClientOptions o)
    : options_(std::move(o)), transport_(std::make_shared<Transport>()) {}

Result<IndexClient> IndexClient::Create(IndexClientOptions options) {
  std::string_view url = options.url;
  auto bad = [&](std::string why) {
    return ClientStatus(
        Code::kInvalidArgument, IndexClientError::kBadUrl,
        "index URL '" + options.url + "' " + why + " (expected http[s]://HOST:PORT[/base])");
  };
  bool tls = false;
  if (url.substr(0, 8) == "https://") {
    tls = true;
    url.remove_prefix(8);
  } else if (url.substr(0, 7) == "http://") {
    url.remove_prefix(7);
  } else {
    return bad("is not http:// or https://");
  }
  size_t slash = url.find('/');
  std::string_view authority = url.substr(0, slash);
  std::string_view base = slash == std::string_view::npos ? "" : url.substr(slash);
  while (!base.empty() && base.back() == '/') base.remove_suffix(1);
  if (base.find_first_of("?#") != std::string_view::npos) return bad("has a query or fragment");
  size_t colon = authority.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return bad("has no HOST:PORT");
  std::string_view host = authority.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  auto port = ParseDecimal<uint16_t>(authority.substr(colon + 1));
  if (!port || *port == 0) return bad("has a bad port");
  if (options.timeout.count() <= 0) return bad("needs a positive timeout");
  IndexClient c(std::move(options));
  c.host_ = std::string(host);
  c.port_ = *port;
  c.tls_ = tls;
  c.base_ = std::string(base);
  c.host_header_ = std::string(authority);
  return c;
}

Result<IndexClient::Answer> IndexClient::Exchange(std::string_view method,
                                                  const std::string& target,
                                                  std::string body) const {
  const auto deadline = s3client::HttpConnection::Clock::now() + options_.timeout;
  s3client::ConnectionPool* pool = nullptr;
  {
    std::lock_guard<std::mutex> lock(transport_->mu);
    if (!transport_->pool) {
      s3client::PoolOptions po;
      po.host = host_;
      po.port = port_;
      po.tls = tls_;
      po.ca_file = options_.ca_file;
      po.insecure = options_.insecure;
      po.max_connections = std::max(1, options_.max_connections);
      auto p = s3client::ConnectionPool::Create(po);
      if (!p.ok()) return FromTransport(p.status(), options_.url, options_.max_response_bytes);
      transport_->pool = std::move(*p);
    }
    pool = transport_->pool.get();
  }
  const bool get = method == "GET";
  for (int attempt = 0;; ++attempt) {
    s3client::HttpConnection::Request req{get ? bhttp::verb::get : bhttp::verb::post,
                                          base_ + target, 11};
    req.set(bhttp::field::host, host_header_);
    if (!options_.bearer.empty()) {
      req.set(bhttp::field::authorization, "Bearer " + options_.bearer);
    }
    if (!get) req.set(bhttp::field::content_type, "application/json");
    req.keep_alive(true);
    req.body().data = body.empty() ? nullptr : body.data();
    req.body().size = body.size();
    req.body().more = false;
    if (!get) req.content_length(body.size());
    const uint64_t opened = pool->opened();
    auto conn = pool->Acquire(deadline);
    if (!conn.ok()) return FromTransport(conn.status(), options_.url, options_.max_response_bytes);
    const bool reused = pool->opened() == opened;
    s3client::HttpResponse resp;
    Status s = (*conn)->Exchange(req, /*head=*/false, options_.max_response_bytes, deadline, &resp);
    if (!s.ok()) {
      pool->Discard(std::move(*conn));
      // A kept-alive connection the index closed meanwhile: once more on a fresh one.
      if (reused && attempt == 0 && !s.Is(s3client::ClientError::kTimeout) &&
          !s.Is(s3client::ClientError::kResponseTooLarge)) {
        continue;
      }
      return FromTransport(s, options_.url, options_.max_response_bytes);
    }
    if ((*conn)->reusable()) {
      pool->Release(std::move(*conn));
    } else {
      pool->Discard(std::move(*conn));
    }
    return Answer{resp.status, std::string(resp.body.begin(), resp.body.end())};
  }
}

Status IndexClient::Check(const Answer& a, unsigned want) const {
  if (a.status == want) return Status::Ok();
  auto e = ParseErrorBody(a.body);
  if (e.ok()) {
    IndexError err = IndexErrorFromName(e->error);
    std::string message =
        "index answered " + std::to_string(a.status) + " " + e->error + ": " + e->message;
    if (err != IndexError::kNone) return IndexStatus(err, std::move(message));
    return ClientStatus(Code::kUnavailable, IndexClientError::kBadResponse, std::move(message));
  }
  return ClientStatus(Code::kUnavailable, IndexClientError::kBadResponse,
                      "index " + options_.url + " answered " + std::to_string(a.status) +
                          " without a §7 error body");
}

Result<LookupResponse> IndexClient::Lookup(const LookupRequest& r) const {
  KVCS_ASSIGN_OR_RETURN(Answer a, Exchange("POST", "/kvsp/v1/lookup", ToJson(r)));
  KVCS_RETURN_IF_ERROR(Check(a, 200));
  auto resp = ParseLookupResponse(a.body);
  if (!resp.ok() || resp->matched > r.block_keys.size()) {
    return ClientStatus(Code::kUnavailable, IndexClientError::kBadResponse,
                        "index " + options_.url + ": bad lookup response: " +
                            (resp.ok() ? "more matches than keys" : resp.status().message()));
  }
  return resp;
}

Result<LookupResponse> IndexClient::LookupPrefix(const Digest& compat_id, const Digest& scope_id,
                                                 std::span<const Digest> keys,
                                                 uint32_t max_replicas) const {
  LookupResponse all;
  for (size_t off = 0; off < keys.size();) {
    LookupRequest req;
    req.compat_id = compat_id;
    req.scope_id = scope_id;
    req.max_replicas = max_replicas;
    size_t n = std::min(kMaxKeysPerRequest, keys.size() - off);
    req.block_keys.assign(keys.begin() + off, keys.begin() + off + n);
    auto r = Lookup(req);
    if (!r.ok() && r.status().Is(IndexError::kUnknownCompat) && off > 0) break;
    if (!r.ok()) return r.status();
    all.matched += r->matched;
    for (LookupEntry& e : r->entries) all.entries.push_back(std::move(e));
    if (r->matched < n) break;
    off += n;
  }
  return all;
}

Result<AnchorsResponse> IndexClient::Anchors(const AnchorsRequest& r) const {
  KVCS_ASSIGN_OR_RETURN(Answer a, Exchange("GET", AnchorsPath(r), ""));
  KVCS_RETURN_IF_ERROR(Check(a, 200));
  auto resp = ParseAnchorsResponse(a.body);
  if (!resp.ok()) {
    return ClientStatus(
        Code::kUnavailable, IndexClientError::kBadResponse,
        "index " + options_.url + ": bad anchors response: " + resp.status().message());
  }
  return resp;
}

Status IndexClient::Register(const RegisterRequest& r) const {
  KVCS_ASSIGN_OR_RETURN(Answer a, Exchange("POST", "/kvsp/v1/replicas", ToJson(r)));
  return Check(a, 204);
}

Status IndexClient::Withdraw(const WithdrawRequest& r) const {
  KVCS_ASSIGN_OR_RETURN(Answer a, Exchange("POST", "/kvsp/v1/replicas/withdraw", ToJson(r)));
  return Check(a, 204);
}

}  // namespace kvcs::index
