#include "s3/http_util.h"

#include <gtest/gtest.h>

#include "s3/config.h"

namespace kvcs::s3 {
namespace {

TEST(HttpUtil, Ranges) {
  struct Case {
    const char* header;
    uint64_t size;
    RangeKind kind;
    uint64_t first, last;
  } cases[] = {
      {"bytes=0-9", 100, RangeKind::kSatisfiable, 0, 9},
      {"bytes=90-200", 100, RangeKind::kSatisfiable, 90, 99},
      {"bytes=50-", 100, RangeKind::kSatisfiable, 50, 99},
      {"bytes=-10", 100, RangeKind::kSatisfiable, 90, 99},
      {"bytes=-1000", 100, RangeKind::kSatisfiable, 0, 99},
      {"bytes=100-", 100, RangeKind::kUnsatisfiable, 0, 0},
      {"bytes=0-", 0, RangeKind::kUnsatisfiable, 0, 0},
      {"bytes=-0", 100, RangeKind::kUnsatisfiable, 0, 0},
      {"bytes=5-3", 100, RangeKind::kNone, 0, 0},
      {"bytes=0-1,5-6", 100, RangeKind::kNone, 0, 0},
      {"items=0-1", 100, RangeKind::kNone, 0, 0},
      {"bytes=a-b", 100, RangeKind::kNone, 0, 0},
      {"bytes=99999999999999999999-", 100, RangeKind::kNone, 0, 0},
  };
  for (const Case& c : cases) {
    ByteRange r;
    RangeKind k = ParseRange(c.header, c.size, &r);
    EXPECT_EQ(k, c.kind) << c.header;
    if (k == RangeKind::kSatisfiable) {
      EXPECT_EQ(r.first, c.first) << c.header;
      EXPECT_EQ(r.last, c.last) << c.header;
    }
  }
}

TEST(HttpUtil, UriAndQuery) {
  EXPECT_EQ(UriEncode("a b/c~d+é", false), "a%20b/c~d%2B%C3%A9");
  EXPECT_EQ(UriEncode("a/b", true), "a%2Fb");
  EXPECT_EQ(*UriDecode("a%20b%2Fc+"), "a b/c+");
  EXPECT_FALSE(UriDecode("%2").ok());
  EXPECT_FALSE(UriDecode("%zz").ok());
  auto q = ParseQuery("list-type=2&prefix=a%2Fb&delete&&x=");
  ASSERT_TRUE(q.ok());
  ASSERT_EQ(q->size(), 4u);
  EXPECT_EQ((*q)[1].second, "a/b");
  EXPECT_EQ((*q)[2].first, "delete");
  EXPECT_EQ((*q)[2].second, "");
}

TEST(HttpUtil, Dates) {
  EXPECT_EQ(FormatHttpDate(1369353600), "Fri, 24 May 2013 00:00:00 GMT");
  EXPECT_EQ(ParseHttpDate("Fri, 24 May 2013 00:00:00 GMT"), 1369353600);
  EXPECT_EQ(FormatIsoDate(1369353600123), "2013-05-24T00:00:00.123Z");
  EXPECT_EQ(ParseAmzDate("20130524T000000Z"), 1369353600);
  EXPECT_FALSE(ParseAmzDate("20130524T000000").has_value());
  EXPECT_FALSE(ParseAmzDate("2013-05-24T00:00Z").has_value());
}

TEST(HttpUtil, Addressing) {
  std::vector<std::string> vh = {"localhost"};
  auto a = ResolveAddress("127.0.0.1:9000", "/bkt/dir/key", vh);
  EXPECT_EQ(a.bucket, "bkt");
  EXPECT_EQ(a.key, "dir/key");
  EXPECT_FALSE(a.virtual_hosted);
  a = ResolveAddress("bkt.localhost:9000", "/dir/key", vh);
  EXPECT_EQ(a.bucket, "bkt");
  EXPECT_EQ(a.key, "dir/key");
  EXPECT_TRUE(a.virtual_hosted);
  a = ResolveAddress("localhost:9000", "/bkt", vh);
  EXPECT_EQ(a.bucket, "bkt");
  EXPECT_EQ(a.key, "");
  a = ResolveAddress("127.0.0.1", "/", vh);
  EXPECT_EQ(a.bucket, "");
  EXPECT_EQ(XmlEscape("<a&'\">"), "&lt;a&amp;&apos;&quot;&gt;");
}

TEST(Config, ParsesKeysAndRejectsJunk) {
  ServerConfig c;
  ASSERT_TRUE(ParseConfig("# dev\nregion = eu-west-1\nvirtual_host = s3.local\n[key AK1]\n"
                          "secret = S1 # comment\n[key AK2]\nsecret=S2\n",
                          &c)
                  .ok());
  EXPECT_EQ(c.region, "eu-west-1");
  EXPECT_EQ(c.virtual_hosts, std::vector<std::string>{"s3.local"});
  EXPECT_EQ(c.secrets.at("AK1"), "S1");
  EXPECT_EQ(c.secrets.at("AK2"), "S2");
  for (const char* bad : {"[key]\n", "nonsense\n", "[key A]\nother = 1\n", "bogus = 1\n",
                          "[key A\n", "[key A]\nsecret =\n"}) {
    ServerConfig c2;
    EXPECT_FALSE(ParseConfig(bad, &c2).ok()) << bad;
  }
}

}  // namespace
}  // namespace kvcs::s3
