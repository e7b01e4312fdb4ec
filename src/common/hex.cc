#include "common/hex.h"

namespace kvcs {

int HexDigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool IsLowerHex(std::string_view s, size_t len) {
  if (s.size() != len) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

void AppendHex(ByteSpan bytes, std::string* out) {
  static constexpr char kDigits[] = "0123456789abcdef";
  const size_t at = out->size();
  out->resize(at + bytes.size() * 2);
  char* s = out->data() + at;
  for (size_t i = 0; i < bytes.size(); ++i) {
    s[2 * i] = kDigits[bytes[i] >> 4];
    s[2 * i + 1] = kDigits[bytes[i] & 15];
  }
}

std::string ToHex(ByteSpan bytes) {
  std::string s;
  AppendHex(bytes, &s);
  return s;
}

Result<Bytes> FromHex(std::string_view hex) {
  if (hex.size() % 2 != 0) return InvalidArgument("hex string has an odd length");
  Bytes out(hex.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    int hi = HexDigitValue(hex[2 * i]), lo = HexDigitValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      return InvalidArgument("not a hex character at offset " + std::to_string(2 * i));
    }
    out[i] = uint8_t(hi << 4 | lo);
  }
  return out;
}

}  // namespace kvcs
