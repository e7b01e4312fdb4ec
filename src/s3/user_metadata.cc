#include "s3/user_metadata.h"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "common/base64.h"
#include "common/bytes.h"
#include "common/hex.h"
#include "common/strings.h"
#include "s3/s3_error.h"
#include "store/object_store.h"

namespace kvcs::s3 {
namespace {

// Latin-1 bytes as UTF-8 (each byte is the code point of the same value).
std::string Latin1ToUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    const auto c = static_cast<uint8_t>(ch);
    if (c < 0x80) {
      out.push_back(ch);
    } else {
      out.push_back(static_cast<char>(0xC0 | (c >> 6)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
  return out;
}

// The UTF-8 text of one encoded-word `=?charset?enc?text?=`, or nullopt if it is not one this
// decodes (RFC 2047 §2, §4; charsets UTF-8, US-ASCII, ISO-8859-1).
std::optional<std::string> DecodeWord(std::string_view w) {
  if (w.size() < 8 || w.substr(0, 2) != "=?" || w.substr(w.size() - 2) != "?=") return std::nullopt;
  std::string_view body = w.substr(2, w.size() - 4);
  size_t q1 = body.find('?');
  if (q1 == std::string_view::npos || q1 + 2 >= body.size() || body[q1 + 2] != '?') {
    return std::nullopt;
  }
  std::string charset = AsciiLower(body.substr(0, q1));
  const char enc = body[q1 + 1];
  std::string_view text = body.substr(q1 + 3);
  if (text.find('?') != std::string_view::npos || text.find(' ') != std::string_view::npos) {
    return std::nullopt;
  }
  std::string bytes;
  if (enc == 'B' || enc == 'b') {
    auto d = Base64Decode(text);
    if (!d.ok()) return std::nullopt;
    bytes.assign(d->begin(), d->end());
  } else if (enc == 'Q' || enc == 'q') {
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '_') {
        bytes.push_back(' ');
      } else if (text[i] == '=') {
        if (i + 2 >= text.size()) return std::nullopt;
        int hi = HexDigitValue(text[i + 1]), lo = HexDigitValue(text[i + 2]);
        if (hi < 0 || lo < 0) return std::nullopt;
        bytes.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
      } else {
        bytes.push_back(text[i]);
      }
    }
  } else {
    return std::nullopt;
  }
  if (charset == "utf-8" || charset == "utf8") {
    if (!IsValidUtf8(bytes)) return std::nullopt;
    return bytes;
  }
  if (charset == "us-ascii") {
    for (char c : bytes) {
      if (static_cast<uint8_t>(c) >= 0x80) return std::nullopt;
    }
    return bytes;
  }
  if (charset == "iso-8859-1" || charset == "latin1") return Latin1ToUtf8(bytes);
  return std::nullopt;
}

// A value made only of encoded-words separated by linear white space (which RFC 2047 §6.2 drops
// between adjacent words), decoded; nullopt otherwise.
std::optional<std::string> DecodeWords(std::string_view v) {
  std::string out;
  bool any = false;
  while (!v.empty()) {
    size_t end = v.find_first_of(" \t");
    std::string_view w = v.substr(0, end);
    auto d = DecodeWord(w);
    if (!d) return std::nullopt;
    out += *d;
    any = true;
    if (end == std::string_view::npos) break;
    v.remove_prefix(end);
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  }
  if (!any) return std::nullopt;
  return out;
}

bool IsPrintableAscii(uint8_t c) { return (c >= 0x20 && c < 0x7F) || c == '\t'; }

// Control characters: C0 (but tab), DEL and C1 (U+0080..U+009F, UTF-8 C2 80..C2 9F).
bool HasControl(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<uint8_t>(s[i]);
    if ((c < 0x20 && c != '\t') || c == 0x7F) return true;
    if (c == 0xC2 && i + 1 < s.size() && static_cast<uint8_t>(s[i + 1]) < 0xA0) return true;
  }
  return false;
}

}  // namespace

std::string DecodeUserMetadataValue(std::string_view header_value) {
  if (header_value.substr(0, 2) == "=?") {
    if (auto d = DecodeWords(header_value)) return *d;
  }
  return Latin1ToUtf8(header_value);
}

std::string EncodeUserMetadataValue(std::string_view stored) {
  bool plain = true;
  for (char c : stored) plain = plain && IsPrintableAscii(static_cast<uint8_t>(c));
  // Plain ASCII that would read as an encoded-word is encoded too, so it decodes back to itself.
  if (plain && stored.substr(0, 2) != "=?") return std::string(stored);
  if (HasControl(stored) || !IsValidUtf8(stored)) {
    return "=?UTF-8?B?" + Base64Encode(AsBytes(stored)) + "?=";
  }
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out = "=?UTF-8?Q?";
  for (char ch : stored) {
    const auto c = static_cast<uint8_t>(ch);
    if (c == ' ') {
      out.push_back('_');
    } else if (c > 0x20 && c < 0x7F && c != '=' && c != '?' && c != '_') {
      out.push_back(ch);
    } else {
      out.push_back('=');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
    }
  }
  return out + "?=";
}

Result<UserMetadata> UserMetadataFromHeaders(const http::HeaderList& headers) {
  UserMetadata out;
  size_t bytes = 0;
  for (const auto& [k, v] : headers) {
    if (k.size() <= kUserMetaPrefix.size() ||
        !AsciiIEquals(std::string_view(k).substr(0, kUserMetaPrefix.size()), kUserMetaPrefix)) {
      continue;
    }
    std::string name = AsciiLower(std::string_view(k).substr(kUserMetaPrefix.size()));
    std::string value = DecodeUserMetadataValue(v);
    auto same =
        std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.first == name; });
    if (same != out.end()) {
      same->second += "," + value;
      bytes += 1 + value.size();
    } else {
      bytes += name.size() + value.size();
      out.emplace_back(std::move(name), std::move(value));
    }
  }
  if (bytes > store::kMaxUserMetadataBytes) {
    return S3Status(S3Error::kMetadataTooLarge,
                    "Your metadata headers exceed the maximum allowed metadata size.");
  }
  return out;
}

}  // namespace kvcs::s3
