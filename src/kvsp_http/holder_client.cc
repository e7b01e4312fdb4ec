// The KVSP §8 HTTP client. See holder_client.h.
#include "kvsp_http/holder_client.h"

#include <utility>

#include "common/hex.h"
#include "s3client/connection_pool.h"
#include "s3client/errors.h"
#include "s3client/s3_client.h"

namespace kvcs::kvsp_http {

namespace http = boost::beast::http;

namespace {

constexpr char kDefaultBasePath[] = "/_kvsp";
constexpr char kContainerType[] = "application/vnd.kvsp.container";

Status HolderStatus(Code code, HolderError e, std::string message) {
  return {code, "kvsp holder: " + std::string(HolderErrorName(e)) + ": " + std::move(message),
          static_cast<int>(e)};
}

// An error from the HTTP layer (pool or connection), as a HolderError.
Status FromTransport(const Status& s, const std::string& url) {
  if (s.Is(s3client::ClientError::kTimeout) || s.Is(s3client::ClientError::kDeadlineExceeded)) {
    return HolderStatus(Code::kUnavailable, HolderError::kTimeout, url + ": " + s.message());
  }
  if (s.Is(s3client::ClientError::kResponseTooLarge)) {
    return HolderStatus(Code::kResourceExhausted, HolderError::kBadResponse,
                        url + ": " + s.message());
  }
  return HolderStatus(Code::kUnavailable, HolderError::kConnect, url + ": " + s.message());
}

}  // namespace

std::string_view HolderErrorName(HolderError e) {
  switch (e) {
    case HolderError::kNone:
      return "none";
    case HolderError::kBadUrl:
      return "bad holder URL";
    case HolderError::kConnect:
      return "cannot reach the holder";
    case HolderError::kTimeout:
      return "timeout";
    case HolderError::kNotHeld:
      return "block not held";
    case HolderError::kCodecUnavailable:
      return "codec not available";
    case HolderError::kRangeNotHeld:
      return "layer range not held";
    case HolderError::kHttpStatus:
      return "unexpected HTTP status";
    case HolderError::kBadResponse:
      return "bad response";
    case HolderError::kBadContainer:
      return "container failed verification";
  }
  return "unknown";
}

struct HolderClient::Response {
  s3client::HttpResponse http;
};

HolderClient::~HolderClient() = default;

Result<std::unique_ptr<HolderClient>> HolderClient::Create(std::string_view url,
                                                           HolderOptions options) {
  // Split "scheme://authority[/base]" and let the S3 client's parser take the endpoint.
  const size_t scheme = url.find("://");
  const size_t slash = scheme == std::string_view::npos ? scheme : url.find('/', scheme + 3);
  std::string_view endpoint = url.substr(0, slash), base = "";
  if (slash != std::string_view::npos) base = url.substr(slash);
  while (!base.empty() && base.back() == '/') base.remove_suffix(1);
  auto ep = s3client::ParseEndpoint(endpoint);
  if (!ep.ok() || base.find_first_of("?#") != std::string_view::npos) {
    return HolderStatus(Code::kInvalidArgument, HolderError::kBadUrl,
                        "'" + std::string(url) + "': expected http[s]://host[:port][/base]");
  }
  std::unique_ptr<HolderClient> c(new HolderClient());
  c->url_ = std::string(url);
  c->base_path_ = base.empty() ? std::string(kDefaultBasePath) : std::string(base);
  c->options_ = std::move(options);
  const bool default_port = ep->port == (ep->tls ? 443 : 80);
  const bool v6 = ep->host.find(':') != std::string::npos;
  c->host_header_ =
      (v6 ? "[" + ep->host + "]" : ep->host) + (default_port ? "" : ":" + std::to_string(ep->port));
  s3client::PoolOptions po;
  po.host = ep->host;
  po.port = ep->port;
  po.tls = ep->tls;
  po.ca_file = c->options_.ca_file;
  po.insecure = c->options_.insecure;
  po.max_connections = std::max(1, c->options_.max_connections);
  auto pool = s3client::ConnectionPool::Create(po);
  if (!pool.ok()) return FromTransport(pool.status(), c->url_);
  c->pool_ = std::move(*pool);
  return c;
}

Status HolderClient::Exchange(bool head, const HolderBlockRequest& req, Clock::time_point deadline,
                              Response* out) {
  const std::string target =
      base_path_ + "/blocks/" + ToHex(req.compat_id) + "/" + ToHex(req.block_key) +
      "?codec=" + std::string(kvsp::CodecName(req.codec)) +
      "&layers=" + std::to_string(req.layer_first) + "-" + std::to_string(req.layer_last);
  s3client::HttpConnection::Request r;
  r.method(head ? http::verb::head : http::verb::get);
  r.target(target);
  r.version(11);
  r.set(http::field::host, host_header_);
  r.set("KVSP-Scope-ID", ToHex(req.scope_id));
  r.set(http::field::accept, kContainerType);
  r.keep_alive(true);
  r.body().data = nullptr;
  r.body().size = 0;
  r.body().more = false;
  auto conn = pool_->Acquire(deadline);
  if (!conn.ok()) return FromTransport(conn.status(), url_);
  Status s = (*conn)->Exchange(r, head, options_.max_container_bytes, deadline, &out->http);
  if (!s.ok()) {
    pool_->Discard(std::move(*conn));
    return FromTransport(s, url_ + target);
  }
  if ((*conn)->reusable() && out->http.status < 500) {
    pool_->Release(std::move(*conn));
  } else {
    pool_->Discard(std::move(*conn));
  }
  const unsigned st = out->http.status;
  const std::string what = url_ + target + ": HTTP " + std::to_string(st);
  if (st == 404) return HolderStatus(Code::kNotFound, HolderError::kNotHeld, what);
  if (st == 406) return HolderStatus(Code::kNotFound, HolderError::kCodecUnavailable, what);
  if (st == 416) return HolderStatus(Code::kOutOfRange, HolderError::kRangeNotHeld, what);
  if (st != 200) return HolderStatus(Code::kUnavailable, HolderError::kHttpStatus, what);
  // The connection bounds the body too, but not always before reading it (a body that came in
  // one read with the header was seen to pass): the bound is checked here as well.
  if (out->http.body.size() > options_.max_container_bytes) {
    return HolderStatus(
        Code::kResourceExhausted, HolderError::kBadResponse,
        what + " with a body over " + std::to_string(options_.max_container_bytes) + " bytes");
  }
  if (out->http.Header("content-type") != kContainerType) {
    return HolderStatus(
        Code::kInvalidArgument, HolderError::kBadResponse,
        what + " with Content-Type '" + std::string(out->http.Header("content-type")) + "'");
  }
  return Status::Ok();
}

Status HolderClient::HasBlock(const HolderBlockRequest& req, Clock::time_point deadline) {
  Response r;
  return Exchange(/*head=*/true, req, deadline, &r);
}

Result<HolderContainer> HolderClient::FetchBlock(const kvsp::Descriptor& d,
                                                 const HolderBlockRequest& req,
                                                 Clock::time_point deadline) {
  if (req.layer_last < req.layer_first || req.layer_last >= d.layers) {
    return InvalidArgument("kvsp holder: layers " + std::to_string(req.layer_first) + "-" +
                           std::to_string(req.layer_last) + " outside the descriptor's");
  }
  Response r;
  KVCS_RETURN_IF_ERROR(Exchange(/*head=*/false, req, deadline, &r));
  kvsp::ContainerExpectation want =
      kvsp::ExpectFor(d, req.compat_id, req.block_key, req.block_index, req.codec,
                      static_cast<uint16_t>(req.layer_first),
                      static_cast<uint16_t>(req.layer_last - req.layer_first + 1));
  auto view = kvsp::VerifyContainer(r.http.body, want);
  if (!view.ok()) {
    return HolderStatus(Code::kCorruption, HolderError::kBadContainer,
                        url_ + " block " + ToHex(req.block_key) + ": " + view.status().message());
  }
  return HolderContainer{std::move(r.http.body), std::move(*view)};
}

}  // namespace kvcs::kvsp_http
