// Decoders of the HTTP response headers the S3 client trusts for correctness (RFC 9110), and the
// lowercase form the client keeps header names in. Pure; thread-safe; every input yields a value
// or nullopt, never a crash.
#ifndef KVCS_S3CLIENT_HTTP_HEADERS_H_
#define KVCS_S3CLIENT_HTTP_HEADERS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kvcs::s3client {

// A satisfied byte range: bytes [first, last] of an object of `total` bytes.
struct ContentRange {
  uint64_t first = 0;
  uint64_t last = 0;
  uint64_t total = 0;
  bool operator==(const ContentRange&) const = default;
};

// Parses "bytes first-last/total" (RFC 9110 §14.4) strictly: decimal digits only, no spaces,
// first <= last < total. The unsatisfied form ("bytes */total") and an unknown total ("/*") are
// refused: the client needs the object's size from every range response it uses.
std::optional<ContentRange> ParseContentRange(std::string_view value);

// `name` with ASCII A-Z lowercased: HTTP field names are case-insensitive (RFC 9110 §5.1); the
// client sends and compares them lowercased.
std::string LowerAscii(std::string_view name);

}  // namespace kvcs::s3client

#endif  // KVCS_S3CLIENT_HTTP_HEADERS_H_
