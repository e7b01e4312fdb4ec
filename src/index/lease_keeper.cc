// The lease-keeping thread. See lease_keeper.h.
#include "index/lease_keeper.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "common/log.h"

namespace kvcs::index {
namespace {

uint64_t SystemNowMs() {
  return uint64_t(std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count());
}

}  // namespace

std::vector<RegisterRequest> ChunkRegistration(const RegisterRequest& whole) {
  std::vector<RegisterRequest> out;
  for (size_t off = 0; off < whole.block_keys.size(); off += kMaxKeysPerRequest) {
    RegisterRequest r = whole;
    size_t n = std::min(kMaxKeysPerRequest, whole.block_keys.size() - off);
    r.block_keys.assign(whole.block_keys.begin() + off, whole.block_keys.begin() + off + n);
    r.anchor_key.reset();
    if (off + n == whole.block_keys.size()) r.anchor_key = whole.anchor_key;
    out.push_back(std::move(r));
  }
  return out;
}

WithdrawRequest WithdrawalOf(const RegisterRequest& r) {
  WithdrawRequest w;
  w.compat_id = r.compat_id;
  w.scope_id = r.scope_id;
  w.holder = r.replica.holder;
  w.block_keys = r.block_keys;
  return w;
}

LeaseKeeper::LeaseKeeper(IndexClient client, std::vector<RegisterRequest> requests,
                         LeasePolicy policy, std::function<uint64_t()> now_ms)
    : client_(std::move(client)),
      requests_(std::move(requests)),
      now_ms_(now_ms ? std::move(now_ms) : std::function<uint64_t()>(SystemNowMs)),
      renewer_(policy) {
  for (RegisterRequest& r : requests_) r.ttl_ms = renewer_.policy().ttl_ms;
}

LeaseKeeper::~LeaseKeeper() { Stop(); }

void LeaseKeeper::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_) return;
  started_ = true;
  thread_ = std::thread([this] { Loop(); });
}

Status LeaseKeeper::RegisterAll() {
  for (const RegisterRequest& r : requests_) KVCS_RETURN_IF_ERROR(client_.Register(r));
  return Status::Ok();
}

void LeaseKeeper::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    uint64_t now = now_ms_();
    if (!renewer_.Due(now)) {
      // The wait is the schedule itself (the renewal time), not a synchronization.
      cv_.wait_for(lock, std::chrono::milliseconds(renewer_.next_attempt_ms() - now),
                   [this] { return stop_; });
      continue;
    }
    lock.unlock();
    Status s = RegisterAll();
    lock.lock();
    if (s.ok()) {
      if (stats_.failed > 0 && renewer_.failures() > 0) {
        KVCS_LOG_WARN("index {}: registered again after {} failed attempts", client_.url(),
                      renewer_.failures());
      }
      renewer_.OnRegistered(now);
      ++stats_.registered;
    } else {
      if (renewer_.failures() == 0) {
        KVCS_LOG_WARN("index {}: registration failed (retrying): {}", client_.url(), s.message());
      }
      renewer_.OnFailed(now_ms_());
      ++stats_.failed;
      stats_.last_error = s.message();
    }
  }
}

Status LeaseKeeper::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!started_ || stop_) return Status::Ok();
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  Status first = Status::Ok();
  for (const RegisterRequest& r : requests_) {
    Status s = client_.Withdraw(WithdrawalOf(r));
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

LeaseKeeperStats LeaseKeeper::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  LeaseKeeperStats s = stats_;
  s.live = renewer_.Live(now_ms_());
  return s;
}

}  // namespace kvcs::index
