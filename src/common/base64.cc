#include "common/base64.h"

namespace kvcs {
namespace {

constexpr std::string_view kStandardChars =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr std::string_view kUrlChars =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string_view Chars(Base64Alphabet a) {
  return a == Base64Alphabet::kUrl ? kUrlChars : kStandardChars;
}

}  // namespace

std::string Base64Encode(ByteSpan bytes, Base64Alphabet alphabet) {
  std::string_view chars = Chars(alphabet);
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  uint32_t acc = 0;
  int bits = 0;
  for (uint8_t c : bytes) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(chars[(acc >> bits) & 0x3f]);
    }
  }
  if (bits > 0) out.push_back(chars[(acc << (6 - bits)) & 0x3f]);
  if (alphabet == Base64Alphabet::kStandard) {
    while (out.size() % 4 != 0) out.push_back('=');
  }
  return out;
}

Result<Bytes> Base64Decode(std::string_view text, Base64Alphabet alphabet) {
  if (alphabet == Base64Alphabet::kStandard) {
    if (text.size() % 4 != 0) return InvalidArgument("base64: length is not a multiple of 4");
    size_t pad = 0;
    while (pad < 2 && pad < text.size() && text[text.size() - 1 - pad] == '=') ++pad;
    text.remove_suffix(pad);
  }
  if (text.size() % 4 == 1) return InvalidArgument("base64: impossible length");
  std::string_view chars = Chars(alphabet);
  Bytes out;
  out.reserve(text.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    size_t v = chars.find(c);
    if (v == std::string_view::npos) {
      return InvalidArgument(c == '=' ? "base64: padding inside the text"
                                      : "base64: a character outside the alphabet");
    }
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>((acc >> bits) & 0xff));
    }
  }
  if (bits > 0 && (acc & ((1u << bits) - 1)) != 0) {
    return InvalidArgument("base64: non-zero trailing bits");
  }
  return out;
}

}  // namespace kvcs
