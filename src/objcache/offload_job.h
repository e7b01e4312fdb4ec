// OffloadJob: a blocking job (store reads, opens, verification, durable commits) run on a thread
// pool while the connection's coroutine waits for it without blocking its thread.
//
//   OffloadJob job = OffloadJob::Start(pool, [reads, &store] { store.ReadMany(*reads); });
//   ... (the coroutine may do other work meanwhile) ...
//   co_await job.Wait(ctx.executor);
//
// The job shares ownership of whatever `fn` captures, so abandoning a job (its coroutine frame
// destroyed before Wait) is memory-safe: it runs to the end on what it owns.
//
// Waking is event-driven (WaitList): the job, when done, wakes the waiter. (Polling every 50 µs
// cost a context switch and a timerfd_settime per poll: with the job itself needing the CPU on a
// 2-core machine, an aggregated PUT spent more server CPU in scheduling than in hashing.)
//
// NOTE (GCC 12): a lambda created inside a coroutine must not capture a std::string (or any other
// self-referential object) by value: GCC relocates the closure bitwise, so the string's SSO
// pointer still points into the coroutine frame and is freed later (found by valgrind). Jobs
// capture only pointers, PODs and shared_ptrs; strings reach them through the heap.
//
// Thread-safety: Start from any thread; Wait from the one coroutine that owns the job.
#ifndef KVCS_OBJCACHE_OFFLOAD_JOB_H_
#define KVCS_OBJCACHE_OFFLOAD_JOB_H_

#include <memory>
#include <mutex>
#include <utility>

#include "common/asio.h"
#include "objcache/wait_list.h"
#include "s3/extension.h"

namespace kvcs::objcache {

class OffloadJob {
 public:
  OffloadJob() = default;

  // Posts `fn` to `pool`.
  template <typename F>
  static OffloadJob Start(boost::asio::thread_pool& pool, F fn) {
    OffloadJob j;
    j.state_ = std::make_shared<State>();
    boost::asio::post(pool, [fn = std::move(fn), st = j.state_]() mutable {
      fn();
      std::lock_guard<std::mutex> l(st->mu);
      st->done = true;
      st->waiters.NotifyAllLocked();
    });
    return j;
  }

  bool valid() const { return state_ != nullptr; }

  // Resumes once the job has finished (at once for a default-constructed or waited job).
  // REQUIRES: `ex` is the strand this coroutine runs on.
  s3::Awaitable<void> Wait(boost::asio::any_io_executor ex);

 private:
  struct State {
    std::mutex mu;
    bool done = false;
    WaitList waiters;
  };
  std::shared_ptr<State> state_;
};

}  // namespace kvcs::objcache

#endif  // KVCS_OBJCACHE_OFFLOAD_JOB_H_
