// HTTP header fields as this module carries them: an ordered list of (name, value) pairs in the
// client's spelling, looked up case-insensitively. Pure; thread-safe.
#ifndef KVCS_HTTP_HEADERS_H_
#define KVCS_HTTP_HEADERS_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kvcs::http {

// Header fields in received order (names as the peer spelled them). Also used for query
// parameters, which are matched case-sensitively.
using HeaderList = std::vector<std::pair<std::string, std::string>>;

// The value of the first field named `name` (case-insensitive), if any.
std::optional<std::string_view> FindHeader(const HeaderList& headers, std::string_view name);

}  // namespace kvcs::http

#endif  // KVCS_HTTP_HEADERS_H_
