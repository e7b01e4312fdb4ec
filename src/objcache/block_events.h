// BlockEvents: the hook through which an ObjectCache Service tells its owner which KV blocks it
// now holds and which it no longer holds, so that the owner can announce them (kvcs store
// registers them with a KVSP Index Service; that wiring lives in the CLI, not here).
//
//   OnStored   after an aggregated PUT committed its containers (only those stored durably),
//              with the chain's anchor when the PUT wrote a prefix record.
//   OnDeleted  after a block object was deleted through the store (an S3 DELETE, a
//              multi-object delete), by BlockEventStore (block_event_store.h).
//
// Both are called on the server's threads, after the answer is decided and before it is sent:
// implementations must not block (queue the work). They may be called concurrently.
#ifndef KVCS_OBJCACHE_BLOCK_EVENTS_H_
#define KVCS_OBJCACHE_BLOCK_EVENTS_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "common/crypto.h"
#include "kvsp/codec.h"

namespace kvcs::objcache {

// One stored block: where it is (bucket, scope) and what the container holds.
struct StoredBlock {
  Digest scope_id{};
  Digest compat_id{};
  Digest block_key{};
  kvsp::Codec codec = kvsp::Codec::kRaw;
  uint32_t layer_first = 0;
  uint32_t layer_count = 0;
};

// One deleted block object (one codec of one block).
struct DeletedBlock {
  Digest scope_id{};
  Digest compat_id{};
  Digest block_key{};
  kvsp::Codec codec = kvsp::Codec::kRaw;
  bool other_codecs_remain = false;  // the block is still stored in another codec
};

class BlockEvents {
 public:
  virtual ~BlockEvents() = default;
  // `blocks` in the PUT's order; `anchor` is the last Block Key of the chain when the PUT wrote
  // its prefix record (every block of the chain is then among `blocks`).
  virtual void OnStored(const std::string& bucket, std::span<const StoredBlock> blocks,
                        std::optional<Digest> anchor) = 0;
  virtual void OnDeleted(const std::string& bucket, const DeletedBlock& block) = 0;
};

}  // namespace kvcs::objcache

#endif  // KVCS_OBJCACHE_BLOCK_EVENTS_H_
