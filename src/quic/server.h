// QuicServer: a QUIC server on ngtcp2 0.12.1 + GnuTLS, driven by a Boost.Asio io_context. It
// owns one UDP socket, routes datagrams to connections by connection ID, answers with Retry and
// refusals, and hands each session whose handshake completed to the application as a
// transport::Session (transport/session.h).
//
// THREADING: the server, its sessions, streams, visitors and callbacks all run on the thread that
// runs the io_context passed to Create. Run that io_context on ONE thread. Nothing here is
// thread-safe; post to the io_context to call in from elsewhere.
//
// LIFETIMES: the QuicServer owns its UDP socket and every server-side session. A session is handed
// to the application through ServerConfig::on_session once its handshake completes; the app sets a
// SessionVisitor there. The server destroys the session after OnSessionClosed and the
// closing/draining period (3 PTO). Destroying the QuicServer closes everything at once (without
// notifying visitors); prefer Shutdown() first. The io_context must outlive the server.
//
// The client side is quic/client.h; docs/protocols/quic-transport.md describes the driving loop,
// buffers and limits.
#ifndef KVCS_QUIC_SERVER_H_
#define KVCS_QUIC_SERVER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "quic/quic_admission.h"
#include "quic/transport_limits.h"
#include "quic/udp.h"
#include "transport/session.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace kvcs::quic {

// Handshake failures and other errors on connections that never reached the application.
using ConnectionErrorCallback =
    std::function<void(const SockAddr& peer, const transport::CloseInfo& info)>;

struct ServerConfig {
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0 = ephemeral; read it back with QuicServer::port()
  std::vector<std::string> alpns;
  std::string cert_file;
  std::string key_file;
  // Validate every client address with a Retry round trip before creating any state. Without
  // it, Retry still switches on by itself under load (admission.retry_on_handshakes).
  bool require_retry = false;
  // Concurrent connections (handshaking or established). At the cap a newcomer replaces the
  // oldest handshake in progress; only when all are established is it refused
  // (CONNECTION_REFUSED). 1024: far above the sessions of one relay or publisher, and a bound on
  // the memory half-open handshakes can take.
  size_t max_connections = 1024;
  // Per-address limits, Retry under load and the handshake deadline (quic/quic_admission.h).
  AdmissionLimits admission;
  TransportLimits limits;
  LossShimConfig loss_shim;  // tests only
  // Called (on the executor) for every session whose handshake completed. Set a visitor on it.
  std::function<void(transport::Session& session)> on_session;
  ConnectionErrorCallback on_connection_error;
};

struct ServerStats {
  uint64_t connections_accepted = 0;
  uint64_t connections_refused = 0;
  uint64_t retries_sent = 0;
  uint64_t datagrams_dropped = 0;  // undecodable or unknown
  uint64_t handshake_failures = 0;
  size_t live_connections = 0;
  size_t handshakes_in_progress = 0;
  bool retry_on = false;       // Retry under load is on now
  AdmissionMetrics admission;  // refusals, Retries, evictions and expiries by cause
  IoStats io;                  // the server socket and all its connections
};

class QuicServer {
 public:
  static Result<std::unique_ptr<QuicServer>> Create(boost::asio::io_context& io,
                                                    ServerConfig config);
  virtual ~QuicServer() = default;
  virtual uint16_t port() const = 0;
  // Graceful shutdown: stop accepting; give live sessions up to `drain` to finish and close on
  // their own; then close the rest with application code `code` ("server shutting down"); once
  // every closing period ends, close the socket and call `done`.
  virtual void Shutdown(std::chrono::milliseconds drain, transport::ErrorCode code,
                        std::function<void()> done) = 0;
  virtual ServerStats stats() const = 0;
  virtual bool gso_enabled() const = 0;
};

}  // namespace kvcs::quic

#endif  // KVCS_QUIC_SERVER_H_
