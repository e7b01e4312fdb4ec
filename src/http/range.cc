#include "http/range.h"

#include <algorithm>

#include "common/strings.h"

namespace kvcs::http {
namespace {

bool ParseU64(std::string_view s, uint64_t* out) {
  auto v = ParseDecimal<uint64_t>(s);
  if (v) *out = *v;
  return v.has_value();
}

}  // namespace

RangeKind ParseRange(std::string_view header, uint64_t size, ByteRange* out) {
  header = Trim(header);
  if (header.substr(0, 6) != "bytes=") return RangeKind::kNone;
  std::string_view spec = Trim(header.substr(6));
  if (spec.find(',') != std::string_view::npos) return RangeKind::kNone;
  size_t dash = spec.find('-');
  if (dash == std::string_view::npos) return RangeKind::kNone;
  std::string_view a = Trim(spec.substr(0, dash)), b = Trim(spec.substr(dash + 1));
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
