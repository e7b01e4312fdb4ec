// Fuzzes the aws-chunked decoder (signed and unsigned), fed in pieces whose sizes come from the
// first input byte, into a small output buffer: bounded memory, no crash, done() only on a
// well-formed body.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "s3/chunked.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  size_t step = 1 + data[0] % 64;
  bool signed_mode = data[0] & 0x80;
  std::optional<kvcs::s3::ChunkSigning> cs;
  if (signed_mode) {
    cs = kvcs::s3::ChunkSigning{
        {}, "20130524T000000Z", "20130524/us-east-1/s3/aws4_request", std::string(64, '0')};
  }
  kvcs::s3::AwsChunkedDecoder d(cs);
  uint8_t out[97];
  for (size_t off = 1; off < size; off += step) {
    kvcs::ByteSpan in(data + off, std::min(step, size - off));
    while (!in.empty()) {
      auto n = d.Decode(&in, out);
      if (!n.ok()) return 0;
    }
  }
  return 0;
}
