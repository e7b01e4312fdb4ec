// Fuzzes the manifest parser (src/profile/manifest.h). Invariants: no crash; an accepted manifest
// serializes, and the serialization parses back to the same model.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "profile/manifest.h"

using namespace kvcs::profile;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto m = ParseManifest(text);
  if (!m.ok()) return 0;
  auto json = ManifestToJson(*m);
  if (!json.ok()) std::abort();
  auto again = ParseManifest(*json);
  if (!again.ok() || !(*again == *m)) std::abort();
  return 0;
}
