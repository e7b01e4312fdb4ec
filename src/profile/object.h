// The KVCS Object Payload (KVCS profile §3.5): a 68-byte big-endian header followed by Data, the
// tensor of one token block in one layer. Byte layout and every check are in
// docs/formats/kvcs-object.md.
//
// EncodeObject writes a payload (Flags always 0). DecodeObject verifies a received payload: every
// MUST of §3.5 (Magic, Version, Layer == Group ID, Block Index == Object ID, header + Data Length
// == payload length, Data Digest) plus Component in 1..3, Reserved == 0, a registered KVSP codec,
// and, when the caller supplies them, Component/Codec (from the track name), Token Count (the
// descriptor's block_tokens) and Token Start (from the manifest). Each failure has its own
// ObjectError detail. Non-zero Flags are accepted, as the profile requires, but surfaced in
// ObjectHeader::flags so tools can warn.
//
// Zero-copy: DecodeObject returns a view whose `data` points into the caller's buffer; it is valid
// as long as that buffer is. All functions are pure and thread-safe.
#ifndef KVCS_PROFILE_OBJECT_H_
#define KVCS_PROFILE_OBJECT_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "common/bytes.h"
#include "common/crypto.h"
#include "common/status.h"
#include "profile/track_name.h"

namespace kvcs::profile {

inline constexpr uint32_t kObjectMagic = 0x4B564F31;  // "KVO1"
inline constexpr uint8_t kObjectVersion = 1;
inline constexpr size_t kObjectHeaderSize = 68;
// One object carries at most one K and one V section of one block and layer ("kv"); KVSP bounds a
// section at 1 GiB (kvsp::kMaxSectionBytes), and quantizing codecs add per-head scales (4·H bytes,
// far below 1 MiB). Larger declared lengths are rejected before any digest work, and a receiver
// can use kMaxObjectPayloadSize to cap reassembly of one MOQT object.
inline constexpr uint64_t kMaxObjectDataSize = (uint64_t{2} << 30) + (uint64_t{1} << 20);
inline constexpr uint64_t kMaxObjectPayloadSize = kObjectHeaderSize + kMaxObjectDataSize;

// The decoded header. `flags` is reserved (must be sent as 0, ignored on receipt): it is reported,
// never rejected.
struct ObjectHeader {
  uint8_t version = kObjectVersion;
  Component component = Component::kK;
  uint16_t flags = 0;
  uint32_t layer = 0;        // == MOQT Group ID
  uint32_t block_index = 0;  // == MOQT Object ID (index within the segment)
  uint64_t token_start = 0;  // absolute position of the block's first token
  uint32_t token_count = 0;  // == descriptor block_tokens
  uint16_t codec = 0;        // KVSP codec value
  uint32_t data_length = 0;
  Digest data_digest{};  // SHA-256(Data)

  bool has_unknown_flags() const { return flags != 0; }
  bool operator==(const ObjectHeader&) const = default;
};

// A verified payload: the header and a view of Data inside the decoded buffer.
struct ObjectView {
  ObjectHeader header;
  ByteSpan data;
};

// What the receiver knows independently of the payload. group_id and object_id come from the MOQT
// object (always known to a subscriber); the optional fields come from the track name (component,
// codec), the descriptor (block_tokens) and the manifest (token_start = (first_block + object id)
// · block_tokens). Supplying all of them makes every header bit checked.
struct ObjectExpectation {
  uint64_t group_id = 0;
  uint64_t object_id = 0;
  std::optional<Component> component;
  std::optional<uint16_t> codec;
  std::optional<uint32_t> block_tokens;
  std::optional<uint64_t> token_start;
};

enum class ObjectError {
  kNone = 0,
  kTruncated = 1,       // shorter than 68 bytes, or than 68 + Data Length
  kTrailingData,        // longer than 68 + Data Length
  kBadMagic,            // not "KVO1"
  kBadVersion,          // not 1
  kBadComponent,        // not 1..3
  kReservedNotZero,     // the u16 after Codec is not 0
  kUnknownCodec,        // not a registered KVSP codec value
  kDataTooLarge,        // Data Length above kMaxObjectDataSize
  kLayerMismatch,       // Layer != Group ID
  kBlockIndexMismatch,  // Block Index != Object ID
  kComponentMismatch,   // Component != the track name's component
  kCodecMismatch,       // Codec != the track name's codec
  kTokenCountMismatch,  // Token Count != block_tokens
  kTokenStartMismatch,  // Token Start != the manifest's position of this block
  kDigestMismatch,      // SHA-256(Data) != Data Digest
};
std::string_view ObjectErrorName(ObjectError e);

// The fields a producer chooses; the encoder fills in Magic, Version, Flags (0), Reserved (0),
// Data Length and Data Digest.
struct ObjectInfo {
  Component component = Component::kK;
  uint32_t layer = 0;
  uint32_t block_index = 0;
  uint64_t token_start = 0;
  uint32_t token_count = 0;
  uint16_t codec = 0;
};

// The 68 header bytes for `info` and `data`, so a sender can transmit header and Data as two
// slices without copying Data. Errors: kInvalidArgument (kDataTooLarge, kUnknownCodec).
Result<std::array<uint8_t, kObjectHeaderSize>> EncodeObjectHeader(const ObjectInfo& info,
                                                                  ByteSpan data);
// Header followed by a copy of Data.
Result<Bytes> EncodeObject(const ObjectInfo& info, ByteSpan data);
// EncodeObject with the SHA-256 of Data already computed by the caller (a publisher that also
// lists it in the manifest hashes Data once, not twice). The caller must have hashed exactly
// `data`; a wrong digest makes an object every receiver refuses (kDigestMismatch).
Result<Bytes> EncodeObjectWithDigest(const ObjectInfo& info, ByteSpan data,
                                     const Digest& data_sha256);

// Verifies `payload` as the object at (expect.group_id, expect.object_id). On success the view's
// data points into `payload`. Errors: kInvalidArgument / kUnsupported / kCorruption with an
// ObjectError detail.
Result<ObjectView> DecodeObject(ByteSpan payload, const ObjectExpectation& expect);

// DecodeObject with the SHA-256 of Data already computed by the caller (on another thread, or
// while the bytes arrived): every check, the Data Digest compared with `data_sha256`, no hashing.
// The caller must have hashed exactly payload[68..].
Result<ObjectView> DecodeObjectWithDigest(ByteSpan payload, const ObjectExpectation& expect,
                                          const Digest& data_sha256);

// The header checks against what the receiver knows (location, and the optional component, codec,
// token count, token start), no digest work: DecodeObject runs them, and a receiver that decoded
// an object before it knew the token start runs them again once the manifest says it.
Status CheckObjectExpectation(const ObjectHeader& header, const ObjectExpectation& expect);

// For tools that hold a payload without its MOQT location (kvcs inspect): every check that needs
// no outside knowledge (structure, lengths, codec, digest). Not enough for an End Subscriber.
Result<ObjectView> InspectObject(ByteSpan payload);

}  // namespace kvcs::profile

#endif  // KVCS_PROFILE_OBJECT_H_
