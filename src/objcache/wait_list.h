// WaitList: coroutines parked until a condition that other threads change holds, woken by those
// threads without polling. The condition lives under the caller's mutex; the changer calls
// NotifyAllLocked() under the same mutex. Used by the offloaded jobs (offload_job.h) and by the
// same-host registrations (shm_server.h).
//
// How a wake cannot be lost: a waiter checks the condition and registers itself under the mutex,
// then waits on a timer; a notifier posts the timer's cancel to the waiter's executor, which must
// be the strand the waiting coroutine runs on, so the cancel runs after the wait has begun.
// A waiter unregisters when it returns or when its coroutine frame is destroyed (e.g. the server
// shut down while it waited), so no cancel is ever posted to an executor that may be gone.
//
// Thread-safe under the caller's mutex, which must outlive every wait.
#ifndef KVCS_OBJCACHE_WAIT_LIST_H_
#define KVCS_OBJCACHE_WAIT_LIST_H_

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "common/asio.h"

namespace kvcs::objcache {

class WaitList {
 public:
  using Clock = std::chrono::steady_clock;

  // Waits until done() (called under `mu`) returns true, or the deadline passes; returns
  // whether done() held. REQUIRES: `ex` is the strand (or single-threaded executor) this
  // coroutine runs on.
  template <typename Done>
  boost::asio::awaitable<bool> WaitUntil(std::mutex& mu, boost::asio::any_io_executor ex,
                                         Clock::time_point deadline, Done done) {
    auto timer = std::make_shared<boost::asio::steady_timer>(ex, deadline);
    struct Unregister {  // on every exit, including destruction of the coroutine frame
      WaitList& list;
      std::mutex& mu;
      const boost::asio::steady_timer* timer;
      ~Unregister() {
        std::lock_guard<std::mutex> l(mu);
        std::erase_if(list.waiters_, [&](const Waiter& w) { return w.timer == timer; });
      }
    } unregister{*this, mu, timer.get()};
    for (;;) {
      {
        std::lock_guard<std::mutex> l(mu);
        if (done()) co_return true;
        if (Clock::now() >= deadline) co_return false;
        if (std::none_of(waiters_.begin(), waiters_.end(),
                         [&](const Waiter& w) { return w.timer == timer.get(); }))
          waiters_.push_back(Waiter{ex, timer.get(), timer});
      }
      boost::system::error_code ec;
      co_await timer->async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
      timer->expires_at(deadline);  // a cancel leaves the expiry; re-arm for the next round
    }
  }

  // Waiters registered now. REQUIRES: the caller holds the mutex (tests).
  size_t waiting() const { return waiters_.size(); }

  // Wakes every waiter (each checks its condition again). REQUIRES: the caller holds the mutex
  // the waiters wait under.
  void NotifyAllLocked() {
    for (Waiter& w : waiters_) {
      boost::asio::post(w.ex, [weak = w.weak] {
        if (auto t = weak.lock()) t->cancel();
      });
    }
    waiters_.clear();
  }

 private:
  struct Waiter {
    boost::asio::any_io_executor ex;
    const boost::asio::steady_timer* timer;  // identity, for unregistering
    std::weak_ptr<boost::asio::steady_timer> weak;
  };
  std::vector<Waiter> waiters_;
};

}  // namespace kvcs::objcache

#endif  // KVCS_OBJCACHE_WAIT_LIST_H_
