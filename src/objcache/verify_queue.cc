// VerifyQueue. See verify_queue.h.
#include "objcache/verify_queue.h"

#include <utility>

namespace kvcs::objcache {

VerifyQueue::VerifyQueue(uint32_t helpers) {
  threads_.reserve(helpers);
  for (uint32_t i = 0; i < helpers; ++i) threads_.emplace_back([this] { Help(); });
}

VerifyQueue::~VerifyQueue() {
  Abandon();
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void VerifyQueue::Begin(size_t total, std::function<void(size_t)> task) {
  std::lock_guard<std::mutex> l(mu_);
  task_ = std::move(task);
  total_ = total;
  ready_ = next_ = 0;
  active_ = true;
}

void VerifyQueue::Publish(size_t ready) {
  size_t added = 0;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!active_ || ready <= ready_) return;
    added = ready - ready_;
    ready_ = ready;
  }
  if (threads_.empty()) return;
  if (added > 1) {
    work_cv_.notify_all();
  } else {
    work_cv_.notify_one();
  }
}

void VerifyQueue::Finish() {
  std::unique_lock<std::mutex> l(mu_);
  if (!active_) return;
  ready_ = total_;
  RunReady(l);
  done_cv_.wait(l, [&] { return running_ == 0; });
  active_ = false;
  task_ = nullptr;
}

void VerifyQueue::Abandon() {
  std::unique_lock<std::mutex> l(mu_);
  if (!active_) return;
  ready_ = next_;  // nothing more starts
  done_cv_.wait(l, [&] { return running_ == 0; });
  active_ = false;
  task_ = nullptr;
}

void VerifyQueue::Help() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    work_cv_.wait(l, [&] { return stop_ || (active_ && next_ < ready_); });
    if (stop_) return;
    RunReady(l);
  }
}

void VerifyQueue::RunReady(std::unique_lock<std::mutex>& l) {
  while (active_ && next_ < ready_) {
    const size_t i = next_++;
    ++running_;
    // task_ stays as it is while an item runs: Begin needs no batch running, and Finish and
    // Abandon wait for running_ == 0 before they reset it.
    const std::function<void(size_t)>& task = task_;
    l.unlock();
    task(i);
    l.lock();
    if (--running_ == 0) done_cv_.notify_all();
  }
}

}  // namespace kvcs::objcache
