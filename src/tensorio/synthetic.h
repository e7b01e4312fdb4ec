// A synthetic KV cache with realistic value statistics, for `kvcs demo`, tests and benchmarks.
//
// Values are bf16/fp16/fp32 draws per channel (layer, head, dim): each channel has its own scale
// (log-normal around 1 for K and 0.5 for V) and, for K, its own mean; about 2% of K channels are
// outliers with 8x the scale (as the large-magnitude key channels of real LLMs are). Within a
// channel values are approximately normal (Irwin-Hall of four uniforms). Token ids are uniform over
// a 128256-token vocabulary (Llama 3). Deterministic for a given seed. Not thread-safe to mutate;
// const access is safe from any thread.
#ifndef KVCS_TENSORIO_SYNTHETIC_H_
#define KVCS_TENSORIO_SYNTHETIC_H_

#include <cstdint>
#include <vector>

#include "common/bytes.h"
#include "common/status.h"
#include "kvsp/descriptor.h"
#include "tensorio/kv_cache.h"

namespace kvcs::tensorio {

struct SyntheticKv {
  kvsp::Descriptor descriptor;
  std::vector<uint32_t> token_ids;
  std::vector<Bytes> k, v;  // per layer, [T][H][D] in descriptor.kv_dtype

  // A view over this object's buffers (valid while it lives and is not modified).
  KvCacheView View() const;
  // Writes the cache in the safetensors KV convention.
  Status Save(const std::string& path) const;
};

// The spec §9 descriptor: meta-llama/Llama-3.1-8B-Instruct, 32 layers, 8 KV heads x 128, bf16,
// 16-token blocks.
kvsp::Descriptor Llama31_8BDescriptor();

// REQUIRES: ValidateDescriptor(d).ok(); kv_dtype bf16, fp16 or fp32; tokens <= 16 Mi.
// Uses up to `threads` threads (0 = hardware concurrency).
Result<SyntheticKv> MakeSyntheticKv(const kvsp::Descriptor& d, uint64_t tokens, uint64_t seed = 1,
                                    unsigned threads = 0);

}  // namespace kvcs::tensorio

#endif  // KVCS_TENSORIO_SYNTHETIC_H_
