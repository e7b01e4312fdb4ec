// SendScheduler: the send scheduling of one QUIC connection. It owns
//   - the send queue: streams with bytes (or a FIN) to send, by send order (Stream::SetSendOrder,
//     lowest first), round-robin within one order (the front stream feeds one packet, then
//     rotates to the back of its order's queue);
//   - the connection send budget (TransportLimits::connection_send_budget): the unsent bytes of
//     every stream that could go on the wire now, and the streams whose CanWrite() found the
//     budget used up, woken lowest send order first (FIFO within one order) as it frees.
//
// It decides order only. Streams take part through the SendScheduler::Entry they derive from;
// the connection tells it what each stream counts and whether it has something to send, and
// does the writing and the waking (Connection::Flush, Connection::WakeBudgetWaiters).
// Everything here is inline-cheap on the per-packet path: no allocation once the queues for the
// send orders in use exist, no virtual calls.
#ifndef KVCS_QUIC_SEND_SCHEDULER_H_
#define KVCS_QUIC_SEND_SCHEDULER_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <utility>

#include "transport/session.h"

namespace kvcs::quic {

class SendScheduler {
 public:
  // One stream's place in the scheduler; a stream class derives from it.
  class Entry {
   public:
    explicit Entry(int64_t stream_id) : stream_id_(stream_id) {}
    int64_t stream_id() const { return stream_id_; }
    uint64_t send_order() const { return send_order_; }
    bool queued() const { return queued_; }
    bool waiting() const { return waiting_; }

   private:
    friend class SendScheduler;
    int64_t stream_id_;
    uint64_t send_order_ = transport::Stream::kDefaultSendOrder;
    bool queued_ = false;           // listed in queue_[send_order_]
    mutable bool waiting_ = false;  // listed in waiters_ (CanWrite() const registers it)
  };

  explicit SendScheduler(size_t budget) : budget_(budget) {}
  SendScheduler(const SendScheduler&) = delete;
  SendScheduler& operator=(const SendScheduler&) = delete;

  // --- the send queue
  // Appends `e` to its send order's queue unless it is queued already. The caller checks that
  // the stream has something it may send.
  void Enqueue(Entry* e);
  void Remove(Entry* e);
  // The stream to feed next: the front of the lowest send order's queue; nullptr if none.
  Entry* Front() const { return queue_.empty() ? nullptr : queue_.begin()->second.front(); }
  // `e` is at the front of its queue: rotate it to the back (requeue) or drop it.
  void PopFront(Entry* e, bool requeue);
  // Moves `e` to `send_order`. A queued stream goes to the back of the new order's queue if
  // `requeue` (else it leaves the queue); a waiting one waits under the new order, last.
  void SetSendOrder(Entry* e, uint64_t send_order, bool requeue);

  // --- the connection send budget
  size_t budget() const { return budget_; }
  size_t unsent() const { return unsent_; }
  bool HasBudget() const { return unsent_ < budget_; }
  // A stream's counted unsent bytes went from `before` to `after`. Returns whether that freed
  // room (then the caller checks WakeDue()).
  bool Recount(size_t before, size_t after) {
    unsent_ += after;
    unsent_ -= before;
    return after < before;
  }
  // `e` found the budget used up: it is woken when room frees. Once per wait.
  void AddWaiter(const Entry* e);
  // Waiters should be woken now: there are some, the budget has room, and no wake is pending.
  bool WakeDue() const { return !wake_pending_ && !waiters_.empty() && HasBudget(); }
  // A wake is scheduled (set) or being run (cleared); WakeDue() is false meanwhile.
  void set_wake_pending(bool pending) { wake_pending_ = pending; }
  // Takes the next waiter to wake, while the budget has room: lowest send order first, FIFO
  // within one order. `find(stream_id)` maps an id to its Entry, or nullptr for a stream that
  // is gone (skipped). Returns nullptr when none is left or the budget is used up.
  template <typename Find>
  Entry* NextWaiter(Find&& find);

  // --- teardown
  // Forgets the queue (the streams keep their queued() flag).
  void ClearQueue() { queue_.clear(); }
  // The session closed: forgets the queue, the waiters and a pending wake.
  void Clear();

 private:
  size_t budget_;
  size_t unsent_ = 0;
  std::map<uint64_t, std::deque<Entry*>> queue_;
  // (send order, arrival) -> stream id. Ids, not pointers: a stream may be destroyed while it
  // waits.
  std::map<std::pair<uint64_t, uint64_t>, int64_t> waiters_;
  uint64_t waiter_seq_ = 0;
  bool wake_pending_ = false;
};

template <typename Find>
SendScheduler::Entry* SendScheduler::NextWaiter(Find&& find) {
  while (!waiters_.empty() && HasBudget()) {
    auto it = waiters_.begin();
    int64_t id = it->second;
    waiters_.erase(it);
    Entry* e = find(id);
    if (!e) continue;
    e->waiting_ = false;
    return e;
  }
  return nullptr;
}

}  // namespace kvcs::quic

#endif  // KVCS_QUIC_SEND_SCHEDULER_H_
