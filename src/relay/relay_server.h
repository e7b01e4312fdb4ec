// RelayServer: the relay on real sockets. It only wires: a MoqtServer whose sessions are served
// by the Relay (relay.h), a MoqtClient to the upstream relay (reconnected with backoff), the
// Relay's timer, and a Prometheus metrics endpoint on the HTTP module. Graceful shutdown sends
// GOAWAY, drains, then closes.
// THREADING: the relay and its sessions run on the io_context given to Start (one thread); the
// metrics endpoint runs on its own thread and reads only atomics.
#ifndef KVCS_RELAY_RELAY_SERVER_H_
#define KVCS_RELAY_RELAY_SERVER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/status.h"
#include "http/limits.h"
#include "quic/quic_admission.h"
#include "relay/relay.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace kvcs::relay {

struct RelayServerConfig {
  std::string listen_host = "127.0.0.1";
  uint16_t port = 0;  // 0: any free port (RelayServer::port())
  std::string cert_file, key_file;
  size_t max_sessions = 1024;  // the QUIC server's max_connections
  // QUIC admission: per-address limits, Retry under load, the handshake deadline
  // (quic/quic_admission.h); require_retry: a Retry for every new client.
  quic::AdmissionLimits admission;
  bool require_retry = false;
  // The upstream relay (moqt://host:port[/path]); empty: this relay is a root.
  std::string upstream_url;
  std::string upstream_ca_file;
  bool upstream_insecure = false;
  // Metrics: "host:port" for GET /metrics (Prometheus text); port 0 picks one; empty: off.
  std::string metrics_listen;
  http::Limits metrics_limits;  // the metrics endpoint's admission limits
  // Every session's MoqtSessionConfig::subscriber_stall_ms (0: never cut off).
  uint64_t subscriber_stall_ms = kDefaultSubscriberStallMs;
  RelayOptions relay;
};

class RelayServer {
 public:
  // Logs go through `log` (one line per event: sessions, upstream state); may be null.
  using Log = std::function<void(const std::string& line)>;
  static Result<std::unique_ptr<RelayServer>> Start(boost::asio::io_context& io,
                                                    RelayServerConfig config, Log log = nullptr);
  ~RelayServer();
  RelayServer(const RelayServer&) = delete;
  RelayServer& operator=(const RelayServer&) = delete;

  uint16_t port() const;
  uint16_t metrics_port() const;  // 0 when off
  Relay& relay();
  // GOAWAY to every session, `drain` for them to leave, then close; `done` on the io_context.
  void Shutdown(std::chrono::milliseconds drain, std::function<void()> done);

 private:
  struct Impl;
  explicit RelayServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvcs::relay

#endif  // KVCS_RELAY_RELAY_SERVER_H_
