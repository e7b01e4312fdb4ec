#include "s3/http_util.h"

#include <ctime>

namespace kvcs::s3 {
namespace {

int HexVal(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool ParseU64(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 19) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

Result<std::string> UriDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    if (i + 2 >= s.size()) return InvalidArgument("truncated percent escape");
    int hi = HexVal(s[i + 1]), lo = HexVal(s[i + 2]);
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

Result<std::vector<std::pair<std::string, std::string>>> ParseQuery(std::string_view raw) {
  std::vector<std::pair<std::string, std::string>> out;
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

RangeKind ParseRange(std::string_view header, uint64_t size, ByteRange* out) {
  header = Trim(header);
  if (header.substr(0, 6) != "bytes=") return RangeKind::kNone;
  std::string_view spec = Trim(header.substr(6));
  if (spec.find(',') != std::string_view::npos) return RangeKind::kNone;
  size_t dash = spec.find('-');
  if (dash == std::string_view::npos) return RangeKind::kNone;
  std::string_view a = Trim(spec.substr(0, dash)), b = Trim(spec.substr(dash + 1));
  uint64_t first = 0, last = 0;
  if (a.empty()) {  // suffix range: last N bytes
    if (!ParseU64(b, &last)) return RangeKind::kNone;
    if (last == 0 || size == 0) return RangeKind::kUnsatisfiable;
    uint64_t n = std::min(last, size);
    *out = {size - n, size - 1};
    return RangeKind::kSatisfiable;
  }
  if (!ParseU64(a, &first)) return RangeKind::kNone;
  if (b.empty()) {
    last = UINT64_MAX;
  } else if (!ParseU64(b, &last) || last < first) {
    return RangeKind::kNone;
  }
  if (first >= size) return RangeKind::kUnsatisfiable;
  *out = {first, std::min(last, size - 1)};
  return RangeKind::kSatisfiable;
}

std::string FormatHttpDate(int64_t unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return buf;
}

std::optional<int64_t> ParseHttpDate(std::string_view s) {
  std::string str(Trim(s));
  std::tm tm{};
  const char* end = strptime(str.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == nullptr || *end != '\0') {
    tm = {};
    end = strptime(str.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);  // lenient ISO form some clients use
    if (end == nullptr) return std::nullopt;
  }
  return static_cast<int64_t>(timegm(&tm));
}

std::string FormatIsoDate(int64_t unix_ms) {
  std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[80];
  std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(unix_ms % 1000));
  return out;
}

std::optional<int64_t> ParseAmzDate(std::string_view s) {
  if (s.size() != 16 || s[8] != 'T' || s[15] != 'Z') return std::nullopt;
  for (size_t i = 0; i < 15; ++i) {
    if (i != 8 && (s[i] < '0' || s[i] > '9')) return std::nullopt;
  }
  auto num = [&](size_t pos, size_t n) {
    int v = 0;
    for (size_t i = 0; i < n; ++i) v = v * 10 + (s[pos + i] - '0');
    return v;
  };
  std::tm tm{};
  tm.tm_year = num(0, 4) - 1900;
  tm.tm_mon = num(4, 2) - 1;
  tm.tm_mday = num(6, 2);
  tm.tm_hour = num(9, 2);
  tm.tm_min = num(11, 2);
  tm.tm_sec = num(13, 2);
  if (tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
      tm.tm_min > 59 || tm.tm_sec > 60) {
    return std::nullopt;
  }
  return static_cast<int64_t>(timegm(&tm));
}

std::string XmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') {
          char buf[8];
          std::snprintf(buf, sizeof buf, "&#x%X;", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out.push_back(c);
        }
    }
  }
  return out;
}

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x + 32);
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y + 32);
    if (x != y) return false;
  }
  return true;
}

S3Address ResolveAddress(std::string_view host, std::string_view path,
                         const std::vector<std::string>& virtual_hosts) {
  S3Address out;
  std::string_view h = host;
  if (!h.empty() && h.front() != '[') {
    size_t colon = h.rfind(':');
    if (colon != std::string_view::npos) h = h.substr(0, colon);
  }
  std::string lower(h);
  for (char& c : lower) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  }
  for (const std::string& suffix : virtual_hosts) {
    if (lower.size() > suffix.size() + 1 &&
        lower.compare(lower.size() - suffix.size(), suffix.size(), suffix) == 0 &&
        lower[lower.size() - suffix.size() - 1] == '.') {
      out.bucket = lower.substr(0, lower.size() - suffix.size() - 1);
      out.key = std::string(path.substr(path.empty() || path[0] != '/' ? 0 : 1));
      out.virtual_hosted = true;
      return out;
    }
  }
  std::string_view p = path;
  if (!p.empty() && p[0] == '/') p.remove_prefix(1);
  size_t slash = p.find('/');
  out.bucket = std::string(p.substr(0, slash));
  if (slash != std::string_view::npos) out.key = std::string(p.substr(slash + 1));
  return out;
}

}  // namespace kvcs::s3
