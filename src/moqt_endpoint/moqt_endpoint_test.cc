// Unit tests of the endpoint's pure helpers (URL and namespace parsing, close descriptions). The
// endpoints themselves are tested end to end over real QUIC in tests/moqt.
#include "moqt_endpoint/moqt_endpoint.h"

#include <gtest/gtest.h>

namespace kvcs::moqt {
namespace {

TEST(MoqtUrlTest, Good) {
  struct Case {
    std::string url, host, path, authority;
    uint16_t port;
  };
  std::vector<Case> cases = {
      {"moqt://127.0.0.1:4443", "127.0.0.1", "", "127.0.0.1:4443", 4443},
      {"moqt://relay.example:443/moq/x", "relay.example", "/moq/x", "relay.example:443", 443},
      {"moqt://[::1]:9/", "::1", "/", "[::1]:9", 9},
  };
  for (const Case& c : cases) {
    auto u = ParseMoqtUrl(c.url);
    ASSERT_TRUE(u.ok()) << c.url << ": " << u.status().ToString();
    EXPECT_EQ(u->host, c.host);
    EXPECT_EQ(u->port, c.port);
    EXPECT_EQ(u->path, c.path);
    EXPECT_EQ(u->authority(), c.authority);
  }
}

TEST(MoqtUrlTest, BadIsTypedAndSaysWhy) {
  std::vector<std::pair<std::string, std::string>> cases = {
      {"http://x:1", "not a moqt:// URL"}, {"moqt://host", "no port"},
      {"moqt://:443", "no host"},          {"moqt://h:0", "bad port"},
      {"moqt://h:70000", "bad port"},      {"moqt://h:12x", "bad port"},
      {"moqt://[::1/x", "unterminated"},   {"moqt://[::1]/x", "missing :port"},
      {"", "not a moqt:// URL"},
  };
  for (const auto& [url, why] : cases) {
    auto u = ParseMoqtUrl(url);
    ASSERT_FALSE(u.ok()) << url;
    EXPECT_EQ(u.status().code(), Code::kInvalidArgument);
    EXPECT_NE(u.status().message().find(why), std::string::npos) << u.status().message();
  }
}

TEST(MoqtNamespaceTest, ParseAndPrint) {
  EXPECT_EQ(*ParseNamespace("a/b/c"), (TrackNamespace{"a", "b", "c"}));
  EXPECT_EQ(*ParseNamespace(""), TrackNamespace{});
  EXPECT_EQ(NamespaceToString({"kvcs-1", "demo"}), "kvcs-1/demo");
  // Binary fields as 0x<hex>, either case in, lowercase out; printable fields stay literal.
  const TrackNamespace bin{"kvcs-demo", std::string("\x00\xff/", 3), "0xab", "a b"};
  EXPECT_EQ(NamespaceToString(bin), "kvcs-demo/0x00ff2f/0x30786162/a b");
  EXPECT_EQ(*ParseNamespace(NamespaceToString(bin)), bin);
  EXPECT_EQ(*ParseNamespace("x/0xABcd"), (TrackNamespace{"x", "\xab\xcd"}));
  for (std::string bad : {"a//b", "/a", "a/", "0x", "a/0xabc", "a/0xzz"}) {
    auto n = ParseNamespace(bad);
    ASSERT_FALSE(n.ok()) << bad;
    EXPECT_EQ(n.status().code(), Code::kInvalidArgument);
  }
}

TEST(SessionEndTest, Descriptions) {
  SessionEnd e;
  e.handshake_completed = true;
  e.transport.kind = transport::CloseInfo::Kind::kApplication;
  e.transport.code = static_cast<uint64_t>(SessionError::kProtocolViolation);
  e.transport.by_peer = true;
  e.transport.reason = "bad message";
  EXPECT_EQ(e.ToString(), "MOQT PROTOCOL_VIOLATION (0x3) from the peer: bad message");
  SessionEnd h;
  h.transport.kind = transport::CloseInfo::Kind::kHandshakeTimeout;
  EXPECT_EQ(h.ToString(), "handshake timeout");
}

}  // namespace
}  // namespace kvcs::moqt
