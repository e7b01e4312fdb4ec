// Encoding choice. See encoding_choice.h.
#include "kvcs_stream/encoding_choice.h"

#include <algorithm>
#include <set>
#include <string>

namespace kvcs::stream {

std::vector<Encoding> OfferedEncodings(const profile::ManifestSegment& s) {
  std::set<std::string> k, v;
  std::vector<Encoding> out;
  for (const profile::TrackName& t : s.tracks) {
    if (!t.is_data()) continue;
    auto codec = kvsp::CodecFromName(t.codec);
    if (!codec.ok()) continue;
    if (t.component == profile::Component::kKV) {
      out.push_back({*codec, true});
    } else {
      (t.component == profile::Component::kK ? k : v).insert(t.codec);
      if (k.count(t.codec) && v.count(t.codec)) out.push_back({*codec, false});
    }
  }
  return out;
}

std::optional<double> BytesPerTokenLayer(const kvsp::Descriptor& d, const Encoding& e,
                                         std::optional<double> zstd_ratio) {
  auto dtype = kvsp::DtypeFromName(d.kv_dtype);
  if (!dtype.ok() || d.block_tokens == 0) return std::nullopt;
  const kvsp::SectionShape shape{d.block_tokens, d.kv_heads, d.head_dim, *dtype};
  const bool has_v = d.attn != "mla";
  double raw = static_cast<double>(shape.raw_bytes()) * (has_v ? 2 : 1) / d.block_tokens;
  if (e.codec == kvsp::Codec::kZstd) {
    if (!zstd_ratio || *zstd_ratio <= 0) return std::nullopt;
    return raw * *zstd_ratio;
  }
  auto enc = kvsp::MaxEncodedBytes(e.codec, shape);
  if (!enc.ok()) return std::nullopt;
  return static_cast<double>(*enc) * (has_v ? 2 : 1) / d.block_tokens;
}

namespace {
bool Lossless(kvsp::Codec c) { return c == kvsp::Codec::kRaw || c == kvsp::Codec::kZstd; }
bool RawPair(const Encoding& e) { return e.codec == kvsp::Codec::kRaw && !e.joint; }
}  // namespace

Encoding ChooseEncoding(const kvsp::Descriptor& d, std::span<const Encoding> offered,
                        const ChoiceInputs& in) {
  const auto raw_pair = std::find_if(offered.begin(), offered.end(), RawPair);
  if (in.rate_bytes_per_s <= 0 || in.compute_ns_per_token_layer == 0) {
    return raw_pair != offered.end() ? *raw_pair : offered.front();
  }
  if (raw_pair != offered.end()) {
    auto s = BytesPerTokenLayer(d, *raw_pair);
    if (s && *s / in.rate_bytes_per_s * 1e9 <= static_cast<double>(in.compute_ns_per_token_layer)) {
      return *raw_pair;  // rule 1
    }
  }
  // Rule 2: fewest bytes; ties to the raw pair, then lossless, then offer order.
  const Encoding* best = nullptr;
  double best_bytes = 0;
  auto rank = [](const Encoding& e) { return RawPair(e) ? 0 : Lossless(e.codec) ? 1 : 2; };
  for (const Encoding& e : offered) {
    if (!in.allow_lossy && !Lossless(e.codec)) continue;
    auto s = BytesPerTokenLayer(d, e, in.zstd_ratio);
    if (!s) continue;
    if (best == nullptr || *s < best_bytes || (*s == best_bytes && rank(e) < rank(*best))) {
      best = &e;
      best_bytes = *s;
    }
  }
  if (best != nullptr) return *best;
  return raw_pair != offered.end() ? *raw_pair : offered.front();
}

}  // namespace kvcs::stream
