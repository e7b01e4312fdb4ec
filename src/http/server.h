// A small HTTP/1.1 server (Boost.Beast, optional TLS): listener, I/O threads, one coroutine per
// connection, bounds and timeouts, graceful stop. What a request means is the routes' business
// (router.h); this module knows nothing of S3, SigV4 or object stores.
//
// Per connection: requests are read and answered in order (keep-alive, pipelining). For each
// request the server reads the head within limits.header_timeout, decodes the target into a
// Request, routes it, hands the handler a BodyReader and a streamed ResponseWriter, and after the
// handler drains a small unread body (or closes the connection). See docs/protocols/http.md.
//
// Errors the server answers itself (malformed or oversized head, undecodable target, body over
// max_body_bytes, no route, a handler that threw or produced no response) go through the
// ErrorResponder, so a module can give them its own format (S3 answers XML <Error>s).
//
// Lifetime: routes and the responder are set before Start. Thread-safety: Stop() may be called
// from any thread (and from the signal watcher Run installs when asked). Beast and Asio stay
// inside server.cc.
#ifndef KVCS_HTTP_SERVER_H_
#define KVCS_HTTP_SERVER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "http/admission.h"
#include "http/awaitable.h"
#include "http/limits.h"
#include "http/response_writer.h"
#include "http/router.h"

namespace kvcs::http {

struct ServerOptions {
  std::string name = "http";  // prefix of log lines
  std::string listen_host = "127.0.0.1";
  uint16_t port = 0;          // 0 picks a free port (see Server::port())
  std::string tls_cert_file;  // PEM chain; TLS is on when both files are set
  std::string tls_key_file;
  int io_threads = 4;
  Limits limits;
};

// What the live connections hold (for tests and metrics).
struct ConnectionMemory {
  size_t connections = 0;           // connection coroutines running
  size_t receive_buffer_bytes = 0;  // capacity of their receive buffers
};

// Writes a complete error response for `status` (4xx/5xx) with a human-readable message.
// REQUIRES: the response is not started. The default answers text/plain.
using ErrorResponder =
    std::function<Awaitable<Status>(ResponseWriter&, int status, std::string_view message)>;

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Routes and fallback. REQUIRES: changed only before Start().
  Router& router();
  // Replaces the default text/plain error responder. REQUIRES: before Start().
  void SetErrorResponder(ErrorResponder responder);

  // Binds and listens; loads the TLS key pair if configured. Does not serve yet.
  Status Start();
  uint16_t port() const;

  // Serves on options.io_threads threads until Stop() (or SIGINT/SIGTERM when handle_signals).
  // In-flight requests get limits.shutdown_grace; then connections are closed.
  void Run(bool handle_signals);
  void Stop();

  // Counters of admitted, refused and evicted connections and refused requests, by cause.
  // Thread-safe. Run() logs them once when it returns.
  AdmissionMetrics admission_metrics() const;
  // Thread-safe. A connection waiting for a request head holds a small receive buffer; one
  // reading a body up to limits.receive_buffer_bytes; a closed one none.
  ConnectionMemory connection_memory() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvcs::http

#endif  // KVCS_HTTP_SERVER_H_
