// Stall-target bandwidth scheduler. See scheduler.h and docs/protocols/scheduler.md.
#include "sched/scheduler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

namespace kvcs::sched {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Bisection steps: 100 halvings take any bracket below double precision.
constexpr int kBisectSteps = 100;
// Least-slack-first still reserves this fraction of the cap, split evenly, so that no request
// waits with rate 0 (the first layer of every request starts at once).
constexpr double kLeastSlackFloorFraction = 0.125;

bool Active(const Demand& d) { return d.layers_remaining > 0; }

double EffectiveCompute(const Demand& d) {
  return d.first_layer_pending ? 0.0 : d.compute_per_layer;
}

double Target(const Demand& d, const Options& o) {
  return std::max(d.stall_target, o.min_stall_target);
}

// Σ clamp(level, lo_i, hi_i) over active demands.
double Filled(const std::vector<double>& lo, const std::vector<double>& hi, double level) {
  double sum = 0;
  for (size_t i = 0; i < lo.size(); ++i) sum += std::clamp(level, lo[i], std::max(lo[i], hi[i]));
  return sum;
}

}  // namespace

Status ValidateDemand(const Demand& d) {
  auto finite_nonneg = [](double v) { return std::isfinite(v) && v >= 0; };
  if (!finite_nonneg(d.bytes_per_layer) || d.bytes_per_layer <= 0)
    return InvalidArgument("sched: bytes_per_layer must be finite and > 0");
  if (!finite_nonneg(d.compute_per_layer))
    return InvalidArgument("sched: compute_per_layer must be finite and >= 0");
  if (!finite_nonneg(d.stall_target))
    return InvalidArgument("sched: stall_target must be finite and >= 0");
  if (!std::isfinite(d.arrival)) return InvalidArgument("sched: arrival must be finite");
  return Status::Ok();
}

double MinRate(const Demand& d, const Options& options) {
  return d.bytes_per_layer / (d.compute_per_layer + Target(d, options));
}

double SaturationRate(const Demand& d) {
  double c = EffectiveCompute(d);
  return c > 0 ? d.bytes_per_layer / c : kInf;
}

