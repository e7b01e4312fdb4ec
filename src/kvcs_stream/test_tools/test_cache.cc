#include "kvcs_stream/test_tools/test_cache.h"

#include <cmath>
#include <cstring>

#include "kvsp/container.h"

namespace kvcs::stream::test {
namespace {

Bytes Values(const kvsp::Descriptor& d, uint32_t layer, uint64_t first_block, uint64_t blocks,
             uint32_t salt) {
  const uint64_t per_block = uint64_t{d.block_tokens} * d.kv_heads * d.head_dim;
  Bytes out(blocks * per_block * 2);
  for (uint64_t i = 0; i < blocks * per_block; ++i) {
    uint64_t x = first_block * per_block + i;
    float f = std::sin(0.37f * static_cast<float>(x % 1000) + 1.3f * layer + salt) * 2.0f;
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    out[2 * i] = static_cast<uint8_t>(bits >> 16);
    out[2 * i + 1] = static_cast<uint8_t>(bits >> 24);
  }
  return out;
}

}  // namespace

kvsp::Descriptor SmallDescriptor(uint32_t layers, uint32_t block_tokens) {
  kvsp::Descriptor d;
  d.model = "kvcs-test/tiny";
  d.model_rev = "r1";
  d.tokenizer_rev = "t1";
  d.attn = "gqa";
  d.layers = layers;
  d.kv_heads = 2;
  d.head_dim = 8;
  d.kv_dtype = "bf16";
  d.block_tokens = block_tokens;
  d.layout = "thd";
  return d;
}

std::vector<uint32_t> Tokens(uint64_t n, uint32_t seed) {
  std::vector<uint32_t> t(n);
  for (uint64_t i = 0; i < n; ++i)
    t[i] = static_cast<uint32_t>((i * 2654435761u + seed * 97) % 128256);
  return t;
}

Bytes LayerK(const kvsp::Descriptor& d, uint32_t layer, uint64_t first_block, uint64_t blocks) {
  return Values(d, layer, first_block, blocks, 0);
}
Bytes LayerV(const kvsp::Descriptor& d, uint32_t layer, uint64_t first_block, uint64_t blocks) {
  return Values(d, layer, first_block, blocks, 7);
}

Result<Bytes> BlockContainer(const kvsp::Descriptor& d, const Digest& compat_id,
                             const Digest& block_key, uint64_t block, uint32_t first_layer,
                             uint32_t last_layer) {
  std::vector<Bytes> k, v;
  for (uint32_t l = first_layer; l <= last_layer; ++l) {
    k.push_back(LayerK(d, l, block, 1));
    v.push_back(LayerV(d, l, block, 1));
  }
  std::vector<kvsp::LayerSections> secs;
  for (size_t i = 0; i < k.size(); ++i) secs.push_back({k[i], v[i]});
  return kvsp::EncodeContainerFromRaw(d, compat_id, block_key, static_cast<uint32_t>(block + 1),
                                      kvsp::Codec::kRaw, static_cast<uint16_t>(first_layer), secs);
}

}  // namespace kvcs::stream::test
