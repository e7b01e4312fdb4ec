// Fluid discrete-event simulator. See simulator.h.
#include "sched/simulator.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kvcs::sched {
namespace {

struct State {
  const SimRequest* req = nullptr;
  bool arrived = false;
  uint32_t delivered = 0;          // layers fully delivered
  double layer_left = 0;           // bytes still missing of layer `delivered`
  std::vector<double> layer_time;  // delivery time of each layer
  double rate = 0;
};

// A layer counts as delivered when less than this many bytes remain: absorbs the rounding of
// rate × time products (1e-6 of a byte is far below any real layer).
constexpr double kByteEpsilon = 1e-6;

}  // namespace

Result<std::vector<SimResult>> Simulate(const std::vector<SimRequest>& requests, double cap,
                                        const Options& options) {
  if (!(cap > 0) || !std::isfinite(cap)) return InvalidArgument("sim: cap must be > 0");
  std::vector<State> st(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const SimRequest& r = requests[i];
    if (r.blocks == 0 || r.layers == 0 || !(r.block_layer_bytes > 0) ||
        !(r.compute_per_layer >= 0) || !(r.stall_target >= 0) || !std::isfinite(r.arrival))
      return InvalidArgument("sim: request " + std::to_string(r.id) + " is malformed");
    st[i].req = &r;
    st[i].layer_left = r.blocks * r.block_layer_bytes;
  }
  const double kInf = std::numeric_limits<double>::infinity();
  double now = 0;
  if (!requests.empty()) {
    now = requests[0].arrival;
    for (const auto& r : requests) now = std::min(now, r.arrival);
  }
  for (uint64_t events = 0;; ++events) {
    if (events > kMaxSimEvents) return ResourceExhausted("sim: too many events");
    // Arrivals at `now`.
    for (auto& s : st)
      if (!s.arrived && s.req->arrival <= now) s.arrived = true;
    // Allocate among active requests.
    std::vector<Demand> ds;
    std::vector<size_t> idx;
    for (size_t i = 0; i < st.size(); ++i) {
      State& s = st[i];
      if (!s.arrived || s.delivered == s.req->layers) continue;
      Demand d;
      d.id = s.req->id;
      d.bytes_per_layer = s.req->blocks * s.req->block_layer_bytes;
      d.compute_per_layer = s.req->compute_per_layer;
      d.stall_target = s.req->stall_target;
      d.layers_remaining = s.req->layers - s.delivered;
      d.first_layer_pending = s.delivered == 0;
      d.arrival = s.req->arrival;
      ds.push_back(d);
      idx.push_back(i);
    }
    std::vector<Grant> grants = Allocate(ds, cap, options);
    double next = kInf;
    for (const auto& s : st)
      if (!s.arrived) next = std::min(next, s.req->arrival);
    for (size_t k = 0; k < idx.size(); ++k) {
      State& s = st[idx[k]];
      s.rate = grants[k].rate;
      if (s.rate > 0) next = std::min(next, now + s.layer_left / s.rate);
    }
    if (next == kInf) break;  // nothing active, nothing to come
    double dt = next - now;
    now = next;
    for (size_t k = 0; k < idx.size(); ++k) {
      State& s = st[idx[k]];
      s.layer_left -= s.rate * dt;
      if (s.layer_left <= kByteEpsilon * s.req->block_layer_bytes ||
          (s.rate > 0 && s.layer_left / s.rate <= 1e-12)) {
        s.layer_time.push_back(now);
        ++s.delivered;
        s.layer_left = s.req->blocks * s.req->block_layer_bytes;
      }
    }
  }
  std::vector<SimResult> out;
  for (const auto& s : st) {
    const SimRequest& r = *s.req;
    SimResult res;
    res.id = r.id;
    res.arrival = r.arrival;
    double t = r.arrival;
    for (uint32_t l = 0; l < r.layers; ++l) {
      double ready = s.layer_time[l];
      if (l == 0) {
        res.first_layer_wait = ready - r.arrival;
      } else {
        res.stall += std::max(0.0, ready - t);
      }
      t = std::max(t, ready) + r.compute_per_layer;
    }
    res.done = t;
    res.added_ttft = t - r.arrival - r.layers * r.compute_per_layer;
    out.push_back(res);
  }
  return out;
}

}  // namespace kvcs::sched
