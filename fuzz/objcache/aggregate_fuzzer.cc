// libFuzzer target for every parser of peer input in objcache: the response stream decoder (fed in
// chunks whose sizes come from the input), the request JSON and the aggregated-PUT header.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "objcache/aggregate_wire.h"

using namespace kvcs;
using namespace kvcs::objcache;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0] % 3;
  ByteSpan in(data + 1, size - 1);
  if (mode == 0) {
    StreamDecoder d;
    std::vector<StreamEvent> events;
    size_t chunk = 1 + (size % 13);
    for (size_t i = 0; i < in.size(); i += chunk) {
      if (!d.Feed(in.subspan(i, std::min(chunk, in.size() - i)), &events).ok()) break;
    }
    (void)d.Finish();
    for (const auto& e : events)
      if (auto* l = std::get_if<LayerEvent>(&e))
        for (const auto& b : l->blocks) (void)VerifyBlock(b);
  } else if (mode == 1) {
    auto r = ParseAggregateRequest(AsStringView(in));
    if (r.ok()) {
      auto again = ParseAggregateRequest(SerializeAggregateRequest(*r));
      if (!again.ok()) __builtin_trap();  // what we serialize we must accept
    }
  } else {
    (void)ParsePutHeader(in);
  }
  return 0;
}
