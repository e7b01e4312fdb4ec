#include "s3client/http_connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <sys/socket.h>

#include <algorithm>

#include "common/strings.h"
#include "s3client/errors.h"
#include "s3client/http_headers.h"
#include "s3client/s3_client.h"  // kMaxResponseHeaderBytes

namespace kvcs::s3client {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using Clock = HttpConnection::Clock;
using ErrorCode = boost::system::error_code;

ClientError FromAsio(const ErrorCode& ec) {
  if (ec == beast::error::timeout) return ClientError::kTimeout;
  if (ec == http::error::body_limit || ec == http::error::header_limit ||
      ec == http::error::buffer_overflow) {
    return ClientError::kResponseTooLarge;
  }
  if (ec.category() == http::make_error_code(http::error::bad_version).category() &&
      ec != http::error::end_of_stream && ec != http::error::partial_message) {
    return ClientError::kProtocol;
  }
  return ClientError::kConnectionLost;
}

bool IsIpLiteral(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return ::inet_pton(AF_INET, host.c_str(), buf) == 1 ||
         ::inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

}  // namespace

std::string_view HttpResponse::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k == name) return v;
  }
  return {};
}

bool HttpResponse::HasHeader(std::string_view name) const {
  return std::any_of(headers.begin(), headers.end(),
                     [&](const auto& kv) { return kv.first == name; });
}

Result<std::unique_ptr<net::ssl::context>> MakeTlsClientContext(const std::string& ca_file,
                                                                bool insecure) {
  auto ctx = std::make_unique<net::ssl::context>(net::ssl::context::tls_client);
  ErrorCode ec;
  ctx->set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                       net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 |
                       net::ssl::context::no_tlsv1_1 | net::ssl::context::no_compression,
                   ec);
  if (ec || SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION) != 1) {
    return Status(Code::kInternal, "TLS: cannot require TLS 1.2 or later");
  }
  if (insecure) {
    ctx->set_verify_mode(net::ssl::verify_none);
    return ctx;
  }
  ctx->set_verify_mode(net::ssl::verify_peer);
  if (!ca_file.empty()) {
    ctx->load_verify_file(ca_file, ec);
    if (ec) {
      return InvalidArgument("S3 ca_file '" + ca_file +
                             "' is not a readable PEM certificate file: " + ec.message());
    }
  } else {
    ctx->set_default_verify_paths(ec);
    if (ec)
      return Status(Code::kUnavailable, "TLS: cannot load the system trust store: " + ec.message());
  }
  return ctx;
}

Status SetTlsPeer(SSL* ssl, const std::string& host, bool verify) {
  const bool ip = IsIpLiteral(host);
  // SNI carries names only (RFC 6066 §3).
  if (!ip && SSL_set_tlsext_host_name(ssl, host.c_str()) != 1) {
    return ClientStatus(ClientError::kTlsHandshake, "TLS: cannot set SNI '" + host + "'");
  }
  if (verify) {
    // OpenSSL checks the name (SAN dNSName, wildcards in the leftmost label only) or the
    // address (SAN iPAddress) during the handshake; a mismatch fails it.
    int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str())
                : SSL_set1_host(ssl, host.c_str());
    if (ok != 1) {
      return ClientStatus(ClientError::kTlsHandshake, "TLS: cannot verify host '" + host + "'");
    }
    SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  }
  return Status::Ok();
}

// What a failed TLS handshake says: a typed kTlsCertificate naming the verification failure and
// the way out when the certificate was refused (only when verifying: OpenSSL records a verify
// result even with verification off), kTlsHandshake when TLS itself failed (version, cipher, a
// peer that does not speak TLS), and a retried kConnect/kTimeout when the connection broke
// (including an EOF mid-handshake, a server going down).
Status TlsHandshakeError(const ErrorCode& ec, SSL* ssl, const std::string& host, bool verify,
                         bool custom_ca) {
  if (ec == beast::error::timeout)
    return ClientStatus(ClientError::kTimeout, "TLS handshake: timed out");
  const long result = SSL_get_verify_result(ssl);
  if (verify && result != X509_V_OK) {
    return ClientStatus(
        ClientError::kTlsCertificate,
        "TLS certificate verification failed for '" + host +
            "': " + X509_verify_cert_error_string(result) +
            (custom_ca ? " (checked against ca_file)"
                       : " (checked against the system trust store)") +
            "; pass ca_file with the CA that signed the server's certificate (or the self-signed "
            "certificate itself), connect by a name the certificate lists, or, for development "
            "only, set insecure");
  }
  if (ec.category() == net::error::get_ssl_category()) {
    return ClientStatus(ClientError::kTlsHandshake,
                        "TLS handshake with '" + host + "' failed: " + ec.message() +
                            " (is the endpoint really https, and does it speak TLS 1.2+?)");
  }
  if (ec == net::ssl::error::stream_truncated) {
    return ClientStatus(ClientError::kConnect,
                        "TLS handshake with '" + host +
                            "': the server closed the connection (is the endpoint really https?)");
  }
  return ClientStatus(ClientError::kConnect, "TLS handshake with '" + host + "': " + ec.message());
}

