// The manifest's hot path: a one-pass reader of manifest JSON text straight into the typed model,
// without a DOM. A manifest re-lists every object digest in each version (~17 MB of hex per
// version at 64K tokens, 32 layers, k+v), and the nlohmann DOM costs far more CPU than reading
// the hex once (bench/profile: manifest_parse_bench).
//
// It accepts a subset of what ParseManifestReference accepts and builds the same Manifest:
// strings of printable ASCII without escapes, unsigned integers without a sign, fraction or
// exponent (at most 2^53-1, like the reference), the literals true and false, JSON whitespace,
// members in any order, no duplicate or unknown member, every bound and check of the reference
// (ValidateManifest included). "compat" (a few hundred bytes) is handed to the reference's own
// steps (ParseStrictJsonText, DescriptorFromJson) so that its rules live in one place.
// Anything else — an error, or valid JSON outside the subset (escapes, non-ASCII, a BOM) — is
// nullopt, and ParseManifest then asks the reference, which decides and types the error. So
// ParseManifest's accepted set and errors are exactly the reference's (fuzz/profile asserts that
// whatever this accepts, the reference accepts as the same Manifest).
//
// Pure and thread-safe.
#ifndef KVCS_PROFILE_MANIFEST_ONE_PASS_H_
#define KVCS_PROFILE_MANIFEST_ONE_PASS_H_

#include <optional>
#include <string_view>

#include "profile/manifest.h"

namespace kvcs::profile {

std::optional<Manifest> ParseManifestOnePass(std::string_view json);

}  // namespace kvcs::profile

#endif  // KVCS_PROFILE_MANIFEST_ONE_PASS_H_
