#include "http/headers.h"

#include "common/strings.h"

namespace kvcs::http {

std::optional<std::string_view> FindHeader(const HeaderList& headers, std::string_view name) {
  for (const auto& [k, v] : headers) {
    if (AsciiIEquals(k, name)) return std::string_view(v);
  }
  return std::nullopt;
}

}  // namespace kvcs::http
