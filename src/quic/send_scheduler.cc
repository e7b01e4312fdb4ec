#include "quic/send_scheduler.h"

namespace kvcs::quic {

void SendScheduler::Enqueue(Entry* e) {
  if (e->queued_) return;
  e->queued_ = true;
  queue_[e->send_order_].push_back(e);
}

void SendScheduler::Remove(Entry* e) {
  if (!e->queued_) return;
  e->queued_ = false;
  auto it = queue_.find(e->send_order_);
  if (it == queue_.end()) return;
  auto& q = it->second;
  for (auto p = q.begin(); p != q.end(); ++p) {
    if (*p == e) {
      q.erase(p);
      break;
    }
  }
  if (q.empty()) queue_.erase(it);
}

void SendScheduler::PopFront(Entry* e, bool requeue) {
  auto it = queue_.find(e->send_order_);
  if (it == queue_.end() || it->second.empty() || it->second.front() != e) return;
  it->second.pop_front();
  if (requeue) {
    it->second.push_back(e);  // round-robin among equal send orders, one packet each
    return;
  }
  e->queued_ = false;
  if (it->second.empty()) queue_.erase(it);
}

void SendScheduler::SetSendOrder(Entry* e, uint64_t send_order, bool requeue) {
  if (send_order == e->send_order_) return;
  if (e->queued_) {
    Remove(e);  // finds the queue by the old send order
    e->send_order_ = send_order;
    if (requeue) Enqueue(e);
  } else {
    e->send_order_ = send_order;
  }
  if (e->waiting_) {  // wait under the new order
    for (auto it = waiters_.begin(); it != waiters_.end(); ++it) {
      if (it->second == e->stream_id_) {
        waiters_.erase(it);
        break;
      }
    }
    e->waiting_ = false;
    AddWaiter(e);
  }
}

void SendScheduler::AddWaiter(const Entry* e) {
  if (e->waiting_) return;
  e->waiting_ = true;
  waiters_.emplace(std::make_pair(e->send_order_, waiter_seq_++), e->stream_id_);
}

void SendScheduler::Clear() {
  queue_.clear();
  waiters_.clear();
  wake_pending_ = false;
}

}  // namespace kvcs::quic
