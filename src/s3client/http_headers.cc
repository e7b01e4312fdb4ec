#include "s3client/http_headers.h"

#include "common/strings.h"

namespace kvcs::s3client {

std::optional<ContentRange> ParseContentRange(std::string_view value) {
  constexpr std::string_view kUnit = "bytes ";
  if (value.substr(0, kUnit.size()) != kUnit) return std::nullopt;
  value.remove_prefix(kUnit.size());
  size_t dash = value.find('-'), slash = value.find('/');
  if (dash == std::string_view::npos || slash == std::string_view::npos || dash > slash) {
    return std::nullopt;
  }
  auto first = ParseDecimal<uint64_t>(value.substr(0, dash));
  auto last = ParseDecimal<uint64_t>(value.substr(dash + 1, slash - dash - 1));
  auto total = ParseDecimal<uint64_t>(value.substr(slash + 1));
  if (!first || !last || !total || *first > *last || *last >= *total) return std::nullopt;
  return ContentRange{*first, *last, *total};
}

}  // namespace kvcs::s3client
