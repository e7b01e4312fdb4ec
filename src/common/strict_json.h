// Strict JSON parsing for peer input: one document, no trailing bytes, no duplicate member in any
// object, at most `max_bytes` of input and `max_depth` levels of nesting (deeper values are
// refused while parsing and never stored). Types and member names are the caller's to check.
// Pure; thread-safe.
#ifndef KVCS_COMMON_STRICT_JSON_H_
#define KVCS_COMMON_STRICT_JSON_H_

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>

#include "common/status.h"

namespace kvcs {

// Typed detail of a ParseStrictJson failure (Code::kInvalidArgument, or kResourceExhausted for
// kTooLarge).
enum class JsonError {
  kNone = 0,
  kTooLarge = 200,  // input above max_bytes
  kSyntax,          // not one JSON document
  kDuplicateKey,    // a member name twice in one object
  kTooDeep,         // nested deeper than max_depth
};

Result<nlohmann::json> ParseStrictJson(std::string_view text, size_t max_bytes, int max_depth);

}  // namespace kvcs

#endif  // KVCS_COMMON_STRICT_JSON_H_
