#include "http/date.h"

#include <ctime>

#include "common/strings.h"
#include "common/utc_time.h"

namespace kvcs::http {

std::string FormatHttpDate(int64_t unix_seconds) {
  return FormatUtc(unix_seconds, "%a, %d %b %Y %H:%M:%S GMT");
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

}  // namespace kvcs::http
