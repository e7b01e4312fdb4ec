// Request-target coding: percent-decoding of paths and query strings, RFC 3986 / AWS SigV4
// percent-encoding, and query-string parsing. Pure; thread-safe.
#ifndef KVCS_HTTP_URI_H_
#define KVCS_HTTP_URI_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace kvcs::http {

// Query strings with more parameters than this are refused (bounded by the header limit anyway;
// no S3 or kvcs request uses more than a dozen).
inline constexpr size_t kMaxQueryParams = 64;

// Decoded query parameters in received order; a parameter without '=' has value "".
using QueryList = std::vector<std::pair<std::string, std::string>>;

// Percent-decoding; '+' stays '+' (S3 clients encode spaces as %20). Fails on a bad escape.
Result<std::string> UriDecode(std::string_view s);
// Every byte except A-Z a-z 0-9 - _ . ~ becomes %XX (uppercase hex), as AWS SigV4 requires; '/' is
// kept when !encode_slash.
std::string UriEncode(std::string_view s, bool encode_slash);

// Splits "a=1&b&c=%20" into decoded pairs. Fails on a bad escape or too many parameters.
Result<QueryList> ParseQuery(std::string_view raw);

}  // namespace kvcs::http

#endif  // KVCS_HTTP_URI_H_
