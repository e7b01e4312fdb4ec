// The Range request header (RFC 7233), single byte ranges only. Pure; thread-safe.
#ifndef KVCS_HTTP_RANGE_H_
#define KVCS_HTTP_RANGE_H_

#include <cstdint>
#include <string_view>

namespace kvcs::http {

struct ByteRange {
  uint64_t first = 0;
  uint64_t last = 0;  // inclusive
  uint64_t length() const { return last - first + 1; }
};
enum class RangeKind { kNone, kSatisfiable, kUnsatisfiable };

// Parses a Range header against a representation of `size` bytes. Syntactically invalid or
// multi-range headers are ignored (kNone), as S3 does; the caller then sends the whole body.
RangeKind ParseRange(std::string_view header, uint64_t size, ByteRange* out);

}  // namespace kvcs::http

#endif  // KVCS_HTTP_RANGE_H_
