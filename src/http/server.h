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
#include <limits>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "http/awaitable.h"
#include "http/response_writer.h"
#include "http/router.h"

namespace kvcs::http {

// Bounds of the server; the defaults are what `kvcs store` serves with. The reasons are in
// docs/protocols/http.md.
struct Limits {
  // Request line + headers. Presigned URLs with 1 KiB keys and a few dozen headers fit in
  // 16 KiB; 64 KiB leaves room for long x-amz-meta-* sets.
  uint32_t max_header_bytes = 64 * 1024;
  // Concurrent connections; beyond this new ones are closed at once (fd and memory bound).
  size_t max_connections = 1024;
  // Idle keep-alive connections and slow request heads are closed after this.
  std::chrono::milliseconds header_timeout = std::chrono::seconds(60);
  // Each body read and each response write must make progress within this.
  std::chrono::milliseconds io_timeout = std::chrono::seconds(120);
  // TLS handshake deadline.
  std::chrono::milliseconds handshake_timeout = std::chrono::seconds(30);
  // Request bodies longer than this are refused (413 for a declared length, a failing Read for
  // a chunked body). Unbounded by default: S3 objects stream through bounded buffers anyway.
  uint64_t max_body_bytes = std::numeric_limits<uint64_t>::max();
  // Unread request bodies up to this size are drained to keep the connection; larger ones close
  // it.
  uint64_t max_drain_bytes = 256 * 1024;
  // Receive buffer of a connection (request heads and bodies). Beast reads at most its free
  // capacity at a time; 64 KiB × max_connections bounds the total at 64 MiB.
  size_t receive_buffer_bytes = 64 * 1024;
  // On shutdown, in-flight requests get this long before the event loop stops.
  std::chrono::milliseconds shutdown_grace = std::chrono::seconds(5);
};

struct ServerOptions {
  std::string name = "http";  // prefix of log lines
  std::string listen_host = "127.0.0.1";
  uint16_t port = 0;          // 0 picks a free port (see Server::port())
  std::string tls_cert_file;  // PEM chain; TLS is on when both files are set
  std::string tls_key_file;
  int io_threads = 4;
  Limits limits;
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

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvcs::http

#endif  // KVCS_HTTP_SERVER_H_
