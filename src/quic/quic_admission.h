// QuicAdmission: which QUIC connections a QuicServer creates, in total and per client address;
// when an Initial must first prove its address with a Retry; which half-open handshakes it drops
// to make room at the cap; and the handshake deadline. The one place that decides it; pure (no
// I/O; the clock is passed in), so its decisions are unit tested (quic_admission_test.cc). The
// server (quic/server.cc) carries out the evictions and expiries it returns. Modelled on
// http::ConnectionAdmission (http/admission.h).
//
// Each admitted connection is either handshaking (its handshake has not completed) or
// established; a handshaking one is "unvalidated" when its Initial carried no Retry token (its
// address is unproven: it may be spoofed, or a raw packet from a flooder). For an Initial that
// would create a connection:
//   1. without a valid Retry token, it gets a Retry instead when require_retry is set, when
//      Retry is on under load (handshakes in progress reached retry_on_handshakes; off again
//      below retry_off_handshakes), or when its address already has max_handshakes_per_address
//      handshakes in progress;
//   2. when its address has max_connections_per_address connections or (it has a token, then,
//      and only while Retry is on under load) max_handshakes_per_address handshakes, a validated
//      newcomer replaces the address's oldest unvalidated handshake; if there is none it is
//      refused. Below the load mark a validated newcomer is not held to the handshake limit, so
//      a burst of sessions from one host (100 at once) all connect, the ones past the limit
//      after one Retry round trip;
//   3. at max_connections it evicts the oldest unvalidated handshake, else the oldest handshake;
//      only when every connection is established is it refused.
// A handshake still in progress handshake_deadline after admission expires. See
// docs/protocols/quic-transport.md ("Admission"). Not thread-safe (the server is
// single-threaded).
#ifndef KVCS_QUIC_QUIC_ADMISSION_H_
#define KVCS_QUIC_QUIC_ADMISSION_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kvcs::quic {

// The admission limits of a QuicServer (ServerConfig::admission); the total cap is
// ServerConfig::max_connections. Every default is explained in docs/protocols/quic-transport.md.
struct AdmissionLimits {
  // Connections (handshaking or established) from one IP address (any port). A quarter of the
  // default total cap: one host or NAT can run many clients, yet one address cannot take more
  // than a quarter of the server.
  static constexpr size_t kDefaultMaxConnectionsPerAddress = 256;
  // Handshakes in progress from one IP address without a Retry token. A client starts a handful
  // of connections at once; 32 covers a process starting dozens of sessions together. Beyond it
  // the address gets Retry, so it cannot hold more without proving it receives our packets;
  // validated ones past it are admitted while Retry under load is off.
  static constexpr size_t kDefaultMaxHandshakesPerAddress = 32;
  // Retry for every address while this many handshakes are in progress (an eighth of the
  // default cap: far above the concurrent handshakes of normal operation, low enough that a
  // spoofed flood never fills the table). Costs legitimate clients one round trip while on.
  static constexpr size_t kDefaultRetryOnHandshakes = 128;
  // ... and off again once fewer than this are in progress (half: hysteresis, so the mode does
  // not flap with every handshake that starts or ends).
  static constexpr size_t kDefaultRetryOffHandshakes = 64;
  // A handshake not complete this long after its first Initial is dropped. A loopback or LAN
  // handshake takes milliseconds, an intercontinental one a few 100 ms; 5 s also covers two lost
  // client flights (ngtcp2's first PTO is ~1 s, then 2 s) and is half the transport's own
  // handshake_timeout (TransportLimits, 10 s), which stays the bound for the client side.
  static constexpr std::chrono::milliseconds kDefaultHandshakeDeadline{5000};

  size_t max_connections_per_address = kDefaultMaxConnectionsPerAddress;
  size_t max_handshakes_per_address = kDefaultMaxHandshakesPerAddress;
  size_t retry_on_handshakes = kDefaultRetryOnHandshakes;
  size_t retry_off_handshakes = kDefaultRetryOffHandshakes;
  std::chrono::milliseconds handshake_deadline = kDefaultHandshakeDeadline;
};

