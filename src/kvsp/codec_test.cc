#include "kvsp/codec.h"

#include <gtest/gtest.h>
#include <zstd.h>

#include <cmath>
#include <cstring>
#include <random>

#include "kvsp/float_formats.h"

namespace kvcs::kvsp {
namespace {

TEST(FloatFormats, Bf16RoundTripsEveryCodeAndRoundsToEven) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = Bf16ToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(f))));
      continue;
    }
    ASSERT_EQ(FloatToBf16(f), h);
  }
  // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even (1) wins; 1 + 3*2^-8 goes up to 1 + 2^-6.
  EXPECT_EQ(FloatToBf16(1.0f + 0x1p-8f), 0x3f80);
  EXPECT_EQ(FloatToBf16(1.0f + 3 * 0x1p-8f), 0x3f82);
  EXPECT_EQ(FloatToBf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
}

TEST(FloatFormats, Fp16RoundTripsEveryCodeAndRoundsToEven) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = Fp16ToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(FloatToFp16(f), h) << std::hex << h;
  }
  EXPECT_EQ(Fp16ToFloat(0x3c00), 1.0f);
  EXPECT_EQ(Fp16ToFloat(0x0001), 0x1p-24f);
  EXPECT_EQ(FloatToFp16(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToFp16(65519.0f), 0x7bff);
  EXPECT_EQ(FloatToFp16(65520.0f), 0x7c00);  // tie goes to even = infinity
  EXPECT_EQ(FloatToFp16(0x1p-25f), 0x0000);  // tie between 0 and 2^-24: even (0)
  EXPECT_EQ(FloatToFp16(3 * 0x1p-25f), 0x0002);
  EXPECT_EQ(FloatToFp16(1.0f + 0x1p-11f), 0x3c00);  // tie: even
  EXPECT_EQ(FloatToFp16(1.0f + 3 * 0x1p-11f), 0x3c02);
  EXPECT_EQ(FloatToFp16(-2.0f), 0xc000);
  EXPECT_TRUE(std::isnan(Fp16ToFloat(FloatToFp16(std::nanf("")))));
}

TEST(FloatFormats, Fp8E4m3) {
  for (int b = 0; b < 256; ++b) {
    if (IsFp8E4m3Nan(static_cast<uint8_t>(b))) {
      EXPECT_TRUE(std::isnan(Fp8E4m3ToFloat(static_cast<uint8_t>(b))));
      continue;
    }
    float f = Fp8E4m3ToFloat(static_cast<uint8_t>(b));
    if (b == 0x80) {
      EXPECT_EQ(FloatToFp8E4m3(f), 0x80);  // -0
      continue;
    }
    ASSERT_EQ(FloatToFp8E4m3(f), b) << b << " " << f;
  }
  EXPECT_EQ(Fp8E4m3ToFloat(0x7e), 448.0f);
  EXPECT_EQ(Fp8E4m3ToFloat(0x01), 0x1p-9f);
  EXPECT_EQ(Fp8E4m3ToFloat(0x08), 0x1p-6f);
  EXPECT_EQ(FloatToFp8E4m3(460.0f), 0x7e);
  EXPECT_EQ(FloatToFp8E4m3(1e30f), 0x7e);  // saturates, no NaN
  EXPECT_EQ(FloatToFp8E4m3(-1e30f), 0xfe);
  EXPECT_EQ(FloatToFp8E4m3(INFINITY), 0x7e);
  EXPECT_EQ(FloatToFp8E4m3(std::nanf("")), 0x7e);
  EXPECT_EQ(FloatToFp8E4m3(1.0f + 0x1p-4f), 0x38);  // tie between 1 and 1.125: even (1)
  EXPECT_EQ(FloatToFp8E4m3(1.0f + 3 * 0x1p-4f), 0x3a);
  EXPECT_EQ(FloatToFp8E4m3(0x1p-10f), 0x00);          // tie between 0 and 2^-9: even (0)
  EXPECT_EQ(FloatToFp8E4m3(3 * 0x1p-10f), 0x02);      // tie between 1 and 2 (x 2^-9): even
  EXPECT_EQ(FloatToFp8E4m3(15.5f * 0x1p-10f), 0x08);  // rounds up into the normal range
  // Monotone over a fine sweep.
  uint8_t prev = 0;
  for (float f = 0; f < 500; f += 0.01f) {
    uint8_t c = FloatToFp8E4m3(f);
    ASSERT_GE(c, prev);
    ASSERT_FALSE(IsFp8E4m3Nan(c));
    prev = c;
  }
}

