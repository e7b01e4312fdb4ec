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
  // Make room: the oldest head-pending connection past its grace, else the oldest idle one, else
  // the oldest head-pending one.
  while (connections_.size() >= std::max<size_t>(limits_.max_connections, 1)) {
    bool old_pending =
        !pending_.empty() &&
        now - connections_.at(pending_.begin()->second).admitted >= limits_.eviction_grace;
    auto& queue = old_pending || idle_.empty() ? pending_ : idle_;
    if (queue.empty()) {
      ++metrics_.refused_full;
      d.verdict = Verdict::kRefusedFull;
      return d;
    }
    ++(&queue == &pending_ ? metrics_.evicted_head_pending : metrics_.evicted_idle);
    ConnectionId victim = queue.begin()->second;
    d.evict.push_back(victim);
    Forget(connections_.find(victim));
  }
  ConnectionId id = next_id_++;
  Connection c{std::move(key), State::kHeadPending, next_order_++, now};
  pending_.emplace(c.order, id);
  ++addresses_[c.address].connections;
  connections_.emplace(id, std::move(c));
  ++metrics_.admitted;
  d.verdict = Verdict::kAdmitted;
  d.id = id;
  return d;
}

std::optional<std::chrono::milliseconds> ConnectionAdmission::AwaitHead(ConnectionId id) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = connections_.find(id);
  if (it == connections_.end() || stopping_) return std::nullopt;
  Connection& c = it->second;
  if (c.state == State::kBusy) {
    --addresses_[c.address].busy;
    c.state = State::kIdle;
    c.order = next_order_++;
    idle_.emplace(c.order, id);
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

void ConnectionAdmission::NoteHeadDeadline() {
  std::lock_guard<std::mutex> l(mu_);
  ++metrics_.head_deadline_closes;
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

void ConnectionAdmission::LeaveState(Connection& c) {
  if (c.state == State::kHeadPending) pending_.erase(c.order);
  if (c.state == State::kIdle) idle_.erase(c.order);
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
