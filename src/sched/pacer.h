// Pacer: turns a granted rate, which may change at any time, into send times (pure; time passed
// in, in seconds).
//
// A sender owes the bytes it sent and repays them at the rate in force: Wait(now, rate) repays the
// time since the previous call at the rate given then, and says how long to wait, at `rate`,
// before the debt is paid and more may be sent; Sent(bytes) adds a write to the debt. So a write
// goes out at once when nothing is owed (a request's first layer is never delayed), and a sender
// whose rate rises while it waits (another request finished, or the scheduler moved it ahead) is
// held only to the new rate from then on, provided it calls Wait again: callers sleep in short
// slices and re-read their rate. Idle time earns at most `burst` seconds of credit at the current
// rate, so a paused sender cannot later flood the link. Thread-compatible.
#ifndef KVCS_SCHED_PACER_H_
#define KVCS_SCHED_PACER_H_

#include <algorithm>
#include <cmath>

namespace kvcs::sched {

class Pacer {
 public:
  // burst: seconds of idle credit kept. 2 ms is about one 64 KiB record at 32 MB/s and a few
  // layers of a short context at link speed: enough to absorb timer jitter, not a flood.
  explicit Pacer(double burst = 2e-3) : burst_(burst) {}

  // Seconds to wait at `rate` before the next write (0: now). rate <= 0 or non-finite means
  // unpaced: the debt is forgiven.
  double Wait(double now, double rate) {
    if (paid_at_ > -1e300 && now > paid_at_) debt_ -= (now - paid_at_) * rate_;
    paid_at_ = std::max(paid_at_, now);
    if (!(rate > 0) || !std::isfinite(rate)) {
      debt_ = 0;
      rate_ = 0;
      return 0;
    }
    rate_ = rate;
    debt_ = std::max(debt_, -burst_ * rate);
    return debt_ > 0 ? debt_ / rate : 0;
  }
  // REQUIRES: bytes >= 0.
  void Sent(double bytes) { debt_ += bytes; }

 private:
  double burst_;
  double rate_ = 0;          // the rate given at the last Wait
  double debt_ = 0;          // bytes owed (negative: idle credit)
  double paid_at_ = -1e301;  // time of the last Wait
};

}  // namespace kvcs::sched

#endif  // KVCS_SCHED_PACER_H_
