// Scalar float conversions for the KVSP codecs (written for this project; RNE everywhere).
#include "kvsp/float_formats.h"

#include <array>
#include <cmath>

namespace kvcs::kvsp {
namespace {

std::array<float, 256> MakeE4m3Table() {
  std::array<float, 256> t{};
  for (int b = 0; b < 256; ++b) {
    int exp = (b >> 3) & 0xf, man = b & 7;
    float v;
    if (exp == 15 && man == 7) {
      v = std::nanf("");
    } else if (exp == 0) {
      v = std::ldexp(static_cast<float>(man), -9);  // subnormal: man * 2^-9
    } else {
      v = std::ldexp(1.0f + man / 8.0f, exp - 7);
    }
    t[b] = (b & 0x80) ? -v : v;
  }
  return t;
}

const std::array<float, 256>& E4m3Table() {
  static const std::array<float, 256> t = MakeE4m3Table();
  return t;
}

}  // namespace

float Fp16ToFloat(uint16_t h) {
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

uint16_t FloatToFp16(float f) {
  uint32_t b = std::bit_cast<uint32_t>(f);
  auto sign = static_cast<uint16_t>((b >> 16) & 0x8000);
  uint32_t a = b & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00;   // NaN
  if (a >= 0x477ff000u) return sign | 0x7c00;  // >= 65520 rounds to infinity
  if (a < 0x38800000u) {
    // Below the fp16 normal range (2^-14): subnormal steps of 2^-24, rounded to nearest even.
    float v = std::bit_cast<float>(a) * 0x1p24f;  // exact: a power-of-two scale
    float r = RoundHalfEven(v);                   // v < 1024
    return sign | static_cast<uint16_t>(r);  // r == 1024 becomes the smallest normal, correctly
  }
  // Normal: rebias the exponent (127 -> 15) and round 23 mantissa bits to 10.
  uint32_t r = a - (112u << 23);
  r += 0xfffu + ((r >> 13) & 1);
  return sign | static_cast<uint16_t>(r >> 13);
}

float Fp8E4m3ToFloat(uint8_t b) { return E4m3Table()[b]; }

uint8_t FloatToFp8E4m3(float f) {
  uint32_t b = std::bit_cast<uint32_t>(f);
  auto sign = static_cast<uint8_t>((b >> 24) & 0x80);
  uint32_t a = b & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e;  // NaN: saturate rather than generate NaN
  // 464 is the midpoint between 448 and the (absent) 480: everything from there up saturates,
  // and values in [448, 464) round down to 448 below anyway.
  if (a >= 0x43e80000u) return sign | 0x7e;
  if (a < 0x3c800000u) {
    // Below 2^-6 (the e4m3 normal range): subnormal steps of 2^-9.
    float v = std::bit_cast<float>(a) * 0x1p9f;
    float r = RoundHalfEven(v);  // 0..8; 8 encodes as exponent 1, mantissa 0 = 2^-6
    return sign | static_cast<uint8_t>(r);
  }
  // Normal: rebias (127 -> 7) and round 23 mantissa bits to 3.
  uint32_t r = a - (120u << 23);
  r += 0x7ffffu + ((r >> 20) & 1);
  uint32_t code = r >> 20;
  if (code > 0x7e) code = 0x7e;  // cannot happen below 464, kept as a guard
  return sign | static_cast<uint8_t>(code);
}

}  // namespace kvcs::kvsp
