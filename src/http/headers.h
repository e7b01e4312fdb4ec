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

// Case-insensitive ASCII comparison (header names, tokens such as "100-continue").
bool IEquals(std::string_view a, std::string_view b);

// The value of the first field named `name` (case-insensitive), if any.
std::optional<std::string_view> FindHeader(const HeaderList& headers, std::string_view name);

// Strips RFC 7230 optional whitespace (spaces and tabs) from both ends.
std::string_view TrimOws(std::string_view s);

}  // namespace kvcs::http

#endif  // KVCS_HTTP_HEADERS_H_
