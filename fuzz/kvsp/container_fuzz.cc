// Fuzzes container parsing, decoding and verification: never crashes; an accepted container
// re-encodes to exactly the same bytes, and its layers verify one by one.
#include <algorithm>
#include <cstdlib>
#include <vector>

#include "kvsp/container.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvcs;
  using namespace kvcs::kvsp;
  ByteSpan in(data, size);
  auto head = ParseContainerHeader(in);
  auto full = DecodeContainer(in);
  if (!full.ok()) {
    if (full.status().detail() == 0) std::abort();
    return 0;
  }
  if (!head.ok() || head->total_size != size) std::abort();
  // Verify against an expectation taken from the container itself, with and without shapes.
  const ContainerHeader& h = full->header;
  ContainerExpectation want;
  want.compat_id = h.compat_id;
  want.block_key = h.block_key;
  want.block_index = h.block_index;
  want.block_tokens = h.block_tokens;
  want.codec = h.codec;
  want.layer_first = h.layer_first;
  want.layer_count = h.layer_count;
  if (!VerifyContainer(in, want).ok()) std::abort();
  want.k_shape = SectionShape{h.block_tokens & 0xff, 1, 2, Dtype::kBf16};
  want.v_shape = want.k_shape;
  (void)VerifyContainer(in, want);
  std::vector<LayerSections> layers;
  for (const LayerEntry& l : full->layers) {
    auto sec = LayerBytes(*full, in, l.layer);
    if (!sec.ok() || !VerifyLayer(*full, l.layer, sec->k, sec->v).ok()) std::abort();
    layers.push_back(*sec);
  }
  auto again = EncodeContainer(h, layers);
  if (!again.ok() || again->size() != size || !std::equal(again->begin(), again->end(), data)) {
    std::abort();
  }
  return 0;
}
