// BlockEventStore: an ObjectStore that forwards every call to another (store::ForwardingStore) and
// reports each block
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
#include "store/forwarding_store.h"

namespace kvcs::objcache {

class BlockEventStore final : public store::ForwardingStore {
 public:
  BlockEventStore(store::ObjectStore& inner, BlockEvents& events, std::string kv_bucket)
      : ForwardingStore(inner), events_(events), kv_bucket_(std::move(kv_bucket)) {}

  Status Delete(std::string_view bucket, std::string_view key) override;

 private:
  BlockEvents& events_;
  const std::string kv_bucket_;
};

}  // namespace kvcs::objcache

#endif  // KVCS_OBJCACHE_BLOCK_EVENT_STORE_H_
