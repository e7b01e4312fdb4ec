#include <gtest/gtest.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <sys/resource.h>

#include <algorithm>
#include <cstdlib>

#include "common/allocator_policy.h"
#include "common/base64.h"
#include "common/bytes.h"
#include "common/crypto.h"
#include "common/hex.h"
#include "common/open_file_limit.h"
#include "common/status.h"
#include "common/strings.h"
#include "common/utc_time.h"

namespace kvcs {
namespace {

#if defined(__GLIBC__)
// After a large block is freed, glibc would raise its mmap threshold to that block's size and
// carve the next large buffer from an arena; under the server policy it still gets a mapping.
TEST(AllocatorPolicy, LargeBuffersStayMappedAfterALargerOneIsFreed) {
  UseServerAllocatorPolicy();
  void* big = std::malloc(4 << 20);
  ASSERT_NE(big, nullptr);
  std::free(big);
  size_t mapped_before = mallinfo2().hblks;
  void* buf = std::malloc(2 * kServerMmapThresholdBytes);
  ASSERT_NE(buf, nullptr);
  EXPECT_EQ(mallinfo2().hblks, mapped_before + 1);
  std::free(buf);
  EXPECT_EQ(mallinfo2().hblks, mapped_before);
}
#endif

// A soft limit below the hard one (a fresh shell's 1,024) is raised to the hard limit (at most
// the ceiling); once raised, a second call changes nothing.
TEST(OpenFileLimit, RaisesTheSoftLimitToTheHardLimit) {
  struct rlimit saved;
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  const uint64_t hard = saved.rlim_max == RLIM_INFINITY ? kOpenFileLimitCeiling : saved.rlim_max;
  const uint64_t want = std::min(hard, kOpenFileLimitCeiling);
  if (want < 128) GTEST_SKIP() << "hard open-file limit " << want;
  struct rlimit low = saved;
  low.rlim_cur = 64;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  auto raised = RaiseOpenFileLimit();
  ASSERT_TRUE(raised.ok()) << raised.status().ToString();
  EXPECT_EQ(raised->before, 64u);
  EXPECT_EQ(raised->now, want);
  struct rlimit now;
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &now), 0);
  EXPECT_EQ(now.rlim_cur, static_cast<rlim_t>(want));
  EXPECT_EQ(now.rlim_max, saved.rlim_max);  // the hard limit is left alone
  auto again = RaiseOpenFileLimit();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->before, want);
  EXPECT_EQ(again->now, want);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
}

TEST(Hex, RoundTripAndErrors) {
  Bytes b = {0x00, 0x7f, 0xab, 0xff};
  EXPECT_EQ(ToHex(b), "007fabff");
  auto back = FromHex("007FABff");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, b);
  EXPECT_FALSE(FromHex("abc").ok());
  EXPECT_FALSE(FromHex("zz").ok());
  EXPECT_TRUE(IsLowerHex("007fabff", 8));
  EXPECT_FALSE(IsLowerHex("007FABff", 8));  // uppercase is not the canonical form
  EXPECT_FALSE(IsLowerHex("007fabf", 8));
  EXPECT_FALSE(IsLowerHex("007fabfg", 8));
  EXPECT_TRUE(IsLowerHex("", 0));
  EXPECT_FALSE(FromHexFixed<2>("aabbcc").ok());
}

