// libFuzzer target for every parser of peer input in objcache: the response stream decoder (fed in
// chunks whose sizes come from the input), the request JSON, the aggregated-PUT header and the
// same-host registration messages (the store decodes what any local process sends it).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "objcache/aggregate_wire.h"
#include "objcache/shm_wire.h"

using namespace kvcs;
using namespace kvcs::objcache;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0] % 4;
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
  } else if (mode == 2) {
    (void)ParsePutHeader(in);
  } else {
    for (size_t i = 0; i + kShmMessageBytes <= in.size() || i == 0; i += kShmMessageBytes) {
      auto m = DecodeShmMessage(in.subspan(i, std::min(kShmMessageBytes, in.size() - i)));
      if (!m.ok()) break;
      Bytes again;
      EncodeShmMessage(*m, &again);  // a message we accept re-encodes to the same bytes
      if (!std::equal(again.begin(), again.end(), in.begin() + i)) __builtin_trap();
    }
  }
  return 0;
}
