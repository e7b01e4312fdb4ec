// MergeShardLists: one S3 list page (prefix, delimiter, start-after continuation, max keys) out
// of a bucket index sharded over N omap objects. Each shard is read in key order from a cursor;
// the cursors are merged by smallest key; a common prefix is emitted once and then skipped in
// every shard at once (the next read of a shard starts past every key under it). Shards whose
// cursor ran dry are refilled together, in one batch (the caller reads them concurrently).
// Pure: the reads go through `fetch`, the values through `decode`. Thread-compatible.
#ifndef KVCS_RADOS_STORE_RADOS_LIST_MERGE_H_
#define KVCS_RADOS_STORE_RADOS_LIST_MERGE_H_

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "common/status.h"
#include "rados_store/rados_io.h"  // OmapPage
#include "store/object_store.h"

namespace kvcs::rados_store {

// One shard read: up to `max` entries with keys > start_after that begin with `prefix`.
struct ShardQuery {
  uint32_t shard = 0;
  std::string start_after;
  std::string prefix;
  uint64_t max = 0;
  Result<OmapPage> page = Status(Code::kInternal, "not run");
};
// Runs every query of the batch (fills `page`).
using FetchShards = std::function<void(std::span<ShardQuery>)>;
// The metadata an index value describes.
using DecodeEntry =
    std::function<Result<store::ObjectMeta>(const std::string& key, const std::string& value)>;

Result<store::ListResult> MergeShardLists(uint32_t shards, const store::ListOptions& options,
                                          const FetchShards& fetch, const DecodeEntry& decode);

}  // namespace kvcs::rados_store

#endif  // KVCS_RADOS_STORE_RADOS_LIST_MERGE_H_
