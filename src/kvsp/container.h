// The KVSP container: one block, a contiguous range of layers (KVSP v1 as defined by the
// project, spec §5; byte layout in docs/formats/kvsp-container.md).
//
//   header (92 + P bytes) | layer table (N x 52 bytes) | K0 V0 K1 V1 ... (sections as carried)
//
// Every layer entry carries layer_digest = SHA-256(K bytes || V bytes) (spec §6). The decoder is
// strict: every field is checked, lengths must add up exactly, and every digest is verified.
// VerifyContainer additionally checks the header against what the reader asked for, so that a
// flip of any single bit of the header or layer table is detected.
//
// ContainerView is the zero-copy form: it holds the parsed header and table and the byte range of
// each layer's K and V sections, so a store can serve one layer as one byte range and a client
// can verify just that layer (VerifyLayer). A view does not point into the bytes it was parsed
// from; byte ranges are offsets from the container's first byte.
// Pure functions; thread-safe.
#ifndef KVCS_KVSP_CONTAINER_H_
#define KVCS_KVSP_CONTAINER_H_

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "common/bytes.h"
#include "common/crypto.h"
#include "common/status.h"
#include "kvsp/codec.h"
#include "kvsp/descriptor.h"
#include "kvsp/layer_digest.h"

namespace kvcs::kvsp {

enum class ContainerError {
  kNone = 0,
  kTruncated,          // fewer bytes than the header, table or lengths say (Code::kNeedMoreData)
  kBadMagic,           // first 4 bytes are not "KVSP"
  kBadVersion,         // version != 1
  kBadFlags,           // flags != 0
  kUnknownCodec,       // codec value not registered (or reserved / private use)
  kHeaderLenMismatch,  // header_len != 92 + P
  kReservedNonZero,    // header or table reserved field not zero
  kBadCodecParams,     // P too large, or non-empty for a codec that takes none
  kBadLayerCount,      // N = 0 or layer_first + N > 65536
  kLayerNumber,        // table entry layer != layer_first + index
  kSectionTooLarge,    // one section longer than kMaxSectionBytes
  kTooLarge,           // container longer than kMaxContainerBytes (Code::kResourceExhausted)
  kTrailingBytes,      // bytes after the last section
  kDigestMismatch,     // a layer digest does not match its sections (message names the layer)
  kCompatIdMismatch,   // expectation checks (VerifyContainer / VerifyLayer)...
  kBlockKeyMismatch,
  kBlockIndexMismatch,
  kBlockTokensMismatch,
  kCodecMismatch,
  kLayerRangeMismatch,
  kSectionSizeMismatch,  // a section length impossible for the codec and shape
  kNoSuchLayer,          // VerifyLayer / ranges: layer not in this container
  kBadInput,             // encoder given inconsistent arguments
};
std::string_view ContainerErrorName(ContainerError e);

inline constexpr uint8_t kContainerMagic[4] = {'K', 'V', 'S', 'P'};
inline constexpr uint8_t kContainerVersion = 1;
inline constexpr size_t kFixedHeaderBytes = 92;  // offsets 0..91 of spec §5
inline constexpr size_t kLayerEntryBytes = 52;   // layer u16, reserved u16, k_len, v_len, digest
// None of our codecs takes parameters; 1 KiB leaves room for future ones and bounds the header.
inline constexpr size_t kMaxCodecParamsBytes = 1024;
// layer_first and layer numbers are u16, so at most 65536 layers; N itself is a u16.
inline constexpr uint32_t kMaxContainerLayers = 65535;
// A real block container is KiB..MiB (Llama-3.1-8B bf16, B=16: 2 MiB; 405B: 8 MiB). 1 GiB is
// over 100x that and bounds what a peer can make us buffer or hash.
inline constexpr uint64_t kMaxContainerBytes = uint64_t{1} << 30;

// Header fields (spec §5) other than magic, version, flags, header_len and lengths.
struct ContainerHeader {
  Codec codec = Codec::kRaw;
  Digest compat_id{};
  Digest block_key{};
  uint32_t block_index = 0;  // 1-based, informative
  uint32_t block_tokens = 0;
  uint16_t layer_first = 0;
  uint16_t layer_count = 0;
  Bytes codec_params;  // empty for every codec implemented here
};

// A half-open byte range [offset, offset + length) within a container.
struct ByteRange {
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t end() const { return offset + length; }
  friend bool operator==(const ByteRange&, const ByteRange&) = default;
};

struct LayerEntry {
  uint16_t layer = 0;
  uint64_t k_len = 0, v_len = 0;
  Digest digest{};
  ByteRange k, v;  // where the sections lie in the container
  // K and V together: what a store serves for one layer (one Range GET).
  ByteRange both() const { return {k.offset, k_len + v_len}; }
};

struct ContainerView {
  ContainerHeader header;
  std::vector<LayerEntry> layers;  // table order: layer_first, layer_first + 1, ...
  uint64_t header_len = 0;         // 92 + P
  uint64_t payload_offset = 0;     // header_len + 52 N
  uint64_t total_size = 0;         // payload_offset + sum of section lengths

