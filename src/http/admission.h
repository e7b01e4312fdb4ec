// Connection admission: which connections an http::Server serves, in total and per client
// address, which it closes to make room at the cap, how long a request head may take, and how
// many requests one address may have in flight. The one place that decides it; pure (no I/O; the
// clock is passed in), so its decisions are unit tested (admission_test.cc). The server carries
// out the evictions it returns.
//
// Each admitted connection is in one of three states:
//   head-pending  admitted, no request head completed yet (also during a TLS handshake);
//   idle          a keep-alive connection waiting for its next request head;
//   busy          serving a request.
// At the total cap a newcomer evicts, in this order: the oldest head-pending connection pending
// longer than limits.eviction_grace; the oldest idle one idle longer than limits.min_idle_age;
// else one of the young ones (head-pending or idle) of the address with the worst record: the
// most of its connections closed unproductive (evicted, or past the head deadline) while it held
// connections, then the most young ones; head-pending first, oldest first; the newcomer's own
// address's when its record is as bad. Only when every connection is busy is it refused. So a
// hog reopening its connections fast evicts neither a well-behaved keep-alive connection between
// two requests nor a well-behaved newcomer, nor a well-behaved client's connection whose head
// the server has not read yet, even when that client has as many young connections as one of
// the hog's addresses; it only churns its own. See docs/protocols/http.md.
// Thread-safe.
#ifndef KVCS_HTTP_ADMISSION_H_
#define KVCS_HTTP_ADMISSION_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "http/limits.h"

namespace kvcs::http {

// Counters since the server started; each refusal and eviction by cause.
struct AdmissionMetrics {
  uint64_t admitted = 0;                     // connections served
  uint64_t refused_address_connections = 0;  // the address had max_connections_per_address
  // At max_connections with every connection busy.
  uint64_t refused_full = 0;
  uint64_t refused_stopping = 0;          // accepted while the server stopped
  uint64_t evicted_head_pending = 0;      // closed at the cap: no request head completed
  uint64_t evicted_idle = 0;              // closed at the cap: idle keep-alive
  uint64_t refused_address_requests = 0;  // 503: the address had max_requests_per_address
  uint64_t head_deadline_closes = 0;      // closed: no (next) request head within the deadline
};

class ConnectionAdmission {
 public:
  using ConnectionId = uint64_t;
  using TimePoint = std::chrono::steady_clock::time_point;

  enum class Verdict { kAdmitted, kRefusedAddress, kRefusedFull, kRefusedStopping };
  struct Decision {
    Verdict verdict = Verdict::kRefusedFull;
    ConnectionId id = 0;  // when admitted
    // Connections to close now to make room, also when refused (already released here: their
    // later Release() and every other call on them are no-ops or answer "gone").
    std::vector<ConnectionId> evict;
  };

  explicit ConnectionAdmission(const Limits& limits);

  // A newly accepted connection from `address` (any stable text form of the peer's address).
  Decision Admit(std::string_view address, TimePoint now);
  // The connection waits for a request head (its first, or the next on a keep-alive
  // connection). Returns the deadline for the head, or nullopt when the connection must close
  // now (evicted, or the server is stopping).
  // `now`: when it starts waiting (an idle connection's idle age counts from here).
  std::optional<std::chrono::milliseconds> AwaitHead(ConnectionId id, TimePoint now);
  enum class HeadVerdict { kServe, kRefusedAddressRequests, kGone };
  // A request head arrived: kServe makes the connection busy until its next AwaitHead or its
  // Release; kRefusedAddressRequests: answer 503 and close; kGone: evicted, close.
  HeadVerdict HeadArrived(ConnectionId id);
  // The head deadline of `id` passed: counted, and against its address's record.
  void NoteHeadDeadline(ConnectionId id);
  // The connection ended. Returns the number of connections still admitted.
  size_t Release(ConnectionId id);
  // Refuses every later admission and AwaitHead; returns the connections waiting for a head
  // (head-pending or idle) so the caller can close them.
  std::vector<ConnectionId> BeginStop();
  // Whether `id` is still admitted (not evicted, not released).
  bool Live(ConnectionId id) const;

  size_t active() const;
  const Limits& limits() const { return limits_; }
  AdmissionMetrics metrics() const;

 private:
  enum class State { kHeadPending, kIdle, kBusy };
  struct Connection {
    std::string address;
    State state = State::kHeadPending;
    uint64_t order = 0;  // key in pending_ or idle_ while in those states
    TimePoint admitted;
    TimePoint idle_since;  // when it last went idle
  };
  struct PerAddress {
    size_t connections = 0;
    size_t busy = 0;
    // Its connections closed unproductive (evicted at the cap, or past the head deadline)
    // since it last held none: the record that picks whose young connections go first.
    uint64_t unproductive = 0;
    std::map<uint64_t, ConnectionId> pending;  // its head-pending connections, oldest first
    std::map<uint64_t, ConnectionId> idle;     // its idle connections, oldest first
  };

  // REQUIRES: mu_ held. The connection a newcomer from `newcomer` evicts at the cap, if any.
  std::optional<ConnectionId> Victim(const std::string& newcomer, TimePoint now) const;
  // REQUIRES: mu_ held. Removes the connection from its state's queue.
  void LeaveState(Connection& c);
  // REQUIRES: mu_ held. Forgets `id` entirely.
  void Forget(std::unordered_map<ConnectionId, Connection>::iterator it);

  const Limits limits_;
  mutable std::mutex mu_;
  bool stopping_ = false;
  ConnectionId next_id_ = 1;
  uint64_t next_order_ = 1;
  std::unordered_map<ConnectionId, Connection> connections_;
  std::unordered_map<std::string, PerAddress> addresses_;
  std::map<uint64_t, ConnectionId> pending_;  // oldest first
  std::map<uint64_t, ConnectionId> idle_;     // oldest first
  AdmissionMetrics metrics_;
};

}  // namespace kvcs::http

#endif  // KVCS_HTTP_ADMISSION_H_
