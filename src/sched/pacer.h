// Pacer: turns a granted rate into send times (pure; time passed in, in seconds).
//
// Reserve(now, bytes, rate) returns the time at which `bytes` may start to be sent so that the
// long-run rate does not exceed `rate`. Idle time earns at most `burst` seconds of credit, so a
// paused sender cannot later flood the link. Rate changes apply from the next reservation.
// Thread-compatible.
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

  // REQUIRES: bytes >= 0. rate <= 0 or non-finite means unpaced (returns now).
  double Reserve(double now, double bytes, double rate) {
    if (!(rate > 0) || !std::isfinite(rate)) return now;
    double start = std::max(next_, now - burst_);
    next_ = start + bytes / rate;
    return std::max(start, now);
  }

 private:
  double burst_;
  double next_ = -1e300;
};

}  // namespace kvcs::sched

#endif  // KVCS_SCHED_PACER_H_
