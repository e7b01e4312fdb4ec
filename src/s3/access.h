// Bucket ownership: who may use a bucket and the objects in it.
//
// Every bucket records the user id that created it (store::BucketInfo::owner). Objects belong to
// their bucket's owner (S3's default "bucket owner enforced" object ownership), so one check on
// the bucket decides every operation on it and its objects: list, read, write, delete, multipart
// uploads, and its use as a copy source. Only the owner passes; others get AccessDenied (403).
// A bucket without a recorded owner (made before owners existed, or kept by a store that cannot
// record one, see store::ObjectStore::CreateBucketOwnedBy) is open to every authenticated user,
// as every bucket was before. The rules are in docs/protocols/s3-api.md "Ownership".
//
// Used by the built-in handlers (handlers.cc) and by extensions (objcache's aggregated GET/PUT)
// with ExtensionRequest::user_id. Thread-safe (one HeadBucket on the store).
#ifndef KVCS_S3_ACCESS_H_
#define KVCS_S3_ACCESS_H_

#include <string_view>

#include "common/status.h"
#include "store/object_store.h"

namespace kvcs::s3 {

// OK when `user_id` may use `bucket`; the store's kNoSuchBucket (or other failure) when the
// bucket cannot be looked up; S3Error::kAccessDenied when another user owns it. An empty user_id
// (an anonymous request) owns nothing.
Status CheckBucketAccess(store::ObjectStore& store, std::string_view bucket,
                         std::string_view user_id);

// The same decision on an already looked-up bucket. Pure.
Status CheckBucketAccess(const store::BucketInfo& bucket, std::string_view user_id);

}  // namespace kvcs::s3

#endif  // KVCS_S3_ACCESS_H_