TEST(CodecRegistry, NamesAndValues) {
  const std::pair<std::string_view, uint16_t> want[] = {
      {"raw", 1},  {"zstd", 2},     {"fp8-e4m3", 3}, {"int8", 4},
      {"int4", 5}, {"fp4-e2m1", 6}, {"cachegen", 7}};
  ASSERT_EQ(AllCodecs().size(), std::size(want));
  for (auto [name, value] : want) {
    auto c = CodecFromName(name);
    ASSERT_TRUE(c.ok()) << name;
    EXPECT_EQ(CodecValue(*c), value);
    EXPECT_EQ(CodecName(*c), name);
    auto v = CodecFromValue(value);
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(*v, *c);
    EXPECT_EQ(IsImplemented(*c), value <= 4) << name;
  }
  EXPECT_TRUE(CodecFromName("RAW").status().Is(CodecError::kUnknownName));
  EXPECT_TRUE(CodecFromName("").status().Is(CodecError::kUnknownName));
  EXPECT_TRUE(CodecFromValue(0).status().Is(CodecError::kReservedValue));
  EXPECT_TRUE(CodecFromValue(8).status().Is(CodecError::kUnknownValue));
  EXPECT_TRUE(CodecFromValue(0xFF00).status().Is(CodecError::kPrivateUse));
  EXPECT_TRUE(CodecFromValue(0xFFFF).status().Is(CodecError::kPrivateUse));
}

// KV-like activations: Gaussian per channel, a few channels 10-50x larger, one head 20x larger.
std::vector<float> KvLike(const SectionShape& s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0, 1);
  std::uniform_real_distribution<float> u(10, 50);
  std::vector<float> ch_scale(uint64_t{s.heads} * s.head_dim);
  for (auto& c : ch_scale) c = 0.05f + 0.5f * std::fabs(n(rng));
  for (int i = 0; i < 6; ++i) ch_scale[rng() % ch_scale.size()] *= u(rng);       // outlier channels
  for (uint32_t d = 0; d < s.head_dim; ++d) ch_scale[1 * s.head_dim + d] *= 20;  // outlier head
  std::vector<float> v(s.elements());
  for (uint64_t t = 0; t < s.tokens; ++t) {
    for (uint64_t c = 0; c < ch_scale.size(); ++c)
      v[t * ch_scale.size() + c] = n(rng) * ch_scale[c];
  }
  return v;
}

Bytes ToRaw(const std::vector<float>& v, Dtype dt) {
  Bytes out(v.size() * DtypeSize(dt));
  for (size_t i = 0; i < v.size(); ++i) {
    if (dt == Dtype::kBf16) {
      uint16_t h = FloatToBf16(v[i]);
      std::memcpy(&out[2 * i], &h, 2);
    } else if (dt == Dtype::kFp16) {
      uint16_t h = FloatToFp16(v[i]);
      std::memcpy(&out[2 * i], &h, 2);
    } else {
      std::memcpy(&out[4 * i], &v[i], 4);
    }
  }
  return out;
}

std::vector<float> FromRaw(const Bytes& b, Dtype dt) {
  size_t n = b.size() / DtypeSize(dt);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    if (dt == Dtype::kFp32) {
      std::memcpy(&v[i], &b[4 * i], 4);
    } else {
      uint16_t h;
      std::memcpy(&h, &b[2 * i], 2);
      v[i] = dt == Dtype::kBf16 ? Bf16ToFloat(h) : Fp16ToFloat(h);
    }
  }
  return v;
}

constexpr SectionShape kLlama{16, 8, 128, Dtype::kBf16};  // 32 KiB raw

TEST(Codec, RawAndZstdRoundTripExactly) {
  for (Dtype dt : {Dtype::kBf16, Dtype::kFp16, Dtype::kFp32, Dtype::kFp8E4m3}) {
    SectionShape s = kLlama;
    s.dtype = dt;
    Bytes raw(s.raw_bytes());
    std::mt19937 rng(1);
    for (auto& b : raw) b = static_cast<uint8_t>(rng() % 7);  // compressible
    for (Codec c : {Codec::kRaw, Codec::kZstd}) {
      auto enc = EncodeSection(c, s, raw);
      ASSERT_TRUE(enc.ok()) << enc.status().ToString();
      EXPECT_TRUE(CheckEncodedLength(c, s, enc->size()).ok());
      if (c == Codec::kRaw) {
        EXPECT_EQ(*enc, raw);
      }
      if (c == Codec::kZstd) {
        EXPECT_LT(enc->size(), raw.size());
      }
      auto dec = DecodeSection(c, s, *enc);
      ASSERT_TRUE(dec.ok()) << dec.status().ToString();
      EXPECT_EQ(*dec, raw);
    }
  }
}

