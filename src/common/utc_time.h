// Unix seconds as UTC text, for the dates wire formats carry (HTTP-date, SigV4's X-Amz-Date, S3's
// ISO 8601 timestamps). Thread-safe (gmtime_r).
#ifndef KVCS_COMMON_UTC_TIME_H_
#define KVCS_COMMON_UTC_TIME_H_

#include <cstdint>
#include <string>

namespace kvcs {

// strftime of `unix_seconds` in UTC, e.g. FormatUtc(t, "%Y%m%dT%H%M%SZ") → "20130524T000000Z".
// The result is at most 63 characters (longer formats are cut).
std::string FormatUtc(int64_t unix_seconds, const char* strftime_format);

}  // namespace kvcs

#endif  // KVCS_COMMON_UTC_TIME_H_
