// Lowercase hex, as KVSP uses in JSON and URLs.
#ifndef KVCS_COMMON_HEX_H_
#define KVCS_COMMON_HEX_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/bytes.h"
#include "common/status.h"

namespace kvcs {

std::string ToHex(ByteSpan bytes);
// Appends the lowercase hex of `bytes` to `out` (ToHex without a string of its own per call).
void AppendHex(ByteSpan bytes, std::string* out);
template <size_t N>
std::string ToHex(const std::array<uint8_t, N>& a) {
  return ToHex(ByteSpan(a.data(), a.size()));
}
// Exactly `len` characters, each 0-9 or a-f: the canonical form of KVSP ids, keys and SigV4
// digests (where uppercase is refused rather than accepted).
bool IsLowerHex(std::string_view s, size_t len);
// The value of one hex digit (0-9, a-f, A-F), or -1 for any other character.
int HexDigitValue(char c);
// Accepts lowercase or uppercase; rejects odd lengths and non-hex characters.
Result<Bytes> FromHex(std::string_view hex);
// Exactly N bytes (2N hex characters), e.g. a 32-byte identifier.
template <size_t N>
Result<std::array<uint8_t, N>> FromHexFixed(std::string_view hex) {
  if (hex.size() != 2 * N) {
    return InvalidArgument("expected " + std::to_string(2 * N) + " hex characters, got " +
                           std::to_string(hex.size()));
  }
  KVCS_ASSIGN_OR_RETURN(Bytes b, FromHex(hex));
  std::array<uint8_t, N> out{};
  for (size_t i = 0; i < N; ++i) out[i] = b[i];
  return out;
}

}  // namespace kvcs

#endif  // KVCS_COMMON_HEX_H_
