// Discrete-event (fluid) simulator of layer-pipelined KV retrieval under a shared bandwidth cap.
// Pure: no clocks, no threads; deterministic for a given input.
//
// Each request fetches `layers` layers of `blocks` blocks (block_layer_bytes each) over the link;
// the scheduler (Allocate) recomputes every request's rate at each event (an arrival, a layer
// fully delivered). The engine computes layer l when it has arrived and layer l-1 is computed,
// taking compute_per_layer. Added TTFT = (end of the last layer's compute) - arrival - L·c: the
// first-layer wait plus every stall. Used by bench/sched and the scheduler tests.
#ifndef KVCS_SCHED_SIMULATOR_H_
#define KVCS_SCHED_SIMULATOR_H_

#include <cstdint>
#include <vector>

#include "sched/scheduler.h"

namespace kvcs::sched {

struct SimRequest {
  uint64_t id = 0;
  double arrival = 0;            // seconds
  uint32_t blocks = 0;           // > 0
  uint32_t layers = 0;           // > 0
  double block_layer_bytes = 0;  // bytes of one layer of one block (> 0)
  double compute_per_layer = 0;  // seconds
  double stall_target = 0;       // seconds
};

struct SimResult {
  uint64_t id = 0;
  double arrival = 0;
  double first_layer_wait = 0;  // arrival -> layer 0 fully delivered
  double stall = 0;             // Σ waits of layers 1.. for their data
  double added_ttft = 0;        // first_layer_wait + stall
  double done = 0;              // time the last layer's compute ends
};

// Bounds the simulated work so a bad input cannot loop forever: 1e7 events is far beyond any
// workload in bench/sched (a few hundred requests × 32 layers).
inline constexpr uint64_t kMaxSimEvents = 10'000'000;

// Results in input order. REQUIRES: every request has blocks, layers, block_layer_bytes > 0;
// cap > 0.
Result<std::vector<SimResult>> Simulate(const std::vector<SimRequest>& requests, double cap,
                                        const Options& options);

// A simple per-layer compute model for a prefix hit: the engine computes `new_tokens` suffix
// tokens on every layer while the cached `context_tokens` stream in. Cost = linear part
// (new_tokens × linear_flops) + attention over the context (new_tokens × context × attn_flops),
// divided by the GPU's effective FLOP/s. Defaults: Llama-3.1-8B (≈218 M weights per layer →
// 0.436 GFLOP per token per layer; attention 4·d_model = 16,384 FLOP per query-key pair per
// layer) on a GPU sustaining 400 TFLOP/s.
struct ComputeModel {
  double linear_flops_per_token = 0.436e9;
  double attn_flops_per_pair = 16384;
  double gpu_flops = 400e12;
  double PerLayer(double context_tokens, double new_tokens) const {
    return new_tokens * (linear_flops_per_token + attn_flops_per_pair * context_tokens) / gpu_flops;
  }
};

}  // namespace kvcs::sched

#endif  // KVCS_SCHED_SIMULATOR_H_
