// ToS3Error: typed store failures become the S3 error a client expects.
#include "s3/s3_error.h"

#include <gtest/gtest.h>

#include "store/object_store.h"

namespace kvcs::s3 {
namespace {

using store::StoreError;

Status StoreErr(Code code, StoreError e, std::string message) {
  return Status(code, std::move(message), static_cast<int>(e));
}

// A full RADOS pool (rados_store: -ENOSPC / -EDQUOT) is 507 InsufficientStorage, not a 400 about
// the request: the client did nothing wrong and may retry later or elsewhere.
TEST(S3ErrorTest, FullStorageIs507InsufficientStorage) {
  Status full = StoreErr(Code::kResourceExhausted, StoreError::kInsufficientStorage,
                         "rados: write: No space left on device (the pool is full)");
  EXPECT_EQ(ToS3Error(full), S3Error::kInsufficientStorage);
  S3ErrorInfo info = Describe(S3Error::kInsufficientStorage);
  EXPECT_EQ(info.http_status, 507);
  EXPECT_EQ(std::string(info.code), "InsufficientStorage");
  // Other exhaustion stays what it was.
  EXPECT_EQ(ToS3Error(StoreErr(Code::kResourceExhausted, StoreError::kEntityTooLarge, "big")),
            S3Error::kEntityTooLarge);
}

}  // namespace
}  // namespace kvcs::s3
