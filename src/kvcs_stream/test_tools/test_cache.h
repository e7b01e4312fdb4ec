// A small deterministic KV cache for the kvcs_stream tests and fuzzer: a descriptor with few
// layers and heads, token ids, and bf16 K/V values (finite, so every codec can encode them).
#ifndef KVCS_KVCS_STREAM_TEST_TOOLS_TEST_CACHE_H_
#define KVCS_KVCS_STREAM_TEST_TOOLS_TEST_CACHE_H_

#include <cstdint>
#include <vector>

#include "common/bytes.h"
#include "common/crypto.h"
#include "common/status.h"
#include "kvsp/descriptor.h"

namespace kvcs::stream::test {

// bf16, gqa, `layers` layers, 2 KV heads x 8, `block_tokens` tokens per block.
kvsp::Descriptor SmallDescriptor(uint32_t layers = 4, uint32_t block_tokens = 4);
// `n` token ids; `seed` changes them.
std::vector<uint32_t> Tokens(uint64_t n, uint32_t seed = 1);

// Raw K (or V) of `layer` for blocks [first_block, first_block + blocks): [T][H][D] bf16.
Bytes LayerK(const kvsp::Descriptor& d, uint32_t layer, uint64_t first_block, uint64_t blocks);
Bytes LayerV(const kvsp::Descriptor& d, uint32_t layer, uint64_t first_block, uint64_t blocks);

// What a KVSP holder stores for `block` (0-based) of this cache: its raw-codec container of
// layers first_layer..last_layer, named by `compat_id` and the block's `block_key`.
Result<Bytes> BlockContainer(const kvsp::Descriptor& d, const Digest& compat_id,
                             const Digest& block_key, uint64_t block, uint32_t first_layer,
                             uint32_t last_layer);

}  // namespace kvcs::stream::test

#endif  // KVCS_KVCS_STREAM_TEST_TOOLS_TEST_CACHE_H_