TEST(Codec, ZstdNeverTrustsTheFrame) {
  SectionShape s = kLlama;
  Bytes raw(s.raw_bytes(), 3);
  Bytes enc = *EncodeSection(Codec::kZstd, s, raw);
  // Two frames back to back.
  Bytes two = enc;
  two.insert(two.end(), enc.begin(), enc.end());
  EXPECT_TRUE(DecodeSection(Codec::kZstd, s, two).status().Is(CodecError::kBadFrame));
  // Trailing byte.
  Bytes trailing = enc;
  trailing.push_back(0);
  EXPECT_TRUE(DecodeSection(Codec::kZstd, s, trailing).status().Is(CodecError::kBadFrame));
  // A frame of a larger (and of a smaller) payload.
  Bytes big(raw.size() + 1, 3), small(raw.size() - 1, 3);
  for (const Bytes& other : {big, small}) {
    Bytes f(ZSTD_compressBound(other.size()));
    f.resize(ZSTD_compress(f.data(), f.size(), other.data(), other.size(), 1));
    auto r = DecodeSection(Codec::kZstd, s, f);
    EXPECT_TRUE(r.status().Is(CodecError::kBadFrame)) << r.status().ToString();
  }
  // A skippable frame only.
  Bytes skip = {0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 1, 2, 3, 4};
  EXPECT_TRUE(DecodeSection(Codec::kZstd, s, skip).status().Is(CodecError::kBadFrame));
  // Garbage and empty input.
  EXPECT_TRUE(DecodeSection(Codec::kZstd, s, Bytes{1, 2, 3}).status().Is(CodecError::kBadFrame));
  EXPECT_TRUE(DecodeSection(Codec::kZstd, s, Bytes{}).status().Is(CodecError::kWrongEncodedSize));
  // Every truncation fails.
  for (size_t n = 0; n < enc.size(); ++n) {
    EXPECT_FALSE(DecodeSection(Codec::kZstd, s, ByteSpan(enc).first(n)).ok()) << n;
  }
}

struct ErrorStats {
  double rmse = 0, max_rel_normal = 0;
  double max_abs_over_scale = 0;  // int8: max |err| / scale per head
};

ErrorStats Measure(Codec c, const SectionShape& s, const std::vector<float>& x,
                   const std::vector<float>& y, ByteSpan enc) {
  ErrorStats st;
  double sq = 0;
  for (uint64_t t = 0; t < s.tokens; ++t) {
    for (uint64_t h = 0; h < s.heads; ++h) {
      float scale;
      std::memcpy(&scale, enc.data() + 4 * h, 4);
      for (uint64_t d = 0; d < s.head_dim; ++d) {
        uint64_t i = (t * s.heads + h) * s.head_dim + d;
        double err = std::fabs(double(y[i]) - x[i]);
        sq += err * err;
        if (c == Codec::kInt8) {
          st.max_abs_over_scale = std::max(st.max_abs_over_scale, err / scale);
        } else if (std::fabs(x[i]) / scale >= 0x1p-6) {  // normal fp8 range
          st.max_rel_normal = std::max(st.max_rel_normal, err / std::fabs(x[i]));
        } else {
          // Subnormal fp8: absolute error at most half a step of 2^-9 (times the scale).
          EXPECT_LE(err, scale * (0x1p-10 + 0x1p-12) + std::fabs(x[i]) * 0x1p-8) << i;
        }
      }
    }
  }
  st.rmse = std::sqrt(sq / x.size());
  return st;
}

TEST(Codec, QuantizedErrorBoundsOnKvLikeData) {
  for (Dtype dt : {Dtype::kBf16, Dtype::kFp16, Dtype::kFp32}) {
    SectionShape s = kLlama;
    s.dtype = dt;
    std::vector<float> x = FromRaw(ToRaw(KvLike(s, 7), dt), dt);  // representable inputs
    Bytes raw = ToRaw(x, dt);
    // Output rounding to the section dtype adds at most half an ulp of it.
    const double out_ulp = dt == Dtype::kBf16 ? 0x1p-8 : dt == Dtype::kFp16 ? 0x1p-11 : 0x1p-23;
    for (Codec c : {Codec::kInt8, Codec::kFp8E4m3}) {
      auto enc = EncodeSection(c, s, raw);
      ASSERT_TRUE(enc.ok()) << enc.status().ToString();
      ASSERT_EQ(enc->size(), 4 * s.heads + s.elements());
      auto dec = DecodeSection(c, s, *enc);
      ASSERT_TRUE(dec.ok()) << dec.status().ToString();
      std::vector<float> y = FromRaw(*dec, dt);
      ErrorStats st = Measure(c, s, x, y, *enc);
      if (c == Codec::kInt8) {
        // |err| <= scale/2, plus output rounding of values up to 127*scale.
        EXPECT_LE(st.max_abs_over_scale, 0.5 + 127 * out_ulp + 1e-5);
      } else {
        EXPECT_LE(st.max_rel_normal, 0x1p-4 + out_ulp + 1e-5);
      }
      // Error proportionate to data: relative RMSE against the data's RMS.
      double rms = 0;
      for (float v : x) rms += double(v) * v;
      rms = std::sqrt(rms / x.size());
      std::printf("[ codec %-8s from %s ] RMSE %.5f (data RMS %.4f, relative %.4f)\n",
                  std::string(CodecName(c)).c_str(),
                  dt == Dtype::kBf16   ? "bf16"
                  : dt == Dtype::kFp16 ? "fp16"
                                       : "fp32",
                  st.rmse, rms, st.rmse / rms);
      EXPECT_LT(st.rmse / rms, c == Codec::kInt8 ? 0.05 : 0.05);
    }
  }
}

