// ConnectionPool: the keep-alive HttpConnections of one S3 client to its one endpoint. At most
// max_connections sockets are open; a caller beyond that waits (until its deadline) for one to be
// returned. The endpoint's addresses are resolved once, at Create, and an https endpoint's TLS
// context is built once and shared by every connection (one handshake per pooled socket).
//
// When a connection fails, the pool drops it and every idle one too: a server that broke one
// (restart, overload) has usually closed them all.
//
// Thread-safety: every method is thread-safe; Acquire blocks.
#ifndef KVCS_S3CLIENT_CONNECTION_POOL_H_
#define KVCS_S3CLIENT_CONNECTION_POOL_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "s3client/http_connection.h"

namespace kvcs::s3client {

struct PoolOptions {
  std::string host;  // name or address, without brackets
  uint16_t port = 80;
  bool tls = false;
  std::string ca_file;    // tls only; empty: the system trust store
  bool insecure = false;  // tls only: no certificate or name verification
  int max_connections = 64;
};

class ConnectionPool {
 public:
  using Clock = HttpConnection::Clock;

  // Resolves the endpoint and, for tls, builds the TLS context. Fails with kConnect when the
  // name does not resolve, kInvalidArgument for an unreadable ca_file.
  static Result<std::unique_ptr<ConnectionPool>> Create(PoolOptions options);
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  // An idle connection, or a new one connected before `deadline` when fewer than
  // max_connections are open. kTimeout when none frees up in time; the connect error otherwise.
  Result<std::unique_ptr<HttpConnection>> Acquire(Clock::time_point deadline);
  // Returns a healthy connection for reuse.
  void Release(std::unique_ptr<HttpConnection> connection);
  // Drops a broken connection (may be null: a connect that failed) and every idle one.
  void Discard(std::unique_ptr<HttpConnection> broken);

  // Sockets opened so far (monotonic).
  uint64_t opened() const { return opened_.load(std::memory_order_relaxed); }

 private:
  ConnectionPool() = default;

  PoolOptions options_;
  HttpConnection::Endpoints endpoints_;
  std::unique_ptr<boost::asio::ssl::context> tls_;  // tls only

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<HttpConnection>> idle_;  // guarded by mu_
  int open_ = 0;                                       // guarded by mu_: idle + handed out
  std::atomic<uint64_t> opened_{0};
};

}  // namespace kvcs::s3client

#endif  // KVCS_S3CLIENT_CONNECTION_POOL_H_
