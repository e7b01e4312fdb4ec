// ConnectionAdmission: the admission, eviction and head-deadline decisions (admission.h).
#include "http/admission.h"

#include <algorithm>

namespace kvcs::http {

ConnectionAdmission::ConnectionAdmission(const Limits& limits) : limits_(limits) {}

ConnectionAdmission::Decision ConnectionAdmission::Admit(std::string_view address, TimePoint now) {
  std::lock_guard<std::mutex> l(mu_);
  Decision d;
  if (stopping_) {
    ++metrics_.refused_stopping;
    d.verdict = Verdict::kRefusedStopping;
    return d;
  }
  std::string key(address);
  auto a = addresses_.find(key);
  if (a != addresses_.end() && a->second.connections >= limits_.max_connections_per_address) {
    ++metrics_.refused_address_connections;
    d.verdict = Verdict::kRefusedAddress;
    return d;
  }
  // Make room (see the header for the order).
  while (connections_.size() >= std::max<size_t>(limits_.max_connections, 1)) {
    std::optional<ConnectionId> victim = Victim(key, now);
    if (!victim) {
      ++metrics_.refused_full;
      d.verdict = Verdict::kRefusedFull;
      return d;
    }
    auto it = connections_.find(*victim);
    ++(it->second.state == State::kIdle ? metrics_.evicted_idle : metrics_.evicted_head_pending);
    ++addresses_[it->second.address].unproductive;
    d.evict.push_back(*victim);
    Forget(it);
  }
  ConnectionId id = next_id_++;
  Connection c{std::move(key), State::kHeadPending, next_order_++, now, now};
  pending_.emplace(c.order, id);
  PerAddress& pa = addresses_[c.address];
  ++pa.connections;
  pa.pending.emplace(c.order, id);
  connections_.emplace(id, std::move(c));
  ++metrics_.admitted;
  d.verdict = Verdict::kAdmitted;
  d.id = id;
  return d;
}

std::optional<std::chrono::milliseconds> ConnectionAdmission::AwaitHead(ConnectionId id,
                                                                        TimePoint now) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = connections_.find(id);
  if (it == connections_.end() || stopping_) return std::nullopt;
  Connection& c = it->second;
  if (c.state == State::kBusy) {
    PerAddress& a = addresses_[c.address];
    --a.busy;
    c.state = State::kIdle;
    c.order = next_order_++;
    c.idle_since = now;
    idle_.emplace(c.order, id);
    a.idle.emplace(c.order, id);
  }
  // Under pressure: at least pressure_percent of the cap open (compared in integers).
  bool pressure = connections_.size() * 100 >=
                  static_cast<uint64_t>(limits_.max_connections) * limits_.pressure_percent;
  if (!pressure) return limits_.header_timeout;
  return std::min(limits_.header_timeout, limits_.header_timeout_under_pressure);
}

ConnectionAdmission::HeadVerdict ConnectionAdmission::HeadArrived(ConnectionId id) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = connections_.find(id);
  if (it == connections_.end()) return HeadVerdict::kGone;
  Connection& c = it->second;
  PerAddress& a = addresses_[c.address];
  if (a.busy >= limits_.max_requests_per_address) {
    ++metrics_.refused_address_requests;
    return HeadVerdict::kRefusedAddressRequests;
  }
  LeaveState(c);
  c.state = State::kBusy;
  ++a.busy;
  return HeadVerdict::kServe;
}

void ConnectionAdmission::NoteHeadDeadline(ConnectionId id) {
  std::lock_guard<std::mutex> l(mu_);
  ++metrics_.head_deadline_closes;
  auto it = connections_.find(id);
  if (it != connections_.end()) ++addresses_[it->second.address].unproductive;
}

size_t ConnectionAdmission::Release(ConnectionId id) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = connections_.find(id);
  if (it != connections_.end()) Forget(it);
  return connections_.size();
}

std::vector<ConnectionAdmission::ConnectionId> ConnectionAdmission::BeginStop() {
  std::lock_guard<std::mutex> l(mu_);
  stopping_ = true;
  std::vector<ConnectionId> waiting;
  for (auto& [order, id] : pending_) waiting.push_back(id);
  for (auto& [order, id] : idle_) waiting.push_back(id);
  return waiting;
}

bool ConnectionAdmission::Live(ConnectionId id) const {
  std::lock_guard<std::mutex> l(mu_);
  return connections_.count(id) != 0;
}

size_t ConnectionAdmission::active() const {
  std::lock_guard<std::mutex> l(mu_);
  return connections_.size();
}

AdmissionMetrics ConnectionAdmission::metrics() const {
  std::lock_guard<std::mutex> l(mu_);
  return metrics_;
}

std::optional<ConnectionAdmission::ConnectionId> ConnectionAdmission::Victim(
    const std::string& newcomer, TimePoint now) const {
  auto oldest_pending = [&] { return connections_.at(pending_.begin()->second).admitted; };
  if (!pending_.empty() && now - oldest_pending() >= limits_.eviction_grace) {
    return pending_.begin()->second;
  }
  if (!idle_.empty() &&
      now - connections_.at(idle_.begin()->second).idle_since >= limits_.min_idle_age) {
    return idle_.begin()->second;
  }
  // Only young connections are left (head-pending within the grace, idle within the minimum
  // age): they go from the address with the worst record (the most connections closed
  // unproductive, then the most young connections, then the oldest), and the newcomer's own
  // address's when its record is as bad, so one address reopening its connections fast evicts
  // neither another's newcomers, nor its pool between two requests, nor the connections of a
  // client whose heads the server has not read yet; it churns its own. Head-pending first.
  auto waiting = [](const PerAddress& a) { return a.pending.size() + a.idle.size(); };
  auto oldest = [](const PerAddress& a) {
    uint64_t p = a.pending.empty() ? UINT64_MAX : a.pending.begin()->first;
    uint64_t i = a.idle.empty() ? UINT64_MAX : a.idle.begin()->first;
    return std::min(p, i);
  };
  auto record = [&](const PerAddress& a) { return std::make_pair(a.unproductive, waiting(a)); };
  const PerAddress* most = nullptr;
  for (const auto& [address, a] : addresses_) {
    if (waiting(a) == 0) continue;
    if (!most || record(a) > record(*most) ||
        (record(a) == record(*most) && oldest(a) < oldest(*most))) {
      most = &a;
    }
  }
  if (!most) return std::nullopt;
  auto own = addresses_.find(newcomer);
  if (own != addresses_.end() && waiting(own->second) > 0 && record(own->second) >= record(*most)) {
    most = &own->second;
  }
  return (most->pending.empty() ? most->idle : most->pending).begin()->second;
}

void ConnectionAdmission::LeaveState(Connection& c) {
  PerAddress& a = addresses_[c.address];
  if (c.state == State::kHeadPending) {
    pending_.erase(c.order);
    a.pending.erase(c.order);
  }
  if (c.state == State::kIdle) {
    idle_.erase(c.order);
    a.idle.erase(c.order);
  }
}

void ConnectionAdmission::Forget(std::unordered_map<ConnectionId, Connection>::iterator it) {
  Connection& c = it->second;
  LeaveState(c);
  auto a = addresses_.find(c.address);
  if (c.state == State::kBusy) --a->second.busy;
  if (--a->second.connections == 0) addresses_.erase(a);
  connections_.erase(it);
}

}  // namespace kvcs::http
