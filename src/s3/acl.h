// S3 access control lists: the grants a bucket or an object carries beyond its owner's, how a
// request states them (canned `x-amz-acl`, `x-amz-grant-*` headers, the AccessControlPolicy XML
// of PutBucketAcl / PutObjectAcl), how GetBucketAcl / GetObjectAcl show them, and the compact
// text the store keeps (BucketInfo::acl, ObjectMeta::acl; opaque to the store).
//
// Grantees are configured users (canonical user id = the user id of s3/config.h) and the two
// groups AllUsers (anyone, also unsigned requests) and AuthenticatedUsers (any configured user).
// E-mail grantees are refused (NotImplemented). The owner's FULL_CONTROL is implicit: an empty
// Acl is S3's `private`. What each permission lets a user do is s3/access.h's.
// Rules and examples: docs/protocols/s3-api.md "Access control". Pure; thread-safe.
#ifndef KVCS_S3_ACL_H_
#define KVCS_S3_ACL_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "http/request.h"
#include "s3/config.h"

namespace kvcs::s3 {

inline constexpr char kAllUsersUri[] = "http://acs.amazonaws.com/groups/global/AllUsers";
inline constexpr char kAuthenticatedUsersUri[] =
    "http://acs.amazonaws.com/groups/global/AuthenticatedUsers";
// S3's limit on grants in one ACL.
inline constexpr size_t kMaxGrants = 100;

enum class Permission { kRead, kWrite, kReadAcp, kWriteAcp, kFullControl };

enum class GranteeKind { kUser, kAllUsers, kAuthenticatedUsers };

struct Grant {
  GranteeKind kind = GranteeKind::kUser;
  std::string user_id;  // kUser only
  Permission permission = Permission::kRead;

  bool operator==(const Grant&) const = default;
};

struct Acl {
  std::vector<Grant> grants;  // besides the owner's implicit FULL_CONTROL
};

// True when `acl` grants `user_id` (empty: an anonymous request) `p`; FULL_CONTROL implies every
// permission. AllUsers covers everyone, AuthenticatedUsers every non-empty user id.
bool AclGrants(const Acl& acl, std::string_view user_id, Permission p);

// The store's text for `acl` ("" for no grants) and back. DecodeAcl of damaged text fails with
// InternalError.
std::string EncodeAcl(const Acl& acl);
Result<Acl> DecodeAcl(std::string_view text);

// Whether a user id names a configured user (ServerConfig: see IsKnownUser).
using KnownUser = std::function<bool(std::string_view user_id)>;

// The ACL a request's `x-amz-acl` (private, public-read, public-read-write, authenticated-read,
// bucket-owner-read, bucket-owner-full-control) or `x-amz-grant-read|write|read-acp|write-acp|
// full-control` headers state; nullopt when it has neither. Both kinds at once → InvalidRequest;
// an unknown canned ACL or a malformed grant → InvalidArgument; an unknown user id →
// InvalidArgument; an e-mail grantee → NotImplemented.
Result<std::optional<Acl>> AclFromHeaders(const http::Request& request, const KnownUser& known);

// The grants of a PutBucketAcl / PutObjectAcl body (<AccessControlPolicy>); <Owner> is ignored
// (the owner does not change). Errors as AclFromHeaders', MalformedXML / MalformedACLError for a
// bad document.
Result<Acl> ParseAccessControlPolicy(std::string_view document, const KnownUser& known);

// GetBucketAcl / GetObjectAcl's body: <Owner> `owner`, its FULL_CONTROL grant, then `acl`'s
// grants. `user_by_id` gives a grantee's display name.
std::string AccessControlPolicyXml(const User& owner, const Acl& acl,
                                   const std::function<User(std::string_view)>& user_by_id);

}  // namespace kvcs::s3

#endif  // KVCS_S3_ACL_H_
