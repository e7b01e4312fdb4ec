// MOQT over real QUIC: MoqtServer and MoqtClient, thin shells that put MoqtSession (moqt_session)
// on the ngtcp2 transport (quic). They own the QUIC objects, create one MoqtSession per QUIC
// session, tick MoqtSession::OnTimer, and report why a session ended. All protocol logic stays in
// moqt_session; nothing here parses or frames MOQT. The relay and the KVCS publisher/consumer
// build on these. docs/protocols/moqt-endpoint.md describes both and the kvcs moq-pub/moq-sub
// commands built on them.
//
// THREADING: everything (endpoints, sessions, callbacks, the TrackSource, Track producers) runs
// on the ONE thread that runs the io_context given to Create/Connect. Nothing is thread-safe;
// post to that io_context to call in from another thread.
//
// LIFETIMES:
//   - MoqtServer: the TrackSource must outlive it. Each accepted session lives from the QUIC
//     handshake until shortly after its close (it is destroyed from a posted task, never inside a
//     callback). The per-session MoqtSessionCallbacks returned by the factory are owned by the
//     server and destroyed right after their session. Destroying the MoqtServer destroys every
//     session at once (without GOAWAY); prefer Shutdown() first.
//   - MoqtClient: the MoqtSessionCallbacks and TrackSource passed to Connect must outlive it.
//     session() exists from Connect on (requests are refused with kNotReady until SETUP is
//     exchanged) and stays valid (closed) after the session ended, until the MoqtClient is
//     destroyed. Destroying an open client closes it (CONNECTION_CLOSE, best effort).
//   - The io_context must outlive both.
#ifndef KVCS_MOQT_ENDPOINT_MOQT_ENDPOINT_H_
#define KVCS_MOQT_ENDPOINT_MOQT_ENDPOINT_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/status.h"
#include "moqt_session/moqt_session.h"
#include "quic/client.h"
#include "quic/server.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace kvcs::moqt {

namespace internal {
class SessionTap;
class ForwardingCallbacks;
}  // namespace internal

// How often an endpoint calls MoqtSession::OnTimer (PUBLISH_DONE stream wait, GOAWAY timeout).
// Those deadlines are seconds long; 100 ms keeps their error small and the idle cost negligible.
inline constexpr std::chrono::milliseconds kDefaultTimerTick{100};

// Why an endpoint's session ended, in one place: the QUIC close plus the MOQT code.
struct SessionEnd {
  // The QUIC view (kind, code, by_peer, reason). For a session that got past the handshake the
  // kind is kApplication and `code` is the MOQT session error code.
  transport::CloseInfo transport;
  bool handshake_completed = false;  // false: QUIC never opened (TLS, timeout, refused)
  bool setup_completed = false;      // both SETUPs had been exchanged
  // One line fit for a user: "MOQT PROTOCOL_VIOLATION (0x3) from the peer: <reason>",
  // "TLS handshake failed (...)", "handshake timeout", ...
  std::string ToString() const;
};

// ---------------------------------------------------------------------------------- server

struct MoqtServerConfig {
  // host, port, cert_file, key_file, limits, require_retry, max_connections. `alpns` empty means
  // {kMoqtAlpn}; `on_session` must be left empty (the server uses it).
  quic::ServerConfig quic;
  // Template for every session; perspective is forced to kServer; an empty clock_ms becomes a
  // steady-clock millisecond counter.
  MoqtSessionConfig session;
  std::chrono::milliseconds timer_tick = kDefaultTimerTick;
};

// What the server tells the application about one of its sessions.
struct MoqtServerSessionInfo {
  uint64_t id = 0;  // server-local, ascending from 1
  MoqtSession* session = nullptr;
};

class MoqtServer {
 public:
  // Called for each accepted session (right after its MoqtSession was created, before any MOQT
  // message from the peer): return per-session callbacks (owned by the server) or nullptr.
  using SessionFactory =
      std::function<std::unique_ptr<MoqtSessionCallbacks>(const MoqtServerSessionInfo& info)>;
  // Called once per session after it ended (the MoqtSession is still readable during the call).
  using SessionEndCallback =
      std::function<void(const MoqtServerSessionInfo& info, const SessionEnd& end)>;

  // Binds the UDP socket and starts accepting. `source` (not owned, may be null) serves every
  // session's SUBSCRIBE/FETCH/TRACK_STATUS/SUBSCRIBE_NAMESPACE.
  static Result<std::unique_ptr<MoqtServer>> Create(boost::asio::io_context& io,
                                                    MoqtServerConfig config, TrackSource* source,
                                                    SessionFactory factory = nullptr,
                                                    SessionEndCallback on_end = nullptr);
  ~MoqtServer();
  MoqtServer(const MoqtServer&) = delete;
  MoqtServer& operator=(const MoqtServer&) = delete;

