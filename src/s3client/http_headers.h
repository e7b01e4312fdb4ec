// Decoders of the HTTP response headers the S3 client trusts for correctness (RFC 9110). Pure;
// thread-safe; every input yields a value or nullopt, never a crash. (The client keeps header
// names lowercased with common/strings.h's AsciiLower: field names are case-insensitive.)
#ifndef KVCS_S3CLIENT_HTTP_HEADERS_H_
#define KVCS_S3CLIENT_HTTP_HEADERS_H_

#include <cstdint>
#include <optional>
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

}  // namespace kvcs::s3client

#endif  // KVCS_S3CLIENT_HTTP_HEADERS_H_
