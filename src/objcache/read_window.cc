// ReadWindow and WindowPool. See read_window.h.
#include "objcache/read_window.h"

#include <utility>

#include "objcache/aggregate_wire.h"

namespace kvcs::objcache {

namespace {

// Windows kept for reuse across aggregated GETs: one request's pair (2 × window_bytes idle).
constexpr size_t kSpareWindows = 2;

}  // namespace

std::shared_ptr<ReadWindow> WindowPool::Take() {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!spare_.empty()) {
      auto w = std::move(spare_.back());
      spare_.pop_back();
      return w;
    }
  }
  auto w = std::make_shared<ReadWindow>();
  w->out.reserve(Capacity());
  return w;
}

void WindowPool::Return(std::shared_ptr<ReadWindow> w) {
  // Only buffers of the configured size are kept (one over it held an item bigger than a window).
  if (w.use_count() != 1 || w->out.capacity() > Capacity() || w->scratch.capacity() > Capacity())
    return;
  std::lock_guard<std::mutex> l(mu_);
  if (spare_.size() < kSpareWindows) spare_.push_back(std::move(w));
}

size_t WindowPool::Capacity() const {
  return window_bytes_ + kMaxWindowItems * (kBlockRecordBytes + kLayerFrameHeadBytes) +
         kEndFrameBytes;
}

}  // namespace kvcs::objcache
