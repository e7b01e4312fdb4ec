#include "common/utc_time.h"

#include <ctime>

namespace kvcs {

std::string FormatUtc(int64_t unix_seconds, const char* strftime_format) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  size_t n = std::strftime(buf, sizeof buf, strftime_format, &tm);
  return std::string(buf, n);
}

}  // namespace kvcs