  uint16_t port() const;
  // Graceful shutdown: stop accepting; send GOAWAY (empty URI) on every session; give them
  // `drain` to close on their own; then close the rest with NO_ERROR and, once every QUIC closing
  // period ended, call `done` (on the io_context). Idempotent; later calls only replace nothing.
  void Shutdown(std::chrono::milliseconds drain, std::function<void()> done);
  bool shutting_down() const { return shutting_down_; }

  size_t session_count() const { return sessions_.size(); }
  // Calls fn for each live session (ascending id). fn must not destroy the server.
  void ForEachSession(const std::function<void(const MoqtServerSessionInfo&)>& fn);
  quic::ServerStats transport_stats() const;

 private:
  struct Entry;
  MoqtServer(boost::asio::io_context& io, MoqtServerConfig config, TrackSource* source,
             SessionFactory factory, SessionEndCallback on_end);
  void OnQuicSession(transport::Session& s);
  void OnSessionEnded(uint64_t id, const SessionEnd& end);
  void ArmTimer();

  boost::asio::io_context& io_;
  MoqtServerConfig config_;
  TrackSource* source_;
  SessionFactory factory_;
  SessionEndCallback on_end_;
  std::unique_ptr<quic::QuicServer> quic_;
  std::map<uint64_t, std::unique_ptr<Entry>> sessions_;
  uint64_t next_id_ = 1;
  bool shutting_down_ = false;
  struct TimerBox;
  std::unique_ptr<TimerBox> timer_;
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

// ---------------------------------------------------------------------------------- client

struct MoqtClientConfig {
  // host, port, server_name, ca_file / insecure, limits. `alpns` empty means {kMoqtAlpn}.
  quic::ClientConfig quic;
  // perspective is forced to kClient; path/authority go in SETUP; an empty clock_ms becomes a
  // steady-clock millisecond counter.
  MoqtSessionConfig session;
  std::chrono::milliseconds timer_tick = kDefaultTimerTick;
};

class MoqtClient {
 public:
  // Starts the QUIC handshake; SETUP follows as soon as it completes. `callbacks` (may be null)
  // receive the MoqtSession events; OnSessionClosed also fires when the handshake fails (then
  // `reason` is the transport's explanation). Errors returned here are local (config, socket).
  static Result<std::unique_ptr<MoqtClient>> Connect(boost::asio::io_context& io,
                                                     MoqtClientConfig config,
                                                     MoqtSessionCallbacks* callbacks,
                                                     TrackSource* source = nullptr);
  ~MoqtClient();
  MoqtClient(const MoqtClient&) = delete;
  MoqtClient& operator=(const MoqtClient&) = delete;

  MoqtSession& session() { return *session_; }
  bool setup_complete() const { return session_->setup_complete(); }
  bool closed() const { return end_.has_value(); }
  // Set once the session ended.
  const std::optional<SessionEnd>& end() const { return end_; }
  // Closes the session (MOQT code + reason), or abandons the handshake.
  void Close(SessionError code, std::string_view reason);
  quic::QuicClientSession& transport() { return *quic_; }

 private:
  MoqtClient(boost::asio::io_context& io, MoqtClientConfig config);
  void ArmTimer();

  boost::asio::io_context& io_;
  MoqtClientConfig config_;
  std::unique_ptr<internal::SessionTap> tap_;
  std::unique_ptr<internal::ForwardingCallbacks> callbacks_;
  std::unique_ptr<quic::QuicClientSession> quic_;
  std::unique_ptr<MoqtSession> session_;
  std::optional<SessionEnd> end_;
  struct TimerBox;
  std::unique_ptr<TimerBox> timer_;
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

// Parses "moqt://host:port[/path]" (IPv6 as [addr]). The port is required (raw QUIC MOQT has no
// default port). Error: InvalidArgument with a message naming the bad part.
struct MoqtUrl {
  std::string host;
  uint16_t port = 0;
  std::string path;  // "" when absent; otherwise starts with '/'
  std::string authority() const;
};
Result<MoqtUrl> ParseMoqtUrl(std::string_view url);

// "a/b/c" -> {"a","b","c"}; "" -> {}. Empty fields are refused ("a//b"). A field written
// "0x<hex>" (an even number of hex digits, either case) is those bytes, so binary fields can be
// given: "kvcs-demo/0x00ff" -> {"kvcs-demo", "\x00\xff"}.
Result<TrackNamespace> ParseNamespace(std::string_view text);
// The inverse: fields joined by '/', a field that is not printable ASCII, holds '/', is empty or
// starts with "0x" written as "0x<lowercase hex>".
std::string NamespaceToString(const TrackNamespace& ns);

}  // namespace kvcs::moqt

#endif  // KVCS_MOQT_ENDPOINT_MOQT_ENDPOINT_H_
