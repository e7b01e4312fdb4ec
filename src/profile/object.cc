#include "profile/object.h"

#include <algorithm>
#include <string>

#include "profile/codecs.h"

namespace kvcs::profile {
namespace {

// Field offsets in the 68-byte header (docs/formats/kvcs-object.md).
constexpr size_t kOffMagic = 0;
constexpr size_t kOffVersion = 4;
constexpr size_t kOffComponent = 5;
constexpr size_t kOffFlags = 6;
constexpr size_t kOffLayer = 8;
constexpr size_t kOffBlockIndex = 12;
constexpr size_t kOffTokenStart = 16;
constexpr size_t kOffTokenCount = 24;
constexpr size_t kOffCodec = 28;
constexpr size_t kOffReserved = 30;
constexpr size_t kOffDataLength = 32;
constexpr size_t kOffDigest = 36;
static_assert(kOffDigest + kDigestSize == kObjectHeaderSize);

Status Err(ObjectError e, std::string msg) {
  Code code = Code::kInvalidArgument;
  if (e == ObjectError::kDigestMismatch) code = Code::kCorruption;
  if (e == ObjectError::kUnknownCodec) code = Code::kUnsupported;
  return Status(code, "object: " + msg, static_cast<int>(e));
}

std::string U(uint64_t v) { return std::to_string(v); }

// Shared by DecodeObject (with a location) and InspectObject (without).
Result<ObjectView> Decode(ByteSpan p, const ObjectExpectation* expect, const Digest* data_sha256) {
  if (p.size() < kObjectHeaderSize) {
    return Err(ObjectError::kTruncated,
               "payload of " + U(p.size()) + " bytes is shorter than the 68-byte header");
  }
  const uint8_t* h = p.data();
  if (LoadBe32(h + kOffMagic) != kObjectMagic) {
    return Err(ObjectError::kBadMagic, "magic is not \"KVO1\"");
  }
  ObjectHeader hd;
  hd.version = h[kOffVersion];
  if (hd.version != kObjectVersion) {
    return Err(ObjectError::kBadVersion, "unsupported version " + U(hd.version));
  }
  uint8_t component = h[kOffComponent];
  if (!IsValidComponent(component)) {
    return Err(ObjectError::kBadComponent, "component " + U(component) + " is not 1..3");
  }
  hd.component = static_cast<Component>(component);
  hd.flags = LoadBe16(h + kOffFlags);
  hd.layer = LoadBe32(h + kOffLayer);
  hd.block_index = LoadBe32(h + kOffBlockIndex);
  hd.token_start = LoadBe64(h + kOffTokenStart);
  hd.token_count = LoadBe32(h + kOffTokenCount);
  hd.codec = LoadBe16(h + kOffCodec);
  uint16_t reserved = LoadBe16(h + kOffReserved);
  hd.data_length = LoadBe32(h + kOffDataLength);
  std::copy(h + kOffDigest, h + kOffDigest + kDigestSize, hd.data_digest.begin());

  if (reserved != 0) return Err(ObjectError::kReservedNotZero, "reserved field is not zero");
  if (!IsRegisteredCodecValue(hd.codec)) {
    return Err(ObjectError::kUnknownCodec, "codec value " + U(hd.codec) + " is not registered");
  }
  if (hd.data_length > kMaxObjectDataSize) {
    return Err(ObjectError::kDataTooLarge, "data length " + U(hd.data_length) + " is too large");
  }
  uint64_t want = kObjectHeaderSize + uint64_t{hd.data_length};
  if (p.size() < want) {
    return Err(ObjectError::kTruncated,
               "payload of " + U(p.size()) + " bytes, header says " + U(want));
  }
  if (p.size() > want) {
    return Err(ObjectError::kTrailingData,
               "payload of " + U(p.size()) + " bytes, header says " + U(want));
  }
  if (expect != nullptr) KVCS_RETURN_IF_ERROR(CheckObjectExpectation(hd, *expect));
  ByteSpan data = p.subspan(kObjectHeaderSize);
  // Digests are public values; no constant-time comparison is needed.
  if ((data_sha256 != nullptr ? *data_sha256 : Sha256::Hash(data)) != hd.data_digest) {
    return Err(ObjectError::kDigestMismatch, "SHA-256 of data does not match the data digest");
  }
  return ObjectView{hd, data};
}

}  // namespace

std::string_view ObjectErrorName(ObjectError e) {
  switch (e) {
    case ObjectError::kNone:
      return "none";
    case ObjectError::kTruncated:
      return "truncated";
    case ObjectError::kTrailingData:
      return "trailing_data";
    case ObjectError::kBadMagic:
      return "bad_magic";
    case ObjectError::kBadVersion:
      return "bad_version";
    case ObjectError::kBadComponent:
      return "bad_component";
    case ObjectError::kReservedNotZero:
      return "reserved_not_zero";
    case ObjectError::kUnknownCodec:
      return "unknown_codec";
    case ObjectError::kDataTooLarge:
      return "data_too_large";
    case ObjectError::kLayerMismatch:
      return "layer_mismatch";
    case ObjectError::kBlockIndexMismatch:
      return "block_index_mismatch";
    case ObjectError::kComponentMismatch:
      return "component_mismatch";
    case ObjectError::kCodecMismatch:
      return "codec_mismatch";
    case ObjectError::kTokenCountMismatch:
      return "token_count_mismatch";
    case ObjectError::kTokenStartMismatch:
      return "token_start_mismatch";
    case ObjectError::kDigestMismatch:
      return "digest_mismatch";
  }
  return "unknown";
}

namespace {

// The header, with the Data Digest `data_sha256` when given, else hashed here (after the checks).
Result<std::array<uint8_t, kObjectHeaderSize>> EncodeHeader(const ObjectInfo& info, ByteSpan data,
                                                            const Digest* data_sha256) {
  if (data.size() > kMaxObjectDataSize) {
    return Err(ObjectError::kDataTooLarge, "data of " + U(data.size()) + " bytes is too large");
  }
  if (!IsRegisteredCodecValue(info.codec)) {
    return Err(ObjectError::kUnknownCodec, "codec value " + U(info.codec) + " is not registered");
  }
  if (!IsValidComponent(static_cast<uint8_t>(info.component))) {
    return Err(ObjectError::kBadComponent, "component is not 1..3");
  }
  std::array<uint8_t, kObjectHeaderSize> h{};
  uint8_t* p = h.data();
  StoreBe32(p + kOffMagic, kObjectMagic);
  p[kOffVersion] = kObjectVersion;
  p[kOffComponent] = static_cast<uint8_t>(info.component);
  StoreBe16(p + kOffFlags, 0);
  StoreBe32(p + kOffLayer, info.layer);
  StoreBe32(p + kOffBlockIndex, info.block_index);
  StoreBe64(p + kOffTokenStart, info.token_start);
  StoreBe32(p + kOffTokenCount, info.token_count);
  StoreBe16(p + kOffCodec, info.codec);
  StoreBe16(p + kOffReserved, 0);
  StoreBe32(p + kOffDataLength, uint32_t(data.size()));
  const Digest d = data_sha256 != nullptr ? *data_sha256 : Sha256::Hash(data);
  std::copy(d.begin(), d.end(), p + kOffDigest);
  return h;
}

Result<Bytes> Encode(const ObjectInfo& info, ByteSpan data, const Digest* data_sha256) {
  KVCS_ASSIGN_OR_RETURN(auto header, EncodeHeader(info, data, data_sha256));
  Bytes out;
  out.reserve(kObjectHeaderSize + data.size());
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

}  // namespace

Result<std::array<uint8_t, kObjectHeaderSize>> EncodeObjectHeader(const ObjectInfo& info,
                                                                  ByteSpan data) {
  return EncodeHeader(info, data, nullptr);
}

Result<Bytes> EncodeObject(const ObjectInfo& info, ByteSpan data) {
  return Encode(info, data, nullptr);
}

Result<Bytes> EncodeObjectWithDigest(const ObjectInfo& info, ByteSpan data,
                                     const Digest& data_sha256) {
  return Encode(info, data, &data_sha256);
}

Status CheckObjectExpectation(const ObjectHeader& hd, const ObjectExpectation& expect) {
  if (hd.layer != expect.group_id) {
    return Err(ObjectError::kLayerMismatch,
               "layer " + U(hd.layer) + " in group " + U(expect.group_id));
  }
  if (hd.block_index != expect.object_id) {
    return Err(ObjectError::kBlockIndexMismatch,
               "block index " + U(hd.block_index) + " in object " + U(expect.object_id));
  }
  if (expect.component && hd.component != *expect.component) {
    return Err(ObjectError::kComponentMismatch,
               "component " + std::string(ComponentName(hd.component)) + " on a " +
                   std::string(ComponentName(*expect.component)) + " track");
  }
  if (expect.codec && hd.codec != *expect.codec) {
    return Err(ObjectError::kCodecMismatch,
               "codec " + U(hd.codec) + " on a track of codec " + U(*expect.codec));
  }
  if (expect.block_tokens && hd.token_count != *expect.block_tokens) {
    return Err(ObjectError::kTokenCountMismatch,
               "token count " + U(hd.token_count) + ", block_tokens is " + U(*expect.block_tokens));
  }
  if (expect.token_start && hd.token_start != *expect.token_start) {
    return Err(ObjectError::kTokenStartMismatch,
               "token start " + U(hd.token_start) + ", manifest says " + U(*expect.token_start));
  }
  return Status::Ok();
}

Result<ObjectView> DecodeObject(ByteSpan payload, const ObjectExpectation& expect) {
  return Decode(payload, &expect, nullptr);
}

Result<ObjectView> DecodeObjectWithDigest(ByteSpan payload, const ObjectExpectation& expect,
                                          const Digest& data_sha256) {
  return Decode(payload, &expect, &data_sha256);
}

Result<ObjectView> InspectObject(ByteSpan payload) { return Decode(payload, nullptr, nullptr); }

}  // namespace kvcs::profile
