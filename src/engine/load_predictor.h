// Whether a load is worth starting: a measured delivery rate per path (an exponentially weighted
// average of the verified KV bytes per second recent loads delivered) against what recomputing
// the load's blocks costs the engine. A load predicted slower than recomputing is skipped (the
// engine recomputes at once instead of waiting for a deadline); every kProbeEverySkips-th skipped
// load, or one kProbeAfterMs after the last load tried, is tried anyway, so that the estimate
// recovers when the link gets faster. Pure logic: time is passed in. Not thread-safe (the
// EngineClient guards its predictors).
#ifndef KVCS_ENGINE_LOAD_PREDICTOR_H_
#define KVCS_ENGINE_LOAD_PREDICTOR_H_

#include <cstdint>
#include <optional>

namespace kvcs::engine {

// The weight of the newest load in the average: a link that changes is followed within a few
// loads, one odd load moves the estimate only halfway.
inline constexpr double kRateNewWeight = 0.5;
// A skipped load is tried anyway after this many skips in a row...
inline constexpr uint32_t kProbeEverySkips = 16;
// ...or when this long passed since the last load tried on the path.
inline constexpr uint64_t kProbeAfterMs = 60'000;
// A load measured shorter than this counts as this long (a rate from a 0 ms load is meaningless).
inline constexpr uint64_t kMinLoadUs = 100;

struct LoadDecision {
  bool load = true;            // false: skip it, the engine recomputes
  bool probe = false;          // loaded although predicted slower (to measure the path again)
  double predicted_ms = 0;     // the load's bytes at the measured rate (0: rate unknown)
  double recompute_ms = 0;     // what recomputing the load's blocks costs
  std::optional<double> rate;  // bytes per second measured, when known
};

class LoadPredictor {
 public:
  // A load that ended at now_ms after elapsed_us, having delivered `bytes` verified bytes.
  void Record(uint64_t now_ms, uint64_t bytes, uint64_t elapsed_us);
  // Decides a load of `bytes` bytes whose blocks cost recompute_ns to recompute (0: not given,
  // always load). Counts the skip, or the load as the path's last try.
  LoadDecision Decide(uint64_t now_ms, uint64_t bytes, uint64_t recompute_ns);
  // Bytes per second measured; empty until a load was recorded.
  std::optional<double> rate() const { return rate_; }

 private:
  std::optional<double> rate_;
  uint32_t skips_ = 0;        // loads skipped since the last one tried
  uint64_t last_try_ms_ = 0;  // when the last load tried was decided (or recorded)
};

}  // namespace kvcs::engine

#endif  // KVCS_ENGINE_LOAD_PREDICTOR_H_
