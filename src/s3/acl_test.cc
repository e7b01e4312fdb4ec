#include "s3/acl.h"

#include <gtest/gtest.h>

#include "s3/access.h"
#include "s3/s3_error.h"

namespace kvcs::s3 {
namespace {

bool Known(std::string_view id) { return id == "alice" || id == "bob"; }

http::Request WithHeaders(http::HeaderList h) {
  http::Request r;
  r.headers = std::move(h);
  return r;
}

TEST(Acl, CannedAcls) {
  auto acl = AclFromHeaders(WithHeaders({{"x-amz-acl", "public-read-write"}}), Known);
  ASSERT_TRUE(acl.ok() && acl->has_value());
  EXPECT_TRUE(AclGrants(**acl, "", Permission::kWrite));
  EXPECT_FALSE(AclGrants(**acl, "", Permission::kReadAcp));
  acl = AclFromHeaders(WithHeaders({{"X-Amz-Acl", "authenticated-read"}}), Known);
  ASSERT_TRUE(acl.ok() && acl->has_value());
  EXPECT_TRUE(AclGrants(**acl, "bob", Permission::kRead));
  EXPECT_FALSE(AclGrants(**acl, "", Permission::kRead));
  acl = AclFromHeaders(WithHeaders({{"x-amz-acl", "private"}}), Known);
  ASSERT_TRUE(acl.ok() && acl->has_value());
  EXPECT_TRUE((*acl)->grants.empty());
  EXPECT_FALSE(AclFromHeaders(WithHeaders({}), Known)->has_value());
  EXPECT_EQ(
      ToS3Error(AclFromHeaders(WithHeaders({{"x-amz-acl", "log-delivery-write"}}), Known).status()),
      S3Error::kInvalidArgument);
}

TEST(Acl, GrantHeaders) {
  auto acl = AclFromHeaders(
      WithHeaders({{"x-amz-grant-read", "id=\"bob\", uri=\"" + std::string(kAllUsersUri) + "\""},
                   {"x-amz-grant-full-control", "id=alice"}}),
      Known);
  ASSERT_TRUE(acl.ok() && acl->has_value()) << acl.status().ToString();
  EXPECT_EQ((*acl)->grants.size(), 3u);
  EXPECT_TRUE(AclGrants(**acl, "alice", Permission::kWriteAcp));  // FULL_CONTROL implies it
  EXPECT_FALSE(AclGrants(**acl, "bob", Permission::kWrite));
  auto err = [](http::HeaderList h) {
    return ToS3Error(AclFromHeaders(WithHeaders(h), Known).status());
  };
  EXPECT_EQ(err({{"x-amz-grant-read", "id=\"carol\""}}), S3Error::kInvalidArgument);
  EXPECT_EQ(err({{"x-amz-grant-read", "uri=\"http://example.com/group\""}}),
            S3Error::kInvalidArgument);
  EXPECT_EQ(err({{"x-amz-grant-read", "emailAddress=\"a@b.c\""}}), S3Error::kNotImplemented);
  EXPECT_EQ(err({{"x-amz-grant-read", "bob"}}), S3Error::kInvalidArgument);
  EXPECT_EQ(err({{"x-amz-acl", "private"}, {"x-amz-grant-read", "id=bob"}}),
            S3Error::kInvalidRequest);
}

TEST(Acl, EncodeDecodeRoundTrip) {
  Acl acl;
  acl.grants = {{GranteeKind::kUser, "bob", Permission::kReadAcp},
                {GranteeKind::kAllUsers, "", Permission::kRead},
                {GranteeKind::kAuthenticatedUsers, "", Permission::kFullControl}};
  auto back = DecodeAcl(EncodeAcl(acl));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->grants, acl.grants);
  EXPECT_TRUE(DecodeAcl("")->grants.empty());
  EXPECT_FALSE(DecodeAcl("x READ bob").ok());
  EXPECT_FALSE(DecodeAcl("u SOMETHING bob").ok());
}

TEST(Acl, AccessControlPolicyXml) {
  std::string doc =
      "<AccessControlPolicy xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Owner><ID>alice"
      "</ID></Owner><AccessControlList><Grant><Grantee xmlns:xsi=\"http://www.w3.org/2001/"
      "XMLSchema-instance\" xsi:type=\"CanonicalUser\"><ID>bob</ID></Grantee><Permission>WRITE"
      "</Permission></Grant><Grant><Grantee xsi:type=\"Group\"><URI>" +
      std::string(kAuthenticatedUsersUri) +
      "</URI></Grantee><Permission>READ</Permission></Grant></AccessControlList>"
      "</AccessControlPolicy>";
  auto acl = ParseAccessControlPolicy(doc, Known);
  ASSERT_TRUE(acl.ok()) << acl.status().ToString();
  ASSERT_EQ(acl->grants.size(), 2u);
  EXPECT_TRUE(AclGrants(*acl, "bob", Permission::kWrite));
  std::string x = AccessControlPolicyXml(User{"alice", "Alice"}, *acl, [](std::string_view id) {
    return User{std::string(id), "Bob"};
  });
  EXPECT_NE(x.find("<ID>alice</ID><DisplayName>Alice</DisplayName>"), std::string::npos) << x;
  EXPECT_NE(x.find("<ID>bob</ID><DisplayName>Bob</DisplayName></Grantee><Permission>WRITE"),
            std::string::npos)
      << x;
  EXPECT_NE(x.find(kAuthenticatedUsersUri), std::string::npos);
  EXPECT_EQ(ToS3Error(ParseAccessControlPolicy("<Other/>", Known).status()),
            S3Error::kMalformedXML);
}

TEST(Access, OwnerAndGrants) {
  store::BucketInfo b{"bkt", 0, "alice", ""};
  EXPECT_TRUE(CheckBucketPermission(b, "alice", Permission::kWrite).ok());
  EXPECT_FALSE(CheckBucketPermission(b, "bob", Permission::kRead).ok());
  EXPECT_FALSE(CheckBucketPermission(b, "", Permission::kRead).ok());
  Acl acl;
  acl.grants = {{GranteeKind::kAllUsers, "", Permission::kRead}};
  b.acl = EncodeAcl(acl);
  EXPECT_TRUE(CheckBucketPermission(b, "", Permission::kRead).ok());
  EXPECT_FALSE(CheckBucketPermission(b, "bob", Permission::kWrite).ok());
  EXPECT_FALSE(CheckBucketAccess(b, "bob").ok());  // the aggregated paths: the owner only
  EXPECT_TRUE(CheckObjectPermission(b, "", "alice", Permission::kReadAcp).ok());
  EXPECT_FALSE(CheckObjectPermission(b, "", "bob", Permission::kRead).ok());
  EXPECT_TRUE(CheckObjectPermission(b, "u READ bob", "bob", Permission::kRead).ok());
  EXPECT_FALSE(CheckObjectPermission(b, "damaged", "bob", Permission::kRead).ok());
  store::BucketInfo ownerless{"old", 0, "", ""};
  EXPECT_TRUE(CheckBucketPermission(ownerless, "anyone", Permission::kWrite).ok());
  EXPECT_FALSE(CheckBucketPermission(ownerless, "", Permission::kRead).ok());
}

}  // namespace
}  // namespace kvcs::s3
