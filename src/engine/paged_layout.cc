#include "engine/paged_layout.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

namespace kvcs::engine {
namespace {

// a * b + c without overflow (all < 2^63 after the checks below); false on overflow.
bool MulAdd(uint64_t a, uint64_t b, uint64_t c, uint64_t* out) {
  unsigned __int128 r = static_cast<unsigned __int128>(a) * b + c;
  if (r > (unsigned __int128)UINT64_MAX) return false;
  *out = static_cast<uint64_t>(r);
  return true;
}

uint64_t Offset(const PagedLayout& l, uint32_t block_id, uint32_t t, uint32_t h) {
  return uint64_t(l.block_stride) * block_id + uint64_t(l.token_stride) * t +
         uint64_t(l.head_stride) * h;
}

}  // namespace

Status CheckLayout(const PagedLayout& layout, const SectionShape& shape,
                   std::span<const uint32_t> block_ids, uint64_t buffer_bytes) {
  if (layout.block_stride < 0 || layout.token_stride < 0 || layout.head_stride < 0) {
    return Status(Code::kOutOfRange, "layout strides must be >= 0");
  }
  if (shape.block_tokens == 0 || shape.kv_heads == 0 || shape.row_bytes() == 0) {
    return Status(Code::kInvalidArgument, "empty section shape");
  }
  if (block_ids.empty()) return Status::Ok();
  uint32_t max_id = *std::max_element(block_ids.begin(), block_ids.end());
  // Largest offset touched: max_id*bs + (B-1)*ts + (H-1)*hs + row.
  uint64_t end = shape.row_bytes();
  if (!MulAdd(uint64_t(layout.head_stride), shape.kv_heads - 1, end, &end) ||
      !MulAdd(uint64_t(layout.token_stride), shape.block_tokens - 1, end, &end) ||
      !MulAdd(uint64_t(layout.block_stride), max_id, end, &end) || end > buffer_bytes) {
    return Status(Code::kOutOfRange,
                  "engine block " + std::to_string(max_id) + " with strides (block " +
                      std::to_string(layout.block_stride) + ", token " +
                      std::to_string(layout.token_stride) + ", head " +
                      std::to_string(layout.head_stride) + ") reaches past a buffer of " +
                      std::to_string(buffer_bytes) + " bytes");
  }
  // Rows of one block must not overlap (a layout that does would silently lose data): with the
  // dimensions of more than one element sorted by stride, the smaller must step over a row and the
  // larger over all of the smaller's rows.
  uint64_t row = shape.row_bytes();
  std::pair<uint64_t, uint64_t> dims[2] = {{uint64_t(layout.token_stride), shape.block_tokens},
                                           {uint64_t(layout.head_stride), shape.kv_heads}};
  if (dims[0].first > dims[1].first) std::swap(dims[0], dims[1]);
  uint64_t need = row;
  for (const auto& [stride, count] : dims) {
    if (count <= 1) continue;
    if (stride < need) {
      return Status(Code::kOutOfRange, "layout strides make rows of one block overlap (a row is " +
                                           std::to_string(row) + " bytes)");
    }
    need = stride * count;
  }
  return Status::Ok();
}

void ScatterSection(const uint8_t* section, const PagedLayout& layout, const SectionShape& shape,
                    uint32_t block_id, uint8_t* base) {
  const uint64_t row = shape.row_bytes();
  for (uint32_t t = 0; t < shape.block_tokens; ++t) {
    for (uint32_t h = 0; h < shape.kv_heads; ++h) {
      std::memcpy(base + Offset(layout, block_id, t, h), section, row);
      section += row;
    }
  }
}

void GatherSection(const uint8_t* base, const PagedLayout& layout, const SectionShape& shape,
                   uint32_t block_id, uint8_t* section) {
  const uint64_t row = shape.row_bytes();
  for (uint32_t t = 0; t < shape.block_tokens; ++t) {
    for (uint32_t h = 0; h < shape.kv_heads; ++h) {
      std::memcpy(section, base + Offset(layout, block_id, t, h), row);
      section += row;
    }
  }
}

}  // namespace kvcs::engine
