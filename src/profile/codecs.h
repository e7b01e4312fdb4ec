// The profile's view of the KVSP codec registry (KVSP v1 as defined by the project, §4): the
// name <-> value mapping that track names (names) and object headers (values) use.
// Thin forwarding to src/kvsp/codec.h, so the profile depends on the registry in one place.
// Pure functions; thread-safe.
#ifndef KVCS_PROFILE_CODECS_H_
#define KVCS_PROFILE_CODECS_H_

#include <cstdint>
#include <optional>
#include <string_view>

namespace kvcs::profile {

// True for a value that names a registered codec (not 0x0000 reserved, not unassigned, not
// private use: a private-use codec has no registered name, so no track can name it).
bool IsRegisteredCodecValue(uint16_t value);
// The registered value of a codec name ("raw" -> 1); nullopt for an unregistered name.
std::optional<uint16_t> CodecValueForName(std::string_view name);

}  // namespace kvcs::profile

#endif  // KVCS_PROFILE_CODECS_H_
