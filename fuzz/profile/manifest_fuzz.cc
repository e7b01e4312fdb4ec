// Fuzzes the manifest parsers (src/profile/manifest.h, manifest_one_pass.h). Invariants: no crash;
// whatever the one-pass reader accepts, the nlohmann reference accepts as the same model;
// ParseManifest answers exactly as the reference (accepted model, or the same typed error); an
// accepted manifest serializes (the one-pass writer's text equal to the reference's), parses back
// to the same model, and takes the one-pass path when
// its text is plain ASCII without escapes.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "profile/manifest.h"
#include "profile/manifest_one_pass.h"

using namespace kvcs::profile;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto ref = ParseManifestReference(text);
  auto fast = ParseManifestOnePass(text);
  if (fast && (!ref.ok() || !(*ref == *fast))) std::abort();
  auto m = ParseManifest(text);
  if (m.ok() != ref.ok()) std::abort();
  if (!m.ok()) {
    if (m.status().detail() != ref.status().detail() || m.status().code() != ref.status().code()) {
      std::abort();
    }
    return 0;
  }
  if (!(*m == *ref)) std::abort();
  auto json = ManifestToJson(*m);
  auto ref_json = ManifestToJsonReference(*m);
  if (!json.ok() || !ref_json.ok() || *json != *ref_json) std::abort();
  auto again = ParseManifest(*json);
  if (!again.ok() || !(*again == *m)) std::abort();
  // The serialization takes the one-pass path unless a string needs what the subset leaves to the
  // reference (an escape, non-ASCII text: a descriptor's model name may hold either).
  bool plain = true;
  for (unsigned char c : *json) plain &= c >= 0x20 && c < 0x80 && c != '\\';
  if (plain && !ParseManifestOnePass(*json)) std::abort();
  return 0;
}