HttpConnection::HttpConnection(net::ssl::context* tls) : stream_(ioc_) {
  if (tls != nullptr) tls_.emplace(ioc_, *tls);
}

template <typename Start>
ErrorCode HttpConnection::Run(Clock::time_point deadline, Start start) {
  ErrorCode result = net::error::would_block;
  tcp().expires_at(deadline);
  start([&result](ErrorCode ec, auto&&...) { result = ec; });
  ioc_.restart();
  ioc_.run();
  return result;
}

Status HttpConnection::Connect(const Endpoints& endpoints, const std::string& host, bool verify,
                               bool custom_ca, Clock::time_point deadline) {
  ErrorCode ec = Run(deadline, [&](auto handler) { tcp().async_connect(endpoints, handler); });
  if (ec) {
    return ClientStatus(ec == beast::error::timeout ? ClientError::kTimeout : ClientError::kConnect,
                        "connect: " + ec.message());
  }
  tcp().socket().set_option(tcp::no_delay(true), ec);
  if (!tls_) return Status::Ok();
  SSL* ssl = tls_->native_handle();
  KVCS_RETURN_IF_ERROR(SetTlsPeer(ssl, host, verify));
  ec = Run(deadline,
           [&](auto handler) { tls_->async_handshake(net::ssl::stream_base::client, handler); });
  if (ec) return TlsHandshakeError(ec, ssl, host, verify, custom_ca);
  return Status::Ok();
}

Status HttpConnection::Exchange(Request& req, bool head, size_t body_limit,
                                Clock::time_point deadline, HttpResponse* out) {
  if (tls_) return ExchangeOn(*tls_, req, head, body_limit, deadline, out);
  return ExchangeOn(stream_, req, head, body_limit, deadline, out);
}

beast::tcp_stream& HttpConnection::tcp() { return tls_ ? beast::get_lowest_layer(*tls_) : stream_; }

template <typename Stream>
Status HttpConnection::ExchangeOn(Stream& stream, Request& req, bool head, size_t body_limit,
                                  Clock::time_point deadline, HttpResponse* out) {
  ErrorCode ec = Run(deadline, [&](auto handler) { http::async_write(stream, req, handler); });
  if (ec) return ClientStatus(FromAsio(ec), "send: " + ec.message());
  QuickAck();
  http::response_parser<http::vector_body<uint8_t>> parser;
  parser.header_limit(static_cast<uint32_t>(kMaxResponseHeaderBytes));
  parser.body_limit(body_limit);
  if (head) parser.skip(true);
  ec = Run(deadline, [&](auto handler) { http::async_read(stream, buffer_, parser, handler); });
  if (ec) return ClientStatus(FromAsio(ec), "receive: " + ec.message());
  auto msg = parser.release();
  out->status = msg.result_int();
  for (const auto& f : msg) {
    auto n = f.name_string();
    auto v = f.value();
    out->headers.emplace_back(AsciiLower(std::string_view(n.data(), n.size())),
                              std::string(v.data(), v.size()));
  }
  out->body = std::move(msg.body());
  reusable_ = msg.keep_alive();
  return Status::Ok();
}

// Acknowledge the response's first segment at once instead of after the delayed-ACK timer
// (40 ms on Linux). Servers that write the header block and a small body separately with
// Nagle on (radosgw's beast frontend does) hold the body until that ACK: measured on radosgw
// 16.2, a 4 KiB range GET took 48 ms without this and 5 ms for 64 KiB. The kernel leaves
// quick-ACK mode on its own, so it is set again for every response. Best effort.
void HttpConnection::QuickAck() {
#ifdef TCP_QUICKACK
  int one = 1;
  (void)::setsockopt(tcp().socket().native_handle(), IPPROTO_TCP, TCP_QUICKACK, &one, sizeof(one));
#endif
}

}  // namespace kvcs::s3client
