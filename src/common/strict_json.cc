#include "common/strict_json.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace kvcs {

Result<nlohmann::json> ParseStrictJson(std::string_view text, size_t max_bytes, int max_depth) {
  using json = nlohmann::json;
  if (text.size() > max_bytes) {
    return Status(Code::kResourceExhausted,
                  "JSON of " + std::to_string(text.size()) + " bytes is above the limit of " +
                      std::to_string(max_bytes),
                  static_cast<int>(JsonError::kTooLarge));
  }
  Status error;
  // One entry per open object (its member names) or array (nullopt), innermost last.
  std::vector<std::optional<std::set<std::string, std::less<>>>> open;
  auto fail = [&](JsonError e, std::string msg) {
    if (error.ok()) error = InvalidArgument(std::move(msg), static_cast<int>(e));
    return false;
  };
  json::parser_callback_t cb = [&](int, json::parse_event_t ev, json& parsed) -> bool {
    switch (ev) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (open.size() >= size_t(max_depth)) {
          open.emplace_back();
          return fail(JsonError::kTooDeep,
                      "JSON nested deeper than " + std::to_string(max_depth) + " levels");
        }
        if (ev == json::parse_event_t::object_start) {
          open.emplace_back(std::set<std::string, std::less<>>());
        } else {
          open.emplace_back();
        }
        return error.ok();
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!open.empty()) open.pop_back();
        return error.ok();
      case json::parse_event_t::key:
        if (!open.empty() && open.back()) {
          const std::string& k = parsed.get_ref<const std::string&>();
          if (!open.back()->insert(k).second) {
            return fail(JsonError::kDuplicateKey, "duplicate member \"" + k + "\"");
          }
        }
        return error.ok();
      case json::parse_event_t::value:
        return error.ok();
    }
    return error.ok();
  };
  json j = json::parse(text.begin(), text.end(), cb, /*allow_exceptions=*/false);
  if (!error.ok()) return error;
  if (j.is_discarded()) {
    return InvalidArgument("not a JSON document", static_cast<int>(JsonError::kSyntax));
  }
  return j;
}

}  // namespace kvcs
