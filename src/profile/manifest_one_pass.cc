// The one-pass manifest reader. See manifest_one_pass.h.
#include "profile/manifest_one_pass.h"

#include <algorithm>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>

#include "kvsp/descriptor.h"

namespace kvcs::profile {
namespace {

// As the reference: JSON integers must be exactly representable as IEEE doubles.
constexpr uint64_t kMaxJsonInt = kvsp::kMaxJsonInteger;
// 2^53 - 1 has 16 decimal digits: more is out of range (or a float to the reference) anyway, and
// 16 digits cannot overflow the accumulator.
constexpr int kMaxIntDigits = 16;

// A digest in the text is at least its 64 hex characters, two quotes and a separator: what can be
// reserved for the digests still to come is bounded by the text left, not by a claimed count.
constexpr size_t kMinDigestText = 2 * kDigestSize + 3;

// Lowercase hex digit values; 0xff for every other byte (uppercase too: the reference requires
// lowercase).
struct HexTable {
  uint8_t v[256];
  constexpr HexTable() : v() {
    for (int i = 0; i < 256; ++i) v[i] = 0xff;
    for (int i = 0; i < 10; ++i) v['0' + i] = static_cast<uint8_t>(i);
    for (int i = 0; i < 6; ++i) v['a' + i] = static_cast<uint8_t>(10 + i);
  }
};
constexpr HexTable kHex;

// A cursor over the text. Every reader returns false on anything outside the accepted subset;
// the caller then gives up (nullopt) and the reference decides.
class Reader {
 public:
  explicit Reader(std::string_view s)
      : p_(s.data()), end_(s.data() + s.size()), reserve_budget_(s.size() / kMinDigestText) {}

  void Space() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }
  bool Eat(char c) {
    Space();
    if (p_ == end_ || *p_ != c) return false;
    ++p_;
    return true;
  }
  bool AtEnd() {
    Space();
    return p_ == end_;
  }
  const char* pos() const { return p_; }
  // How many digests to reserve room for when `want` are claimed: never more, over the whole
  // parse, than the text could hold (a hostile manifest claiming many blocks in many empty
  // groups must not make it reserve memory group after group).
  size_t TakeReserve(uint64_t want) {
    const uint64_t n = std::min(want, reserve_budget_);
    reserve_budget_ -= n;
    return static_cast<size_t>(n);
  }
  bool Peek(char c) const { return p_ < end_ && *p_ == c; }

  // Printable ASCII, no escapes.
  bool String(std::string_view* out) {
    if (!Eat('"')) return false;
    const char* start = p_;
    while (p_ < end_) {
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        *out = std::string_view(start, static_cast<size_t>(p_ - start));
        ++p_;
        return true;
      }
      if (c < 0x20 || c >= 0x80 || c == '\\') return false;
      ++p_;
    }
    return false;
  }
  // An unsigned integer <= max (and <= 2^53-1), no leading zero, sign, fraction or exponent.
  bool Uint(uint64_t max, uint64_t* out) {
    Space();
    if (p_ == end_ || *p_ < '0' || *p_ > '9') return false;
    uint64_t v = 0;
    int digits = 0;
    if (*p_ == '0') {
      ++p_;
      digits = 1;
    } else {
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') {
        if (++digits > kMaxIntDigits) return false;
        v = v * 10 + static_cast<uint64_t>(*p_ - '0');
        ++p_;
      }
    }
    if (p_ < end_ && ((*p_ >= '0' && *p_ <= '9') || *p_ == '.' || *p_ == 'e' || *p_ == 'E')) {
      return false;
    }
    if (v > max || v > kMaxJsonInt) return false;
    *out = v;
    return true;
  }
  bool Bool(bool* out) {
    Space();
    const auto rest = static_cast<size_t>(end_ - p_);
    if (rest >= 4 && std::string_view(p_, 4) == "true") {
      p_ += 4;
      *out = true;
      return true;
    }
    if (rest >= 5 && std::string_view(p_, 5) == "false") {
      p_ += 5;
      *out = false;
      return true;
    }
    return false;
  }
  // 64 lowercase hex characters.
  bool Hex32(Digest* out) {
    std::string_view s;
    if (!String(&s) || s.size() != 2 * kDigestSize) return false;
    uint8_t bad = 0;
    for (size_t i = 0; i < kDigestSize; ++i) {
      const uint8_t hi = kHex.v[static_cast<unsigned char>(s[2 * i])];
      const uint8_t lo = kHex.v[static_cast<unsigned char>(s[2 * i + 1])];
      bad |= (hi | lo) & 0xf0;
      (*out)[i] = static_cast<uint8_t>(hi << 4 | lo);
    }
    return bad == 0;
  }
  // "{ member (, member)* }" or "{}"; `member(key)` reads the value after the colon.
  template <typename F>
  bool Object(F&& member) {
    if (!Eat('{')) return false;
    if (Eat('}')) return true;
    do {
      std::string_view key;
      if (!String(&key) || !Eat(':') || !member(key)) return false;
    } while (Eat(','));
    return Eat('}');
  }
  // "[ element (, element)* ]" or "[]"; `element()` reads one.
  template <typename F>
  bool Array(F&& element) {
    if (!Eat('[')) return false;
    if (Eat(']')) return true;
    do {
      if (!element()) return false;
    } while (Eat(','));
    return Eat(']');
  }

 private:
  const char* p_;
  const char* end_;
  uint64_t reserve_budget_;  // digests the text can hold, less those reserved so far
};

