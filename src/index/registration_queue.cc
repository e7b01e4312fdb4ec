// The background registration queue. See registration_queue.h.
#include "index/registration_queue.h"

#include <utility>

#include "common/log.h"

namespace kvcs::index {

RegistrationQueue::RegistrationQueue(IndexClient client, RegistrationQueueOptions options)
    : client_(std::move(client)), options_(options) {
  thread_ = std::thread([this] { Loop(); });
}

RegistrationQueue::~RegistrationQueue() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  room_cv_.notify_all();
  thread_.join();
}

bool RegistrationQueue::Enqueue(Operation op) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ || pending_.size() >= options_.max_pending) {
      ++stats_.dropped;
      return false;
    }
    pending_.push_back(std::move(op));
    ++stats_.enqueued;
  }
  cv_.notify_one();
  return true;
}

bool RegistrationQueue::EnqueueWhenBelow(Operation op, size_t below) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    room_cv_.wait(lock, [&] { return stop_ || waiters_stopped_ || pending_.size() < below; });
    if (stop_ || waiters_stopped_) return false;
    pending_.push_back(std::move(op));
    ++stats_.enqueued;
  }
  cv_.notify_one();
  return true;
}

void RegistrationQueue::StopWaiters() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    waiters_stopped_ = true;
  }
  room_cv_.notify_all();
}

RegistrationQueueStats RegistrationQueue::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  RegistrationQueueStats s = stats_;
  s.pending = pending_.size() + (busy_ ? 1 : 0);
  return s;
}

bool RegistrationQueue::WaitIdle(std::chrono::milliseconds bound) {
  std::unique_lock<std::mutex> lock(mu_);
  return idle_cv_.wait_for(lock, bound, [this] { return pending_.empty() && !busy_; });
}

Status RegistrationQueue::Send(const Operation& op) const {
  if (const auto* r = std::get_if<RegisterRequest>(&op)) return client_.Register(*r);
  return client_.Withdraw(std::get<WithdrawRequest>(op));
}

void RegistrationQueue::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !pending_.empty(); });
    if (stop_) {
      stats_.dropped += pending_.size();
      pending_.clear();
      idle_cv_.notify_all();
      return;
    }
    Operation op = std::move(pending_.front());
    pending_.pop_front();
    room_cv_.notify_all();
    busy_ = true;
    Status s;
    auto delay = options_.retry_delay;
    for (int attempt = 1;; ++attempt) {
      lock.unlock();
      s = Send(op);
      lock.lock();
      // A refusal (400, 403, 404) will not change on a retry; only an unreachable or failing
      // index (kUnavailable) is retried.
      if (s.ok() || s.code() != Code::kUnavailable || attempt >= options_.max_attempts || stop_) {
        break;
      }
      ++stats_.retries;
      // The wait is the retry delay itself; Stop() cuts it short.
      cv_.wait_for(lock, delay, [this] { return stop_; });
      delay *= 2;
    }
    if (s.ok()) {
      ++stats_.sent;
      if (failing_) KVCS_LOG_WARN("index {}: reachable again", client_.url());
      failing_ = false;
    } else {
      ++stats_.failed;
      stats_.last_error = s.message();
      if (!failing_) {
        KVCS_LOG_WARN(
            "index {}: registration not sent: {} (further failures are counted, not logged, "
            "until it answers again)",
            client_.url(), s.message());
      }
      failing_ = true;
    }
    busy_ = false;
    if (pending_.empty()) idle_cv_.notify_all();
  }
}

}  // namespace kvcs::index