  // The entry of a layer number, or nullptr when the container does not hold it.
  const LayerEntry* Find(uint32_t layer) const;
};

// One layer's K and V sections as carried (already encoded with the container's codec).
struct LayerSections {
  ByteSpan k, v;
};

// Builds a container. layers[i] is layer header.layer_first + i; header.layer_count is set from
// layers.size(). Digests are computed here.
Result<Bytes> EncodeContainer(const ContainerHeader& header, std::span<const LayerSections> layers);
// Encodes raw sections with `codec` first (raw_layers[i] holds raw K and V of one layer, shaped
// by `d`), then builds the container with block_tokens from `d`.
Result<Bytes> EncodeContainerFromRaw(const Descriptor& d, const Digest& compat_id,
                                     const Digest& block_key, uint32_t block_index, Codec codec,
                                     uint16_t layer_first,
                                     std::span<const LayerSections> raw_layers);

// Bytes of header + layer table, from at least the first 92 bytes (kNeedMoreData before that).
Result<uint64_t> ContainerPrefixSize(ByteSpan prefix);
// Parses header and layer table from a prefix of a container (the payload need not be present);
// checks structure and that lengths are in bounds, not digests. kNeedMoreData/kTruncated while
// the prefix is shorter than header + table. total_size tells how long the container is, so
// containers streamed back to back can be split.
Result<ContainerView> ParseContainerHeader(ByteSpan prefix);
// Parses the whole container: exactly total_size bytes (shorter: kTruncated; longer:
// kTrailingBytes), and verifies every layer digest.
Result<ContainerView> DecodeContainer(ByteSpan container);

// What a reader asked for. Optional shapes make section lengths checkable against the codec
// (exact for raw, fp8-e4m3, int8; bounded for zstd).
struct ContainerExpectation {
  Digest compat_id{};
  Digest block_key{};
  uint32_t block_index = 0;
  uint32_t block_tokens = 0;
  Codec codec = Codec::kRaw;
  uint16_t layer_first = 0;
  uint16_t layer_count = 0;
  std::optional<SectionShape> k_shape, v_shape;
};
// Expectation for a block of descriptor `d` (shapes from d).
ContainerExpectation ExpectFor(const Descriptor& d, const Digest& compat_id,
                               const Digest& block_key, uint32_t block_index, Codec codec,
                               uint16_t layer_first, uint16_t layer_count);

// Checks a parsed header/table against an expectation (no digests).
Status CheckExpectation(const ContainerView& view, const ContainerExpectation& want);
// DecodeContainer + CheckExpectation.
Result<ContainerView> VerifyContainer(ByteSpan container, const ContainerExpectation& want);
// Verifies one layer's sections (fetched separately, e.g. by a Range GET of entry.both()) against
// a view obtained from the header and table.
Status VerifyLayer(const ContainerView& view, uint32_t layer, ByteSpan k, ByteSpan v);
// The K and V bytes of a layer inside a whole container. REQUIRES: view parsed from container.
Result<LayerSections> LayerBytes(const ContainerView& view, ByteSpan container, uint32_t layer);

// Decodes one layer of a verified container back to raw K and V sections of `d`'s dtype (what a
// consumer writes into its KV cache). *k and *v are resized to the raw section sizes.
// REQUIRES: view parsed from container (DecodeContainer / VerifyContainer).
Status DecodeLayerRaw(const ContainerView& view, ByteSpan container, uint32_t layer,
                      const Descriptor& d, Bytes* k, Bytes* v);

}  // namespace kvcs::kvsp

#endif  // KVCS_KVSP_CONTAINER_H_
