// QuicAdmission: the Retry, admission, eviction and handshake-deadline decisions
// (quic_admission.h).
#include "quic/quic_admission.h"

#include <algorithm>

namespace kvcs::quic {

QuicAdmission::QuicAdmission(size_t max_connections, bool require_retry,
                             const AdmissionLimits& limits)
    : max_connections_(std::max<size_t>(max_connections, 1)),
      require_retry_(require_retry),
      limits_(limits) {}

QuicAdmission::Decision QuicAdmission::OnInitial(std::string_view address, bool validated,
                                                 TimePoint now) {
  Decision d;
  std::string key(address);
  // Looked up afresh after each eviction (an eviction may erase the entry); an entry created
  // here for nothing is erased again when the Initial is not admitted.
  auto addr = [&]() -> PerAddress& { return addresses_[key]; };
  auto refuse = [&](Verdict v) {
    if (addr().connections == 0) addresses_.erase(key);
    d.verdict = v;
    return d;
  };
  if (!validated) {
    const PerAddress& a = addr();
    uint64_t* cause = require_retry_ ? &metrics_.retry_required
                      : retry_on_    ? &metrics_.retry_load
                      : a.handshakes >= limits_.max_handshakes_per_address ? &metrics_.retry_address
                                                                           : nullptr;
    if (cause) {
      ++*cause;
      return refuse(Verdict::kRetry);
    }
  }
  // The address's own limits: a validated newcomer replaces its oldest unvalidated handshake.
  // The handshake limit binds a validated newcomer only under load (Retry on): an address that
  // proved it receives our packets may open a burst of sessions (a consumer host starting 100)
  // while the server has handshakes to spare.
  auto over_handshakes = [&] {
    return addr().handshakes >= limits_.max_handshakes_per_address && (!validated || retry_on_);
  };
  while (addr().connections >= limits_.max_connections_per_address || over_handshakes()) {
    PerAddress& a = addr();
    if (!validated || a.unvalidated.empty()) {
      ++(a.connections >= limits_.max_connections_per_address
             ? metrics_.refused_address_connections
             : metrics_.refused_address_handshakes);
      return refuse(Verdict::kRefusedAddress);
    }
    Evict(a.unvalidated.begin()->second, metrics_.evicted_address_handshakes, d);
  }
  // The total cap: the oldest unvalidated handshake, else the oldest handshake.
  while (connections_.size() >= max_connections_) {
    auto& queue = unvalidated_.empty() ? handshaking_ : unvalidated_;
    if (queue.empty()) {
      ++metrics_.refused_full;
      return refuse(Verdict::kRefusedFull);
    }
    Evict(queue.begin()->second, metrics_.evicted_handshakes, d);
  }
  ConnectionId id = next_id_++;
  Connection c{key, true, validated, next_order_++, now};
  PerAddress& a = addr();
  handshaking_.emplace(c.order, id);
  if (!validated) {
    unvalidated_.emplace(c.order, id);
    a.unvalidated.emplace(c.order, id);
  }
  ++a.connections;
  ++a.handshakes;
  connections_.emplace(id, std::move(c));
  ++metrics_.admitted;
  UpdateRetryMode();
  d.verdict = Verdict::kAdmitted;
  d.id = id;
  return d;
}

void QuicAdmission::HandshakeCompleted(ConnectionId id) {
  auto it = connections_.find(id);
  if (it == connections_.end() || !it->second.handshaking) return;
  EndHandshake(it->second, addresses_[it->second.address]);
  UpdateRetryMode();
}

void QuicAdmission::Release(ConnectionId id) {
  auto it = connections_.find(id);
  if (it == connections_.end()) return;
  Forget(it);
  UpdateRetryMode();
}

std::vector<QuicAdmission::ConnectionId> QuicAdmission::Expire(TimePoint now) {
  std::vector<ConnectionId> expired;
  while (!handshaking_.empty()) {
    auto it = connections_.find(handshaking_.begin()->second);
    if (now - it->second.admitted < limits_.handshake_deadline) break;
    expired.push_back(it->first);
    ++metrics_.handshake_deadline_drops;
    Forget(it);
  }
  if (!expired.empty()) UpdateRetryMode();
  return expired;
}

std::optional<QuicAdmission::TimePoint> QuicAdmission::NextDeadline() const {
  if (handshaking_.empty()) return std::nullopt;
  return connections_.at(handshaking_.begin()->second).admitted + limits_.handshake_deadline;
}

void QuicAdmission::EndHandshake(Connection& c, PerAddress& a) {
  handshaking_.erase(c.order);
  if (!c.validated) {
    unvalidated_.erase(c.order);
    a.unvalidated.erase(c.order);
  }
  c.handshaking = false;
  --a.handshakes;
}

void QuicAdmission::Evict(ConnectionId id, uint64_t& counter, Decision& d) {
  ++counter;
  d.evict.push_back(id);
  Forget(connections_.find(id));
}

void QuicAdmission::Forget(std::unordered_map<ConnectionId, Connection>::iterator it) {
  Connection& c = it->second;
  auto a = addresses_.find(c.address);
  if (c.handshaking) EndHandshake(c, a->second);
  if (--a->second.connections == 0) addresses_.erase(a);
  connections_.erase(it);
}

void QuicAdmission::UpdateRetryMode() {
  if (!retry_on_ && handshaking_.size() >= limits_.retry_on_handshakes) {
    retry_on_ = true;
    ++metrics_.retry_mode_on;
  } else if (retry_on_ && handshaking_.size() < limits_.retry_off_handshakes) {
    retry_on_ = false;
  }
}

}  // namespace kvcs::quic