// Counters since the server started, each refusal, Retry and eviction by cause.
struct AdmissionMetrics {
  uint64_t admitted = 0;                     // connections created
  uint64_t retry_required = 0;               // Retry: ServerConfig::require_retry
  uint64_t retry_load = 0;                   // Retry: on under load (retry_on_handshakes)
  uint64_t retry_address = 0;                // Retry: the address had max_handshakes_per_address
  uint64_t refused_address_connections = 0;  // the address had max_connections_per_address
  uint64_t refused_address_handshakes = 0;  // validated, under load, the address had its handshakes
  uint64_t evicted_address_handshakes = 0;  // replaced by a validated newcomer of its address
  uint64_t refused_full = 0;                // at max_connections, every connection established
  uint64_t evicted_handshakes = 0;          // dropped at max_connections: oldest handshake
  uint64_t handshake_deadline_drops = 0;    // dropped: handshake past handshake_deadline
  uint64_t retry_mode_on = 0;               // times Retry under load switched on
};

class QuicAdmission {
 public:
  using ConnectionId = uint64_t;
  using TimePoint = std::chrono::steady_clock::time_point;

  enum class Verdict { kAdmitted, kRetry, kRefusedAddress, kRefusedFull };
  struct Decision {
    Verdict verdict = Verdict::kRefusedFull;
    ConnectionId id = 0;  // when admitted
    // Connections to drop now to make room (already released here).
    std::vector<ConnectionId> evict;
  };

  QuicAdmission(size_t max_connections, bool require_retry, const AdmissionLimits& limits);

  // An Initial that matches no connection, from `address` (the peer's IP address in any stable
  // form, without the port); `validated`: it carried a valid Retry token.
  Decision OnInitial(std::string_view address, bool validated, TimePoint now);
  // The connection's handshake completed.
  void HandshakeCompleted(ConnectionId id);
  // The connection ended (or failed). Unknown ids are ignored.
  void Release(ConnectionId id);
  // Handshakes past their deadline at `now`, oldest first (released here, counted).
  std::vector<ConnectionId> Expire(TimePoint now);
  // When the oldest handshake in progress expires; nullopt when none is in progress.
  std::optional<TimePoint> NextDeadline() const;

  bool retry_on() const { return retry_on_; }
  size_t active() const { return connections_.size(); }
  size_t handshakes() const { return handshaking_.size(); }
  const AdmissionMetrics& metrics() const { return metrics_; }

 private:
  struct Connection {
    std::string address;
    bool handshaking = true;
    bool validated = false;  // its Initial carried a Retry token
    uint64_t order = 0;      // key in handshaking_ (and unvalidated_) while handshaking
    TimePoint admitted;
  };
  struct PerAddress {
    size_t connections = 0;
    size_t handshakes = 0;
    std::map<uint64_t, ConnectionId> unvalidated;  // its unvalidated handshakes, oldest first
  };

  // Forgets `it` entirely.
  void Forget(std::unordered_map<ConnectionId, Connection>::iterator it);
  // The handshake of `c` ended (completed or forgotten).
  void EndHandshake(Connection& c, PerAddress& a);
  // Evicts the connection `id` into `d`, counting it in `counter`.
  void Evict(ConnectionId id, uint64_t& counter, Decision& d);
  // Switches Retry under load on or off for the current number of handshakes.
  void UpdateRetryMode();

  const size_t max_connections_;
  const bool require_retry_;
  const AdmissionLimits limits_;
  bool retry_on_ = false;
  ConnectionId next_id_ = 1;
  uint64_t next_order_ = 1;
  std::unordered_map<ConnectionId, Connection> connections_;
  std::unordered_map<std::string, PerAddress> addresses_;
  std::map<uint64_t, ConnectionId> handshaking_;  // oldest first
  std::map<uint64_t, ConnectionId> unvalidated_;  // the unvalidated ones, oldest first
  AdmissionMetrics metrics_;
};

}  // namespace kvcs::quic

#endif  // KVCS_QUIC_QUIC_ADMISSION_H_
