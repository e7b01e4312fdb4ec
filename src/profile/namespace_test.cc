#include "profile/namespace.h"

#include <gtest/gtest.h>

#include <cctype>

#include "common/hex.h"

namespace kvcs::profile {
namespace {

Namespace Sample() {
  Namespace ns;
  for (size_t i = 0; i < 32; ++i) {
    ns.scope_id[i] = uint8_t(i);
    ns.compat_id[i] = uint8_t(0x40 + i);
    ns.anchor_key[i] = uint8_t(0x80 + i);
  }
  for (size_t i = 0; i < kPubIdSize; ++i) ns.pub_id[i] = uint8_t(0xf0 + i);
  return ns;
}

TEST(Namespace, BuildIsRawFieldsAndRoundTrips) {
  Namespace ns = Sample();
  TrackNamespace t = BuildNamespace(ns);
  ASSERT_EQ(t.size(), 5u);
  EXPECT_EQ(AsStringView(t[0]), "kvcs-1");
  EXPECT_EQ(t[1], Bytes(ns.scope_id.begin(), ns.scope_id.end()));
  EXPECT_EQ(t[2], Bytes(ns.compat_id.begin(), ns.compat_id.end()));
  EXPECT_EQ(t[3], Bytes(ns.anchor_key.begin(), ns.anchor_key.end()));
  EXPECT_EQ(t[4], Bytes(ns.pub_id.begin(), ns.pub_id.end()));
  auto back = ParseNamespace(t);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, ns);
}

TEST(Namespace, StrictParseErrors) {
  TrackNamespace good = BuildNamespace(Sample());
  struct Case {
    const char* what;
    TrackNamespace fields;
    NamespaceError want;
  };
  auto with = [&](size_t i, Bytes b) {
    TrackNamespace t = good;
    t[i] = std::move(b);
    return t;
  };
  auto drop_last = [&](size_t n) {
    TrackNamespace t = good;
    t.resize(t.size() - n);
    return t;
  };
  TrackNamespace six = good;
  six.push_back(Bytes{1});
  Bytes b31(31), b33(33), b15(15), b17(17);
  const Case cases[] = {
      {"empty", {}, NamespaceError::kWrongFieldCount},
      {"four fields", drop_last(1), NamespaceError::kWrongFieldCount},
      {"two fields", drop_last(3), NamespaceError::kWrongFieldCount},
      {"six fields", six, NamespaceError::kWrongFieldCount},
      {"tag kvcs-2", with(0, Bytes{'k', 'v', 'c', 's', '-', '2'}), NamespaceError::kBadTag},
      {"tag KVCS-1", with(0, Bytes{'K', 'V', 'C', 'S', '-', '1'}), NamespaceError::kBadTag},
      {"tag with NUL", with(0, Bytes{'k', 'v', 'c', 's', '-', '1', 0}), NamespaceError::kBadTag},
      {"empty tag", with(0, Bytes{}), NamespaceError::kBadTag},
      {"scope 31", with(1, b31), NamespaceError::kBadScopeIdSize},
      {"scope 33", with(1, b33), NamespaceError::kBadScopeIdSize},
      {"scope as hex", with(1, Bytes(64, 'a')), NamespaceError::kBadScopeIdSize},
      {"compat 31", with(2, b31), NamespaceError::kBadCompatIdSize},
      {"compat 33", with(2, b33), NamespaceError::kBadCompatIdSize},
      {"anchor 31", with(3, b31), NamespaceError::kBadAnchorKeySize},
      {"anchor empty", with(3, Bytes{}), NamespaceError::kBadAnchorKeySize},
      {"pub 15", with(4, b15), NamespaceError::kBadPubIdSize},
      {"pub 17", with(4, b17), NamespaceError::kBadPubIdSize},
      {"pub 32", with(4, Bytes(32)), NamespaceError::kBadPubIdSize},
  };
  for (const Case& c : cases) {
    auto r = ParseNamespace(c.fields);
    ASSERT_FALSE(r.ok()) << c.what;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << c.what;
    EXPECT_TRUE(r.status().Is(c.want))
        << c.what << ": got " << r.status().ToString() << ", want " << NamespaceErrorName(c.want);
  }
}

TEST(Namespace, Prefixes) {
  Namespace ns = Sample();
  TrackNamespace full = BuildNamespace(ns);
  TrackNamespace scope = ScopePrefix(ns.scope_id);
  TrackNamespace anchor = AnchorPrefix(ns.scope_id, ns.compat_id, ns.anchor_key);
  EXPECT_EQ(scope.size(), 2u);
  EXPECT_EQ(anchor.size(), 4u);
  EXPECT_TRUE(HasPrefix(full, scope));
  EXPECT_TRUE(HasPrefix(full, anchor));
  EXPECT_TRUE(HasPrefix(full, full));
  EXPECT_FALSE(HasPrefix(scope, full));
  Namespace other = ns;
  other.anchor_key[0] ^= 1;
  EXPECT_FALSE(HasPrefix(BuildNamespace(other), anchor));
  EXPECT_TRUE(HasPrefix(BuildNamespace(other), scope));
  other.scope_id[31] ^= 1;
  EXPECT_FALSE(HasPrefix(BuildNamespace(other), scope));
}

TEST(Namespace, PubIdsAreRandomAndToStringIsHex) {
  EXPECT_NE(NewPubId(), NewPubId());
  Namespace ns = Sample();
  std::string s = ToString(ns);
  EXPECT_EQ(s.substr(0, 7), "kvcs-1/");
  EXPECT_EQ(s.size(), 6u + 4 + 3 * 64 + 32);
  EXPECT_NE(s.find(ToHex(ns.pub_id)), std::string::npos);
}

// The text form: one table used for parsing, printing and the error of every malformed case.
TEST(Namespace, TextFormTable) {
  const Namespace ns = Sample();
  const std::string scope = ToHex(ns.scope_id), compat = ToHex(ns.compat_id),
                    anchor = ToHex(ns.anchor_key), pub = ToHex(ns.pub_id);
  const TrackNamespace full = BuildNamespace(ns);
  struct Row {
    std::string text;
    size_t fields;         // the prefix of `full` it parses to (0: an error)
    NamespaceError error;  // when fields == 0
  };
  std::string upper = scope;
  for (char& c : upper) c = char(std::toupper(c));
  const std::vector<Row> rows = {
      {"kvcs-1", 1, {}},
      {"kvcs-1/" + scope, 2, {}},
      {"kvcs-1/" + scope + "/" + compat, 3, {}},
      {"kvcs-1/" + scope + "/" + compat + "/" + anchor, 4, {}},
      {"kvcs-1/" + scope + "/" + compat + "/" + anchor + "/" + pub, 5, {}},
      {"kvcs-1/" + upper, 2, {}},  // either case in, lowercase out
      {"", 0, NamespaceError::kBadTag},
      {"kvcs-2/" + scope, 0, NamespaceError::kBadTag},
      {"KVCS-1/" + scope, 0, NamespaceError::kBadTag},
      {"kvcs-1/", 0, NamespaceError::kBadScopeIdSize},
      {"kvcs-1/" + scope.substr(2), 0, NamespaceError::kBadScopeIdSize},
      {"kvcs-1/" + scope + "00", 0, NamespaceError::kBadScopeIdSize},
      {"kvcs-1/" + scope.substr(1) + "g", 0, NamespaceError::kBadHex},
      {"kvcs-1/" + scope + "/" + compat.substr(1), 0, NamespaceError::kBadCompatIdSize},
      {"kvcs-1/" + scope + "/" + compat + "/" + anchor + "x", 0, NamespaceError::kBadAnchorKeySize},
      {"kvcs-1/" + scope + "/" + compat + "/" + anchor + "/" + pub + "00", 0,
       NamespaceError::kBadPubIdSize},
      {"kvcs-1/" + scope + "/" + compat + "/" + anchor + "/" + pub + "/x", 0,
       NamespaceError::kWrongFieldCount},
      {"kvcs-1/" + scope + "/", 0, NamespaceError::kBadCompatIdSize},
  };
  for (const Row& r : rows) {
    auto t = ParseNamespaceText(r.text);
    if (r.fields == 0) {
      ASSERT_FALSE(t.ok()) << r.text;
      EXPECT_EQ(t.status().code(), Code::kInvalidArgument) << r.text;
      EXPECT_TRUE(t.status().Is(r.error)) << r.text << ": " << t.status().ToString();
      continue;
    }
    ASSERT_TRUE(t.ok()) << r.text << ": " << t.status().ToString();
    EXPECT_EQ(*t, TrackNamespace(full.begin(), full.begin() + r.fields)) << r.text;
    auto printed = NamespaceText(*t);
    ASSERT_TRUE(printed.has_value()) << r.text;
    std::string lower = r.text;
    for (char& c : lower) c = char(std::tolower(c));
    EXPECT_EQ(*printed, lower);
  }
  EXPECT_EQ(*ParseNamespace(*ParseNamespaceText(ToString(ns))), ns);
  // Not a KVCS namespace or prefix: no text form.
  EXPECT_FALSE(NamespaceText({}).has_value());
  EXPECT_FALSE(NamespaceText({Bytes{0x6b, 0x76}}).has_value());
  TrackNamespace short_pub = full;
  short_pub[4].pop_back();
  EXPECT_FALSE(NamespaceText(short_pub).has_value());
  TrackNamespace six = full;
  six.push_back(Bytes{1});
  EXPECT_FALSE(NamespaceText(six).has_value());
}

}  // namespace
}  // namespace kvcs::profile
