// The MOQT variable-length integer (vi64, draft §8.1) — NOT the QUIC varint.
//
// The number of leading 1-bits of the first byte is the number of extra bytes (0..8); the bits
// after the first 0 plus the following bytes hold the value, big-endian. 1 to 9 bytes cover the
// full 64-bit range; 1 byte holds 0..127. Decoders accept non-minimal encodings; the encoder
// emits the minimal one unless asked for a longer length. Pure functions, thread-safe.
#ifndef KVCS_MOQT_MOQT_VARINT_H_
#define KVCS_MOQT_MOQT_VARINT_H_

#include <bit>
#include <cstddef>
#include <cstdint>

#include "common/bytes.h"

namespace kvcs::moqt {

inline constexpr size_t kMaxVarintBytes = 9;

// Minimal encoded length of v (1..9).
constexpr size_t VarintLength(uint64_t v) {
  for (size_t n = 1; n <= 8; ++n) {
    if (v >> (7 * n) == 0) return n;
  }
  return 9;
}

// Encoded length announced by a first byte (1..9).
constexpr size_t VarintLengthFromFirstByte(uint8_t b) {
  return static_cast<size_t>(std::countl_one(b)) + 1;
}

// Appends v using max(VarintLength(v), min_length) bytes (min_length is capped at 9).
void AppendVarint(Bytes* out, uint64_t v, size_t min_length = 0);

// Decodes one vi64 from the front of data. Returns the bytes consumed (1..9), or 0 when data is
// shorter than the encoding announced by its first byte (or empty): "need more bytes".
size_t DecodeVarint(ByteSpan data, uint64_t* v);

}  // namespace kvcs::moqt

#endif  // KVCS_MOQT_MOQT_VARINT_H_
