// S3-only helpers (ISO and SigV4 dates, addressing, XML escaping) and the config parser. The
// generic HTTP helpers are tested in src/http/helpers_test.cc.
#include "s3/http_util.h"

#include <gtest/gtest.h>

#include "s3/config.h"

namespace kvcs::s3 {
namespace {

TEST(HttpUtil, Dates) {
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

// [key] sections name the user a key acts as; a key without user = is its own user.
TEST(Config, KeysActAsUsers) {
  ServerConfig c;
  ASSERT_TRUE(ParseConfig("[key AK1]\nsecret = S1\n[key BK1]\nsecret = S2\nuser = bob\n"
                          "display_name = Bob B\n[key BK2]\nsecret = S3\nuser = bob\n"
                          "[key CK]\nsecret = S4\ndisplay_name = Carol\n",
                          &c)
                  .ok());
  User a = UserOf(c, "AK1");
  EXPECT_EQ(a.id, "AK1");
  EXPECT_EQ(a.display_name, "AK1");
  User b1 = UserOf(c, "BK1");
  EXPECT_EQ(b1.id, "bob");
  EXPECT_EQ(b1.display_name, "Bob B");
  User b2 = UserOf(c, "BK2");
  EXPECT_EQ(b2.id, "bob");
  EXPECT_EQ(b2.display_name, "bob");
  User carol = UserOf(c, "CK");
  EXPECT_EQ(carol.id, "CK");
  EXPECT_EQ(carol.display_name, "Carol");
  EXPECT_EQ(UserOf(c, "").id, "");  // anonymous: nobody
  for (const char* bad : {"[key A]\nuser =\n", "[key A]\ndisplay_name =\n", "user = x\n"}) {
    ServerConfig c2;
    EXPECT_FALSE(ParseConfig(bad, &c2).ok()) << bad;
  }
}

}  // namespace
}  // namespace kvcs::s3
