// PacedLayerBytes: the scheduler's per-layer demand is the bytes the handler paces, records and
// frame head included, for each delivery and component choice.
#include "objcache/aggregate_plan.h"

#include <gtest/gtest.h>

#include <vector>

namespace kvcs::objcache {
namespace {

// A present block holding layers [first, first + count), each with k_len / v_len bytes.
BlockSlot Present(uint16_t first, uint16_t count, uint64_t k_len, uint64_t v_len) {
  BlockSlot s;
  s.status = BlockStatus::kPresent;
  s.view.header.layer_first = first;
  for (uint16_t i = 0; i < count; ++i) {
    kvsp::LayerEntry e;
    e.layer = first + i;
    e.k_len = k_len;
    e.v_len = v_len;
    s.view.layers.push_back(e);
  }
  return s;
}

TEST(PacedLayerBytes, CountsFrameHeadRecordsAndCarriedBytes) {
  std::vector<BlockSlot> slots = {Present(0, 4, 100, 200), Present(0, 4, 100, 200), BlockSlot{}};
  // 8-byte frame head, a 52-byte record per block (the missing one too), K+V of the present ones.
  EXPECT_EQ(PacedLayerBytes(slots, Components::kKV, 1, Delivery::kInline),
            kLayerFrameHeadBytes + 3 * kBlockRecordBytes + 2 * 300);
  // Same-host records carry an 8-byte offset; the K/V still count (the pacer is charged them).
  EXPECT_EQ(PacedLayerBytes(slots, Components::kKV, 1, Delivery::kShm),
            kLayerFrameHeadBytes + 3 * kShmBlockRecordBytes + 2 * 300);
  EXPECT_EQ(PacedLayerBytes(slots, Components::kK, 1, Delivery::kInline),
            kLayerFrameHeadBytes + 3 * kBlockRecordBytes + 2 * 100);
  EXPECT_EQ(PacedLayerBytes(slots, Components::kV, 1, Delivery::kInline),
            kLayerFrameHeadBytes + 3 * kBlockRecordBytes + 2 * 200);
}

TEST(PacedLayerBytes, ALayerNotHeldCostsItsRecordOnly) {
  std::vector<BlockSlot> slots = {Present(0, 2, 100, 100), Present(2, 2, 100, 100)};
  EXPECT_EQ(PacedLayerBytes(slots, Components::kKV, 2, Delivery::kInline),
            kLayerFrameHeadBytes + 2 * kBlockRecordBytes + 200);
  EXPECT_EQ(PacedLayerBytes({}, Components::kKV, 0, Delivery::kInline), kLayerFrameHeadBytes);
}

}  // namespace
}  // namespace kvcs::objcache
