// ReadWindow: the buffers of one window of an aggregated GET (the planned items, the planned
// stream bytes their reads fill, and for k or v alone the scratch K+V are read into to check the
// producer's layer digest); WindowPool: the windows kept across requests for reuse.
//
// A window's buffers are default-initialized (no zero-fill: every byte sent is written first) and
// kept for the next request: a fresh 16 MiB buffer costs a zero-fill and 4,096 page faults, ~15%
// of the server's CPU per window in bench/objcache. A window holds at most window_bytes of data,
// kMaxWindowItems records and frame heads, and the end frame.
//
// WindowPool is thread-safe; a ReadWindow is used by one request at a time.
#ifndef KVCS_OBJCACHE_READ_WINDOW_H_
#define KVCS_OBJCACHE_READ_WINDOW_H_

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "common/bytes.h"
#include "objcache/aggregate_plan.h"
#include "store/object_store.h"

namespace kvcs::objcache {

struct ReadWindow {
  std::vector<PlannedItem> items;
  BlockBytes out;      // records, frame heads and carried data, planned layout
  BlockBytes scratch;  // k/v-only: K+V read for verification
  std::vector<store::RangeRead> reads;
  bool last = false;
};

class WindowPool {
 public:
  explicit WindowPool(size_t window_bytes) : window_bytes_(window_bytes) {}
  WindowPool(const WindowPool&) = delete;
  WindowPool& operator=(const WindowPool&) = delete;

  // A spare window, or a new one with `out` reserved to Capacity().
  std::shared_ptr<ReadWindow> Take();
  // Keeps `w` for reuse if it is of the configured size and fewer than two are kept.
  // REQUIRES: no read is still running into `w`.
  void Return(std::shared_ptr<ReadWindow> w);
  // The bytes of one window's planned stream at most (data, records, frame heads, end frame).
  size_t Capacity() const;

 private:
  const size_t window_bytes_;
  std::mutex mu_;
  std::vector<std::shared_ptr<ReadWindow>> spare_;
};

}  // namespace kvcs::objcache

#endif  // KVCS_OBJCACHE_READ_WINDOW_H_
