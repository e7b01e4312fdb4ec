#include "s3/user_metadata.h"

#include <gtest/gtest.h>

#include "s3/s3_error.h"

namespace kvcs::s3 {
namespace {

TEST(UserMetadata, AsciiIsKeptAsItIs) {
  EXPECT_EQ(DecodeUserMetadataValue("plain value_1"), "plain value_1");
  EXPECT_EQ(EncodeUserMetadataValue("plain value_1"), "plain value_1");
  EXPECT_EQ(EncodeUserMetadataValue("a\tb"), "a\tb");
  EXPECT_EQ(EncodeUserMetadataValue(""), "");
}

TEST(UserMetadata, EncodedWordsAreDecodedBeforeStoring) {
  EXPECT_EQ(DecodeUserMetadataValue("=?UTF-8?B?w6l0w6k=?="), "\xc3\xa9t\xc3\xa9");
  EXPECT_EQ(DecodeUserMetadataValue("=?utf-8?q?=C3=A9t=C3=A9_x?="), "\xc3\xa9t\xc3\xa9 x");
  EXPECT_EQ(DecodeUserMetadataValue("=?ISO-8859-1?Q?=E9?="), "\xc3\xa9");
  // Adjacent words: the white space between them is dropped (RFC 2047 §6.2).
  EXPECT_EQ(DecodeUserMetadataValue("=?UTF-8?Q?a?= =?UTF-8?Q?b?="), "ab");
}

TEST(UserMetadata, MalformedEncodedWordsStayLiteral) {
  for (const char* v :
       {"=?UTF-8?B?not base64?=", "=?UTF-8?B?!!!!?=", "=?UTF-8?Q?=4?=", "=?KOI8-R?Q?a?=",
        "=?UTF-8?X?a?=", "=?UTF-8?Q?a?= tail", "=?UTF-8?Q?=FF?="}) {
    EXPECT_EQ(DecodeUserMetadataValue(v), v) << v;
  }
}

TEST(UserMetadata, RawBytesAreLatin1) {
  // As HTTP defines field bytes and as AWS S3 reads them: 0xE9 is "é"; UTF-8 bytes are two
  // Latin-1 characters each.
  EXPECT_EQ(DecodeUserMetadataValue("Hello World\xe9"), "Hello World\xc3\xa9");
  EXPECT_EQ(DecodeUserMetadataValue("\xc3\xa9"), "\xc3\x83\xc2\xa9");
}

TEST(UserMetadata, NonAsciiIsReturnedEncoded) {
  EXPECT_EQ(EncodeUserMetadataValue("Hello World\xc3\xa9"), "=?UTF-8?Q?Hello_World=C3=A9?=");
  EXPECT_EQ(EncodeUserMetadataValue("a=b?c_d \xc3\xa9"), "=?UTF-8?Q?a=3Db=3Fc=5Fd_=C3=A9?=");
  // Control characters: Base64.
  EXPECT_EQ(EncodeUserMetadataValue("\x04w"), "=?UTF-8?B?BHc=?=");
  // ASCII that reads as an encoded-word is encoded, so it decodes back to itself.
  EXPECT_EQ(DecodeUserMetadataValue(EncodeUserMetadataValue("=?UTF-8?Q?x?=")), "=?UTF-8?Q?x?=");
}

TEST(UserMetadata, RoundTrips) {
  for (std::string v : {"", "x", "\xc3\xa9t\xc3\xa9", "tab\there", "\x04\x05", "\xe2\x82\xac 5",
                        "=?", "x=?y", "\xf0\x9f\x93\x88"}) {
    EXPECT_EQ(DecodeUserMetadataValue(EncodeUserMetadataValue(v)), v) << v;
  }
}

TEST(UserMetadata, FromHeaders) {
  auto m = UserMetadataFromHeaders({{"X-Amz-Meta-Mixed_Case", "v"},
                                    {"content-type", "text/plain"},
                                    {"x-amz-meta-a", "1"},
                                    {"x-amz-meta-A", "2"},
                                    {"x-amz-meta-e", "=?UTF-8?B?w6k=?="}});
  ASSERT_TRUE(m.ok());
  UserMetadata want = {{"mixed_case", "v"}, {"a", "1,2"}, {"e", "\xc3\xa9"}};
  EXPECT_EQ(*m, want);
}

TEST(UserMetadata, SizeLimitCountsUtf8Bytes) {
  // 2048 bytes: name "a" + 2047 value bytes.
  EXPECT_TRUE(UserMetadataFromHeaders({{"x-amz-meta-a", std::string(2047, 'v')}}).ok());
  auto big = UserMetadataFromHeaders({{"x-amz-meta-a", std::string(2048, 'v')}});
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(ToS3Error(big.status()), S3Error::kMetadataTooLarge);
  // Counted after decoding: "a" + 2046 ASCII bytes + "é" (2 UTF-8 bytes) = 2049.
  auto dec = UserMetadataFromHeaders({{"x-amz-meta-a", std::string(2046, 'v') + "\xe9"}});
  ASSERT_FALSE(dec.ok());
  EXPECT_TRUE(UserMetadataFromHeaders({{"x-amz-meta-a", std::string(1023, 'v')},
                                       {"x-amz-meta-b", std::string(1023, 'v')}})
                  .ok());
}

}  // namespace
}  // namespace kvcs::s3
