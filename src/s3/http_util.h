// Small pure helpers of the S3 server that are S3's own: ISO-8601 and SigV4 dates, XML text
// escaping, and S3 addressing (path-style or virtual-hosted). The generic HTTP helpers (URI
// coding, query parsing, Range, HTTP dates, case-insensitive compare) live in src/http; they are
// re-exported here under their s3:: names for the S3 code and its clients. No I/O; thread-safe.
#ifndef KVCS_S3_HTTP_UTIL_H_
#define KVCS_S3_HTTP_UTIL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/date.h"
#include "http/headers.h"
#include "http/range.h"
#include "http/uri.h"

namespace kvcs::s3 {

using http::ByteRange;
using http::FormatHttpDate;
using http::kMaxQueryParams;
using http::ParseHttpDate;
using http::ParseQuery;
using http::ParseRange;
using http::RangeKind;
using http::UriDecode;
using http::UriEncode;

// "2009-10-12T17:50:30.000Z" from Unix milliseconds.
std::string FormatIsoDate(int64_t unix_ms);
// "20130524T000000Z" (SigV4's X-Amz-Date) -> Unix seconds.
std::optional<int64_t> ParseAmzDate(std::string_view s);

// Escapes & < > " ' for XML text and attribute values.
std::string XmlEscape(std::string_view s);
// <name>XmlEscape(value)</name>.
std::string XmlTag(std::string_view name, std::string_view value);

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