std::vector<Grant> Allocate(const std::vector<Demand>& demands, double cap,
                            const Options& options) {
  std::vector<Grant> grants(demands.size());
  std::vector<size_t> act;
  for (size_t i = 0; i < demands.size(); ++i) {
    grants[i].id = demands[i].id;
    if (Active(demands[i])) {
      act.push_back(i);
      grants[i].min_rate = MinRate(demands[i], options);
    }
  }
  if (act.empty() || !(cap > 0)) return grants;
  const double n = static_cast<double>(act.size());

  if (options.policy == Policy::kEqualShare) {
    for (size_t i : act) grants[i].rate = cap / n;
    return grants;
  }

  double min_sum = 0;
  for (size_t i : act) min_sum += grants[i].min_rate;

  if (min_sum > cap) {
    if (options.shortfall == Shortfall::kDegradeEvenly) {
      // Find Δ >= 0 with Σ b/(c_eff + s + Δ) = cap; Σ is decreasing in Δ.
      double b_sum = 0;
      for (size_t i : act) b_sum += demands[i].bytes_per_layer;
      double lo = 0, hi = b_sum / cap;  // at hi: Σ b/(x+hi) <= Σ b/hi = cap
      auto total = [&](double delta) {
        double s = 0;
        for (size_t i : act)
          s += demands[i].bytes_per_layer /
               (demands[i].compute_per_layer + Target(demands[i], options) + delta);
        return s;
      };
      for (int step = 0; step < kBisectSteps; ++step) {
        double mid = 0.5 * (lo + hi);
        (total(mid) > cap ? lo : hi) = mid;
      }
      for (size_t i : act)
        grants[i].rate = demands[i].bytes_per_layer /
                         (demands[i].compute_per_layer + Target(demands[i], options) + hi);
    } else {
      // Least slack first: order by steady-state need b/(c+s), largest first (short contexts,
      // little compute to hide behind); first-layer demands rank by the same steady-state need
      // so that a huge first layer cannot take the whole cap.
      const double floor = cap * kLeastSlackFloorFraction / n;
      double left = cap - floor * n;
      std::vector<size_t> order = act;
      auto need = [&](size_t i) {
        return demands[i].bytes_per_layer /
               (demands[i].compute_per_layer + Target(demands[i], options));
      };
      // Ties (same shape of request): the one with the fewest bytes left goes first, then the
      // earliest arrival (shortest-remaining-first: the mean added TTFT drops, nobody starves
      // because every request keeps its floor).
      auto left_bytes = [&](size_t i) {
        return demands[i].bytes_per_layer * demands[i].layers_remaining;
      };
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        if (need(a) != need(b)) return need(a) > need(b);
        if (left_bytes(a) != left_bytes(b)) return left_bytes(a) < left_bytes(b);
        return demands[a].arrival < demands[b].arrival;
      });
      for (size_t i : order) {
        double extra = std::min(std::max(0.0, grants[i].min_rate - floor), left);
        grants[i].rate = floor + extra;
        left -= extra;
      }
    }
    return grants;
  }

  // Every minimum fits: water-fill the remainder up to each saturation rate.
  std::vector<double> lo, hi;
  double sat_sum = 0;
  for (size_t i : act) {
    lo.push_back(grants[i].min_rate);
    hi.push_back(SaturationRate(demands[i]));
    sat_sum += std::max(lo.back(), hi.back());
  }
  if (sat_sum <= cap) {
    // Everyone can run at its saturation rate; share the leftover equally (running ahead of
    // compute never hurts and frees the link sooner for later arrivals).
    double leftover = (cap - sat_sum) / n;
    for (size_t k = 0; k < act.size(); ++k) grants[act[k]].rate = std::max(lo[k], hi[k]) + leftover;
    return grants;
  }
  double a = 0, b = cap;  // the water level never exceeds the cap
  for (int step = 0; step < kBisectSteps; ++step) {
    double mid = 0.5 * (a + b);
    (Filled(lo, hi, mid) > cap ? b : a) = mid;
  }
  for (size_t k = 0; k < act.size(); ++k)
    grants[act[k]].rate = std::clamp(a, lo[k], std::max(lo[k], hi[k]));
  return grants;
}

Status BandwidthScheduler::Admit(Demand demand, double now) {
  KVCS_RETURN_IF_ERROR(ValidateDemand(demand));
  if (active_.count(demand.id)) return InvalidArgument("sched: duplicate request id");
  demand.arrival = now;
  active_[demand.id] = demand;
  dirty_ = true;
  return Status::Ok();
}

Status BandwidthScheduler::LayerDelivered(uint64_t id, double /*now*/) {
  auto it = active_.find(id);
  if (it == active_.end()) return NotFound("sched: unknown request id");
  Demand& d = it->second;
  d.first_layer_pending = false;
  if (d.layers_remaining > 0) --d.layers_remaining;
  dirty_ = true;
  return Status::Ok();
}

Status BandwidthScheduler::Finish(uint64_t id, double /*now*/) {
  if (active_.erase(id) == 0) return NotFound("sched: unknown request id");
  grants_.erase(id);
  dirty_ = true;
  return Status::Ok();
}

void BandwidthScheduler::Recompute() {
  if (!dirty_) return;
  std::vector<Demand> ds;
  ds.reserve(active_.size());
  for (auto& [id, d] : active_) ds.push_back(d);
  grants_.clear();
  for (const Grant& g : Allocate(ds, cap_, options_)) grants_[g.id] = g;
  dirty_ = false;
}

double BandwidthScheduler::RateOf(uint64_t id) {
  Recompute();
  auto it = grants_.find(id);
  return it == grants_.end() ? 0.0 : it->second.rate;
}

std::vector<Grant> BandwidthScheduler::Rates() {
  Recompute();
  std::vector<Grant> out;
  for (auto& [id, g] : grants_) out.push_back(g);
  return out;
}

}  // namespace kvcs::sched
