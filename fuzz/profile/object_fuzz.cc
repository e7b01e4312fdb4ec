// Fuzzes the 68-byte object payload decoder (src/profile/object.h). Invariants: no crash; an
// input InspectObject accepts also passes DecodeObject with its own header as the expectation,
// and, when Flags are 0, re-encodes to exactly the input.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "profile/object.h"

using namespace kvcs;
using namespace kvcs::profile;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ByteSpan in(data, size);
  auto r = InspectObject(in);
  ObjectExpectation loc{0, 0};
  (void)DecodeObject(in, loc);
  if (!r.ok()) return 0;
  const ObjectHeader& h = r->header;
  ObjectExpectation full{h.layer, h.block_index, h.component,
                         h.codec, h.token_count, h.token_start};
  if (!DecodeObject(in, full).ok()) std::abort();
  if (h.flags == 0) {
    ObjectInfo info{h.component, h.layer, h.block_index, h.token_start, h.token_count, h.codec};
    auto enc = EncodeObject(info, r->data);
    if (!enc.ok() || enc->size() != size || std::memcmp(enc->data(), data, size) != 0) {
      std::abort();
    }
  }
  return 0;
}
