// The delete-reporting store. See block_event_store.h.
#include "objcache/block_event_store.h"

#include "objcache/block_layout.h"

namespace kvcs::objcache {

Status BlockEventStore::Delete(std::string_view bucket, std::string_view key) {
  Status s = inner().Delete(bucket, key);
  if (s.ok() && bucket == kv_bucket_) {
    if (auto name = ParseBlockObjectKey(key)) {
      DeletedBlock d{name->scope_id, name->compat_id, name->block_key, name->codec};
      // Another codec of the block may still be stored (one short listing; on failure assume
      // none, so the index never keeps a block the store lost).
      store::ListOptions lo;
      lo.prefix = BlockObjectKeyPrefix(name->scope_id, name->compat_id, name->block_key);
      lo.max_keys = 16;
      auto rest = inner().List(bucket, lo);
      if (rest.ok()) {
        for (const store::ObjectMeta& m : rest->objects) {
          if (ParseBlockObjectKey(m.key)) d.other_codecs_remain = true;
        }
      }
      events_.OnDeleted(std::string(bucket), d);
    }
  }
  return s;
}

}  // namespace kvcs::objcache
