// Who may do what with a bucket and the objects in it: ownership plus ACLs (s3/acl.h).
//
// Every bucket records the user id that created it (store::BucketInfo::owner). Objects belong to
// their bucket's owner (S3's default "bucket owner enforced" object ownership): the owner may do
// everything with the bucket, its objects and its uploads. Others (and anonymous requests, an
// empty user id) get only what an ACL grants them, S3's mapping of ACL permissions:
//   bucket READ        list objects (v1, v2), HEAD the bucket, list multipart uploads
//   bucket WRITE       PUT / DELETE / copy into / multipart uploads of objects in the bucket
//   bucket READ_ACP    GetBucketAcl;   bucket WRITE_ACP  PutBucketAcl
//   object READ        GET / HEAD the object, use it as a copy source;
//   object READ_ACP    GetObjectAcl;   object WRITE_ACP  PutObjectAcl
//   FULL_CONTROL       all of the above on what it is granted on
// DeleteBucket, GetBucketLocation and GetBucketVersioning stay the owner's. Everything else is
// AccessDenied (403). A bucket without a recorded owner (made before owners existed) is open to
// every authenticated user, as every bucket was before; anonymous requests get what its ACL
// grants. The rules are in docs/protocols/s3-api.md "Access control".
//
// Used by the built-in handlers (handlers.cc) and by extensions (objcache's aggregated GET/PUT,
// owner only: CheckBucketAccess) with ExtensionRequest::user_id. Pure but for the overload that
// looks the bucket up (one HeadBucket on the store); thread-safe.
#ifndef KVCS_S3_ACCESS_H_
#define KVCS_S3_ACCESS_H_

#include <string_view>

#include "common/status.h"
#include "s3/acl.h"
#include "store/object_store.h"

namespace kvcs::s3 {

// True when `user_id` owns `bucket` (or the bucket has no owner and the user is authenticated).
bool IsBucketOwner(const store::BucketInfo& bucket, std::string_view user_id);

// Owner only (the aggregated extension: one check per request). OK when `user_id` owns `bucket`;
// the store's kNoSuchBucket (or other failure) when the bucket cannot be looked up;
// S3Error::kAccessDenied otherwise. An empty user_id (an anonymous request) owns nothing.
Status CheckBucketAccess(store::ObjectStore& store, std::string_view bucket,
                         std::string_view user_id);
// The same decision on an already looked-up bucket.
Status CheckBucketAccess(const store::BucketInfo& bucket, std::string_view user_id);

// OK when the owner, or the bucket's ACL grants `user_id` permission `p` on the bucket;
// AccessDenied otherwise (also for a damaged stored ACL: fail closed).
Status CheckBucketPermission(const store::BucketInfo& bucket, std::string_view user_id,
                             Permission p);

// OK when `user_id` owns the bucket of an object whose ObjectMeta::acl is `object_acl`, or that
// ACL grants it `p`; AccessDenied otherwise.
Status CheckObjectPermission(const store::BucketInfo& bucket, std::string_view object_acl,
                             std::string_view user_id, Permission p);

}  // namespace kvcs::s3

#endif  // KVCS_S3_ACCESS_H_
