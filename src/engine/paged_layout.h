// Where one layer's K or V of an engine block lives in the engine's paged buffer, and the
// bounds-checked copies between that buffer and a block's raw KVSP section ([B][H][D], token
// major). Pure functions; thread-safe.
#ifndef KVCS_ENGINE_PAGED_LAYOUT_H_
#define KVCS_ENGINE_PAGED_LAYOUT_H_

#include <cstddef>
#include <cstdint>
#include <span>

#include "common/status.h"

namespace kvcs::engine {

struct PagedLayout {
  int64_t block_stride = 0, token_stride = 0, head_stride = 0;  // bytes
};

// The shape of one block's section: B tokens x H heads x D elements of elem_bytes.
struct SectionShape {
  uint32_t block_tokens = 0, kv_heads = 0, head_dim = 0;
  uint32_t elem_bytes = 0;
  uint64_t row_bytes() const { return uint64_t{head_dim} * elem_bytes; }
  uint64_t section_bytes() const { return uint64_t{block_tokens} * kv_heads * row_bytes(); }
};

// Checks that every byte of every block in `block_ids` lies inside a buffer of `buffer_bytes`:
// strides >= 0 and the end of the last row of the highest block id <= buffer_bytes, without
// overflow. kOutOfRange (with a message naming the numbers) otherwise.
Status CheckLayout(const PagedLayout& layout, const SectionShape& shape,
                   std::span<const uint32_t> block_ids, uint64_t buffer_bytes);

// Copies a block's raw section (shape.section_bytes()) into engine block `block_id` of `base`.
// REQUIRES: CheckLayout passed for this block id and buffer.
void ScatterSection(const uint8_t* section, const PagedLayout& layout, const SectionShape& shape,
                    uint32_t block_id, uint8_t* base);
// The reverse: engine block `block_id` of `base` into a raw section.
void GatherSection(const uint8_t* base, const PagedLayout& layout, const SectionShape& shape,
                   uint32_t block_id, uint8_t* section);

}  // namespace kvcs::engine

#endif  // KVCS_ENGINE_PAGED_LAYOUT_H_
