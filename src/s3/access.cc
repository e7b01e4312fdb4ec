// Bucket ownership checks. See access.h.
#include "s3/access.h"

#include <string>

#include "s3/s3_error.h"

namespace kvcs::s3 {

Status CheckBucketAccess(const store::BucketInfo& bucket, std::string_view user_id) {
  if (bucket.owner.empty() && !user_id.empty()) return Status::Ok();
  if (!user_id.empty() && bucket.owner == user_id) return Status::Ok();
  return S3Status(S3Error::kAccessDenied, "Access Denied");
}

Status CheckBucketAccess(store::ObjectStore& store, std::string_view bucket,
                         std::string_view user_id) {
  auto info = store.HeadBucket(bucket);
  if (!info.ok()) return info.status();
  return CheckBucketAccess(*info, user_id);
}

}  // namespace kvcs::s3
