#include "http/uri.h"

#include "common/hex.h"

namespace kvcs::http {

Result<std::string> UriDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    if (i + 2 >= s.size()) return InvalidArgument("truncated percent escape");
    int hi = HexDigitValue(s[i + 1]), lo = HexDigitValue(s[i + 2]);
    if (hi < 0 || lo < 0) return InvalidArgument("bad percent escape");
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

std::string UriEncode(std::string_view s, bool encode_slash) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size() * 3);
  for (unsigned char c : s) {
    bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.' || c == '~';
    if (unreserved || (c == '/' && !encode_slash)) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

Result<QueryList> ParseQuery(std::string_view raw) {
  QueryList out;
  while (!raw.empty()) {
    size_t amp = raw.find('&');
    std::string_view part = raw.substr(0, amp);
    raw = amp == std::string_view::npos ? std::string_view() : raw.substr(amp + 1);
    if (part.empty()) continue;
    if (out.size() >= kMaxQueryParams) return InvalidArgument("too many query parameters");
    size_t eq = part.find('=');
    KVCS_ASSIGN_OR_RETURN(std::string k, UriDecode(part.substr(0, eq)));
    std::string v;
    if (eq != std::string_view::npos) {
      KVCS_ASSIGN_OR_RETURN(v, UriDecode(part.substr(eq + 1)));
    }
    out.emplace_back(std::move(k), std::move(v));
  }
  return out;
}

}  // namespace kvcs::http
