// Fuzzes ParseDatagram. Oracles: never crash; errors are typed; a parsed object datagram
// re-encodes (when the encoder's canonical form applies) to bytes that parse to the same result.
#include <cstddef>
#include <cstdint>

#include "moqt/moqt_datagram.h"
#include "moqt/moqt_framer.h"

using namespace kvcs;
using namespace kvcs::moqt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Result<ParsedDatagram> d = ParseDatagram(ByteSpan(data, size));
  if (!d.ok()) {
    if (d.status().code() != Code::kInvalidArgument || d.status().detail() == 0) {
      __builtin_trap();
    }
    return 0;
  }
  if (d->padding) return 0;
  Bytes again;
  if (!AppendObjectDatagram(d->object, d->payload, &again).ok()) __builtin_trap();
  Result<ParsedDatagram> d2 = ParseDatagram(again);
  if (!d2.ok() || !(d2->object == d->object)) __builtin_trap();
  if (!std::equal(d2->payload.begin(), d2->payload.end(), d->payload.begin(), d->payload.end())) {
    __builtin_trap();
  }
  return 0;
}
