#include "profile/namespace.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace kvcs::profile
