// LoadDeadline: how long a MOQT load (load_job_moqt.cc) may take before the blocks it has not
// verified are reported for recompute. With the engine's recompute cost c (ns per token and
// layer, kvcs_client_config::recompute_ns_per_token_layer) it is what recomputing the loaded
// prefix would cost, N blocks · B tokens · L layers · c, at least kPricedFloorMs; without a cost
// the load is expected to deliver everything: kUnpricedFixedMs plus its bytes at
// kUnpricedBytesPerMs. Pure.
#ifndef KVCS_ENGINE_LOAD_DEADLINE_H_
#define KVCS_ENGINE_LOAD_DEADLINE_H_

#include <cstdint>

namespace kvcs::engine {

// A priced load gets at least a SETUP, a subscription and a few round trips.
inline constexpr uint64_t kPricedFloorMs = 1000;
// An unpriced load: a fixed part (connection, subscription, the first manifest) plus its bytes
// at a rate a busy host's relay path still reaches, so that a large load is not cut short.
inline constexpr uint64_t kUnpricedFixedMs = 2000;
inline constexpr uint64_t kUnpricedBytesPerMs = 10'000;  // 10 MB/s

// The deadline in milliseconds after the load starts, for `blocks` blocks of `block_tokens`
// tokens over `layers` layers carrying `bytes` bytes of K and V; ns_per_token_layer 0: unpriced.
uint64_t MoqtLoadDeadlineMs(uint64_t blocks, uint32_t block_tokens, uint32_t layers,
                            uint64_t ns_per_token_layer, uint64_t bytes);

}  // namespace kvcs::engine

#endif  // KVCS_ENGINE_LOAD_DEADLINE_H_
