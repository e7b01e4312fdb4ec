// VerifyQueue: runs a per-item task (the client's digest check of one block, and what the caller
// does with a verified block) over the items of one batch (a delivered layer) on the calling
// thread and a fixed set of helper threads, item by item as they become ready. The aggregated GET
// client publishes a layer's blocks as they are received (inline delivery), so that helpers hash
// block i while the calling thread still receives block i+1, and the calling thread joins in when
// the layer is complete.
//
// One batch at a time: Begin, Publish (any number of times, counts only grow), then Finish or
// Abandon. THREADING: Begin/Publish/Finish/Abandon from one thread (the owner); the task runs on
// the owner's thread and the helpers, concurrently for different items, each item exactly once
// (Finish) or at most once (Abandon). The destructor abandons a running batch and joins.
#ifndef KVCS_OBJCACHE_VERIFY_QUEUE_H_
#define KVCS_OBJCACHE_VERIFY_QUEUE_H_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kvcs::objcache {

class VerifyQueue {
 public:
  // `helpers` threads besides the owner's (0: every item runs on the owner's thread in Finish).
  explicit VerifyQueue(uint32_t helpers);
  ~VerifyQueue();
  VerifyQueue(const VerifyQueue&) = delete;
  VerifyQueue& operator=(const VerifyQueue&) = delete;

  // Starts a batch of `total` items; task(i) is run once for each i in [0, total). What task(i)
  // reads must be written before the Publish that covers i (Publish orders it for the helpers).
  // REQUIRES: no batch running.
  void Begin(size_t total, std::function<void(size_t)> task);
  // Items [0, ready) may run now. REQUIRES: ready <= total; a batch is running.
  void Publish(size_t ready);
  // Publishes every item, runs the ones no helper took on this thread, and returns once every
  // item has run. Ends the batch.
  void Finish();
  // Ends the batch without running what has not started; returns once no item is running.
  // Nothing if no batch is running.
  void Abandon();

 private:
  void Help();
  // Runs items while any is ready; `l` is held on entry and exit.
  void RunReady(std::unique_lock<std::mutex>& l);

  std::mutex mu_;
  std::condition_variable work_cv_;  // helpers: items ready, or stop
  std::condition_variable done_cv_;  // owner: an item finished
  std::function<void(size_t)> task_;
  size_t total_ = 0, ready_ = 0, next_ = 0, running_ = 0;
  bool active_ = false;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace kvcs::objcache

#endif  // KVCS_OBJCACHE_VERIFY_QUEUE_H_
