#include "http/range.h"

#include <algorithm>

#include "http/headers.h"

namespace kvcs::http {
namespace {

bool ParseU64(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 19) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

}  // namespace

RangeKind ParseRange(std::string_view header, uint64_t size, ByteRange* out) {
  header = TrimOws(header);
  if (header.substr(0, 6) != "bytes=") return RangeKind::kNone;
  std::string_view spec = TrimOws(header.substr(6));
  if (spec.find(',') != std::string_view::npos) return RangeKind::kNone;
  size_t dash = spec.find('-');
  if (dash == std::string_view::npos) return RangeKind::kNone;
  std::string_view a = TrimOws(spec.substr(0, dash)), b = TrimOws(spec.substr(dash + 1));
  uint64_t first = 0, last = 0;
  if (a.empty()) {  // suffix range: last N bytes
    if (!ParseU64(b, &last)) return RangeKind::kNone;
    if (last == 0 || size == 0) return RangeKind::kUnsatisfiable;
    uint64_t n = std::min(last, size);
    *out = {size - n, size - 1};
    return RangeKind::kSatisfiable;
  }
  if (!ParseU64(a, &first)) return RangeKind::kNone;
  if (b.empty()) {
    last = UINT64_MAX;
  } else if (!ParseU64(b, &last) || last < first) {
    return RangeKind::kNone;
  }
  if (first >= size) return RangeKind::kUnsatisfiable;
  *out = {first, std::min(last, size - 1)};
  return RangeKind::kSatisfiable;
}

}  // namespace kvcs::http