// Member names of one object: each known one once, nothing else.
class Members {
 public:
  explicit Members(std::span<const std::string_view> names) : names_(names) {}
  // The index of `key` the first time; -1 for an unknown or repeated one.
  int Take(std::string_view key) {
    int i = 0;
    for (std::string_view n : names_) {
      if (n == key) {
        if (seen_ & (1u << i)) return -1;
        seen_ |= 1u << i;
        return i;
      }
      ++i;
    }
    return -1;
  }
  bool Has(int i) const { return (seen_ & (1u << i)) != 0; }
  // Every one of the first `n` names seen.
  bool HasFirst(int n) const { return (seen_ & ((1u << n) - 1)) == (1u << n) - 1; }

 private:
  std::span<const std::string_view> names_;  // at most 32
  uint32_t seen_ = 0;
};

// "compat": a flat object of strings, integers and booleans in the subset (a descriptor is one),
// read to find its extent; then its text goes through the reference's own steps (duplicates,
// DescriptorFromJson), so that the descriptor's rules live in one place.
bool Compat(Reader& r, kvsp::Descriptor* out) {
  r.Space();
  const char* start = r.pos();
  const bool flat = r.Object([&](std::string_view) {
    std::string_view s;
    uint64_t u = 0;
    bool b = false;
    r.Space();
    if (r.Peek('"')) return r.String(&s);
    if (r.Peek('t') || r.Peek('f')) return r.Bool(&b);
    return r.Uint(kMaxJsonInt, &u);
  });
  if (!flat) return false;
  const std::string_view text(start, static_cast<size_t>(r.pos() - start));
  auto j = ParseStrictJsonText(text, kMaxManifestJsonDepth - 1);
  if (!j.ok()) return false;
  auto d = kvsp::DescriptorFromJson(*j);
  if (!d.ok()) return false;
  *out = std::move(*d);
  return true;
}

bool Digests(Reader& r, ManifestSegment* s) {
  auto& out = s->object_digests.emplace();
  size_t tracks = 0;
  return r.Object([&](std::string_view track) {
    if (++tracks > kMaxTracksPerSegment) return false;
    auto [it, added] = out.try_emplace(std::string(track));
    if (!added) return false;  // a duplicate member
    auto& groups = it->second;
    return r.Array([&] {
      if (groups.size() >= kvsp::kMaxLayers) return false;
      auto& digests = groups.emplace_back();
      // The segment's block count when it came first (ManifestToJson sorts it before), bounded
      // by what the whole text can hold.
      digests.reserve(r.TakeReserve(s->blocks));
      return r.Array([&] {
        if (digests.size() >= kMaxManifestBlocks) return false;
        return r.Hex32(&digests.emplace_back());
      });
    });
  });
}

bool Segment(Reader& r, ManifestSegment* s) {
  enum { kSegment, kFirstBlock, kBlocks, kKeys, kTracks, kComplete, kDigests };
  static constexpr std::string_view kNames[] = {"segment",           "first_block", "blocks",
                                                "block_keys_sha256", "tracks",      "complete",
                                                "object_digests"};
  Members m(kNames);
  uint64_t v = 0;
  const bool ok = r.Object([&](std::string_view key) {
    switch (m.Take(key)) {
      case kSegment:
        if (!r.Uint(UINT32_MAX, &v)) return false;
        s->segment = static_cast<uint32_t>(v);
        return true;
      case kFirstBlock:
        return r.Uint(kMaxManifestBlocks, &s->first_block);
      case kBlocks:
        return r.Uint(kMaxManifestBlocks, &s->blocks);
      case kKeys:
        return r.Hex32(&s->block_keys_sha256);
      case kTracks:
        return r.Array([&] {
          std::string_view name;
          if (s->tracks.size() >= kMaxTracksPerSegment || !r.String(&name)) return false;
          auto t = ParseTrackName(name);
          if (!t.ok()) return false;
          s->tracks.push_back(std::move(*t));
          return true;
        });
      case kComplete:
        return r.Bool(&s->complete);
      case kDigests:
        return Digests(r, s);
      default:
        return false;  // unknown or repeated
    }
  });
  return ok && m.HasFirst(kDigests);  // every member but object_digests is required
}

bool Root(Reader& r, Manifest* out) {
  enum { kKvcs, kCompat, kLayers, kBlockTokens, kDeterministic, kSegments, kCount };
  static constexpr std::string_view kNames[] = {"kvcs",         "compat",        "layers",
                                                "block_tokens", "deterministic", "segments"};
  Members m(kNames);
  uint64_t v = 0;
  const bool ok = r.Object([&](std::string_view key) {
    switch (m.Take(key)) {
      case kKvcs:
        return r.Uint(kMaxJsonInt, &v) && v == kManifestVersion;
      case kCompat:
        return Compat(r, &out->compat);
      case kLayers:
        if (!r.Uint(kvsp::kMaxLayers, &v)) return false;
        out->layers = static_cast<uint32_t>(v);
        return true;
      case kBlockTokens:
        if (!r.Uint(UINT32_MAX, &v)) return false;
        out->block_tokens = static_cast<uint32_t>(v);
        return true;
      case kDeterministic:
        return r.Bool(&out->deterministic);
      case kSegments:
        return r.Array([&] {
          if (out->segments.size() >= kMaxSegments) return false;
          return Segment(r, &out->segments.emplace_back());
        });
      default:
        return false;
    }
  });
  return ok && m.HasFirst(kCount);
}

}  // namespace

std::optional<Manifest> ParseManifestOnePass(std::string_view json) {
  if (json.size() > kMaxManifestBytes) return std::nullopt;
  Reader r(json);
  Manifest m;
  if (!Root(r, &m) || !r.AtEnd()) return std::nullopt;
  if (!ValidateManifest(m).ok()) return std::nullopt;
  return m;
}

}  // namespace kvcs::profile
