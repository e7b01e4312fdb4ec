#include "profile/cbor.h"

#include <gtest/gtest.h>

#include <string>

#include "common/hex.h"

namespace kvcs::profile::cbor {
namespace {

Bytes Hex(std::string_view h) { return *FromHex(h); }

// Valid items (RFC 8949 Appendix A examples in the supported subset). Each is decoded, checked
// against a re-encoding of the decoded value, and every strict prefix must be kTruncated.
const char* const kValid[] = {
    "00",
    "01",
    "17",
    "1818",
    "1819",
    "1864",
    "1903e8",
    "1a000f4240",
    "1b000000e8d4a51000",
    "1bffffffffffffffff",
    "20",
    "29",
    "3863",
    "3903e7",
    "3bffffffffffffffff",
    "40",
    "4401020304",
    "60",
    "6161",
    "6449455446",
    "62225c",
    "62c3bc",
    "63e6b0b4",
    "64f0908591",
    "80",
    "83010203",
    "8301820203820405",
    "a0",
    "a201020304",
    "a26161016162820203",
    "a1206161",
    "98190102030405060708090a0b0c0d0e0f101112131415161718181819",
};

// Re-encodes a decoded value with the encoder (all decoded input is in preferred form).
void Reencode(const Value& v, Bytes* out) {
  switch (v.type) {
    case Type::kUint:
      PutUint(out, v.number);
      break;
    case Type::kNegInt:
      if (v.number <= uint64_t(INT64_MAX)) {
        PutInt(out, -1 - int64_t(v.number));
      } else {
        out->insert(out->end(), {0x3b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff});
      }
      break;
    case Type::kBytes:
      PutBytes(out, v.str);
      break;
    case Type::kText:
      PutText(out, v.text());
      break;
    case Type::kArray:
      PutArrayHeader(out, v.items.size());
      for (const Value& i : v.items) Reencode(i, out);
      break;
    case Type::kMap:
      PutMapHeader(out, v.keys.size());
      for (size_t i = 0; i < v.keys.size(); ++i) {
        Reencode(v.keys[i], out);
        Reencode(v.values[i], out);
      }
      break;
  }
}

TEST(Cbor, ValidItemsRoundTripAndEveryPrefixIsTruncated) {
  for (const char* h : kValid) {
    Bytes in = Hex(h);
    auto v = Decode(in, 4);
    ASSERT_TRUE(v.ok()) << h << ": " << v.status().ToString();
    Bytes out;
    Reencode(*v, &out);
    EXPECT_EQ(ToHex(out), h);
    for (size_t n = 0; n < in.size(); ++n) {
      auto r = Decode(ByteSpan(in.data(), n), 4);
      ASSERT_FALSE(r.ok()) << h << " prefix " << n;
      EXPECT_TRUE(r.status().Is(CborError::kTruncated)) << h << " prefix " << n;
    }
  }
}

TEST(Cbor, DecodedValues) {
  Bytes with_null = Hex("a3016161200304f6");  // a null value: rejected
  EXPECT_TRUE(Decode(with_null, 4).status().Is(CborError::kUnsupportedType));
  Bytes map = Hex("a30161612003044443414243");  // the Value holds views into `map`
  auto v = Decode(map, 4);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  ASSERT_NE(v->Find(1), nullptr);
  EXPECT_EQ(v->Find(1)->text(), "a");
  EXPECT_EQ(v->Find(-1)->AsInt(), 3);
  EXPECT_EQ(AsStringView(v->Find(4)->str), "CABC");
  EXPECT_EQ(v->Find(5), nullptr);
  Bytes big_in = Hex("3bffffffffffffffff"), min_in = Hex("3b7fffffffffffffff");
  auto big = Decode(big_in, 1);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->AsInt(), std::nullopt);  // -2^64 does not fit int64
  auto min = Decode(min_in, 1);
  ASSERT_TRUE(min.ok());
  EXPECT_EQ(min->AsInt(), INT64_MIN);
}

TEST(Cbor, InvalidTable) {
  struct Case {
    const char* hex;
    CborError want;
  };
  const Case cases[] = {
      {"", CborError::kTruncated},
      {"18", CborError::kTruncated},
      {"1a0001", CborError::kTruncated},
      {"45010203", CborError::kTruncated},
      {"5bffffffffffffffff00", CborError::kTruncated},
      {"9bffffffffffffffff00", CborError::kTruncated},
      {"bbffffffffffffffff00", CborError::kTooManyEntries},
      {"bb7fffffffffffffff00", CborError::kTooManyEntries},
      {"83010203", CborError::kNone},  // valid (control)
      {"8301020304", CborError::kTrailingBytes},
      {"0000", CborError::kTrailingBytes},
      {"f6", CborError::kUnsupportedType},
      {"f5", CborError::kUnsupportedType},
      {"f93c00", CborError::kUnsupportedType},
      {"fb3ff199999999999a", CborError::kUnsupportedType},
      {"c249010000000000000000", CborError::kUnsupportedType},
      {"d2820102", CborError::kUnsupportedType},
      {"5f4101ff", CborError::kIndefiniteLength},
      {"9f01ff", CborError::kIndefiniteLength},
      {"bf0101ff", CborError::kIndefiniteLength},
      {"1c", CborError::kReservedInfo},
      {"5d", CborError::kReservedInfo},
      {"1817", CborError::kNonMinimal},
      {"190017", CborError::kNonMinimal},
      {"1900ff", CborError::kNonMinimal},
      {"1a0000ffff", CborError::kNonMinimal},
      {"1b00000000ffffffff", CborError::kNonMinimal},
      {"380a", CborError::kNonMinimal},
      {"580100", CborError::kNonMinimal},
      {"980100", CborError::kNonMinimal},
      {"81818181818100", CborError::kTooDeep},
      {"61ff", CborError::kBadUtf8},
      {"62c0af", CborError::kBadUtf8},      // overlong "/"
      {"63eda080", CborError::kBadUtf8},    // surrogate U+D800
      {"64f4908080", CborError::kBadUtf8},  // above U+10FFFF
      {"62e6b0", CborError::kBadUtf8},      // cut multibyte sequence
      {"a1400102", CborError::kBadMapKey},  // byte-string key
      {"a1800102", CborError::kBadMapKey},  // array key
      {"a201010102", CborError::kDuplicateKey},
      {"a2616101616102", CborError::kDuplicateKey},
      {"b8410000", CborError::kTooManyEntries},
  };
  for (const Case& c : cases) {
    auto r = Decode(Hex(c.hex), 5);
    if (c.want == CborError::kNone) {
      EXPECT_TRUE(r.ok()) << c.hex;
      continue;
    }
    ASSERT_FALSE(r.ok()) << c.hex;
    EXPECT_TRUE(r.status().Is(c.want))
        << c.hex << ": got " << r.status().ToString() << ", want " << CborErrorName(c.want);
  }
}

TEST(Cbor, EncoderUsesShortestForms) {
  struct Case {
    int64_t v;
    const char* hex;
  };
  const Case cases[] = {{0, "00"},
                        {23, "17"},
                        {24, "1818"},
                        {255, "18ff"},
                        {256, "190100"},
                        {65535, "19ffff"},
                        {65536, "1a00010000"},
                        {-1, "20"},
                        {-24, "37"},
                        {-25, "3818"},
                        {-7, "26"},
                        {-8, "27"},
                        {INT64_MAX, "1b7fffffffffffffff"},
                        {INT64_MIN, "3b7fffffffffffffff"}};
  for (const Case& c : cases) {
    Bytes out;
    PutInt(&out, c.v);
    EXPECT_EQ(ToHex(out), c.hex) << c.v;
  }
  Bytes out;
  PutUint(&out, 0x100000000ull);
  EXPECT_EQ(ToHex(out), "1b0000000100000000");
  out.clear();
  PutTag(&out, 18);
  EXPECT_EQ(ToHex(out), "d2");
}

}  // namespace
}  // namespace kvcs::profile::cbor
