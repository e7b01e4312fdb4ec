// Fuzzes DataStreamParser fed in pseudo-random chunk sizes. Input: one configuration byte, then
// stream bytes. Oracles: never crash; OnError at most once and nothing after it; payload chunks
// add up to each object's announced length; OnStreamEnd only on FIN; errors carry a WireError.
#include <cstddef>
#include <cstdint>

#include "moqt/moqt_data_parser.h"

using namespace kvcs;
using namespace kvcs::moqt;

namespace {

class CheckingVisitor : public DataStreamVisitor {
 public:
  explicit CheckingVisitor(GroupOrder order) : order_(order) {}
  void OnSubgroupHeader(const SubgroupHeader&) override { Live(); }
  GroupOrder OnFetchHeader(const FetchHeader&) override {
    Live();
    return order_;
  }
  void OnPaddingStream() override { Live(); }
  void OnObjectHeader(const ObjectHeader& o) override {
    Live();
    if (remaining_ != 0) __builtin_trap();
    remaining_ = o.payload_length;
  }
  void OnObjectPayload(ByteSpan chunk, bool end) override {
    Live();
    if (chunk.size() > remaining_) __builtin_trap();
    remaining_ -= chunk.size();
    if (end != (remaining_ == 0)) __builtin_trap();
  }
  void OnEndOfRange(const EndOfRange&) override {
    Live();
    if (remaining_ != 0) __builtin_trap();
  }
  void OnStreamEnd() override {
    Live();
    if (remaining_ != 0) __builtin_trap();
    ended_ = true;
  }
  void OnError(const Status& s) override {
    Live();
    if (s.code() != Code::kInvalidArgument || s.detail() == 0) __builtin_trap();
    failed_ = true;
  }

 private:
  void Live() const {
    if (failed_ || ended_) __builtin_trap();
  }
  GroupOrder order_;
  uint64_t remaining_ = 0;
  bool failed_ = false;
  bool ended_ = false;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t config = data[0];
  ByteSpan stream(data + 1, size - 1);
  WireOptions options;
  if (config & 0x02) options.end_of_range = EndOfRangeEncoding::kAbsolute;
  options.strict_padding = !(config & 0x04);
  const bool fin = config & 0x08;
  CheckingVisitor visitor((config & 0x01) ? GroupOrder::kDescending : GroupOrder::kAscending);
  DataStreamParser parser(&visitor, options);
  uint32_t rng = config * 2654435761u + 1;
  size_t at = 0;
  while (at < stream.size()) {
    rng = rng * 1103515245u + 12345u;
    size_t n = 1 + (rng >> 16) % ((config & 0x10) ? 3 : 97);
    n = std::min(n, stream.size() - at);
    parser.OnData(stream.subspan(at, n), false);
    at += n;
  }
  parser.OnData({}, fin);
  return 0;
}
