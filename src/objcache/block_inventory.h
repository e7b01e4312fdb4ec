// BlockInventory: replays the KV blocks a bucket holds as BlockEvents::OnStored calls, so that a
// holder (kvcs store) can announce again what it has on disk after a restart, and renew those
// announcements while it runs, through the same hook an aggregated PUT uses (block_events.h).
//
// One pass walks the block layout (block_layout.h) of one bucket in key order with bounded List
// pages, reads each block object's container header (one small read) and checks that it is the
// block its name says (compat_id, block key, codec); objects that fail are skipped and counted.
// A block held in several codecs is reported once, with the first codec in name order. Blocks are
// reported in batches of at most `max_batch` (consecutive keys of one scope and compat, so a
// registration can carry many keys). Prefix records (…/prefix/<anchor>, which sort after the
// blocks of their scope and compat) are reported as their anchor block with the anchor, but only
// when every block of the record's chain was found in this pass; a scope and compat with more
// than `max_group_keys` blocks reports no anchors (counted in anchors_unchecked).
//
// Pacing: `pace` is called before each object read with the time to wait (so that the pass reads
// at most `max_blocks_per_s`); it returns false to end the pass early (a shutdown). Blocking: the
// pass runs on the caller's thread, reading the store and calling `events` (which may block to
// apply back-pressure). Thread-compatible; the store may be used concurrently by others (a block
// deleted during the pass may still be reported).
#ifndef KVCS_OBJCACHE_BLOCK_INVENTORY_H_
#define KVCS_OBJCACHE_BLOCK_INVENTORY_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "common/status.h"
#include "objcache/block_events.h"
#include "store/object_store.h"

namespace kvcs::objcache {

struct BlockInventoryOptions {
  size_t max_batch = 4096;          // blocks per OnStored call (an index registration's bound)
  double max_blocks_per_s = 2000;   // object reads per second at most; 0: unpaced
  size_t max_group_keys = 1 << 20;  // block keys remembered per (scope, compat) to check chains
};

struct BlockInventoryStats {
  uint64_t objects = 0;            // keys listed under kvsp/
  uint64_t blocks = 0;             // blocks reported
  uint64_t anchors = 0;            // prefix records reported
  uint64_t skipped = 0;            // unreadable or mislabelled objects, broken chains
  uint64_t anchors_unchecked = 0;  // prefix records not reported: too many keys to check
  bool stopped = false;            // `pace` ended the pass early
};

// Waits `d` (interruptibly); false ends the pass.
using PaceFn = std::function<bool(std::chrono::nanoseconds d)>;

// One pass over `bucket` (a missing bucket holds nothing). Errors: a List that fails (the pass
// ends; what was reported stays).
Result<BlockInventoryStats> ReplayStoredBlocks(store::ObjectStore& store, const std::string& bucket,
                                               BlockEvents& events,
                                               const BlockInventoryOptions& options,
                                               const PaceFn& pace);

}  // namespace kvcs::objcache

#endif  // KVCS_OBJCACHE_BLOCK_INVENTORY_H_
