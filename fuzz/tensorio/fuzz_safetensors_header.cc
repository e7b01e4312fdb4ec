// libFuzzer target: the safetensors header parser (src/tensorio) on arbitrary file bytes.
// Any accepted file must describe tensors that lie inside the buffer and cover it exactly.
#include <cstdint>
#include <cstdlib>

#include "tensorio/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto v = kvcs::tensorio::SafetensorsView::Parse(kvcs::ByteSpan(data, size));
  if (!v.ok()) return 0;
  const auto& h = v->header();
  uint64_t covered = 0;
  for (const auto& t : h.tensors) {
    if (t.end > h.data_size || t.begin > t.end) std::abort();
    if (t.size() != t.elements() * kvcs::tensorio::DtypeSize(t.dtype)) std::abort();
    covered += t.size();
    (void)v->data(t);
  }
  if (covered != h.data_size || h.data_start + h.data_size != size) std::abort();
  return 0;
}
