#include "kvcs_stream/digest_pool.h"

#include <algorithm>
#include <utility>

namespace kvcs::stream {

DigestPool::DigestPool(uint32_t threads) {
  threads_.reserve(std::max<uint32_t>(threads, 1));
  for (uint32_t i = 0; i < std::max<uint32_t>(threads, 1); ++i) {
    threads_.emplace_back([this] { Work(); });
  }
}

DigestPool::~DigestPool() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void DigestPool::Submit(Bytes payload, size_t skip, Done done) {
  {
    std::lock_guard<std::mutex> l(mu_);
    queue_.push_back({std::move(payload), skip, std::move(done)});
  }
  cv_.notify_one();
}

void DigestPool::Work() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [this] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    const size_t skip = std::min(job.skip, job.payload.size());
    const Digest d = Sha256::Hash(ByteSpan(job.payload).subspan(skip));
    job.done(std::move(job.payload), d);
  }
}

}  // namespace kvcs::stream