TEST(Sha256, KnownAnswers) {
  // FIPS 180-2 "abc" and the empty string.
  EXPECT_EQ(ToHex(Sha256::Hash("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(ToHex(Sha256::Hash("")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  Sha256 h;
  h.Update("a").Update("bc");
  EXPECT_EQ(h.Finish(), Sha256::Hash("abc"));
  h.Update("abc");  // reusable after Finish
  EXPECT_EQ(h.Finish(), Sha256::Hash("abc"));
}

TEST(HmacSha256, Rfc4231Vectors) {
  // RFC 4231 test case 2 (short key) and 6 (key longer than the block).
  EXPECT_EQ(ToHex(HmacSha256(AsBytes("Jefe"), AsBytes("what do ya want for nothing?"))),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  Bytes key(131, 0xaa);
  EXPECT_EQ(
      ToHex(HmacSha256(key, AsBytes("Test Using Larger Than Block-Size Key - Hash Key First"))),
      "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  HmacSha256Key k(AsBytes("Jefe"));
  EXPECT_EQ(k.Mac({AsBytes("what do ya "), AsBytes("want for nothing?")}),
            HmacSha256(AsBytes("Jefe"), AsBytes("what do ya want for nothing?")));
}

TEST(ByteReader, BoundsAndBigEndian) {
  Bytes buf;
  ByteWriter w(&buf);
  w.U16(0x0102);
  w.U32(0x03040506);
  w.U64(0x0708090a0b0c0d0eULL);
  EXPECT_EQ(ToHex(buf), "0102030405060708090a0b0c0d0e");
  ByteReader r(buf);
  uint16_t a;
  uint32_t b;
  uint64_t c;
  ASSERT_TRUE(r.U16(&a) && r.U32(&b) && r.U64(&c));
  EXPECT_EQ(a, 0x0102);
  EXPECT_EQ(b, 0x03040506u);
  EXPECT_EQ(c, 0x0708090a0b0c0d0eULL);
  EXPECT_FALSE(r.U8(nullptr));
  ByteReader r2(ByteSpan(buf).first(3));
  EXPECT_FALSE(r2.U32(&b));
  EXPECT_EQ(r2.position(), 0u);
}

TEST(Status, ResultAndMacros) {
  auto f = [](bool good) -> Result<int> {
    if (!good) return InvalidArgument("bad", 7);
    return 42;
  };
  auto g = [&](bool good) -> Result<int> {
    KVCS_ASSIGN_OR_RETURN(int v, f(good));
    return v + 1;
  };
  EXPECT_EQ(*g(true), 43);
  auto e = g(false);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(e.status().detail(), 7);
  EXPECT_EQ(e.status().WithContext("x").message(), "x: bad");
}

}  // namespace
}  // namespace kvcs

namespace kvcs {
namespace {

TEST(Strings, AsciiLowerAndIEquals) {
  EXPECT_EQ(AsciiLower("X-Amz-Meta-ABC-z09"), "x-amz-meta-abc-z09");
  EXPECT_EQ(AsciiLower("\xc3\x89t\xc3\xa9"), "\xc3\x89t\xc3\xa9");  // UTF-8 bytes kept
  EXPECT_TRUE(AsciiIEquals("Content-Length", "content-LENGTH"));
  EXPECT_FALSE(AsciiIEquals("Content-Length", "Content-Lengt"));
  EXPECT_FALSE(AsciiIEquals("a[", "A{"));  // '[' + 32 is '{': only letters fold
}

TEST(Strings, Trim) {
  EXPECT_EQ(Trim("  a b \t"), "a b");
  EXPECT_EQ(Trim(" \t "), "");
  EXPECT_EQ(Trim(""), "");
  EXPECT_EQ(Trim("x\r"), "x\r");  // HTTP whitespace only by default
  EXPECT_EQ(Trim(" x\r", kLineWhitespace), "x");
  EXPECT_EQ(Trim("\n 7 \n", kXmlWhitespace), "7");
}

TEST(Strings, ParseDecimalIsStrict) {
  EXPECT_EQ(ParseDecimal<uint64_t>("0"), 0u);
  EXPECT_EQ(ParseDecimal<uint64_t>("007"), 7u);
  EXPECT_EQ(ParseDecimal<uint64_t>("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(ParseDecimal<uint64_t>("18446744073709551616"), std::nullopt);  // overflow
  EXPECT_EQ(ParseDecimal<uint16_t>("65535"), 65535u);
  EXPECT_EQ(ParseDecimal<uint16_t>("65536"), std::nullopt);
  for (std::string_view bad : {"", " 1", "1 ", "+1", "-1", "0x10", "1e3", "1.0", "١"}) {
    EXPECT_EQ(ParseDecimal<uint64_t>(bad), std::nullopt) << bad;
  }
}

}  // namespace
}  // namespace kvcs

namespace kvcs {
namespace {

TEST(UtcTime, Formats) {
  EXPECT_EQ(FormatUtc(1369353600, "%Y%m%dT%H%M%SZ"), "20130524T000000Z");  // SigV4 example date
  EXPECT_EQ(FormatUtc(1445412480, "%a, %d %b %Y %H:%M:%S GMT"), "Wed, 21 Oct 2015 07:28:00 GMT");
  EXPECT_EQ(FormatUtc(0, "%Y-%m-%dT%H:%M:%S"), "1970-01-01T00:00:00");
}

}  // namespace
}  // namespace kvcs

namespace kvcs {
namespace {

Bytes B(std::string_view s) { return Bytes(s.begin(), s.end()); }

TEST(Base64, Rfc4648Vectors) {
  // RFC 4648 §10, both alphabets (base64url without padding).
  const std::pair<std::string_view, std::string_view> kVectors[] = {{"", ""},
                                                                    {"f", "Zg=="},
                                                                    {"fo", "Zm8="},
                                                                    {"foo", "Zm9v"},
                                                                    {"foob", "Zm9vYg=="},
                                                                    {"fooba", "Zm9vYmE="},
                                                                    {"foobar", "Zm9vYmFy"}};
  for (auto [plain, text] : kVectors) {
    EXPECT_EQ(Base64Encode(B(plain)), text);
    EXPECT_EQ(*Base64Decode(text), B(plain));
    std::string url(text.substr(0, text.find('=')));
    EXPECT_EQ(Base64Encode(B(plain), Base64Alphabet::kUrl), url);
    EXPECT_EQ(*Base64Decode(url, Base64Alphabet::kUrl), B(plain));
  }
  const Bytes high = {0xfb, 0xff, 0xbf};
  EXPECT_EQ(Base64Encode(high), "+/+/");
  EXPECT_EQ(Base64Encode(high, Base64Alphabet::kUrl), "-_-_");
}

TEST(Base64, RefusesNonCanonicalText) {
  for (std::string_view bad : {"Zg=", "Zg", "Z===", "Zh==", "Zm9=", "Zm=v", "Zm9v!A==", "-_-_"}) {
    EXPECT_FALSE(Base64Decode(bad).ok()) << bad;
  }
  for (std::string_view bad : {"Zg==", "Z", "Zh", "+/+/", "Zm9v Zg"}) {
    EXPECT_FALSE(Base64Decode(bad, Base64Alphabet::kUrl).ok()) << bad;
  }
}

TEST(Utf8, StrictRfc3629) {
  struct Case {
    std::string_view bytes;
    bool valid;
  };
  const Case cases[] = {
      {"", true},
      {"plain ascii", true},
      {"\xC3\xA9", true},               // U+00E9
      {"\xE2\x82\xAC", true},           // U+20AC
      {"\xF0\x9F\x98\x80", true},       // U+1F600
      {"\xF4\x8F\xBF\xBF", true},       // U+10FFFF, the last code point
      {"\xC0\xAF", false},              // overlong '/'
      {"\xE0\x80\xAF", false},          // overlong, three bytes
      {"\xED\xA0\x80", false},          // U+D800, a surrogate
      {"\xF4\x90\x80\x80", false},      // above U+10FFFF
      {"\xC3", false},                  // truncated
      {"\xE2\x82", false},              // truncated
      {"\x80", false},                  // continuation without a lead
      {"\xC3\x28", false},              // lead without a continuation
      {"\xF8\x88\x80\x80\x80", false},  // five-byte form
  };
  for (const Case& c : cases) {
    EXPECT_EQ(IsValidUtf8(c.bytes), c.valid)
        << ToHex(ByteSpan(reinterpret_cast<const uint8_t*>(c.bytes.data()), c.bytes.size()));
  }
}

}  // namespace
}  // namespace kvcs
