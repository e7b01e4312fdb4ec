// HTTP dates (RFC 7231 IMF-fixdate, "Wed, 21 Oct 2015 07:28:00 GMT"). Pure; thread-safe.
#ifndef KVCS_HTTP_DATE_H_
#define KVCS_HTTP_DATE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kvcs::http {

// Unix seconds -> "Wed, 21 Oct 2015 07:28:00 GMT".
std::string FormatHttpDate(int64_t unix_seconds);
// IMF-fixdate (and, leniently, "2015-10-21T07:28:00" some clients send) -> Unix seconds.
std::optional<int64_t> ParseHttpDate(std::string_view s);

}  // namespace kvcs::http

#endif  // KVCS_HTTP_DATE_H_
