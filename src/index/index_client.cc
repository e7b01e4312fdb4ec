// The KVSP Index Service client. See index_client.h.
#include "index/index_client.h"

#include "common/asio.h"  // first: fixes the Boost 1.74 + GCC 12 trap (shared/style.md §0)

#include <algorithm>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <utility>

#include "common/strings.h"

namespace kvcs::index {
namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

Status ClientStatus(Code code, IndexClientError e, std::string message) {
  return Status(code, std::move(message), static_cast<int>(e));
}

}  // namespace

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
  }
  return "unknown";
}

IndexError IndexErrorFromName(std::string_view name) {
  for (int i = 1; i <= static_cast<int>(IndexError::kStoreFailed); ++i) {
    if (IndexErrorName(static_cast<IndexError>(i)) == name) return static_cast<IndexError>(i);
  }
  return IndexError::kNone;
}

Result<IndexClient> IndexClient::Create(IndexClientOptions options) {
  constexpr std::string_view kScheme = "http://";
  std::string_view url = options.url;
  auto bad = [&](std::string why) {
    return ClientStatus(
        Code::kInvalidArgument, IndexClientError::kBadUrl,
        "index URL '" + options.url + "' " + why + " (expected http://HOST:PORT[/base])");
  };
  if (url.substr(0, kScheme.size()) != kScheme) {
    return bad(url.substr(0, 8) == "https://" ? "is https, which this client does not speak yet"
                                              : "is not http://");
  }
  url.remove_prefix(kScheme.size());
  size_t slash = url.find('/');
  std::string_view authority = url.substr(0, slash);
  std::string_view base = slash == std::string_view::npos ? "" : url.substr(slash);
  while (!base.empty() && base.back() == '/') base.remove_suffix(1);
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
  c.port_ = std::to_string(*port);
  c.base_ = std::string(base);
  return c;
}

Result<IndexClient::Answer> IndexClient::Exchange(std::string_view method,
                                                  const std::string& target,
                                                  std::string body) const {
  boost::asio::io_context ioc;
  beast::tcp_stream stream(ioc);
  beast::error_code ec;
  auto fail = [&](std::string_view step) {
    bool timeout = ec == beast::error::timeout;
    return ClientStatus(
        Code::kUnavailable, timeout ? IndexClientError::kTimeout : IndexClientError::kUnreachable,
        "index " + options_.url + ": " + std::string(step) + ": " +
            (timeout ? "timed out after " + std::to_string(options_.timeout.count()) + " ms"
                     : ec.message()));
  };
  // One deadline for the whole exchange (resolve, connect, write, read).
  stream.expires_after(options_.timeout);
  boost::asio::ip::tcp::resolver resolver(ioc);
  auto endpoints = resolver.resolve(host_, port_, ec);
  if (ec) return fail("resolve");
  stream.connect(endpoints, ec);
  if (ec) return fail("connect");
  // The request head and body go out as two writes: without this, Nagle holds the body until
  // the server's delayed ACK (~40 ms per lookup).
  stream.socket().set_option(boost::asio::ip::tcp::no_delay(true), ec);
  bhttp::request<bhttp::string_body> req{method == "GET" ? bhttp::verb::get : bhttp::verb::post,
                                         base_ + target, 11};
  req.set(bhttp::field::host, host_ + ":" + port_);
  if (!options_.bearer.empty()) req.set(bhttp::field::authorization, "Bearer " + options_.bearer);
  if (method != "GET") {
    req.set(bhttp::field::content_type, "application/json");
    req.body() = std::move(body);
  }
  req.keep_alive(false);
  req.prepare_payload();
  bhttp::write(stream, req, ec);
  if (ec) return fail("send");
  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(options_.max_response_bytes);
  bhttp::read(stream, buffer, parser, ec);
  if (ec == bhttp::error::body_limit) {
    return ClientStatus(Code::kResourceExhausted, IndexClientError::kBadResponse,
                        "index " + options_.url + ": response above " +
                            std::to_string(options_.max_response_bytes) + " bytes");
  }
  if (ec) return fail("receive");
  stream.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
  return Answer{parser.get().result_int(), std::move(parser.get().body())};
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
