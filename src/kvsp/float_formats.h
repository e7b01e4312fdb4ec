// Scalar conversions between float32 and the 16- and 8-bit formats KV caches are stored in.
//
// bf16 and fp16 are IEEE-style (fp16: 5-bit exponent with subnormals and infinities). fp8 e4m3 is
// the OCP "E4M3FN" format: bias 7, subnormals, no infinities, S.1111.111 is NaN and the largest
// finite magnitude is 448. Float-to-narrow conversions round to nearest, ties to even. The fp8
// encoder saturates to +-448 and never produces the NaN code; NaN inputs map to +-448 too (callers
// reject non-finite inputs before getting here). Pure functions; thread-safe.
#ifndef KVCS_KVSP_FLOAT_FORMATS_H_
#define KVCS_KVSP_FLOAT_FORMATS_H_

#include <bit>
#include <cstdint>

namespace kvcs::kvsp {

inline constexpr float kFp8E4m3Max = 448.0f;

// Rounds to the nearest integer, ties to even, for |v| < 2^22, without a libm call: adding and
// subtracting 1.5 * 2^23 leaves exactly the rounded value in the default rounding mode.
inline float RoundHalfEven(float v) {
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23
  return (v + kMagic) - kMagic;
}

inline float Bf16ToFloat(uint16_t h) { return std::bit_cast<float>(uint32_t{h} << 16); }

inline uint16_t FloatToBf16(float f) {
  uint32_t b = std::bit_cast<uint32_t>(f);
  if ((b & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((b >> 16) | 0x0040);  // NaN
  b += 0x7fffu + ((b >> 16) & 1);  // round to nearest even (carries into the exponent correctly)
  return static_cast<uint16_t>(b >> 16);
}

float Fp16ToFloat(uint16_t h);
uint16_t FloatToFp16(float f);

// Decoding via a 256-entry table; the NaN codes (0x7f, 0xff) decode to NaN.
float Fp8E4m3ToFloat(uint8_t b);
uint8_t FloatToFp8E4m3(float f);
// True for the two NaN codes of e4m3.
inline bool IsFp8E4m3Nan(uint8_t b) { return (b & 0x7f) == 0x7f; }

}  // namespace kvcs::kvsp

#endif  // KVCS_KVSP_FLOAT_FORMATS_H_
