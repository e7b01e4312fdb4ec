// Fuzzes track-name and namespace parsing (src/profile/track_name.h, namespace.h), both of which
// arrive from MOQT peers, and the namespace text form (holder URIs from an index service).
// Invariants: no crash; an accepted track name formats back to the input; an accepted namespace
// builds back to the same fields; accepted namespace text prints back to itself (lowercased).
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "profile/namespace.h"
#include "profile/track_name.h"

using namespace kvcs;
using namespace kvcs::profile;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto t = ParseTrackName(text);
  if (t.ok() && FormatTrackName(*t) != text) std::abort();
  auto nt = ParseNamespaceText(text);
  if (nt.ok()) {
    auto printed = NamespaceText(*nt);
    if (!printed || printed->size() != text.size()) std::abort();
    for (size_t i = 0; i < text.size(); ++i) {
      if ((*printed)[i] != std::tolower(static_cast<unsigned char>(text[i]))) std::abort();
    }
  }
  // Namespace: the input as length-prefixed fields (one length byte each).
  std::vector<ByteSpan> fields;
  size_t pos = 0;
  while (pos < size && fields.size() < 8) {
    size_t n = data[pos++];
    if (n > size - pos) n = size - pos;
    fields.emplace_back(data + pos, n);
    pos += n;
  }
  auto ns = ParseNamespace(std::span<const ByteSpan>(fields));
  if (ns.ok()) {
    TrackNamespace built = BuildNamespace(*ns);
    for (size_t i = 0; i < fields.size(); ++i) {
      if (!std::equal(fields[i].begin(), fields[i].end(), built[i].begin(), built[i].end())) {
        std::abort();
      }
    }
  }
  return 0;
}
