// QUIC client and server on ngtcp2 0.12.1 + GnuTLS, driven by a Boost.Asio io_context, exposed
// through the abstract transport::Session / transport::Stream interfaces (transport/session.h).
//
// THREADING: everything (the endpoint, its sessions, streams, visitors and callbacks) runs on the
// thread that runs the io_context passed to Create/Connect. Run that io_context on ONE thread.
// Nothing here is thread-safe; post to the io_context to call in from elsewhere.
//
// LIFETIMES:
//   - QuicServer owns its UDP socket and every server-side session. A session is handed to the
//     application through ServerConfig::on_session once its handshake completes; the app sets a
//     SessionVisitor there. The server destroys the session after OnSessionClosed and the
//     closing/draining period (3 PTO). Destroying the QuicServer closes everything at once
//     (without notifying visitors); prefer Shutdown() first.
//   - QuicClientSession owns its own UDP socket and its one connection. The visitor passed to
//     Connect must outlive the QuicClientSession (or be detached with SetVisitor(nullptr)).
//     Destroying an open client session sends CONNECTION_CLOSE (best effort) first.
//   - The io_context must outlive both.
//
// See docs/protocols/quic-transport.md for the driving loop, buffers and limits.
#ifndef KVCS_QUIC_QUIC_H_
#define KVCS_QUIC_QUIC_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "quic/udp.h"
#include "transport/session.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace kvcs::quic {

// ngtcp2 0.12.1's congestion controllers.
enum class CongestionControl { kReno, kCubic, kBbr, kBbr2 };

// Per-connection limits (both sides). Defaults suit bulk transfer on a LAN.
struct TransportLimits {
  // Streams the PEER may open concurrently (credit returned when a stream is fully done).
  uint64_t max_incoming_bidi_streams = 128;
  uint64_t max_incoming_uni_streams = 128;
  // Initial receive windows; ngtcp2 auto-tunes them up to the max_* values.
  uint64_t initial_stream_window = 1 << 20;
  uint64_t initial_connection_window = 4 << 20;
  uint64_t max_stream_window = 16 << 20;
  uint64_t max_connection_window = 32 << 20;
  // Per-stream send buffer: Write() is refused (CanWrite() false) while this many bytes are
  // buffered and not yet acknowledged. Bounds memory per stream; must exceed the path's
  // bandwidth-delay product for full speed.
  size_t stream_send_buffer = 4 << 20;
  // Connection send budget: CanWrite() is false on every stream while the connection holds this
  // many bytes written but not yet sent (across all streams; bytes of a stream blocked by the
  // peer's stream flow control do not count), and OnCanWrite reaches the waiting streams lowest
  // send order first as packets go out. Without it, N writable streams would each buffer up to
  // stream_send_buffer (MOQT: 64 group streams x 4 MiB = the whole track copied into send
  // buffers at once, ahead of the network and regardless of priority). 4 MiB keeps one stream
  // at full speed (it never binds before stream_send_buffer does) and lets a burst of the
  // largest congestion window we see on loopback (~2-3 MiB) go out at once.
  size_t connection_send_budget = 4 << 20;
  // Largest DATAGRAM frame we accept (transport parameter max_datagram_frame_size); 0 disables.
  uint64_t max_datagram_frame_size = 1200;
  // Datagrams queued for sending before SendOrQueueDatagram refuses more.
  size_t max_queued_datagrams = 256;
  // No packet from the peer for this long: the peer is dead (transport parameter).
  std::chrono::milliseconds idle_timeout{30000};
  // Send a PING when idle for this long to keep the path and the peer's idle timer alive; 0 = off.
  std::chrono::milliseconds keep_alive{0};
  std::chrono::milliseconds handshake_timeout{10000};
  // UDP payload size of our packets (at most kMaxUdpPayload; the peer's advertised
  // max_udp_payload_size also bounds it). Up to 1452, ngtcp2 starts at 1200 and raises the size
  // by path MTU discovery. ABOVE 1452 the size is used as given, without MTU discovery, so the
  // path must carry such datagrams unfragmented: use it only on loopback (MTU 65536) or a
  // jumbo-frame LAN. Big packets cut per-packet work (ngtcp2, AEAD calls, ACKs) on both sides.
  size_t max_udp_payload = 1452;
  // Packet size used instead of max_udp_payload when the peer's address is a loopback address
  // (127.0.0.0/8, ::1), where the path MTU is 65536; 0 = use max_udp_payload there too.
  // 16000 (four packets per 64 KiB GSO send) measured 1.06-1.12 CPU s/GB against 1.75-1.81 for
  // 1452-byte packets (bench/quic, both ends, alternating runs); 32000 or 64000 gained nothing.
  size_t loopback_udp_payload = 16000;
  // Acknowledge after this many ack-eliciting packets (ngtcp2's default is 2). Fewer ACKs cost
  // less CPU on both sides at high rates; the max_ack_delay timer still bounds ACK latency.
  size_t ack_threshold = 2;
  CongestionControl congestion_control = CongestionControl::kCubic;
};

// Handshake failures and other errors on connections that never reached the application.
using ConnectionErrorCallback =
    std::function<void(const SockAddr& peer, const transport::CloseInfo& info)>;

struct ServerConfig {
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0 = ephemeral; read it back with QuicServer::port()
  std::vector<std::string> alpns;
  std::string cert_file;
  std::string key_file;
  // Validate the client address with a Retry round trip before creating any state.
  bool require_retry = false;
  // Concurrent connections; further clients get CONNECTION_REFUSED.
  size_t max_connections = 1024;
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
  IoStats io;  // the server socket and all its connections
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

struct ClientConfig {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  std::vector<std::string> alpns;
  // Name sent as SNI and checked against the certificate. Defaults to `host`.
  std::string server_name;
  // PEM CA bundle to verify the server against; empty = the system trust store.
  std::string ca_file;
  // DEVELOPMENT ONLY: accept any server certificate.
  bool insecure = false;
  TransportLimits limits;
  LossShimConfig loss_shim;  // tests only
};

class QuicClientSession : public transport::Session {
 public:
  // Starts the handshake; `visitor` gets OnSessionReady or OnSessionClosed (with the reason,
  // e.g. certificate verification failure). Errors returned here are local (bad config, socket).
  static Result<std::unique_ptr<QuicClientSession>> Connect(boost::asio::io_context& io,
                                                            ClientConfig config,
                                                            transport::SessionVisitor* visitor);
  // Test hook: stop all I/O at once without telling the peer (simulates a killed process).
  virtual void Abandon() = 0;
  virtual bool gso_enabled() const = 0;
  // This client's socket and connection counters.
  virtual IoStats io_stats() const = 0;
};

}  // namespace kvcs::quic

#endif  // KVCS_QUIC_QUIC_H_
