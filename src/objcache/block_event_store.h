// BlockEventStore: an ObjectStore that forwards every call to another and reports each block
// object deleted through it (an S3 DELETE or multi-object delete of a key of the block layout,
// block_layout.h) to BlockEvents::OnDeleted, so that a holder can withdraw it from an index.
// Only successful deletes of keys that parse as block object keys are reported, in the bucket
// `kv_bucket` (the bucket the KVSP endpoints serve; blocks elsewhere are not announced).
//
// Thread-safe as the wrapped store is; both the store and the events outlive this.
#ifndef KVCS_OBJCACHE_BLOCK_EVENT_STORE_H_
#define KVCS_OBJCACHE_BLOCK_EVENT_STORE_H_

#include <string>

#include "objcache/block_events.h"
#include "store/object_store.h"

namespace kvcs::objcache {

class BlockEventStore final : public store::ObjectStore {
 public:
  BlockEventStore(store::ObjectStore& inner, BlockEvents& events, std::string kv_bucket)
      : inner_(inner), events_(events), kv_bucket_(std::move(kv_bucket)) {}

  Status Delete(std::string_view bucket, std::string_view key) override;

  // Everything else is forwarded unchanged.
  Status CreateBucket(std::string_view b) override { return inner_.CreateBucket(b); }
  Status CreateBucketOwnedBy(std::string_view b, std::string_view owner) override {
    return inner_.CreateBucketOwnedBy(b, owner);
  }
  Status DeleteBucket(std::string_view b) override { return inner_.DeleteBucket(b); }
  Result<store::BucketInfo> HeadBucket(std::string_view b) override { return inner_.HeadBucket(b); }
  Result<std::vector<store::BucketInfo>> ListBuckets() override { return inner_.ListBuckets(); }
  Result<std::unique_ptr<store::ObjectWriter>> Put(std::string_view b, std::string_view k,
                                                   store::PutOptions o) override {
    return inner_.Put(b, k, std::move(o));
  }
  Result<std::shared_ptr<const store::ObjectReader>> Open(std::string_view b,
                                                          std::string_view k) override {
    return inner_.Open(b, k);
  }
  std::vector<Result<std::shared_ptr<const store::ObjectReader>>> OpenMany(
      std::string_view b, std::span<const std::string> keys) override {
    return inner_.OpenMany(b, keys);
  }
  Result<store::ObjectMeta> Head(std::string_view b, std::string_view k) override {
    return inner_.Head(b, k);
  }
  Result<store::ListResult> List(std::string_view b, const store::ListOptions& o) override {
    return inner_.List(b, o);
  }
  Result<store::ObjectMeta> Copy(std::string_view sb, std::string_view sk, std::string_view db,
                                 std::string_view dk, std::optional<store::PutOptions> o) override {
    return inner_.Copy(sb, sk, db, dk, std::move(o));
  }
  void ReadMany(std::span<store::RangeRead> ranges) override { inner_.ReadMany(ranges); }
  Result<std::string> CreateMultipart(std::string_view b, std::string_view k,
                                      store::PutOptions o) override {
    return inner_.CreateMultipart(b, k, std::move(o));
  }
  Result<std::unique_ptr<store::ObjectWriter>> PutPart(std::string_view b, std::string_view k,
                                                       std::string_view upload_id, int part_number,
                                                       store::PutOptions o) override {
    return inner_.PutPart(b, k, upload_id, part_number, std::move(o));
  }
  Result<std::vector<store::PartInfo>> ListParts(std::string_view b, std::string_view k,
                                                 std::string_view upload_id) override {
    return inner_.ListParts(b, k, upload_id);
  }
  Result<store::ObjectMeta> CompleteMultipart(std::string_view b, std::string_view k,
                                              std::string_view upload_id,
                                              std::span<const store::CompletePart> parts) override {
    return inner_.CompleteMultipart(b, k, upload_id, parts);
  }
  Status AbortMultipart(std::string_view b, std::string_view k,
                        std::string_view upload_id) override {
    return inner_.AbortMultipart(b, k, upload_id);
  }
  Result<std::vector<store::UploadInfo>> ListMultipartUploads(std::string_view b,
                                                              std::string_view prefix) override {
    return inner_.ListMultipartUploads(b, prefix);
  }

 private:
  store::ObjectStore& inner_;
  BlockEvents& events_;
  const std::string kv_bucket_;
};

}  // namespace kvcs::objcache

#endif  // KVCS_OBJCACHE_BLOCK_EVENT_STORE_H_
