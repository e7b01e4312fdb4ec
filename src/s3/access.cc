// Ownership and ACL checks. See access.h.
#include "s3/access.h"

#include <string>

#include "s3/s3_error.h"

namespace kvcs::s3 {
namespace {

Status Denied() { return S3Status(S3Error::kAccessDenied, "Access Denied"); }

// Whether the stored ACL text grants `p`; a damaged ACL grants nothing.
bool StoredAclGrants(std::string_view text, std::string_view user_id, Permission p) {
  if (text.empty()) return false;  // private
  auto acl = DecodeAcl(text);
  return acl.ok() && AclGrants(*acl, user_id, p);
}

}  // namespace

bool IsBucketOwner(const store::BucketInfo& bucket, std::string_view user_id) {
  if (user_id.empty()) return false;
  return bucket.owner.empty() || bucket.owner == user_id;
}

Status CheckBucketAccess(const store::BucketInfo& bucket, std::string_view user_id) {
  return IsBucketOwner(bucket, user_id) ? Status::Ok() : Denied();
}

Status CheckBucketAccess(store::ObjectStore& store, std::string_view bucket,
                         std::string_view user_id) {
  auto info = store.HeadBucket(bucket);
  if (!info.ok()) return info.status();
  return CheckBucketAccess(*info, user_id);
}

Status CheckBucketPermission(const store::BucketInfo& bucket, std::string_view user_id,
                             Permission p) {
  return CheckObjectPermission(bucket, bucket.acl, user_id, p);  // the same rule, the bucket's ACL
}

Status CheckObjectPermission(const store::BucketInfo& bucket, std::string_view object_acl,
                             std::string_view user_id, Permission p) {
  if (IsBucketOwner(bucket, user_id) || StoredAclGrants(object_acl, user_id, p)) {
    return Status::Ok();
  }
  return Denied();
}

}  // namespace kvcs::s3
