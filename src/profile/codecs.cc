#include "profile/codecs.h"

#include "kvsp/codec.h"

namespace kvcs::profile {

bool IsRegisteredCodecValue(uint16_t value) { return kvsp::CodecFromValue(value).ok(); }

std::optional<uint16_t> CodecValueForName(std::string_view name) {
  auto c = kvsp::CodecFromName(name);
  if (!c.ok()) return std::nullopt;
  return kvsp::CodecValue(*c);
}

}  // namespace kvcs::profile
