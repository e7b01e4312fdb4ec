// QuicClientSession: a QUIC client connection on ngtcp2 0.12.1 + GnuTLS, driven by a Boost.Asio
// io_context, with its own UDP socket; it is a transport::Session (transport/session.h).
//
// THREADING: the session, its streams, visitors and callbacks all run on the thread that runs
// the io_context passed to Connect. Run that io_context on ONE thread. Nothing here is
// thread-safe; post to the io_context to call in from elsewhere.
//
// LIFETIMES: a QuicClientSession owns its own UDP socket and its one connection. The visitor
// passed to Connect must outlive the QuicClientSession (or be detached with SetVisitor(nullptr)).
// Destroying an open client session sends CONNECTION_CLOSE (best effort) first. The io_context
// must outlive the session.
//
// The server side is quic/server.h; docs/protocols/quic-transport.md describes the driving loop,
// buffers and limits.
#ifndef KVCS_QUIC_CLIENT_H_
#define KVCS_QUIC_CLIENT_H_

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "quic/transport_limits.h"
#include "quic/udp.h"
#include "transport/session.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace kvcs::quic {

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
  // The AEAD protecting this connection's packets once the handshake completed ("AES-128-GCM").
  virtual std::string negotiated_cipher() const = 0;
  // This client's socket and connection counters.
  virtual IoStats io_stats() const = 0;
};

}  // namespace kvcs::quic

#endif  // KVCS_QUIC_CLIENT_H_
