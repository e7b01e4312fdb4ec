// A synthetic KV cache in the Llama-3.1-8B layout (KVSP v1 as defined by the project): the §9
// descriptor (32 layers by default, 8 KV heads × 128, bf16, 16-token blocks → 32 KiB K and 32 KiB V
// per block-layer), the public scope, Block Keys of a deterministic token sequence, and
// containers of deterministic pseudo-random bytes. Used by the demo, the tests and the bench.
// Pure; thread-safe.
#ifndef KVCS_OBJCACHE_SYNTHETIC_H_
#define KVCS_OBJCACHE_SYNTHETIC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/crypto.h"
#include "common/status.h"
#include "objcache/aggregate_wire.h"
#include "store/object_store.h"

namespace kvcs::objcache {

struct SyntheticCache {
  Digest compat_id{};
  Digest scope_id{};
  std::vector<Digest> block_keys;  // K_1..K_n
  uint32_t layers = 0;
  uint64_t section_bytes = 0;  // one K (= one V) section of one block-layer
  uint64_t seed = 0;
};

// REQUIRES: 1 <= blocks <= 16384, 1 <= layers <= 1024.
Result<SyntheticCache> MakeSyntheticCache(uint32_t blocks, uint32_t layers = 32, uint64_t seed = 1);
// The container of block `index` (0-based) holding every layer.
Result<Bytes> MakeSyntheticContainer(const SyntheticCache& cache, uint32_t index);
// The raw K||V bytes the container of block `index` carries for `layer`.
Bytes SyntheticLayerBytes(const SyntheticCache& cache, uint32_t index, uint32_t layer);

// The aggregated request for blocks [0, prefix_blocks) of `cache` (all when 0), layers
// [first, first + count) (all when count is 0), K and V, raw codec.
AggregateRequest SyntheticRequest(const SyntheticCache& cache, uint32_t prefix_blocks = 0,
                                  uint32_t first = 0, uint32_t count = 0);

// Stores a container at its predictable key (block_layout.h) in `bucket`: checks every digest,
// then writes atomically. Returns the key.
Result<std::string> StoreContainer(store::ObjectStore& store, const std::string& bucket,
                                   const Digest& scope_id, ByteSpan container);

}  // namespace kvcs::objcache

#endif  // KVCS_OBJCACHE_SYNTHETIC_H_
