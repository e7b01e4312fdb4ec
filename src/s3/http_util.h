// Small pure helpers for the S3 server: URI coding, query parsing, Range parsing, HTTP/ISO dates,
// XML text escaping, and S3 addressing (path-style or virtual-hosted). No I/O; thread-safe.
#ifndef KVCS_S3_HTTP_UTIL_H_
#define KVCS_S3_HTTP_UTIL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace kvcs::s3 {

// Query strings bigger than this are refused (bounded by the header limit anyway).
inline constexpr size_t kMaxQueryParams = 64;

// Percent-decoding; '+' stays '+' (S3 clients encode spaces as %20). Fails on a bad escape.
Result<std::string> UriDecode(std::string_view s);
// AWS SigV4 URI encoding: every byte except A-Z a-z 0-9 - _ . ~ is %XX (uppercase hex); '/' is
// kept when !encode_slash.
std::string UriEncode(std::string_view s, bool encode_slash);

// Splits "a=1&b&c=%20" into decoded pairs. Fails on a bad escape or too many parameters.
Result<std::vector<std::pair<std::string, std::string>>> ParseQuery(std::string_view raw);

struct ByteRange {
  uint64_t first = 0;
  uint64_t last = 0;  // inclusive
  uint64_t length() const { return last - first + 1; }
};
enum class RangeKind { kNone, kSatisfiable, kUnsatisfiable };
// Parses a Range header against an object of `size` bytes (RFC 7233, single range only).
// Syntactically invalid or multi-range headers are ignored (kNone), as S3 does.
RangeKind ParseRange(std::string_view header, uint64_t size, ByteRange* out);

// "Wed, 21 Oct 2015 07:28:00 GMT" <-> Unix seconds.
std::string FormatHttpDate(int64_t unix_seconds);
std::optional<int64_t> ParseHttpDate(std::string_view s);
// "2009-10-12T17:50:30.000Z" from Unix milliseconds.
std::string FormatIsoDate(int64_t unix_ms);
// "20130524T000000Z" (SigV4's X-Amz-Date) -> Unix seconds.
std::optional<int64_t> ParseAmzDate(std::string_view s);

// Escapes & < > " ' for XML text and attribute values.
std::string XmlEscape(std::string_view s);

// Case-insensitive ASCII comparison.
bool IEquals(std::string_view a, std::string_view b);

// Resolves S3 addressing. `host` is the Host header (may carry ":port"); `path` is the decoded
// path. When the host is "<bucket>.<suffix>" for one of `virtual_hosts`, the bucket comes from the
// host and the key is the whole path; otherwise the first path segment is the bucket.
struct S3Address {
  std::string bucket;
  std::string key;
  bool virtual_hosted = false;
};
S3Address ResolveAddress(std::string_view host, std::string_view path,
                         const std::vector<std::string>& virtual_hosts);

}  // namespace kvcs::s3

#endif  // KVCS_S3_HTTP_UTIL_H_
