// The KVSP codec registry and section codecs (KVSP v1 as defined by the project, spec §4).
//
// A codec turns one raw K or V section ([B][H][D] elements of kv_dtype, little-endian, row-major)
// into the bytes a container carries, and back:
//   raw       the section bytes themselves
//   zstd      the raw section bytes as exactly one Zstandard frame
//   fp8-e4m3  H float32 per-head scales (little-endian), then B·H·D e4m3 bytes
//   int8      H float32 per-head scales (little-endian), then B·H·D int8 (symmetric, [-127, 127])
//   int4, fp4-e2m1, cachegen: registered (names and values are known) but not implemented here:
//             encoding or decoding them fails with Code::kUnsupported.
// A quantized section decodes back to the descriptor's dtype (bf16, fp16 or fp32). An empty
// section (MLA's V) encodes to zero bytes under every codec.
// Names appear in JSON, track names and URLs; values appear in binary headers.
// Pure functions; thread-safe (zstd contexts are per thread).
#ifndef KVCS_KVSP_CODEC_H_
#define KVCS_KVSP_CODEC_H_

#include <cstdint>
#include <span>
#include <string_view>

#include "common/bytes.h"
#include "common/status.h"
#include "kvsp/descriptor.h"

namespace kvcs::kvsp {

enum class Codec : uint16_t {
  kRaw = 0x0001,
  kZstd = 0x0002,
  kFp8E4m3 = 0x0003,
  kInt8 = 0x0004,
  kInt4 = 0x0005,
  kFp4E2m1 = 0x0006,
  kCachegen = 0x0007,
};

enum class CodecError {
  kNone = 0,
  kUnknownName,       // a name not in the registry
  kUnknownValue,      // a value not in the registry
  kReservedValue,     // 0x0000
  kPrivateUse,        // 0xFF00..0xFFFF: meaningful only between consenting peers, not to us
  kNotImplemented,    // registered but not implemented (int4, fp4-e2m1, cachegen)
  kUnsupportedDtype,  // e.g. quantizing an fp8 section
  kWrongInputSize,    // raw input is not B·H·D·dtype bytes
  kWrongEncodedSize,  // encoded section has the wrong length for its codec
  kBadFrame,          // zstd: not exactly one valid frame, or the wrong decompressed size
  kNonFinite,         // quantizing NaN or infinity
  kBadScale,          // a carried scale is negative, NaN or infinite
  kNanCode,           // an fp8 byte is the NaN code (our encoder never writes it)
};

struct CodecInfo {
  Codec codec;
  std::string_view name;
  bool implemented;
};

// Every registered codec, by value.
std::span<const CodecInfo> AllCodecs();
std::string_view CodecName(Codec c);
uint16_t CodecValue(Codec c);
Result<Codec> CodecFromName(std::string_view name);
Result<Codec> CodecFromValue(uint16_t value);
bool IsImplemented(Codec c);

enum class Dtype : uint8_t { kBf16, kFp16, kFp32, kFp8E4m3, kFp8E5m2 };
Result<Dtype> DtypeFromName(std::string_view kv_dtype);
size_t DtypeSize(Dtype d);

// The shape of one K or V section.
struct SectionShape {
  uint32_t tokens = 0;    // B
  uint32_t heads = 0;     // H (unsharded kv_heads)
  uint32_t head_dim = 0;  // D
  Dtype dtype = Dtype::kBf16;

  uint64_t elements() const { return uint64_t{tokens} * heads * head_dim; }
  uint64_t raw_bytes() const { return elements() * DtypeSize(dtype); }
};
// K and V shapes of a valid descriptor (V has 0 tokens for MLA).
// REQUIRES: ValidateDescriptor(d).ok().
SectionShape KShape(const Descriptor& d);
SectionShape VShape(const Descriptor& d);

// zstd level: 1 is the fastest; KV tensors compress little (~10-30% for bf16) at any level, so
// speed wins.
inline constexpr int kZstdLevel = 1;

// The exact encoded length of a section for fixed-size codecs; for zstd the upper bound
// (ZSTD_compressBound). 0 for an empty section. Fails for unimplemented codecs.
Result<uint64_t> MaxEncodedBytes(Codec c, const SectionShape& s);
// Checks that an encoded length is possible for the codec and shape (exact for raw/fp8/int8,
// 1..bound for zstd, 0 for an empty section).
Status CheckEncodedLength(Codec c, const SectionShape& s, uint64_t len);

// Appends the encoded form of `raw` (shape.raw_bytes() bytes) to *out.
Status EncodeSection(Codec c, const SectionShape& s, ByteSpan raw, Bytes* out);
// Decodes into `out`, which must be exactly shape.raw_bytes() long.
Status DecodeSection(Codec c, const SectionShape& s, ByteSpan encoded, std::span<uint8_t> out);
// Convenience forms.
Result<Bytes> EncodeSection(Codec c, const SectionShape& s, ByteSpan raw);
Result<Bytes> DecodeSection(Codec c, const SectionShape& s, ByteSpan encoded);

}  // namespace kvcs::kvsp

#endif  // KVCS_KVSP_CODEC_H_
