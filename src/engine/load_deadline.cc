#include "engine/load_deadline.h"

#include "kvcs_stream/retrieval.h"

namespace kvcs::engine {

uint64_t MoqtLoadDeadlineMs(uint64_t blocks, uint32_t block_tokens, uint32_t layers,
                            uint64_t ns_per_token_layer, uint64_t bytes) {
  if (ns_per_token_layer == 0) return kUnpricedFixedMs + bytes / kUnpricedBytesPerMs;
  return stream::RecomputeBoundMs(blocks, block_tokens, layers, ns_per_token_layer, kPricedFloorMs);
}

}  // namespace kvcs::engine
