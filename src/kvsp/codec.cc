// KVSP v1 as defined by the project: codec registry and the raw, zstd, fp8-e4m3, int8 codecs.
#include "kvsp/codec.h"

#include <zstd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kvsp/float_formats.h"

namespace kvcs::kvsp {
namespace {

static_assert(std::endian::native == std::endian::little,
              "tensor elements are little-endian; a big-endian host needs byte swaps here");

constexpr std::array<CodecInfo, 7> kCodecs = {{
    {Codec::kRaw, "raw", true},
    {Codec::kZstd, "zstd", true},
    {Codec::kFp8E4m3, "fp8-e4m3", true},
    {Codec::kInt8, "int8", true},
    {Codec::kInt4, "int4", false},
    {Codec::kFp4E2m1, "fp4-e2m1", false},
    {Codec::kCachegen, "cachegen", false},
}};

Status Err(Code code, CodecError e, std::string msg) {
  return {code, "codec: " + std::move(msg), static_cast<int>(e)};
}

const CodecInfo* Find(Codec c) {
  for (const auto& i : kCodecs) {
    if (i.codec == c) return &i;
  }
  return nullptr;
}

Status CheckImplemented(Codec c) {
  const CodecInfo* i = Find(c);
  if (!i) {
    return Err(Code::kUnsupported, CodecError::kUnknownValue,
               "unknown codec value " + std::to_string(static_cast<uint16_t>(c)));
  }
  if (!i->implemented) {
    return Err(Code::kUnsupported, CodecError::kNotImplemented,
               "codec " + std::string(i->name) + " is registered but not implemented");
  }
  return Status::Ok();
}

bool IsQuantized(Codec c) { return c == Codec::kFp8E4m3 || c == Codec::kInt8; }

uint64_t QuantizedBytes(const SectionShape& s) {
  return s.elements() == 0 ? 0 : uint64_t{s.heads} * 4 + s.elements();
}

// Reads element i of a raw section as float.
template <Dtype D>
inline float Load(const uint8_t* p, uint64_t i) {
  if constexpr (D == Dtype::kBf16) {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    return Bf16ToFloat(h);
  } else if constexpr (D == Dtype::kFp16) {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    return Fp16ToFloat(h);
  } else {
    float f;
    std::memcpy(&f, p + 4 * i, 4);
    return f;
  }
}

template <Dtype D>
inline void Store(uint8_t* p, uint64_t i, float v) {
  if constexpr (D == Dtype::kBf16) {
    uint16_t h = FloatToBf16(v);
    std::memcpy(p + 2 * i, &h, 2);
  } else if constexpr (D == Dtype::kFp16) {
    uint16_t h = FloatToFp16(v);
    std::memcpy(p + 2 * i, &h, 2);
  } else {
    std::memcpy(p + 4 * i, &v, 4);
  }
}

// Largest finite magnitude of the quantized format.
constexpr float QMax(Codec c) { return c == Codec::kInt8 ? 127.0f : kFp8E4m3Max; }

template <Codec C>
inline uint8_t Quantize(float v) {
  if constexpr (C == Codec::kInt8) {
    float r = RoundHalfEven(std::min(std::max(v, -127.0f), 127.0f));
    return static_cast<uint8_t>(static_cast<int32_t>(r));
  } else {
    return FloatToFp8E4m3(v);
  }
}

template <Codec C, Dtype D>
Status QuantizeSection(const SectionShape& s, ByteSpan raw, Bytes* out) {
  const uint64_t H = s.heads, D_ = s.head_dim, T = s.tokens;
  constexpr size_t kSize = D == Dtype::kFp32 ? 4 : 2;
  const uint8_t* in = raw.data();
  // Per-head max |x| as the bits of |x|: for non-negative floats integer order is float order,
  // and infinity and NaN compare above every finite value, so one check at the end finds them.
  std::vector<uint32_t> amax_bits(H, 0);
  for (uint64_t t = 0; t < T; ++t) {
    for (uint64_t h = 0; h < H; ++h) {
      const uint8_t* __restrict src = in + (t * H + h) * D_ * kSize;
      uint32_t m = amax_bits[h];
      for (uint64_t d = 0; d < D_; ++d) {
        m = std::max(m, BitCast<uint32_t>(Load<D>(src, d)) & 0x7fffffffu);
      }
      amax_bits[h] = m;
    }
  }
  for (uint64_t h = 0; h < H; ++h) {
    if (amax_bits[h] >= 0x7f800000u) {
      return Err(Code::kInvalidArgument, CodecError::kNonFinite,
                 "cannot quantize NaN or infinity (head " + std::to_string(h) + ")");
    }
  }
  size_t at = out->size();
  out->resize(at + QuantizedBytes(s));
  uint8_t* o = out->data() + at;
  std::vector<float> inv(H);
  std::vector<double> inv_d(H);
  for (uint64_t h = 0; h < H; ++h) {
    float scale = std::bit_cast<float>(amax_bits[h]) / QMax(C);
    std::memcpy(o + 4 * h, &scale, 4);
    inv_d[h] = scale > 0 ? 1.0 / static_cast<double>(scale) : 0.0;
    inv[h] = static_cast<float>(inv_d[h]);  // may be inf for tiny scales; see below
  }
  uint8_t* q = o + 4 * H;
  for (uint64_t t = 0; t < T; ++t) {
    for (uint64_t h = 0; h < H; ++h) {
      const uint64_t base = (t * H + h) * D_;
      const uint8_t* __restrict src = in + base * kSize;
      uint8_t* __restrict dst = q + base;
      if (std::isfinite(inv[h])) {
        const float k = inv[h];
        for (uint64_t d = 0; d < D_; ++d) dst[d] = Quantize<C>(Load<D>(src, d) * k);
      } else {
        // Scale below ~2^-126: multiply in double so the scaled values stay finite.
        const double k = inv_d[h];
        for (uint64_t d = 0; d < D_; ++d) {
          dst[d] = Quantize<C>(static_cast<float>(Load<D>(src, d) * k));
        }
      }
    }
  }
  return Status::Ok();
}

template <Codec C, Dtype D>
Status DequantizeSection(const SectionShape& s, ByteSpan enc, std::span<uint8_t> out) {
  const uint64_t H = s.heads, D_ = s.head_dim, T = s.tokens;
  constexpr size_t kSize = D == Dtype::kFp32 ? 4 : 2;
  std::vector<float> scale(H);
  for (uint64_t h = 0; h < H; ++h) {
    std::memcpy(&scale[h], enc.data() + 4 * h, 4);
    if (!(scale[h] >= 0.0f) || !std::isfinite(scale[h])) {
      return Err(Code::kCorruption, CodecError::kBadScale,
                 "head " + std::to_string(h) + " has a negative or non-finite scale");
    }
  }
  const uint8_t* q = enc.data() + 4 * H;
  uint32_t nan_code = 0;
  for (uint64_t t = 0; t < T; ++t) {
    for (uint64_t h = 0; h < H; ++h) {
      const uint64_t base = (t * H + h) * D_;
      const uint8_t* __restrict src = q + base;
      uint8_t* __restrict dst = out.data() + base * kSize;
      const float k = scale[h];
      for (uint64_t d = 0; d < D_; ++d) {
        const uint8_t b = src[d];
        float v;
        if constexpr (C == Codec::kInt8) {
          v = static_cast<float>(static_cast<int8_t>(b));
        } else {
          nan_code |= IsFp8E4m3Nan(b);
          v = Fp8E4m3ToFloat(b);
        }
        Store<D>(dst, d, v * k);
      }
    }
  }
  if (nan_code) {
    return Err(Code::kCorruption, CodecError::kNanCode, "fp8 section contains the NaN code");
  }
  return Status::Ok();
}

template <Codec C>
Status QuantizeAny(const SectionShape& s, ByteSpan raw, Bytes* out) {
  switch (s.dtype) {
    case Dtype::kBf16:
      return QuantizeSection<C, Dtype::kBf16>(s, raw, out);
    case Dtype::kFp16:
      return QuantizeSection<C, Dtype::kFp16>(s, raw, out);
    case Dtype::kFp32:
      return QuantizeSection<C, Dtype::kFp32>(s, raw, out);
    default:
      break;
  }
  return Err(Code::kUnsupported, CodecError::kUnsupportedDtype,
             "quantizing codecs take bf16, fp16 or fp32 sections");
}

template <Codec C>
Status DequantizeAny(const SectionShape& s, ByteSpan enc, std::span<uint8_t> out) {
  switch (s.dtype) {
    case Dtype::kBf16:
      return DequantizeSection<C, Dtype::kBf16>(s, enc, out);
    case Dtype::kFp16:
      return DequantizeSection<C, Dtype::kFp16>(s, enc, out);
    case Dtype::kFp32:
      return DequantizeSection<C, Dtype::kFp32>(s, enc, out);
    default:
      break;
  }
  return Err(Code::kUnsupported, CodecError::kUnsupportedDtype,
             "quantizing codecs decode to bf16, fp16 or fp32 sections");
}

struct ZstdCDeleter {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct ZstdDDeleter {
  void operator()(ZSTD_DCtx* c) const { ZSTD_freeDCtx(c); }
};
ZSTD_CCtx* ThreadCCtx() {
  thread_local std::unique_ptr<ZSTD_CCtx, ZstdCDeleter> c(ZSTD_createCCtx());
  return c.get();
}
ZSTD_DCtx* ThreadDCtx() {
  thread_local std::unique_ptr<ZSTD_DCtx, ZstdDDeleter> c(ZSTD_createDCtx());
  return c.get();
}

}  // namespace

std::span<const CodecInfo> AllCodecs() { return kCodecs; }

std::string_view CodecName(Codec c) {
  const CodecInfo* i = Find(c);
  return i ? i->name : "unknown";
}
uint16_t CodecValue(Codec c) { return static_cast<uint16_t>(c); }
bool IsImplemented(Codec c) {
  const CodecInfo* i = Find(c);
  return i && i->implemented;
}

Result<Codec> CodecFromName(std::string_view name) {
  for (const auto& i : kCodecs) {
    if (i.name == name) return i.codec;
  }
  std::string shown(name.substr(0, 64));
  return Err(Code::kInvalidArgument, CodecError::kUnknownName,
             "unknown codec name '" + shown +
                 "' (known: raw, zstd, "
                 "fp8-e4m3, int8, int4, "
                 "fp4-e2m1, cachegen)");
}

Result<Codec> CodecFromValue(uint16_t value) {
  if (value == 0)
    return Err(Code::kInvalidArgument, CodecError::kReservedValue, "codec 0x0000 is reserved");
  if (value >= 0xFF00) {
    return Err(Code::kUnsupported, CodecError::kPrivateUse,
               "private-use codec value " + std::to_string(value) + " is not understood here");
  }
  for (const auto& i : kCodecs) {
    if (static_cast<uint16_t>(i.codec) == value) return i.codec;
  }
  return Err(Code::kUnsupported, CodecError::kUnknownValue,
             "unknown codec value " + std::to_string(value));
}

Result<Dtype> DtypeFromName(std::string_view n) {
  if (n == "bf16") return Dtype::kBf16;
  if (n == "fp16") return Dtype::kFp16;
  if (n == "fp32") return Dtype::kFp32;
  if (n == "fp8_e4m3") return Dtype::kFp8E4m3;
  if (n == "fp8_e5m2") return Dtype::kFp8E5m2;
  return InvalidArgument("unknown kv_dtype '" + std::string(n.substr(0, 64)) + "'",
                         static_cast<int>(CodecError::kUnsupportedDtype));
}

size_t DtypeSize(Dtype d) {
  switch (d) {
    case Dtype::kBf16:
    case Dtype::kFp16:
      return 2;
    case Dtype::kFp32:
      return 4;
    case Dtype::kFp8E4m3:
    case Dtype::kFp8E5m2:
      return 1;
  }
  return 0;
}

SectionShape KShape(const Descriptor& d) {
  auto dt = DtypeFromName(d.kv_dtype);
  return {d.block_tokens, d.kv_heads, d.head_dim, dt.ok() ? *dt : Dtype::kBf16};
}
SectionShape VShape(const Descriptor& d) {
  SectionShape s = KShape(d);
  if (d.attn == "mla") s.tokens = 0;
  return s;
}

Result<uint64_t> MaxEncodedBytes(Codec c, const SectionShape& s) {
  KVCS_RETURN_IF_ERROR(CheckImplemented(c));
  if (s.elements() == 0) return uint64_t{0};
  switch (c) {
    case Codec::kRaw:
      return s.raw_bytes();
    case Codec::kZstd:
      return uint64_t{ZSTD_compressBound(s.raw_bytes())};
    case Codec::kFp8E4m3:
    case Codec::kInt8:
      return QuantizedBytes(s);
    default:
      break;
  }
  return Err(Code::kUnsupported, CodecError::kNotImplemented, "codec not implemented");
}

Status CheckEncodedLength(Codec c, const SectionShape& s, uint64_t len) {
  KVCS_ASSIGN_OR_RETURN(uint64_t max, MaxEncodedBytes(c, s));
  bool ok = c == Codec::kZstd && max > 0 ? (len >= 1 && len <= max) : len == max;
  if (!ok) {
    return Err(Code::kCorruption, CodecError::kWrongEncodedSize,
               std::string(CodecName(c)) + " section of " + std::to_string(len) +
                   " bytes, expected " + (c == Codec::kZstd && max > 0 ? "1.." : "") +
                   std::to_string(max));
  }
  return Status::Ok();
}

Status EncodeSection(Codec c, const SectionShape& s, ByteSpan raw, Bytes* out) {
  KVCS_RETURN_IF_ERROR(CheckImplemented(c));
  if (raw.size() != s.raw_bytes()) {
    return Err(Code::kInvalidArgument, CodecError::kWrongInputSize,
               "raw section of " + std::to_string(raw.size()) + " bytes, shape needs " +
                   std::to_string(s.raw_bytes()));
  }
  if (s.elements() == 0) return Status::Ok();
  if (IsQuantized(c) && s.dtype != Dtype::kBf16 && s.dtype != Dtype::kFp16 &&
      s.dtype != Dtype::kFp32) {
    return Err(Code::kUnsupported, CodecError::kUnsupportedDtype,
               "quantizing codecs take bf16, fp16 or fp32 sections");
  }
  switch (c) {
    case Codec::kRaw:
      out->insert(out->end(), raw.begin(), raw.end());
      return Status::Ok();
    case Codec::kZstd: {
      size_t at = out->size();
      size_t bound = ZSTD_compressBound(raw.size());
      out->resize(at + bound);
      size_t n = ZSTD_compressCCtx(ThreadCCtx(), out->data() + at, bound, raw.data(), raw.size(),
                                   kZstdLevel);
      if (ZSTD_isError(n)) {
        out->resize(at);
        return Internal(std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
      }
      out->resize(at + n);
      return Status::Ok();
    }
    case Codec::kFp8E4m3:
      return QuantizeAny<Codec::kFp8E4m3>(s, raw, out);
    case Codec::kInt8:
      return QuantizeAny<Codec::kInt8>(s, raw, out);
    default:
      break;
  }
  return Err(Code::kUnsupported, CodecError::kNotImplemented, "codec not implemented");
}

Status DecodeSection(Codec c, const SectionShape& s, ByteSpan enc, std::span<uint8_t> out) {
  KVCS_RETURN_IF_ERROR(CheckImplemented(c));
  if (out.size() != s.raw_bytes()) {
    return Err(Code::kInvalidArgument, CodecError::kWrongInputSize,
               "output buffer of " + std::to_string(out.size()) + " bytes, shape needs " +
                   std::to_string(s.raw_bytes()));
  }
  KVCS_RETURN_IF_ERROR(CheckEncodedLength(c, s, enc.size()));
  if (s.elements() == 0) return Status::Ok();
  switch (c) {
    case Codec::kRaw:
      std::memcpy(out.data(), enc.data(), enc.size());
      return Status::Ok();
    case Codec::kZstd: {
      // Never trust the frame header: the frame must be exactly the input, and must decompress
      // to exactly the expected size into a buffer of exactly that size.
      size_t frame = ZSTD_findFrameCompressedSize(enc.data(), enc.size());
      if (ZSTD_isError(frame) || frame != enc.size()) {
        return Err(Code::kCorruption, CodecError::kBadFrame,
                   "zstd section is not exactly one frame");
      }
      size_t n = ZSTD_decompressDCtx(ThreadDCtx(), out.data(), out.size(), enc.data(), enc.size());
      if (ZSTD_isError(n)) {
        return Err(Code::kCorruption, CodecError::kBadFrame,
                   std::string("zstd: ") + ZSTD_getErrorName(n));
      }
      if (n != out.size()) {
        return Err(Code::kCorruption, CodecError::kBadFrame,
                   "zstd frame decompressed to " + std::to_string(n) + " bytes, expected " +
                       std::to_string(out.size()));
      }
      return Status::Ok();
    }
    case Codec::kFp8E4m3:
      return DequantizeAny<Codec::kFp8E4m3>(s, enc, out);
    case Codec::kInt8:
      return DequantizeAny<Codec::kInt8>(s, enc, out);
    default:
      break;
  }
  return Err(Code::kUnsupported, CodecError::kNotImplemented, "codec not implemented");
}

Result<Bytes> EncodeSection(Codec c, const SectionShape& s, ByteSpan raw) {
  Bytes out;
  KVCS_RETURN_IF_ERROR(EncodeSection(c, s, raw, &out));
  return out;
}

Result<Bytes> DecodeSection(Codec c, const SectionShape& s, ByteSpan encoded) {
  KVCS_RETURN_IF_ERROR(CheckImplemented(c));
  if (s.raw_bytes() > kMaxSectionBytes) {
    return Err(Code::kResourceExhausted, CodecError::kWrongInputSize,
               "section larger than kMaxSectionBytes");
  }
  Bytes out(s.raw_bytes());
  KVCS_RETURN_IF_ERROR(DecodeSection(c, s, encoded, out));
  return out;
}

}  // namespace kvcs::kvsp
