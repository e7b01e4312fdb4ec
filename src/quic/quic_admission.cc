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
  PerAddress seen;
  if (auto a = addresses_.find(key); a != addresses_.end()) seen = a->second;
  if (!validated) {
    uint64_t* cause = require_retry_ ? &metrics_.retry_required
                      : retry_on_    ? &metrics_.retry_load
                      : seen.handshakes >= limits_.max_handshakes_per_address
                          ? &metrics_.retry_address
                          : nullptr;
    if (cause) {
      ++*cause;
      d.verdict = Verdict::kRetry;
      return d;
    }
  }
  if (seen.connections >= limits_.max_connections_per_address ||
      seen.handshakes >= limits_.max_handshakes_per_address) {
    ++(seen.connections >= limits_.max_connections_per_address
           ? metrics_.refused_address_connections
           : metrics_.refused_address_handshakes);
    d.verdict = Verdict::kRefusedAddress;
    return d;
  }
  // Make room: the oldest handshake in progress.
  while (connections_.size() >= max_connections_) {
    if (handshaking_.empty()) {
      ++metrics_.refused_full;
      d.verdict = Verdict::kRefusedFull;
      return d;
    }
    ++metrics_.evicted_handshakes;
    ConnectionId victim = handshaking_.begin()->second;
    d.evict.push_back(victim);
    Forget(connections_.find(victim));
  }
  ConnectionId id = next_id_++;
  Connection c{std::move(key), true, next_order_++, now};
  handshaking_.emplace(c.order, id);
  PerAddress& a = addresses_[c.address];
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
  Connection& c = it->second;
  handshaking_.erase(c.order);
  c.handshaking = false;
  --addresses_[c.address].handshakes;
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

void QuicAdmission::Forget(std::unordered_map<ConnectionId, Connection>::iterator it) {
  Connection& c = it->second;
  auto a = addresses_.find(c.address);
  if (c.handshaking) {
    handshaking_.erase(c.order);
    --a->second.handshakes;
  }
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
