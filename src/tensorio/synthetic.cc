#include "tensorio/synthetic.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>

namespace kvcs::tensorio {
namespace {

constexpr uint32_t kLlama3Vocab = 128256;
constexpr uint64_t kMaxSyntheticTokens = uint64_t{16} << 20;

uint64_t SplitMix(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Approximately N(0, 1): Irwin-Hall of four 16-bit uniforms, rescaled to unit variance.
float Normal(uint64_t& s) {
  uint64_t r = SplitMix(s);
  float sum =
      float(r & 0xffff) + float((r >> 16) & 0xffff) + float((r >> 32) & 0xffff) + float(r >> 48);
  return (sum / 65536.0f - 2.0f) * 1.7320508f;  // var(U) = 1/12, 4 of them: 1/3
}

uint16_t ToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);  // round to nearest even (inputs are finite)
  return uint16_t(u >> 16);
}

uint16_t ToFp16(float f) {
  // Values here are |x| < 2^15 and normal-ish; flush tiny values to zero.
  uint32_t u;
  std::memcpy(&u, &f, 4);
  uint32_t sign = (u >> 16) & 0x8000;
  int32_t exp = int32_t((u >> 23) & 0xff) - 127 + 15;
  uint32_t mant = u & 0x7fffff;
  if (exp <= 0) return uint16_t(sign);
  if (exp >= 31) return uint16_t(sign | 0x7bff);
  uint32_t h = sign | uint32_t(exp) << 10 | (mant >> 13);
  if ((mant & 0x1fff) > 0x1000 || ((mant & 0x1fff) == 0x1000 && (h & 1))) ++h;
  return uint16_t(h);
}

void FillLayer(const kvsp::Descriptor& d, uint64_t tokens, uint32_t layer, uint64_t seed, bool is_k,
               Bytes* out) {
  uint32_t hd = d.kv_heads * d.head_dim;
  uint64_t s = seed * 0x100000001b3ULL ^ (uint64_t(layer) << 1 | (is_k ? 1 : 0));
  std::vector<float> scale(hd), mean(hd);
  for (uint32_t c = 0; c < hd; ++c) {
    float sc = std::exp(0.5f * Normal(s)) * (is_k ? 1.0f : 0.5f);
    if (is_k && (SplitMix(s) % 50) == 0) sc *= 8.0f;  // ~2% outlier key channels
    scale[c] = sc;
    mean[c] = is_k ? 0.5f * sc * Normal(s) : 0.0f;
  }
  size_t es = kvsp::DtypeBytes(d.kv_dtype);
  out->resize(tokens * hd * es);
  uint8_t* p = out->data();
  for (uint64_t t = 0; t < tokens; ++t) {
    for (uint32_t c = 0; c < hd; ++c) {
      float x = mean[c] + scale[c] * Normal(s);
      if (es == 2) {
        uint16_t h = d.kv_dtype == "bf16" ? ToBf16(x) : ToFp16(x);
        p[0] = uint8_t(h);
        p[1] = uint8_t(h >> 8);
        p += 2;
      } else {
        std::memcpy(p, &x, 4);  // little-endian host
        p += 4;
      }
    }
  }
}

}  // namespace

KvCacheView SyntheticKv::View() const {
  KvCacheView v;
  v.descriptor = descriptor;
  v.token_ids = token_ids;
  for (auto& b : k) v.k.push_back(b);
  for (auto& b : this->v) v.v.push_back(b);
  return v;
}

Status SyntheticKv::Save(const std::string& path) const {
  std::vector<TensorToWrite> t;
  uint64_t n = token_ids.size();
  auto dtype = *SafetensorsDtypeFor(descriptor.kv_dtype);
  for (uint32_t l = 0; l < descriptor.layers; ++l) {
    t.push_back({"layers." + std::to_string(l) + ".k",
                 dtype,
                 {n, descriptor.kv_heads, descriptor.head_dim},
                 k[l]});
    if (!v[l].empty() || descriptor.attn != "mla") {
      t.push_back({"layers." + std::to_string(l) + ".v",
                   dtype,
                   {n, descriptor.kv_heads, descriptor.head_dim},
                   v[l]});
    }
  }
  Bytes ids(n * 8);
  for (size_t i = 0; i < n; ++i) {
    for (int j = 0; j < 8; ++j) ids[i * 8 + j] = uint8_t(uint64_t(token_ids[i]) >> (8 * j));
  }
  t.push_back({std::string(kTokenIdsTensor), Dtype::kI64, {n}, ids});
  return WriteSafetensors(
      path, t,
      {{std::string(kDescriptorMetadataKey), kvsp::CanonicalJson(descriptor)}, {"format", "pt"}});
}

kvsp::Descriptor Llama31_8BDescriptor() {
  kvsp::Descriptor d;
  d.kvsp = 1;
  d.model = "meta-llama/Llama-3.1-8B-Instruct";
  d.model_rev = "0e9e39f249a16976918f6564b8830bc894c89659";
  d.tokenizer_rev = "0e9e39f249a16976918f6564b8830bc894c89659";
  d.attn = "gqa";
  d.layers = 32;
  d.kv_heads = 8;
  d.head_dim = 128;
  d.kv_dtype = "bf16";
  d.block_tokens = 16;
  d.layout = "thd";
  return d;
}

Result<SyntheticKv> MakeSyntheticKv(const kvsp::Descriptor& d, uint64_t tokens, uint64_t seed,
                                    unsigned threads) {
  KVCS_RETURN_IF_ERROR(kvsp::ValidateDescriptor(d));
  if (d.kv_dtype != "bf16" && d.kv_dtype != "fp16" && d.kv_dtype != "fp32") {
    return Unsupported("synthetic caches are bf16, fp16 or fp32, not " + d.kv_dtype);
  }
  if (tokens > kMaxSyntheticTokens)
    return ResourceExhausted("too many tokens for a synthetic cache");
  SyntheticKv c;
  c.descriptor = d;
  uint64_t s = seed;
  c.token_ids.resize(tokens);
  for (auto& t : c.token_ids) t = uint32_t(SplitMix(s) % kLlama3Vocab);
  c.k.resize(d.layers);
  c.v.resize(d.layers);
  bool mla = d.attn == "mla";
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = std::min<unsigned>(threads, d.layers);
  std::vector<std::thread> pool;
  for (unsigned w = 0; w < threads; ++w) {
    pool.emplace_back([&, w] {
      for (uint32_t l = w; l < d.layers; l += threads) {
        FillLayer(d, tokens, l, seed, true, &c.k[l]);
        if (!mla) FillLayer(d, tokens, l, seed, false, &c.v[l]);
      }
    });
  }
  for (auto& t : pool) t.join();
  return c;
}

}  // namespace kvcs::tensorio
