// KVSP v1 as defined by the project: container encode, decode and verify.
#include "kvsp/container.h"

#include <cstring>
#include <string>

namespace kvcs::kvsp {
namespace {

Status Err(ContainerError e, std::string msg, Code code = Code::kCorruption) {
  return {code, "container: " + std::move(msg), static_cast<int>(e)};
}
Status Truncated(std::string msg) {
  return Err(ContainerError::kTruncated, std::move(msg), Code::kNeedMoreData);
}

bool TakesNoParams(Codec c) { return IsImplemented(c); }

}  // namespace

std::string_view ContainerErrorName(ContainerError e) {
  switch (e) {
    case ContainerError::kNone:
      return "none";
    case ContainerError::kTruncated:
      return "truncated";
    case ContainerError::kBadMagic:
      return "bad_magic";
    case ContainerError::kBadVersion:
      return "bad_version";
    case ContainerError::kBadFlags:
      return "bad_flags";
    case ContainerError::kUnknownCodec:
      return "unknown_codec";
    case ContainerError::kHeaderLenMismatch:
      return "header_len_mismatch";
    case ContainerError::kReservedNonZero:
      return "reserved_nonzero";
    case ContainerError::kBadCodecParams:
      return "bad_codec_params";
    case ContainerError::kBadLayerCount:
      return "bad_layer_count";
    case ContainerError::kLayerNumber:
      return "layer_number";
    case ContainerError::kSectionTooLarge:
      return "section_too_large";
    case ContainerError::kTooLarge:
      return "too_large";
    case ContainerError::kTrailingBytes:
      return "trailing_bytes";
    case ContainerError::kDigestMismatch:
      return "digest_mismatch";
    case ContainerError::kCompatIdMismatch:
      return "compat_id_mismatch";
    case ContainerError::kBlockKeyMismatch:
      return "block_key_mismatch";
    case ContainerError::kBlockIndexMismatch:
      return "block_index_mismatch";
    case ContainerError::kBlockTokensMismatch:
      return "block_tokens_mismatch";
    case ContainerError::kCodecMismatch:
      return "codec_mismatch";
    case ContainerError::kLayerRangeMismatch:
      return "layer_range_mismatch";
    case ContainerError::kSectionSizeMismatch:
      return "section_size_mismatch";
    case ContainerError::kNoSuchLayer:
      return "no_such_layer";
    case ContainerError::kBadInput:
      return "bad_input";
  }
  return "unknown";
}

const LayerEntry* ContainerView::Find(uint32_t layer) const {
  if (layer < header.layer_first || layer - header.layer_first >= layers.size()) return nullptr;
  return &layers[layer - header.layer_first];
}

Result<Bytes> EncodeContainer(const ContainerHeader& h, std::span<const LayerSections> layers) {
  if (!IsImplemented(h.codec) && CodecName(h.codec) == "unknown") {
    return Err(ContainerError::kUnknownCodec, "unknown codec", Code::kInvalidArgument);
  }
  if (h.codec_params.size() > kMaxCodecParamsBytes ||
      (TakesNoParams(h.codec) && !h.codec_params.empty())) {
    return Err(ContainerError::kBadCodecParams,
               "codec " + std::string(CodecName(h.codec)) + " takes no parameters",
               Code::kInvalidArgument);
  }
  if (layers.empty() || layers.size() > kMaxContainerLayers ||
      h.layer_first + layers.size() > kMaxContainerLayers + 1) {
    return Err(ContainerError::kBadLayerCount,
               std::to_string(layers.size()) + " layers from layer " +
                   std::to_string(h.layer_first) + " do not fit 16-bit layer numbers",
               Code::kInvalidArgument);
  }
  const uint64_t header_len = kFixedHeaderBytes + h.codec_params.size();
  uint64_t total = header_len + kLayerEntryBytes * layers.size();
  for (const auto& l : layers) {
    if (l.k.size() > kMaxSectionBytes || l.v.size() > kMaxSectionBytes) {
      return Err(ContainerError::kSectionTooLarge, "section larger than kMaxSectionBytes",
                 Code::kResourceExhausted);
    }
    total += l.k.size() + l.v.size();
    if (total > kMaxContainerBytes) {
      return Err(ContainerError::kTooLarge, "container larger than kMaxContainerBytes",
                 Code::kResourceExhausted);
    }
  }
  // Written in place into one allocation of the exact size.
  Bytes out(total);
  uint8_t* p = out.data();
  std::memcpy(p, kContainerMagic, 4);
  p[4] = kContainerVersion;
  p[5] = 0;  // flags
  StoreBe16(p + 6, CodecValue(h.codec));
  StoreBe32(p + 8, static_cast<uint32_t>(header_len));
  std::memcpy(p + 12, h.compat_id.data(), 32);
  std::memcpy(p + 44, h.block_key.data(), 32);
  StoreBe32(p + 76, h.block_index);
  StoreBe32(p + 80, h.block_tokens);
  StoreBe16(p + 84, h.layer_first);
  StoreBe16(p + 86, static_cast<uint16_t>(layers.size()));
  StoreBe16(p + 88, static_cast<uint16_t>(h.codec_params.size()));
  StoreBe16(p + 90, 0);  // reserved
  if (!h.codec_params.empty()) {
    std::memcpy(p + kFixedHeaderBytes, h.codec_params.data(), h.codec_params.size());
  }
  uint8_t* entry = p + header_len;
  uint8_t* payload = entry + kLayerEntryBytes * layers.size();
  for (size_t i = 0; i < layers.size(); ++i, entry += kLayerEntryBytes) {
    const LayerSections& l = layers[i];
    StoreBe16(entry, static_cast<uint16_t>(h.layer_first + i));
    StoreBe16(entry + 2, 0);  // reserved
    StoreBe64(entry + 4, l.k.size());
    StoreBe64(entry + 12, l.v.size());
    Digest d = LayerDigest(l.k, l.v);
    std::memcpy(entry + 20, d.data(), 32);
    if (!l.k.empty()) std::memcpy(payload, l.k.data(), l.k.size());
    payload += l.k.size();
    if (!l.v.empty()) std::memcpy(payload, l.v.data(), l.v.size());
    payload += l.v.size();
  }
  return out;
}

Result<Bytes> EncodeContainerFromRaw(const Descriptor& d, const Digest& compat_id,
                                     const Digest& block_key, uint32_t block_index, Codec codec,
                                     uint16_t layer_first,
                                     std::span<const LayerSections> raw_layers) {
  KVCS_RETURN_IF_ERROR(ValidateDescriptor(d));
  const SectionShape ks = KShape(d), vs = VShape(d);
  std::vector<Bytes> enc(2 * raw_layers.size());
  std::vector<LayerSections> sections(raw_layers.size());
  for (size_t i = 0; i < raw_layers.size(); ++i) {
    KVCS_RETURN_IF_ERROR(EncodeSection(codec, ks, raw_layers[i].k, &enc[2 * i]));
    KVCS_RETURN_IF_ERROR(EncodeSection(codec, vs, raw_layers[i].v, &enc[2 * i + 1]));
    sections[i] = {enc[2 * i], enc[2 * i + 1]};
  }
  ContainerHeader h;
  h.codec = codec;
  h.compat_id = compat_id;
  h.block_key = block_key;
  h.block_index = block_index;
  h.block_tokens = d.block_tokens;
  h.layer_first = layer_first;
  return EncodeContainer(h, sections);
}

Result<uint64_t> ContainerPrefixSize(ByteSpan p) {
  if (std::memcmp(p.data(), kContainerMagic, std::min<size_t>(p.size(), 4)) != 0) {
    return Err(ContainerError::kBadMagic, "not a KVSP container (bad magic)");
  }
  if (p.size() < kFixedHeaderBytes) {
    return Truncated("need the 92-byte fixed header, have " + std::to_string(p.size()));
  }
  return uint64_t{LoadBe32(p.data() + 8)} + kLayerEntryBytes * LoadBe16(p.data() + 86);
}

Result<ContainerView> ParseContainerHeader(ByteSpan p) {
  KVCS_ASSIGN_OR_RETURN(uint64_t prefix_size, ContainerPrefixSize(p));
  (void)prefix_size;
  const uint8_t* b = p.data();
  if (b[4] != kContainerVersion) {
    return Err(ContainerError::kBadVersion,
               "version " + std::to_string(b[4]) + ", this implementation reads version 1");
  }
  if (b[5] != 0) return Err(ContainerError::kBadFlags, "flags must be 0");
  auto codec = CodecFromValue(LoadBe16(b + 6));
  if (!codec.ok()) {
    return Err(ContainerError::kUnknownCodec, codec.status().message(), Code::kUnsupported);
  }
  ContainerView v;
  ContainerHeader& h = v.header;
  h.codec = *codec;
  const uint32_t header_len = LoadBe32(b + 8);
  std::memcpy(h.compat_id.data(), b + 12, 32);
  std::memcpy(h.block_key.data(), b + 44, 32);
  h.block_index = LoadBe32(b + 76);
  h.block_tokens = LoadBe32(b + 80);
  h.layer_first = LoadBe16(b + 84);
  h.layer_count = LoadBe16(b + 86);
  const uint16_t params_len = LoadBe16(b + 88);
  if (LoadBe16(b + 90) != 0) {
    return Err(ContainerError::kReservedNonZero, "header reserved field is not zero");
  }
  if (params_len > kMaxCodecParamsBytes || (TakesNoParams(h.codec) && params_len != 0)) {
    return Err(ContainerError::kBadCodecParams, std::to_string(params_len) +
                                                    " bytes of codec parameters for codec " +
                                                    std::string(CodecName(h.codec)));
  }
  if (header_len != kFixedHeaderBytes + params_len) {
    return Err(ContainerError::kHeaderLenMismatch, "header_len " + std::to_string(header_len) +
                                                       " != 92 + " + std::to_string(params_len));
  }
  if (h.layer_count == 0 || uint32_t{h.layer_first} + h.layer_count > kMaxContainerLayers + 1) {
    return Err(
        ContainerError::kBadLayerCount,
        std::to_string(h.layer_count) + " layers from layer " + std::to_string(h.layer_first));
  }
  v.header_len = header_len;
  v.payload_offset = header_len + uint64_t{kLayerEntryBytes} * h.layer_count;
  if (p.size() < v.payload_offset) {
    return Truncated("need " + std::to_string(v.payload_offset) +
                     " bytes of header and layer table, have " + std::to_string(p.size()));
  }
  h.codec_params.assign(b + kFixedHeaderBytes, b + header_len);
  v.layers.resize(h.layer_count);
  uint64_t offset = v.payload_offset;
  for (uint32_t i = 0; i < h.layer_count; ++i) {
    const uint8_t* e = b + header_len + kLayerEntryBytes * i;
    LayerEntry& l = v.layers[i];
    l.layer = LoadBe16(e);
    if (l.layer != h.layer_first + i) {
      return Err(ContainerError::kLayerNumber, "table entry " + std::to_string(i) + " is layer " +
                                                   std::to_string(l.layer) + ", expected " +
                                                   std::to_string(h.layer_first + i));
    }
    if (LoadBe16(e + 2) != 0) {
      return Err(ContainerError::kReservedNonZero,
                 "reserved field of layer " + std::to_string(l.layer) + " is not zero");
    }
    l.k_len = LoadBe64(e + 4);
    l.v_len = LoadBe64(e + 12);
    std::memcpy(l.digest.data(), e + 20, 32);
    if (l.k_len > kMaxSectionBytes || l.v_len > kMaxSectionBytes) {
      return Err(ContainerError::kSectionTooLarge,
                 "layer " + std::to_string(l.layer) + " section larger than kMaxSectionBytes");
    }
    l.k = {offset, l.k_len};
    l.v = {offset + l.k_len, l.v_len};
    offset += l.k_len + l.v_len;
    if (offset > kMaxContainerBytes) {
      return Err(ContainerError::kTooLarge, "container larger than kMaxContainerBytes",
                 Code::kResourceExhausted);
    }
  }
  v.total_size = offset;
  return v;
}

Result<ContainerView> DecodeContainer(ByteSpan c) {
  KVCS_ASSIGN_OR_RETURN(ContainerView v, ParseContainerHeader(c));
  if (c.size() < v.total_size) {
    return Truncated("container is " + std::to_string(v.total_size) + " bytes, have " +
                     std::to_string(c.size()));
  }
  if (c.size() > v.total_size) {
    return Err(ContainerError::kTrailingBytes,
               std::to_string(c.size() - v.total_size) + " bytes after the last section");
  }
  for (const LayerEntry& l : v.layers) {
    Digest got = LayerDigest(c.subspan(l.k.offset, l.k_len), c.subspan(l.v.offset, l.v_len));
    if (got != l.digest) {
      return Err(ContainerError::kDigestMismatch,
                 "layer " + std::to_string(l.layer) + " digest does not match its sections");
    }
  }
  return v;
}

ContainerExpectation ExpectFor(const Descriptor& d, const Digest& compat_id,
                               const Digest& block_key, uint32_t block_index, Codec codec,
                               uint16_t layer_first, uint16_t layer_count) {
  ContainerExpectation e;
  e.compat_id = compat_id;
  e.block_key = block_key;
  e.block_index = block_index;
  e.block_tokens = d.block_tokens;
  e.codec = codec;
  e.layer_first = layer_first;
  e.layer_count = layer_count;
  e.k_shape = KShape(d);
  e.v_shape = VShape(d);
  return e;
}

Status CheckExpectation(const ContainerView& v, const ContainerExpectation& want) {
  const ContainerHeader& h = v.header;
  if (!ConstantTimeEqual(AsBytes(h.compat_id), AsBytes(want.compat_id))) {
    return Err(ContainerError::kCompatIdMismatch, "compat_id differs from the one asked for");
  }
  if (!ConstantTimeEqual(AsBytes(h.block_key), AsBytes(want.block_key))) {
    return Err(ContainerError::kBlockKeyMismatch, "block_key differs from the one asked for");
  }
  if (h.block_index != want.block_index) {
    return Err(ContainerError::kBlockIndexMismatch, "block_index " + std::to_string(h.block_index) +
                                                        ", asked for " +
                                                        std::to_string(want.block_index));
  }
  if (h.block_tokens != want.block_tokens) {
    return Err(ContainerError::kBlockTokensMismatch,
               "block_tokens " + std::to_string(h.block_tokens) + ", expected " +
                   std::to_string(want.block_tokens));
  }
  if (h.codec != want.codec) {
    return Err(ContainerError::kCodecMismatch, "codec " + std::string(CodecName(h.codec)) +
                                                   ", asked for " +
                                                   std::string(CodecName(want.codec)));
  }
  if (h.layer_first != want.layer_first || h.layer_count != want.layer_count) {
    return Err(ContainerError::kLayerRangeMismatch,
               "layers " + std::to_string(h.layer_first) + "+" + std::to_string(h.layer_count) +
                   ", asked for " + std::to_string(want.layer_first) + "+" +
                   std::to_string(want.layer_count));
  }
  for (const LayerEntry& l : v.layers) {
    if (want.k_shape && IsImplemented(h.codec)) {
      Status s = CheckEncodedLength(h.codec, *want.k_shape, l.k_len);
      if (!s.ok()) {
        return Err(ContainerError::kSectionSizeMismatch,
                   "layer " + std::to_string(l.layer) + " K: " + s.message());
      }
    }
    if (want.v_shape && IsImplemented(h.codec)) {
      Status s = CheckEncodedLength(h.codec, *want.v_shape, l.v_len);
      if (!s.ok()) {
        return Err(ContainerError::kSectionSizeMismatch,
                   "layer " + std::to_string(l.layer) + " V: " + s.message());
      }
    }
  }
  return Status::Ok();
}

Result<ContainerView> VerifyContainer(ByteSpan container, const ContainerExpectation& want) {
  // Cheap header checks first, so a wrong block is refused before hashing its payload.
  KVCS_ASSIGN_OR_RETURN(ContainerView head, ParseContainerHeader(container));
  KVCS_RETURN_IF_ERROR(CheckExpectation(head, want));
  return DecodeContainer(container);
}

Status VerifyLayer(const ContainerView& v, uint32_t layer, ByteSpan k, ByteSpan vb) {
  const LayerEntry* l = v.Find(layer);
  if (!l) {
    return Err(ContainerError::kNoSuchLayer,
               "layer " + std::to_string(layer) + " is not in this container", Code::kNotFound);
  }
  if (k.size() != l->k_len || vb.size() != l->v_len) {
    return Err(ContainerError::kSectionSizeMismatch,
               "layer " + std::to_string(layer) + " sections have the wrong length");
  }
  if (LayerDigest(k, vb) != l->digest) {
    return Err(ContainerError::kDigestMismatch,
               "layer " + std::to_string(layer) + " digest does not match its sections");
  }
  return Status::Ok();
}

Result<LayerSections> LayerBytes(const ContainerView& v, ByteSpan container, uint32_t layer) {
  const LayerEntry* l = v.Find(layer);
  if (!l) {
    return Err(ContainerError::kNoSuchLayer,
               "layer " + std::to_string(layer) + " is not in this container", Code::kNotFound);
  }
  if (container.size() < v.total_size) return Truncated("container shorter than its table says");
  return LayerSections{container.subspan(l->k.offset, l->k_len),
                       container.subspan(l->v.offset, l->v_len)};
}

Status DecodeLayerRaw(const ContainerView& view, ByteSpan container, uint32_t layer,
                      const Descriptor& d, Bytes* k, Bytes* v) {
  KVCS_RETURN_IF_ERROR(ValidateDescriptor(d));
  KVCS_ASSIGN_OR_RETURN(LayerSections sec, LayerBytes(view, container, layer));
  const SectionShape ks = KShape(d), vs = VShape(d);
  k->resize(ks.raw_bytes());
  v->resize(vs.raw_bytes());
  KVCS_RETURN_IF_ERROR(DecodeSection(view.header.codec, ks, sec.k, *k)
                           .WithContext("layer " + std::to_string(layer) + " K"));
  KVCS_RETURN_IF_ERROR(DecodeSection(view.header.codec, vs, sec.v, *v)
                           .WithContext("layer " + std::to_string(layer) + " V"));
  return Status::Ok();
}

}  // namespace kvcs::kvsp
