#include "http/date.h"

#include <ctime>

#include "http/headers.h"

namespace kvcs::http {

std::string FormatHttpDate(int64_t unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return buf;
}

std::optional<int64_t> ParseHttpDate(std::string_view s) {
  std::string str(TrimOws(s));
  std::tm tm{};
  const char* end = strptime(str.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == nullptr || *end != '\0') {
    tm = {};
    end = strptime(str.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);  // lenient ISO form some clients use
    if (end == nullptr) return std::nullopt;
  }
  return static_cast<int64_t>(timegm(&tm));
}

}  // namespace kvcs::http
