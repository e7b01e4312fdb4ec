// Fuzzes the manifest parsers (src/profile/manifest.h, manifest_one_pass.h). Invariants: no crash;
// whatever the one-pass reader accepts, the nlohmann reference accepts as the same model;
// ParseManifest answers exactly as the reference (accepted model, or the same typed error); an
// accepted manifest serializes, the serialization takes the one-pass path and parses back to the
// same model.
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
  if (!json.ok()) std::abort();
  auto again = ParseManifestOnePass(*json);
  if (!again || !(*again == *m)) std::abort();
  return 0;
}
