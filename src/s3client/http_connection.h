// HttpConnection: one keep-alive HTTP/1.1 socket to the S3 endpoint, plain or TLS, driven by
// blocking calls. It owns its io_context, so a call runs exactly one socket's operation and a
// timeout is the socket's expiry (no timer threads). With a TLS context the socket carries a TLS
// 1.2+ session: SNI for a name, certificate chain and name (or address) verified in the handshake
// unless verification is off; a failed handshake becomes a typed ClientError (kTlsCertificate,
// kTlsHandshake, or a retried kConnect/kTimeout when the connection broke).
//
// Also here: the TLS client context every connection of one pool shares (MakeTlsClientContext),
// and HttpResponse, what one exchange returns.
//
// Thread-safety: one thread at a time per connection (the pool hands each to one caller).
#ifndef KVCS_S3CLIENT_HTTP_CONNECTION_H_
#define KVCS_S3CLIENT_HTTP_CONNECTION_H_

#include "common/asio.h"  // first: fixes the Boost 1.74 + GCC 12 trap (shared/style.md §0)

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/bytes.h"
#include "common/status.h"
#include "s3client/signer.h"

namespace kvcs::s3client {

// One response: status, headers (names lowercased, in received order) and body.
struct HttpResponse {
  unsigned status = 0;
  HeaderPairs headers;
  Bytes body;
  // The first value of header `name` (lowercase); empty when absent.
  std::string_view Header(std::string_view name) const;
  bool HasHeader(std::string_view name) const;
};

// The TLS client context for https endpoints: TLS 1.2 or later, no compression; verification of
// the peer against `ca_file` (PEM) or, when empty, the system trust store; none when `insecure`.
// Configured once, read-only afterwards, so concurrent handshakes may share it.
Result<std::unique_ptr<boost::asio::ssl::context>> MakeTlsClientContext(const std::string& ca_file,
                                                                        bool insecure);
// Before a client handshake on `ssl`: SNI for a name (not for an address literal) and, when
// `verify`, the name or address the certificate must carry (no partial wildcards). Errors:
// ClientError::kTlsHandshake.
Status SetTlsPeer(SSL* ssl, const std::string& host, bool verify);
// What a failed client handshake says: a typed kTlsCertificate naming the verification failure
// and the way out when the certificate was refused, kTlsHandshake when TLS itself failed, a
// retried kConnect/kTimeout when the connection broke.
Status TlsHandshakeError(const boost::system::error_code& ec, SSL* ssl, const std::string& host,
                         bool verify, bool custom_ca);

class HttpConnection {
 public:
  using Clock = std::chrono::steady_clock;
  using Endpoints = boost::asio::ip::tcp::resolver::results_type;
  using Request = boost::beast::http::request<boost::beast::http::buffer_body>;

  // `tls`: the shared TLS context for an https endpoint, nullptr for plain http. It must outlive
  // the connection.
  explicit HttpConnection(boost::asio::ssl::context* tls);
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  // Connects to the first of `endpoints` that answers (TCP_NODELAY) and, with TLS, handshakes
  // for `host`: `verify` checks the certificate's chain and name; `custom_ca` only words the
  // error (which trust store refused it).
  Status Connect(const Endpoints& endpoints, const std::string& host, bool verify, bool custom_ca,
                 Clock::time_point deadline);

  // Sends `req` and reads one response (body at most `body_limit` bytes; none for `head`). On
  // any error the connection must be discarded.
  Status Exchange(Request& req, bool head, size_t body_limit, Clock::time_point deadline,
                  HttpResponse* out);

  // Whether the last response allows another request on this socket (keep-alive).
  bool reusable() const { return reusable_; }

 private:
  boost::beast::tcp_stream& tcp();
  template <typename Stream>
  Status ExchangeOn(Stream& stream, Request& req, bool head, size_t body_limit,
                    Clock::time_point deadline, HttpResponse* out);
  // TCP_QUICKACK after each request: see the .cc.
  void QuickAck();
  // Starts one operation, start(handler), and runs the io_context until it completes or the
  // socket's expiry (`deadline`) fires; returns its error code.
  template <typename Start>
  boost::system::error_code Run(Clock::time_point deadline, Start start);

  boost::asio::io_context ioc_{1};
  boost::beast::tcp_stream stream_;  // plain http; unused (never opened) with TLS
  std::optional<boost::beast::ssl_stream<boost::beast::tcp_stream>> tls_;
  boost::beast::flat_buffer buffer_;
  bool reusable_ = false;
};

}  // namespace kvcs::s3client

#endif  // KVCS_S3CLIENT_HTTP_CONNECTION_H_
