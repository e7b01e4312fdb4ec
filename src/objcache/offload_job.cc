// OffloadJob. See offload_job.h.
#include "objcache/offload_job.h"

namespace kvcs::objcache {

s3::Awaitable<void> OffloadJob::Wait(boost::asio::any_io_executor ex) {
  if (!state_) co_return;
  State& st = *state_;
  co_await st.waiters.WaitUntil(st.mu, ex, WaitList::Clock::time_point::max(),
                                [&st] { return st.done; });
  state_.reset();
}

}  // namespace kvcs::objcache
