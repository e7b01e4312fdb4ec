#include "s3client/http_headers.h"

#include <charconv>
#include <system_error>

namespace kvcs::s3client {
namespace {

bool ParseDecimal(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

std::optional<ContentRange> ParseContentRange(std::string_view value) {
  constexpr std::string_view kUnit = "bytes ";
  if (value.substr(0, kUnit.size()) != kUnit) return std::nullopt;
  value.remove_prefix(kUnit.size());
  size_t dash = value.find('-'), slash = value.find('/');
  if (dash == std::string_view::npos || slash == std::string_view::npos || dash > slash) {
    return std::nullopt;
  }
  ContentRange r;
  if (!ParseDecimal(value.substr(0, dash), &r.first) ||
      !ParseDecimal(value.substr(dash + 1, slash - dash - 1), &r.last) ||
      !ParseDecimal(value.substr(slash + 1), &r.total) || r.first > r.last || r.last >= r.total) {
    return std::nullopt;
  }
  return r;
}

std::string LowerAscii(std::string_view name) {
  std::string out(name);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  }
  return out;
}

}  // namespace kvcs::s3client
