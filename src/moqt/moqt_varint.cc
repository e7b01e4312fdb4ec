#include "moqt/moqt_varint.h"

#include <algorithm>

namespace kvcs::moqt {

void AppendVarint(Bytes* out, uint64_t v, size_t min_length) {
  size_t n = std::max(VarintLength(v), std::min(min_length, kMaxVarintBytes));
  if (n == 9) {
    out->push_back(0xFF);
    for (int i = 7; i >= 0; --i) out->push_back(static_cast<uint8_t>(v >> (8 * i)));
    return;
  }
  size_t at = out->size();
  for (size_t i = 0; i < n; ++i) {
    out->push_back(static_cast<uint8_t>(v >> (8 * (n - 1 - i))));
  }
  // n-1 one bits, then a zero bit; v < 2^(7n) guarantees the value bits stay below them.
  (*out)[at] |= static_cast<uint8_t>(~(0xFFu >> (n - 1)));
}

size_t DecodeVarint(ByteSpan data, uint64_t* v) {
  if (data.empty()) return 0;
  size_t n = VarintLengthFromFirstByte(data[0]);
  if (data.size() < n) return 0;
  uint64_t value;
  if (n == 9) {
    value = 0;
  } else {
    value = data[0] & (0xFFu >> n);
  }
  for (size_t i = 1; i < n; ++i) value = (value << 8) | data[i];
  *v = value;
  return n;
}

}  // namespace kvcs::moqt
