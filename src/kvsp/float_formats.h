// Scalar conversions between float32 and the 16- and 8-bit formats KV caches are stored in.
//
// bf16 and fp16 are IEEE-style (fp16: 5-bit exponent with subnormals and infinities). fp8 e4m3 is
// the OCP "E4M3FN" format: bias 7, subnormals, no infinities, S.1111.111 is NaN and the largest
// finite magnitude is 448. Float-to-narrow conversions round to nearest, ties to even. The fp8
// encoder saturates to +-448 and never produces the NaN code; NaN inputs map to +-448 too (callers
// reject non-finite inputs before getting here). Pure functions; thread-safe.
#ifndef KVCS_KVSP_FLOAT_FORMATS_H_
#define KVCS_KVSP_FLOAT_FORMATS_H_

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>

namespace kvcs::kvsp {

inline constexpr float kFp8E4m3Max = 448.0f;

// A bit cast through memcpy: GCC 12 vectorizes loops over it, not over std::bit_cast.
template <typename To, typename From>
inline To BitCast(From f) {
  static_assert(sizeof(To) == sizeof(From));
  To t;
  std::memcpy(&t, &f, sizeof t);
  return t;
}

// Rounds to the nearest integer, ties to even, for |v| < 2^22, without a libm call: adding and
// subtracting 1.5 * 2^23 leaves exactly the rounded value in the default rounding mode.
inline float RoundHalfEven(float v) {
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23
  return (v + kMagic) - kMagic;
}

inline float Bf16ToFloat(uint16_t h) { return BitCast<float>(uint32_t{h} << 16); }

inline uint16_t FloatToBf16(float f) {
  auto b = BitCast<int32_t>(f);
  // Round to nearest even (a carry into the exponent is correct, up to infinity). Written
  // without branches, in signed arithmetic and with no unsigned compares, so loops vectorize.
  int32_t a = b & 0x7fffffff;
  uint32_t u = static_cast<uint32_t>(b);
  uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1)) >> 16;
  uint32_t quiet_nan = (u >> 16) | 0x0040;
  return static_cast<uint16_t>(a > 0x7f800000 ? quiet_nan : rounded);
}

inline float Fp16ToFloat(uint16_t h) {
  uint32_t sign = uint32_t{h & 0x8000u} << 16;
  uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0) {
    // Zero or subnormal: man * 2^-24, exact in float.
    float v = static_cast<float>(man) * 0x1p-24f;
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (man << 13));
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (man << 13));
}

inline uint16_t FloatToFp16(float f) {
  uint32_t b = std::bit_cast<uint32_t>(f);
  auto sign = static_cast<uint16_t>((b >> 16) & 0x8000);
  uint32_t a = b & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00;   // NaN
  if (a >= 0x477ff000u) return sign | 0x7c00;  // >= 65520 rounds to infinity
  if (a < 0x38800000u) {
    // Below the fp16 normal range (2^-14): subnormal steps of 2^-24, rounded to nearest even.
    float v = std::bit_cast<float>(a) * 0x1p24f;            // exact: a power-of-two scale
    return sign | static_cast<uint16_t>(RoundHalfEven(v));  // 1024 becomes the smallest normal
  }
  // Normal: rebias the exponent (127 -> 15) and round 23 mantissa bits to 10.
  uint32_t r = a - (112u << 23);
  r += 0xfffu + ((r >> 13) & 1);
  return sign | static_cast<uint16_t>(r >> 13);
}

namespace internal {
constexpr float E4m3Value(int b) {
  int exp = (b >> 3) & 0xf, man = b & 7;
  float v;
  if (exp == 15 && man == 7) {
    v = std::numeric_limits<float>::quiet_NaN();
  } else if (exp == 0) {
    v = static_cast<float>(man) / 512.0f;  // subnormal: man * 2^-9
  } else {
    v = std::bit_cast<float>(static_cast<uint32_t>((exp + 120) << 23 | man << 20));
  }
  return (b & 0x80) ? -v : v;
}
constexpr std::array<float, 256> MakeE4m3Table() {
  std::array<float, 256> t{};
  for (int b = 0; b < 256; ++b) t[b] = E4m3Value(b);
  return t;
}
inline constexpr std::array<float, 256> kE4m3Table = MakeE4m3Table();
}  // namespace internal

// Decoding via a 256-entry table; the NaN codes (0x7f, 0xff) decode to NaN.
inline float Fp8E4m3ToFloat(uint8_t b) { return internal::kE4m3Table[b]; }

// True for the two NaN codes of e4m3.
inline bool IsFp8E4m3Nan(uint8_t b) { return (b & 0x7f) == 0x7f; }

inline uint8_t FloatToFp8E4m3(float f) {
  // Signed 32-bit arithmetic and selects only, so that loops over it vectorize (SSE2 has no
  // unsigned compares). |f| as bits fits in int32.
  auto b = BitCast<int32_t>(f);
  int32_t sign = (b >> 24) & 0x80;
  int32_t a = b & 0x7fffffff;
  // Normal (>= 2^-6): rebias (127 -> 7) and round 23 mantissa bits to 3. Goes negative for
  // small a, whose result is not selected.
  int32_t r = a - (120 << 23);
  int32_t normal = (r + 0x7ffff + ((r >> 20) & 1)) >> 20;
  // Subnormal (< 2^-6): steps of 2^-9; a result of 8 encodes 2^-6 correctly. The clamp keeps the
  // unselected value in int range.
  float v = std::min(BitCast<float>(a) * 0x1p9f, 16.0f);
  auto sub = static_cast<int32_t>(RoundHalfEven(v));
  int32_t code = a < 0x3c800000 ? sub : normal;
  // From 464 (the midpoint between 448 and the absent 480) up, and for infinity and NaN,
  // saturate to 448: the encoder never produces the NaN code.
  code = a >= 0x43e80000 ? 0x7e : code;
  return static_cast<uint8_t>(sign | code);
}

}  // namespace kvcs::kvsp

#endif  // KVCS_KVSP_FLOAT_FORMATS_H_
