// ForwardingStore: an ObjectStore that forwards every call to another, for decorators that
// change one or two calls (objcache::BlockEventStore reports deletes; tests gate reads) and
// inherit the rest. Thread-safe as the wrapped store is; the wrapped store outlives this.
#ifndef KVCS_STORE_FORWARDING_STORE_H_
#define KVCS_STORE_FORWARDING_STORE_H_

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "store/object_store.h"

namespace kvcs::store {

class ForwardingStore : public ObjectStore {
 public:
  explicit ForwardingStore(ObjectStore& inner) : inner_(&inner) {}

  Status Delete(std::string_view b, std::string_view k) override { return inner_->Delete(b, k); }
  Status CreateBucket(std::string_view b) override { return inner_->CreateBucket(b); }
  Status CreateBucketOwnedBy(std::string_view b, std::string_view owner) override {
    return inner_->CreateBucketOwnedBy(b, owner);
  }
  Status DeleteBucket(std::string_view b) override { return inner_->DeleteBucket(b); }
  Result<BucketInfo> HeadBucket(std::string_view b) override { return inner_->HeadBucket(b); }
  Result<std::vector<BucketInfo>> ListBuckets() override { return inner_->ListBuckets(); }
  Result<std::unique_ptr<ObjectWriter>> Put(std::string_view b, std::string_view k,
                                            PutOptions o) override {
    return inner_->Put(b, k, std::move(o));
  }
  Result<std::shared_ptr<const ObjectReader>> Open(std::string_view b,
                                                   std::string_view k) override {
    return inner_->Open(b, k);
  }
  std::vector<Result<std::shared_ptr<const ObjectReader>>> OpenMany(
      std::string_view b, std::span<const std::string> keys) override {
    return inner_->OpenMany(b, keys);
  }
  Result<ObjectMeta> Head(std::string_view b, std::string_view k) override {
    return inner_->Head(b, k);
  }
  Result<ListResult> List(std::string_view b, const ListOptions& o) override {
    return inner_->List(b, o);
  }
  Result<ObjectMeta> Copy(std::string_view sb, std::string_view sk, std::string_view db,
                          std::string_view dk, std::optional<PutOptions> o) override {
    return inner_->Copy(sb, sk, db, dk, std::move(o));
  }
  void ReadMany(std::span<RangeRead> ranges) override { inner_->ReadMany(ranges); }
  Result<std::string> CreateMultipart(std::string_view b, std::string_view k,
                                      PutOptions o) override {
    return inner_->CreateMultipart(b, k, std::move(o));
  }
  Result<std::unique_ptr<ObjectWriter>> PutPart(std::string_view b, std::string_view k,
                                                std::string_view upload_id, int part_number,
                                                PutOptions o) override {
    return inner_->PutPart(b, k, upload_id, part_number, std::move(o));
  }
  Result<std::vector<PartInfo>> ListParts(std::string_view b, std::string_view k,
                                          std::string_view upload_id) override {
    return inner_->ListParts(b, k, upload_id);
  }
  Result<ObjectMeta> CompleteMultipart(std::string_view b, std::string_view k,
                                       std::string_view upload_id,
                                       std::span<const CompletePart> parts) override {
    return inner_->CompleteMultipart(b, k, upload_id, parts);
  }
  Status AbortMultipart(std::string_view b, std::string_view k,
                        std::string_view upload_id) override {
    return inner_->AbortMultipart(b, k, upload_id);
  }
  Result<std::vector<UploadInfo>> ListMultipartUploads(std::string_view b,
                                                       std::string_view prefix) override {
    return inner_->ListMultipartUploads(b, prefix);
  }

 protected:
  ObjectStore& inner() const { return *inner_; }

 private:
  ObjectStore* inner_;
};

}  // namespace kvcs::store

#endif  // KVCS_STORE_FORWARDING_STORE_H_
