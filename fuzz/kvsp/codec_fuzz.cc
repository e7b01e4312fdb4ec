// Fuzzes section decoding: the first 4 bytes pick the codec, dtype and a small shape; the rest is
// the encoded section. Never crashes; a decoded quantized section re-encodes to the same length.
#include <algorithm>
#include <cstdlib>

#include "kvsp/codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvcs;
  using namespace kvcs::kvsp;
  if (size < 4) return 0;
  constexpr Codec kCodecs[] = {Codec::kRaw, Codec::kZstd, Codec::kFp8E4m3, Codec::kInt8,
                               Codec::kInt4};
  constexpr Dtype kDtypes[] = {Dtype::kBf16, Dtype::kFp16, Dtype::kFp32, Dtype::kFp8E4m3};
  Codec c = kCodecs[data[0] % 5];
  SectionShape s{static_cast<uint32_t>(data[1] % 33), static_cast<uint32_t>(data[2] % 9 + 1),
                 static_cast<uint32_t>(data[3] % 65 + 1), kDtypes[(data[0] / 5) % 4]};
  ByteSpan enc(data + 4, size - 4);
  auto raw = DecodeSection(c, s, enc);
  if (!raw.ok()) {
    if (raw.status().detail() == 0) std::abort();
    return 0;
  }
  if (raw->size() != s.raw_bytes()) std::abort();
  if (c == Codec::kRaw && !std::equal(raw->begin(), raw->end(), enc.begin())) std::abort();
  if (c == Codec::kFp8E4m3 || c == Codec::kInt8) {
    auto re = EncodeSection(c, s, *raw);
    // Decoded values are finite unless a huge scale overflowed the output dtype.
    if (re.ok() && re->size() != enc.size()) std::abort();
  }
  return 0;
}
