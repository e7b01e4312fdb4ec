// RegistrationQueue: a holder's registrations and withdrawals (KVSP spec §7), sent to the index
// in the background so that the work that produced them (an aggregated PUT, a delete) is never
// slowed or failed by the index. `kvcs store` feeds it after each aggregated PUT and delete.
//
// Bounded: at most `max_pending` operations wait; Enqueue on a full queue drops the operation and
// counts it (the index then misses it until the holder registers again). One thread sends them in
// order (a withdrawal never overtakes the registration before it); a failed send is retried
// `max_attempts` times with a doubling delay, then given up and counted. The first failure after
// a success is logged at warn, and so is the first success after failures ("reachable again").
//
// Thread-safe. The destructor stops the thread: operations still waiting are dropped (counted),
// at most one send in progress is finished (bounded by the client's timeout).
#ifndef KVCS_INDEX_REGISTRATION_QUEUE_H_
#define KVCS_INDEX_REGISTRATION_QUEUE_H_

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <variant>

#include "index/index_client.h"
#include "index/index_wire.h"

namespace kvcs::index {

struct RegistrationQueueOptions {
  size_t max_pending = 1024;  // operations waiting (each ≤ kMaxKeysPerRequest keys)
  int max_attempts = 3;       // sends per operation before it is given up
  std::chrono::milliseconds retry_delay{100};  // doubled after each failed attempt
};

struct RegistrationQueueStats {
  uint64_t enqueued = 0;
  uint64_t sent = 0;     // acknowledged by the index (204)
  uint64_t dropped = 0;  // refused by a full queue, or left waiting at shutdown
  uint64_t failed = 0;   // given up after max_attempts
  uint64_t retries = 0;
  size_t pending = 0;
  std::string last_error;
};

class RegistrationQueue {
 public:
  using Operation = std::variant<RegisterRequest, WithdrawRequest>;

  RegistrationQueue(IndexClient client, RegistrationQueueOptions options = {});
  ~RegistrationQueue();
  RegistrationQueue(const RegistrationQueue&) = delete;
  RegistrationQueue& operator=(const RegistrationQueue&) = delete;

  // Never blocks on the index. False when the queue was full (the operation is dropped).
  bool Enqueue(Operation op);
  // For a background producer (a holder re-registering what it holds): waits until fewer than
  // `below` operations are pending (keep it under max_pending so that Enqueue keeps room), then
  // enqueues. False, with the operation not enqueued (and not counted as dropped), once
  // StopWaiters() was called or the queue is stopping.
  bool EnqueueWhenBelow(Operation op, size_t below);
  // Wakes every EnqueueWhenBelow and makes later ones return false at once (at shutdown).
  void StopWaiters();
  RegistrationQueueStats stats() const;
  // Waits until nothing is pending or being sent, at most `bound`; true if it got there. For
  // tests and an orderly shutdown.
  bool WaitIdle(std::chrono::milliseconds bound);

 private:
  void Loop();
  Status Send(const Operation& op) const;

  IndexClient client_;
  const RegistrationQueueOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;       // work arrived, or stop
  std::condition_variable idle_cv_;  // the queue became idle
  std::condition_variable room_cv_;  // an operation left the queue, or StopWaiters
  std::deque<Operation> pending_;
  bool busy_ = false;
  bool stop_ = false;
  bool waiters_stopped_ = false;
  bool failing_ = false;
  RegistrationQueueStats stats_;
  std::thread thread_;
};

}  // namespace kvcs::index

#endif  // KVCS_INDEX_REGISTRATION_QUEUE_H_
