#include "s3/http_util.h"

#include <cstdio>
#include <ctime>

#include "common/strings.h"
#include "common/utc_time.h"

namespace kvcs::s3 {

std::string FormatIsoDate(int64_t unix_ms) {
  char ms[8];
  std::snprintf(ms, sizeof ms, ".%03dZ", static_cast<int>(unix_ms % 1000));
  return FormatUtc(unix_ms / 1000, "%Y-%m-%dT%H:%M:%S") + ms;
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

std::string XmlTag(std::string_view name, std::string_view value) {
  std::string out = "<";
  out.append(name).append(">").append(XmlEscape(value)).append("</").append(name).append(">");
  return out;
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

S3Address ResolveAddress(std::string_view host, std::string_view path,
                         const std::vector<std::string>& virtual_hosts) {
  S3Address out;
  std::string_view h = host;
  if (!h.empty() && h.front() != '[') {
    size_t colon = h.rfind(':');
    if (colon != std::string_view::npos) h = h.substr(0, colon);
  }
  std::string lower = AsciiLower(h);
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
