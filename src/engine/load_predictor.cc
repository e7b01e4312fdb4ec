#include "engine/load_predictor.h"

#include <algorithm>
#include <limits>

namespace kvcs::engine {

void LoadPredictor::Record(uint64_t now_ms, uint64_t bytes, uint64_t elapsed_us) {
  const double sample =
      static_cast<double>(bytes) * 1e6 / static_cast<double>(std::max(elapsed_us, kMinLoadUs));
  rate_ = rate_ ? kRateNewWeight * sample + (1 - kRateNewWeight) * *rate_ : sample;
  last_try_ms_ = std::max(last_try_ms_, now_ms);
}

LoadDecision LoadPredictor::Decide(uint64_t now_ms, uint64_t bytes, uint64_t recompute_ns) {
  LoadDecision d;
  d.rate = rate_;
  d.recompute_ms = static_cast<double>(recompute_ns) / 1e6;
  if (rate_) {
    d.predicted_ms = *rate_ > 0 ? static_cast<double>(bytes) * 1e3 / *rate_
                                : std::numeric_limits<double>::infinity();
  }
  if (recompute_ns == 0 || !rate_ || d.predicted_ms <= d.recompute_ms) {
    skips_ = 0;
    last_try_ms_ = now_ms;
    return d;
  }
  if (skips_ + 1 >= kProbeEverySkips || now_ms >= last_try_ms_ + kProbeAfterMs) {
    d.probe = true;
    skips_ = 0;
    last_try_ms_ = now_ms;
    return d;
  }
  ++skips_;
  d.load = false;
  return d;
}

}  // namespace kvcs::engine
