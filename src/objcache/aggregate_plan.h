// The plan of an aggregated GET (docs/protocols/objectcache-aggregated.md §3), shared by its two
// deliveries (HTTP body, aggregated_get_handler.h; same-host buffer, shm_delivery.h): the probe
// of every requested block's container (BlockSlot), the record and range read planned for each
// (layer, block) from the probed layer table (PlannedItem), and the final record once the read is
// done, with the k/v-only layer-digest check.
//
// ProbeBlocks blocks on the store (run it on an offload pool); the rest is pure.
// Thread-compatible.
#ifndef KVCS_OBJCACHE_AGGREGATE_PLAN_H_
#define KVCS_OBJCACHE_AGGREGATE_PLAN_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kvsp/container.h"
#include "objcache/aggregate_wire.h"
#include "store/object_store.h"

namespace kvcs::objcache {

// Items (block-layers) read at once (one window, one same-host batch): bounds the records of
// blocks without data (missing, not held), which the data budget does not count: 16,384 × 60
// bytes ≈ 1 MiB per window.
inline constexpr size_t kMaxWindowItems = 16384;

// One block of an aggregated GET after the probe.
struct BlockSlot {
  std::shared_ptr<const store::ObjectReader> reader;
  kvsp::ContainerView view;
  BlockStatus status = BlockStatus::kMissing;
};

// One (layer, block) of the stream as laid out in a window buffer.
struct PlannedItem {
  uint16_t layer = 0;
  uint32_t block = 0;
  bool frame_head = false;  // first block of its layer: a layer frame head precedes the record
  bool last_of_layer = false;
  BlockRecord record;           // planned record (present: lengths and digest from the table)
  uint64_t out_offset = 0;      // where the record goes in the planned (uncompacted) buffer
  uint64_t read_len = 0;        // bytes read for this item (K+V of the layer) — 0 if absent
  uint64_t scratch_offset = 0;  // k/v-only: where K+V are read for verification
  const kvsp::LayerEntry* entry = nullptr;
};

// Probes every block's container of `req` in `bucket` (open + header/table read), setting
// *slots to one BlockSlot per block key: present with its parsed view, or why not.
void ProbeBlocks(store::ObjectStore& store, const std::string& bucket, const AggregateRequest& req,
                 std::string_view codec_name, std::vector<BlockSlot>* slots);

// The record and read of block b (of nb) of `layer`, from the probe.
PlannedItem PlanItem(const std::vector<BlockSlot>& slots, Components comps, uint32_t nb,
                     uint32_t layer, uint32_t b);

// The bytes one layer of the stream is paced as (docs/protocols/scheduler.md, Pacing): its layer
// frame head, one record per block (kShmBlockRecordBytes for Delivery::kShm) and the K/V carried
// (what Components keeps of the present blocks that hold the layer). The scheduler's b_r: the
// handler charges exactly these bytes to the request's pacer, so a rate granted in other units
// (the K/V alone) would fall short of the stall target by the records' share.
uint64_t PacedLayerBytes(const std::vector<BlockSlot>& slots, Components comps, uint32_t layer,
                         Delivery delivery);

// Checks a planned item's read (`rr`, null when nothing was read) and, for k or v alone, the
// producer's layer digest over the K+V read into `kv`; returns the final record and sets *carried
// to where its carried bytes are (null when it carries none).
BlockRecord FinalizeItem(const PlannedItem& it, const store::RangeRead* rr, const BlockSlot& slot,
                         Components comps, const uint8_t* kv, const uint8_t** carried);

}  // namespace kvcs::objcache

#endif  // KVCS_OBJCACHE_AGGREGATE_PLAN_H_
