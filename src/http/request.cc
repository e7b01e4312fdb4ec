#include "http/request.h"

namespace kvcs::http {

std::optional<std::string_view> Request::Query(std::string_view name) const {
  for (const auto& [k, v] : query) {
    if (k == name) return std::string_view(v);
  }
  return std::nullopt;
}

}  // namespace kvcs::http
