#include "profile/object.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/crypto.h"
#include "common/hex.h"
#include "profile/codecs.h"

namespace kvcs::profile {
namespace {

// ONE table of payloads: every test below (encode, decode, truncation, trailing bytes, bit flips)
// runs over all of them. The hex was computed independently (Python struct + hashlib).
struct Vector {
  const char* name;
  ObjectInfo info;
  std::string data;
  const char* hex;
};

const Vector kVectors[] = {
    {"k raw empty data",
     {Component::kK, 0, 0, 0, 16, 1},
     "",
     "4b564f3101010000000000000000000000000000000000000000001000010000000000"
     "00e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
    {"v raw 8 bytes",
     {Component::kV, 3, 5, 80, 16, 1},
     std::string("\x00\x01\x02\x03\x04\x05\x06\x07", 8),
     "4b564f3101020000000000030000000500000000000000500000001000010000000000"
     "088a851ff82ee7048ad09ec3847f1ddf44944104d2cbd17ef4e3db22c6785a0d450001020304050607"},
    {"kv zstd large token start",
     {Component::kKV, 31, 2, 0x100000020ull, 4, 2},
     "hello kvcs",
     "4b564f31010300000000001f00000002000000010000002000000004000200000000000a"
     "5200e2a3122804fa786112cdcd0fd5ace33a2ae8dd228562af48daae08c34ab468656c6c6f206b766373"},
};

Bytes Hex(const char* h) { return *FromHex(h); }
ByteSpan DataOf(const Vector& v) { return AsBytes(v.data); }

ObjectExpectation FullExpectation(const Vector& v) {
  ObjectExpectation e;
  e.group_id = v.info.layer;
  e.object_id = v.info.block_index;
  e.component = v.info.component;
  e.codec = v.info.codec;
  e.block_tokens = v.info.token_count;
  e.token_start = v.info.token_start;
  return e;
}

TEST(Object, EncodeMatchesTable) {
  for (const Vector& v : kVectors) {
    auto enc = EncodeObject(v.info, DataOf(v));
    ASSERT_TRUE(enc.ok()) << v.name << enc.status().ToString();
    EXPECT_EQ(ToHex(*enc), ToHex(Hex(v.hex))) << v.name;
    auto header = EncodeObjectHeader(v.info, DataOf(v));
    ASSERT_TRUE(header.ok());
    EXPECT_TRUE(std::equal(header->begin(), header->end(), enc->begin())) << v.name;
  }
}

TEST(Object, EncodeWithTheCallersDigestMatchesTableAndUsesIt) {
  for (const Vector& v : kVectors) {
    auto enc = EncodeObjectWithDigest(v.info, DataOf(v), Sha256::Hash(DataOf(v)));
    ASSERT_TRUE(enc.ok()) << v.name << enc.status().ToString();
    EXPECT_EQ(ToHex(*enc), ToHex(Hex(v.hex))) << v.name;
    // The digest given is the one written (not hashed again): a wrong one makes an object that
    // does not decode.
    Digest wrong{};
    auto bad = EncodeObjectWithDigest(v.info, DataOf(v), wrong);
    ASSERT_TRUE(bad.ok());
    EXPECT_FALSE(DecodeObject(*bad, FullExpectation(v)).ok()) << v.name;
  }
}

TEST(Object, DecodeMatchesTableZeroCopy) {
  for (const Vector& v : kVectors) {
    Bytes p = Hex(v.hex);
    auto r = DecodeObject(p, FullExpectation(v));
    ASSERT_TRUE(r.ok()) << v.name << ": " << r.status().ToString();
    const ObjectHeader& h = r->header;
    EXPECT_EQ(h.version, 1);
    EXPECT_EQ(h.component, v.info.component);
    EXPECT_EQ(h.flags, 0);
    EXPECT_FALSE(h.has_unknown_flags());
    EXPECT_EQ(h.layer, v.info.layer);
    EXPECT_EQ(h.block_index, v.info.block_index);
    EXPECT_EQ(h.token_start, v.info.token_start);
    EXPECT_EQ(h.token_count, v.info.token_count);
    EXPECT_EQ(h.codec, v.info.codec);
    EXPECT_EQ(h.data_length, v.data.size());
    EXPECT_EQ(h.data_digest, Sha256::Hash(DataOf(v)));
    EXPECT_EQ(r->data.data(), p.data() + kObjectHeaderSize) << "data must be a view";
    EXPECT_EQ(AsStringView(r->data), v.data);
    // Minimal expectation (location only) and no expectation also accept it.
    ObjectExpectation loc{v.info.layer, v.info.block_index};
    EXPECT_TRUE(DecodeObject(p, loc).ok());
    auto inspected = InspectObject(p);
    ASSERT_TRUE(inspected.ok());
    EXPECT_EQ(inspected->header, h);
  }
}

TEST(Object, EveryPrefixIsTruncated) {
  for (const Vector& v : kVectors) {
    Bytes p = Hex(v.hex);
    for (size_t n = 0; n < p.size(); ++n) {
      auto r = DecodeObject(ByteSpan(p.data(), n), FullExpectation(v));
      ASSERT_FALSE(r.ok()) << v.name << " prefix " << n;
      EXPECT_TRUE(r.status().Is(ObjectError::kTruncated))
          << v.name << " prefix " << n << ": " << r.status().ToString();
    }
  }
}

TEST(Object, TrailingBytesRejected) {
  for (const Vector& v : kVectors) {
    Bytes p = Hex(v.hex);
    p.push_back(0);
    auto r = DecodeObject(p, FullExpectation(v));
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(r.status().Is(ObjectError::kTrailingData)) << r.status().ToString();
  }
}

// The requirement: with the full expectation, every single-bit flip in the 68-byte header
// (544 bits) is caught: rejected with a typed error, or, for the reserved Flags field, accepted
// but reported through has_unknown_flags(). Flips in Data are caught by the digest.
TEST(Object, EveryHeaderBitFlipIsCaught) {
  for (const Vector& v : kVectors) {
    Bytes good = Hex(v.hex);
    int rejected = 0, flagged = 0;
    for (size_t bit = 0; bit < kObjectHeaderSize * 8; ++bit) {
      Bytes p = good;
      p[bit / 8] ^= uint8_t(0x80 >> (bit % 8));
      auto r = DecodeObject(p, FullExpectation(v));
      if (bit / 8 == 6 || bit / 8 == 7) {
        ASSERT_TRUE(r.ok()) << v.name << " flags bit " << bit << ": " << r.status().ToString();
        EXPECT_TRUE(r->header.has_unknown_flags());
        EXPECT_EQ(r->header.flags, uint16_t(0x8000 >> (bit - 48)));
        ++flagged;
      } else {
        ASSERT_FALSE(r.ok()) << v.name << " bit " << bit << " not caught";
        EXPECT_NE(r.status().detail(), 0);
        ++rejected;
      }
    }
    EXPECT_EQ(rejected, 528);
    EXPECT_EQ(flagged, 16);
    for (size_t bit = kObjectHeaderSize * 8; bit < good.size() * 8; ++bit) {
      Bytes p = good;
      p[bit / 8] ^= uint8_t(1 << (bit % 8));
      auto r = DecodeObject(p, FullExpectation(v));
      ASSERT_FALSE(r.ok());
      EXPECT_TRUE(r.status().Is(ObjectError::kDigestMismatch));
      EXPECT_EQ(r.status().code(), Code::kCorruption);
    }
  }
}

// Each check has its own error value.
TEST(Object, EachCheckHasItsOwnError) {
  const Vector& v = kVectors[1];
  const Bytes good = Hex(v.hex);
  const ObjectExpectation full = FullExpectation(v);
  auto patched = [&](size_t off, std::vector<uint8_t> bytes) {
    Bytes p = good;
    for (size_t i = 0; i < bytes.size(); ++i) p[off + i] = bytes[i];
    return p;
  };
  auto expect_with = [&](auto mutate) {
    ObjectExpectation e = full;
    mutate(e);
    return e;
  };
  struct Case {
    const char* what;
    Bytes payload;
    ObjectExpectation expect;
    ObjectError want;
    Code code;
  };
  const Case cases[] = {
      {"magic KVO2", patched(0, {'K', 'V', 'O', '2'}), full, ObjectError::kBadMagic,
       Code::kInvalidArgument},
      {"version 0", patched(4, {0}), full, ObjectError::kBadVersion, Code::kInvalidArgument},
      {"version 2", patched(4, {2}), full, ObjectError::kBadVersion, Code::kInvalidArgument},
      {"component 0", patched(5, {0}), full, ObjectError::kBadComponent, Code::kInvalidArgument},
      {"component 4", patched(5, {4}), full, ObjectError::kBadComponent, Code::kInvalidArgument},
      {"reserved 1", patched(30, {0, 1}), full, ObjectError::kReservedNotZero,
       Code::kInvalidArgument},
      {"codec 0", patched(28, {0, 0}), full, ObjectError::kUnknownCodec, Code::kUnsupported},
      {"codec 0x0100", patched(28, {1, 0}), full, ObjectError::kUnknownCodec, Code::kUnsupported},
      {"codec private", patched(28, {0xff, 0x00}), full, ObjectError::kUnknownCodec,
       Code::kUnsupported},
      {"data length max", patched(32, {0xff, 0xff, 0xff, 0xff}), full, ObjectError::kDataTooLarge,
       Code::kInvalidArgument},
      {"data length 9", patched(32, {0, 0, 0, 9}), full, ObjectError::kTruncated,
       Code::kInvalidArgument},
      {"data length 7", patched(32, {0, 0, 0, 7}), full, ObjectError::kTrailingData,
       Code::kInvalidArgument},
      {"wrong group", good, expect_with([](auto& e) { e.group_id = 4; }),
       ObjectError::kLayerMismatch, Code::kInvalidArgument},
      {"group above u32", good, expect_with([](auto& e) { e.group_id += uint64_t{1} << 32; }),
       ObjectError::kLayerMismatch, Code::kInvalidArgument},
      {"wrong object", good, expect_with([](auto& e) { e.object_id = 6; }),
       ObjectError::kBlockIndexMismatch, Code::kInvalidArgument},
      {"wrong component", good, expect_with([](auto& e) { e.component = Component::kK; }),
       ObjectError::kComponentMismatch, Code::kInvalidArgument},
      {"wrong codec", good, expect_with([](auto& e) { e.codec = 2; }), ObjectError::kCodecMismatch,
       Code::kInvalidArgument},
      {"wrong block_tokens", good, expect_with([](auto& e) { e.block_tokens = 32; }),
       ObjectError::kTokenCountMismatch, Code::kInvalidArgument},
      {"wrong token start", good, expect_with([](auto& e) { e.token_start = 96; }),
       ObjectError::kTokenStartMismatch, Code::kInvalidArgument},
      {"wrong digest", patched(36, {0}), full, ObjectError::kDigestMismatch, Code::kCorruption},
  };
  for (const Case& c : cases) {
    auto r = DecodeObject(c.payload, c.expect);
    ASSERT_FALSE(r.ok()) << c.what;
    EXPECT_TRUE(r.status().Is(c.want))
        << c.what << ": got " << r.status().ToString() << ", want " << ObjectErrorName(c.want);
    EXPECT_EQ(r.status().code(), c.code) << c.what;
  }
}

TEST(Object, EncoderRejectsBadInput) {
  ObjectInfo info{Component::kK, 0, 0, 0, 16, 0};
  auto r = EncodeObject(info, {});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().Is(ObjectError::kUnknownCodec));
  info.codec = 1;
  info.component = static_cast<Component>(9);
  r = EncodeObject(info, {});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().Is(ObjectError::kBadComponent));
  // A span longer than the bound is rejected before reading it.
  info.component = Component::kK;
  uint8_t one = 0;
  auto big = EncodeObjectHeader(info, ByteSpan(&one, size_t(kMaxObjectDataSize + 1)));
  ASSERT_FALSE(big.ok());
  EXPECT_TRUE(big.status().Is(ObjectError::kDataTooLarge));
}

TEST(Object, LargeRoundTrip) {
  Bytes data(64 * 1024);
  for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i * 7 % 251);
  ObjectInfo info{Component::kKV, 12, 1000, 16000, 16, 1};
  auto enc = EncodeObject(info, data);
  ASSERT_TRUE(enc.ok());
  ObjectExpectation e{12, 1000, Component::kKV, 1, 16, 16000};
  auto dec = DecodeObject(*enc, e);
  ASSERT_TRUE(dec.ok()) << dec.status().ToString();
  EXPECT_TRUE(std::equal(dec->data.begin(), dec->data.end(), data.begin(), data.end()));
}

}  // namespace
}  // namespace kvcs::profile

namespace kvcs::profile {
namespace {

TEST(Codecs, RegistryThroughKvsp) {
  EXPECT_EQ(CodecValueForName("raw"), 1);
  EXPECT_EQ(CodecValueForName("zstd"), 2);
  EXPECT_EQ(CodecValueForName("fp8-e4m3"), 3);
  EXPECT_EQ(CodecValueForName("cachegen"), 7);
  EXPECT_EQ(CodecValueForName("lz4"), std::nullopt);
  EXPECT_EQ(CodecValueForName("RAW"), std::nullopt);
  EXPECT_EQ(CodecValueForName(""), std::nullopt);
  EXPECT_FALSE(IsRegisteredCodecValue(0));
  for (uint16_t v = 1; v <= 7; ++v) EXPECT_TRUE(IsRegisteredCodecValue(v)) << v;
  EXPECT_FALSE(IsRegisteredCodecValue(8));
  EXPECT_FALSE(IsRegisteredCodecValue(0xff00));
  EXPECT_FALSE(IsRegisteredCodecValue(0xffff));
}

}  // namespace
}  // namespace kvcs::profile
