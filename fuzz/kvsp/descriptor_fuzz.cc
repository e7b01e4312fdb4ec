// Fuzzes ParseDescriptor: never crashes; an accepted descriptor's canonical form parses back to
// the same descriptor and is a fixed point.
#include <cstdlib>
#include <string_view>

#include "kvsp/descriptor.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvcs::kvsp;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto d = ParseDescriptor(in);
  if (!d.ok()) {
    if (d.status().detail() == 0) std::abort();  // every failure is typed
    return 0;
  }
  if (!ValidateDescriptor(*d).ok()) std::abort();
  std::string canon = CanonicalJson(*d);
  auto again = ParseDescriptor(canon);
  if (!again.ok() || !(*again == *d) || CanonicalJson(*again) != canon) std::abort();
  auto from_json = DescriptorFromJson(ToJson(*d));
  if (!from_json.ok() || !(*from_json == *d)) std::abort();
  (void)CompatId(*d);
  (void)KSectionBytes(*d);
  return 0;
}
