// Fuzzes the control-stream path: ControlStreamUnframer + ParseControlMessageBody, fed in chunks.
// Input: one configuration byte, then stream bytes. Oracles: never crash; every error is typed
// (kNeedMoreData or kInvalidArgument); every parsed message re-encodes to bytes that parse back
// to the same struct.
#include <cstddef>
#include <cstdint>

#include "moqt/moqt_control_parser.h"
#include "moqt/moqt_framer.h"

using namespace kvcs;
using namespace kvcs::moqt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t config = data[0];
  ByteSpan stream(data + 1, size - 1);
  WireOptions options;
  if (config & 0x01) options.fill_parameters = FillParametersEncoding::kCountParams;
  options.accept_filter_and_fill_in_subscribe_tracks = !(config & 0x02);
  const size_t chunk = 1 + ((config >> 2) & 0x3F);  // 1..64 bytes per Append

  ControlStreamParser parser(options);
  for (size_t at = 0; at < stream.size(); at += chunk) {
    parser.Append(stream.subspan(at, std::min(chunk, stream.size() - at)));
    while (true) {
      Result<ControlMessage> m = parser.Next();
      if (!m.ok()) {
        Code c = m.status().code();
        if (c != Code::kNeedMoreData && c != Code::kInvalidArgument) __builtin_trap();
        if (c == Code::kInvalidArgument && m.status().detail() == 0) __builtin_trap();
        if (c == Code::kInvalidArgument) return 0;
        break;
      }
      Result<Bytes> again = SerializeControlMessage(*m, options);
      if (!again.ok()) continue;  // e.g. receive-only leniencies
      ControlStreamParser p2(options);
      p2.Append(*again);
      Result<ControlMessage> m2 = p2.Next();
      if (!m2.ok() || !(*m2 == *m)) __builtin_trap();
    }
  }
  (void)parser.OnFin();
  return 0;
}
