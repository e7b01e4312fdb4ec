#include "moqt/moqt_varint.h"

#include <gtest/gtest.h>

#include "common/hex.h"
#include "moqt/test_tools/moqt_test_vectors.h"

namespace kvcs::moqt {
namespace {

using test::HexBytes;

struct VarintCase {
  const char* hex;
  uint64_t value;
  bool minimal;
};

// Reference §2.1 examples plus every length boundary.
const VarintCase kCases[] = {
    {"00", 0, true},
    {"25", 37, true},
    {"7F", 127, true},
    {"8025", 37, false},
    {"8080", 128, true},
    {"BBBD", 15293, true},
    {"BFFF", 16383, true},
    {"C04000", 16384, true},
    {"DFFFFF", 2097151, true},
    {"ED7F3E7D", 226442877, true},
    {"EFFFFFFF", 268435455, true},
    {"F7FFFFFFFF", 34359738367ull, true},
    {"FBFFFFFFFFFF", 4398046511103ull, true},
    {"FDFFFFFFFFFFFF", 562949953421311ull, true},
    {"FEFFFFFFFFFFFFFF", 72057594037927935ull, true},
    {"FF0100000000000000", 72057594037927936ull, true},
    {"FFFFFFFFFFFFFFFFFF", UINT64_MAX, true},
    {"FF0000000000000025", 37, false},
    {"F0132B3E28", 0x132B3E28, true},
    {"AF00", 0x2F00, true},
};

TEST(MoqtVarint, DecodesReferenceExamples) {
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.hex);
    Bytes b = HexBytes(c.hex);
    uint64_t v = 0;
    EXPECT_EQ(DecodeVarint(b, &v), b.size());
    EXPECT_EQ(v, c.value);
    EXPECT_EQ(VarintLengthFromFirstByte(b[0]), b.size());
    for (size_t n = 0; n < b.size(); ++n) {
      EXPECT_EQ(DecodeVarint(ByteSpan(b).first(n), &v), 0u) << "prefix " << n;
    }
  }
}

TEST(MoqtVarint, EncodesMinimally) {
  for (const auto& c : kCases) {
    if (!c.minimal) continue;
    SCOPED_TRACE(c.hex);
    Bytes out;
    AppendVarint(&out, c.value);
    EXPECT_EQ(ToHex(out), ToHex(HexBytes(c.hex)));
    EXPECT_EQ(VarintLength(c.value), out.size());
  }
}

TEST(MoqtVarint, EveryLongerEncodingRoundTrips) {
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{127}, uint64_t{128}, uint64_t{16383},
                     uint64_t{1} << 40, UINT64_MAX >> 8, UINT64_MAX}) {
    for (size_t len = VarintLength(v); len <= kMaxVarintBytes; ++len) {
      Bytes out;
      AppendVarint(&out, v, len);
      ASSERT_EQ(out.size(), len);
      uint64_t got = 0;
      EXPECT_EQ(DecodeVarint(out, &got), len);
      EXPECT_EQ(got, v) << "len " << len;
    }
  }
}

TEST(MoqtVarint, NotTheQuicVarint) {
  // 64 is one byte in MOQT (QUIC needs two: 0x4040).
  Bytes out;
  AppendVarint(&out, 64);
  EXPECT_EQ(ToHex(out), "40");
}

}  // namespace
}  // namespace kvcs::moqt
