// The kvcs S3-compatible HTTP/1.1 server (optional TLS) over an ObjectStore: the S3 API mounted
// on an http::Server (src/http: connections, bounds, timeouts, streamed bodies).
//
// Requests on a connection are handled in order. Each request gets an x-amz-request-id, is
// routed to an Extension (extension.h) or to the built-in S3 handlers (s3/handlers.cc), is
// authenticated with AWS SigV4 (header or presigned query; skipped for ExtensionAuth::kNone) and
// reads its payload through the PayloadReader SigV4 declared (s3/payload_reader.h).
//
// Lifetime: the ObjectStore must outlive the Server. Thread-safety: AddExtension before Start;
// Stop() may be called from any thread (and from the signal watcher Run installs when asked).
#ifndef KVCS_S3_SERVER_H_
#define KVCS_S3_SERVER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "s3/config.h"
#include "s3/extension.h"
#include "store/object_store.h"

namespace kvcs::s3 {

class Server {
 public:
  Server(ServerConfig config, store::ObjectStore& store);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Registers an extension (first registered, first asked). REQUIRES: before Start().
  void AddExtension(Extension extension);

  // Binds and listens (port 0 picks a free port; see port()). Loads the TLS key pair if
  // configured. Does not serve yet.
  Status Start();
  uint16_t port() const;

  // Serves on config.io_threads threads until Stop() (or SIGINT/SIGTERM when handle_signals).
  // In-flight requests get a short grace period; then connections are closed.
  void Run(bool handle_signals);
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvcs::s3

#endif  // KVCS_S3_SERVER_H_