TEST(Codec, QuantizedEdgeCases) {
  SectionShape s{2, 2, 4, Dtype::kFp32};
  std::vector<float> x(s.elements(), 0.0f);  // head 0 all zero
  x[4] = 1e-40f;                             // head 1: subnormal-only amax
  x[5] = -3e-41f;
  Bytes raw = ToRaw(x, s.dtype);
  for (Codec c : {Codec::kInt8, Codec::kFp8E4m3}) {
    auto enc = EncodeSection(c, s, raw);
    ASSERT_TRUE(enc.ok());
    auto dec = DecodeSection(c, s, *enc);
    ASSERT_TRUE(dec.ok());
    auto y = FromRaw(*dec, s.dtype);
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_TRUE(std::isfinite(y[i]));
      EXPECT_NEAR(y[i], x[i], 1e-40);
    }
    // Non-finite input is refused.
    auto bad = x;
    bad[3] = std::nanf("");
    EXPECT_TRUE(EncodeSection(c, s, ToRaw(bad, s.dtype)).status().Is(CodecError::kNonFinite));
    bad[3] = INFINITY;
    EXPECT_TRUE(EncodeSection(c, s, ToRaw(bad, s.dtype)).status().Is(CodecError::kNonFinite));
    // Carried scales must be finite and non-negative.
    for (float sc : {-1.0f, std::nanf(""), float(INFINITY)}) {
      Bytes e = *enc;
      std::memcpy(e.data() + 4, &sc, 4);
      EXPECT_TRUE(DecodeSection(c, s, e).status().Is(CodecError::kBadScale)) << sc;
    }
    // Wrong lengths.
    Bytes e = *enc;
    e.pop_back();
    EXPECT_TRUE(DecodeSection(c, s, e).status().Is(CodecError::kWrongEncodedSize));
    EXPECT_TRUE(EncodeSection(c, s, ByteSpan(raw).first(raw.size() - 1))
                    .status()
                    .Is(CodecError::kWrongInputSize));
    // fp8 sources are not quantized again.
    SectionShape s8 = s;
    s8.dtype = Dtype::kFp8E4m3;
    EXPECT_TRUE(
        EncodeSection(c, s8, Bytes(s8.raw_bytes())).status().Is(CodecError::kUnsupportedDtype));
  }
  // The fp8 NaN code is rejected on decode.
  Bytes e = *EncodeSection(Codec::kFp8E4m3, s, raw);
  e[4 * s.heads + 3] = 0x7f;
  EXPECT_TRUE(DecodeSection(Codec::kFp8E4m3, s, e).status().Is(CodecError::kNanCode));
}

TEST(Codec, EmptySectionAndUnimplemented) {
  SectionShape v{0, 1, 576, Dtype::kBf16};  // MLA V
  for (Codec c : {Codec::kRaw, Codec::kZstd, Codec::kFp8E4m3, Codec::kInt8}) {
    auto enc = EncodeSection(c, v, Bytes{});
    ASSERT_TRUE(enc.ok());
    EXPECT_TRUE(enc->empty());
    EXPECT_TRUE(DecodeSection(c, v, Bytes{}).ok());
    EXPECT_FALSE(DecodeSection(c, v, Bytes{0}).ok());
  }
  for (Codec c : {Codec::kInt4, Codec::kFp4E2m1, Codec::kCachegen}) {
    auto r = EncodeSection(c, kLlama, Bytes(kLlama.raw_bytes()));
    EXPECT_EQ(r.status().code(), Code::kUnsupported);
    EXPECT_TRUE(r.status().Is(CodecError::kNotImplemented));
    EXPECT_TRUE(DecodeSection(c, kLlama, Bytes(10)).status().Is(CodecError::kNotImplemented));
    EXPECT_TRUE(MaxEncodedBytes(c, kLlama).status().Is(CodecError::kNotImplemented));
  }
}

}  // namespace
}  // namespace kvcs::kvsp
