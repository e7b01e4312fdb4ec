// Synthetic KV cache. See synthetic.h.
#include "objcache/synthetic.h"

#include <algorithm>

#include <cstring>

#include "kvsp/block_keys.h"
#include "kvsp/container.h"
#include "kvsp/descriptor.h"
#include "kvsp/ids.h"
#include "objcache/aggregate_wire.h"
#include "objcache/block_layout.h"

namespace kvcs::objcache {
namespace {

uint64_t Mix(uint64_t z) {  // splitmix64 finalizer
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

Result<SyntheticCache> MakeSyntheticCache(uint32_t blocks, uint32_t layers, uint64_t seed) {
  if (blocks < 1 || blocks > kMaxBlocks || layers < 1 || layers > 1024)
    return InvalidArgument("synthetic cache: 1..16384 blocks and 1..1024 layers");
  std::string json =
      "{\"kvsp\":1,\"model\":\"meta-llama/Llama-3.1-8B-Instruct\",\"model_rev\":"
      "\"0e9e39f249a16976918f6564b8830bc894c89659\",\"tokenizer_rev\":"
      "\"0e9e39f249a16976918f6564b8830bc894c89659\",\"attn\":\"gqa\",\"layers\":" +
      std::to_string(layers) +
      ",\"kv_heads\":8,\"head_dim\":128,\"kv_dtype\":\"bf16\",\"block_tokens\":16,"
      "\"layout\":\"thd\"}";
  KVCS_ASSIGN_OR_RETURN(kvsp::Descriptor d, kvsp::ParseDescriptor(json));
  SyntheticCache c;
  c.compat_id = kvsp::CompatId(d);
  kvsp::ScopeKey scope = kvsp::PublicScopeKey();
  c.scope_id = kvsp::ScopeId(scope);
  std::vector<uint32_t> tokens(size_t{blocks} * 16);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = 1000 + static_cast<uint32_t>(i % 30000);
  c.block_keys = kvsp::BlockKeys(kvsp::ChainKey(scope, c.compat_id), 16, tokens);
  c.layers = layers;
  c.section_bytes = kvsp::KSectionBytes(d);
  c.seed = seed;
  return c;
}

Bytes SyntheticLayerBytes(const SyntheticCache& c, uint32_t index, uint32_t layer) {
  Bytes out(2 * c.section_bytes);
  uint64_t s = Mix(c.seed * 0x9e3779b97f4a7c15ULL + (uint64_t{index} << 20) + layer);
  for (size_t i = 0; i + 8 <= out.size(); i += 8) {
    s += 0x9e3779b97f4a7c15ULL;
    uint64_t v = Mix(s);
    std::memcpy(out.data() + i, &v, 8);
  }
  return out;
}

Result<Bytes> MakeSyntheticContainer(const SyntheticCache& c, uint32_t index) {
  if (index >= c.block_keys.size()) return InvalidArgument("synthetic: block index out of range");
  std::vector<Bytes> layer_bytes;
  std::vector<kvsp::LayerSections> secs;
  layer_bytes.reserve(c.layers);
  for (uint32_t l = 0; l < c.layers; ++l) layer_bytes.push_back(SyntheticLayerBytes(c, index, l));
  for (const Bytes& b : layer_bytes)
    secs.push_back({ByteSpan(b.data(), c.section_bytes),
                    ByteSpan(b.data() + c.section_bytes, c.section_bytes)});
  kvsp::ContainerHeader h;
  h.codec = kvsp::Codec::kRaw;
  h.compat_id = c.compat_id;
  h.block_key = c.block_keys[index];
  h.block_index = index + 1;
  h.block_tokens = 16;
  h.layer_first = 0;
  return kvsp::EncodeContainer(h, secs);
}

Result<std::string> StoreContainer(store::ObjectStore& store, const std::string& bucket,
                                   const Digest& scope_id, ByteSpan container) {
  KVCS_ASSIGN_OR_RETURN(kvsp::ContainerView v, kvsp::DecodeContainer(container));
  std::string key = BlockObjectKey(scope_id, v.header.compat_id, v.header.block_key,
                                   kvsp::CodecName(v.header.codec));
  store::PutOptions po;
  po.content_type = "application/vnd.kvsp.container";
  po.expected_size = container.size();
  KVCS_ASSIGN_OR_RETURN(auto w, store.Put(bucket, key, po));
  KVCS_RETURN_IF_ERROR(w->Write(container));
  KVCS_RETURN_IF_ERROR(w->Commit().status());
  return key;
}

AggregateRequest SyntheticRequest(const SyntheticCache& cache, uint32_t prefix_blocks,
                                  uint32_t first, uint32_t count) {
  AggregateRequest r;
  r.scope_id = cache.scope_id;
  r.compat_id = cache.compat_id;
  r.codec = 1;  // raw
  r.layer_first = first;
  r.layer_count = count ? count : cache.layers - first;
  r.components = Components::kKV;
  const size_t n = prefix_blocks ? std::min<size_t>(prefix_blocks, cache.block_keys.size())
                                 : cache.block_keys.size();
  r.block_keys.assign(cache.block_keys.begin(), cache.block_keys.begin() + n);
  return r;
}

}  // namespace kvcs::objcache
