// Stall-target bandwidth scheduler (shared/specs/objectcache.md §3): pure logic, time passed in.
//
// A layer-pipelined KV retrieval r declares, per layer: its payload b_r (bytes of one layer over
// all its blocks), the compute time c_r the engine spends on one layer, and a stall target s_r.
// Delivered at rate B_r, layer l+1 must arrive while layer l computes, so each layer stalls
// max(0, b_r/B_r - c_r). Meeting the target needs B_r >= b_r / (c_r + s_r) (the minimum rate).
// Every admitted request gets a rate at once (no admission queue): its first layer starts
// immediately. The first layer has nothing to hide behind, so until it is delivered the request's
// saturation rate is infinite (it soaks up water-filled bandwidth first).
//
// Allocate() grants every request its minimum, then water-fills the remainder (one common level)
// up to each request's saturation rate b_r / c_r (more than that only runs ahead of compute), and
// finally shares any leftover equally (work-conserving). When the cap cannot cover every minimum,
// the Shortfall policy decides (see docs/protocols/scheduler.md):
//   kLeastSlackFirst - (default) requests with the least slack (largest b/(c+s): short
//                      contexts) keep their minimum first, ties to the fewest bytes left; the
//                      others share what is left. Everyone keeps a floor of cap/(8n) so that
//                      every request starts at once.
//   kDegradeEvenly   - every request's stall target grows by the same amount Δ (bisection on
//                      Σ b_r/(c_r + s_r + Δ) = cap). Under deep overload this tends to sharing
//                      in proportion to bytes, which favours long contexts: see bench/sched.
// Policy::kEqualShare ignores the demands and gives cap/n to each request (the baseline).
//
// BandwidthScheduler keeps the active set for a server: Admit/Update/Finish with the current
// time, then Rates(). Thread-compatible (callers serialize); no clocks, no I/O.
#ifndef KVCS_SCHED_SCHEDULER_H_
#define KVCS_SCHED_SCHEDULER_H_

#include <cstdint>
#include <map>
#include <vector>

#include "common/status.h"

namespace kvcs::sched {

// What one request declares. Rates are bytes per second, times are seconds.
struct Demand {
  uint64_t id = 0;
  double bytes_per_layer = 0;       // b_r: one layer over all the request's blocks (> 0)
  double compute_per_layer = 0;     // c_r: engine time for one layer (>= 0)
  double stall_target = 0;          // s_r: tolerated stall per layer (>= 0)
  uint32_t layers_remaining = 0;    // layers not yet fully delivered (0: done, gets no rate)
  bool first_layer_pending = true;  // true until the first layer has been delivered
  double arrival = 0;               // informative (time the request was admitted)
};

enum class Policy { kStallTarget, kEqualShare };
enum class Shortfall { kDegradeEvenly, kLeastSlackFirst };

struct Options {
  Policy policy = Policy::kStallTarget;
  Shortfall shortfall = Shortfall::kLeastSlackFirst;
  // A zero stall target would ask for an infinite first-layer rate; targets below this floor are
  // treated as this floor. 100 µs is well below one layer's compute on any GPU we model.
  double min_stall_target = 100e-6;
};

struct Grant {
  uint64_t id = 0;
  double rate = 0;      // bytes per second granted
  double min_rate = 0;  // the minimum its stall target asks for (before any shortfall)
};

// Validates one demand (finite, non-negative, bytes_per_layer > 0).
Status ValidateDemand(const Demand& d);

// Splits `cap` (bytes/s, > 0) among `demands`. Returns one grant per demand, in input order.
// Requests with layers_remaining == 0 get rate 0. Σ rates <= cap (up to rounding).
// REQUIRES: every demand valid (ValidateDemand), cap > 0.
std::vector<Grant> Allocate(const std::vector<Demand>& demands, double cap,
                            const Options& options = {});

// Minimum rate for a demand under its stall target: b / (c + max(s, min_stall_target)).
double MinRate(const Demand& d, const Options& options = {});
// Rate above which a request gains nothing now (b / c; infinite while the first layer is pending
// or when c == 0).
double SaturationRate(const Demand& d);

// The active set of a server, recomputed on every change. Time is passed in (seconds, any epoch)
// and recorded on demands for reporting only; the allocation itself is memoryless.
class BandwidthScheduler {
 public:
  BandwidthScheduler(double cap, Options options = {}) : cap_(cap), options_(options) {}

  // Adds a request; its id must be unique among active requests.
  Status Admit(Demand demand, double now);
  // Records that one more layer of `id` was delivered.
  Status LayerDelivered(uint64_t id, double now);
  Status Finish(uint64_t id, double now);
  // Current rate of `id` (0 if unknown). Recomputes lazily after a change.
  double RateOf(uint64_t id);
  std::vector<Grant> Rates();
  size_t active() const { return active_.size(); }
  double cap() const { return cap_; }

 private:
  void Recompute();
  double cap_;
  Options options_;
  std::map<uint64_t, Demand> active_;
  std::map<uint64_t, Grant> grants_;
  bool dirty_ = true;
};

}  // namespace kvcs::sched

#endif  // KVCS_SCHED_SCHEDULER_H_
