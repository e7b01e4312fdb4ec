#include "profile/codecs.h"

namespace kvcs::profile {
namespace {
// TEMPORARY until src/kvsp/codec.h lands: KVSP §4 table.
constexpr std::string_view kNames[] = {"",     "raw",  "zstd",     "fp8-e4m3",
                                       "int8", "int4", "fp4-e2m1", "cachegen"};
}  // namespace

bool IsRegisteredCodecValue(uint16_t value) { return value >= 1 && value <= 7; }

std::optional<uint16_t> CodecValueForName(std::string_view name) {
  for (uint16_t v = 1; v <= 7; ++v) {
    if (kNames[v] == name) return v;
  }
  return std::nullopt;
}

}  // namespace kvcs::profile
