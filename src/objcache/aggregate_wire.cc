// ObjectCache aggregated extension wire formats. See aggregate_wire.h and
// docs/protocols/objectcache-aggregated.md.
#include "objcache/aggregate_wire.h"

#include <algorithm>
#include <cstring>

#include <nlohmann/json.hpp>

#include "common/hex.h"
#include "kvsp/codec.h"

namespace kvcs::objcache {
namespace {

Status Bad(WireError e, std::string m) {
  return InvalidArgument("aggregate: " + m, static_cast<int>(e));
}

constexpr uint8_t kStreamMagic[4] = {'K', 'V', 'A', 'G'};
constexpr uint8_t kPutMagic[4] = {'K', 'V', 'A', 'P'};
constexpr uint8_t kVersion = 1;

// A JSON string of exactly N bytes in lowercase hex.
template <size_t N>
Result<std::array<uint8_t, N>> HexMember(const nlohmann::json& v, const char* what) {
  const std::string digits = std::to_string(2 * N);
  if (!v.is_string()) return Bad(WireError::kJsonField, std::string(what) + " must be a string");
  const std::string& s = v.get_ref<const std::string&>();
  if (!IsLowerHex(s, 2 * N))
    return Bad(WireError::kBadHex,
               std::string(what) + " must be " + digits + " lowercase hex characters");
  auto d = FromHexFixed<N>(s);
  if (!d.ok()) return Bad(WireError::kBadHex, std::string(what) + " is not hex");
  return *d;
}
Result<Digest> HexDigest(const nlohmann::json& v, const char* what) {
  return HexMember<32>(v, what);
}

Result<uint64_t> UInt(const nlohmann::json& v, const char* what, uint64_t max) {
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
    return Bad(WireError::kJsonField, std::string(what) + " must be a non-negative integer");
  uint64_t x = v.get<uint64_t>();
  if (x > max) return Bad(WireError::kJsonField, std::string(what) + " is out of range");
  return x;
}

}  // namespace

std::string_view WireErrorName(WireError e) {
  switch (e) {
    case WireError::kNone:
      return "none";
    case WireError::kJsonSyntax:
      return "json_syntax";
    case WireError::kJsonField:
      return "json_field";
    case WireError::kBadHex:
      return "bad_hex";
    case WireError::kUnknownCodec:
      return "unknown_codec";
    case WireError::kBadComponents:
      return "bad_components";
    case WireError::kTooManyBlocks:
      return "too_many_blocks";
    case WireError::kBadLayerRange:
      return "bad_layer_range";
    case WireError::kTooLarge:
      return "too_large";
    case WireError::kBadMagic:
      return "bad_magic";
    case WireError::kBadVersion:
      return "bad_version";
    case WireError::kBadReserved:
      return "bad_reserved";
    case WireError::kBadFrameType:
      return "bad_frame_type";
    case WireError::kLayerOutOfOrder:
      return "layer_out_of_order";
    case WireError::kBlockCountMismatch:
      return "block_count_mismatch";
    case WireError::kBadStatus:
      return "bad_status";
    case WireError::kTrailingBytes:
      return "trailing_bytes";
    case WireError::kTruncated:
      return "truncated";
    case WireError::kDigestMismatch:
      return "digest_mismatch";
    case WireError::kServerAborted:
      return "server_aborted";
  }
  return "unknown";
}

std::string_view ComponentsName(Components c) {
  switch (c) {
    case Components::kK:
      return "k";
    case Components::kV:
      return "v";
    case Components::kKV:
      return "kv";
  }
  return "?";
}

Result<AggregateRequest> ParseAggregateRequest(std::string_view json) {
  if (json.size() > kMaxRequestJsonBytes)
    return Bad(WireError::kTooLarge, "request body over kMaxRequestJsonBytes");
  nlohmann::json j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return Bad(WireError::kJsonSyntax, "request body is not a JSON object");
  static const char* kKnown[] = {"v",
                                 "scope_id",
                                 "compat_id",
                                 "codec",
                                 "layer_first",
                                 "layer_count",
                                 "components",
                                 "block_keys",
                                 "compute_us_per_layer",
                                 "stall_target_us",
                                 "shm_token",
                                 "shm_nonce",
                                 "shm_slots"};
  for (auto it = j.begin(); it != j.end(); ++it)
    if (std::find_if(std::begin(kKnown), std::end(kKnown),
                     [&](const char* k) { return it.key() == k; }) == std::end(kKnown))
      return Bad(WireError::kJsonField, "unknown member \"" + it.key() + "\"");
  for (const char* req :
       {"v", "scope_id", "compat_id", "codec", "layer_first", "layer_count", "block_keys"})
    if (!j.contains(req)) return Bad(WireError::kJsonField, std::string("missing ") + req);
  AggregateRequest r;
  KVCS_ASSIGN_OR_RETURN(uint64_t v, UInt(j["v"], "v", 1000));
  if (v != 1) return Bad(WireError::kBadVersion, "v must be 1");
  KVCS_ASSIGN_OR_RETURN(r.scope_id, HexDigest(j["scope_id"], "scope_id"));
  KVCS_ASSIGN_OR_RETURN(r.compat_id, HexDigest(j["compat_id"], "compat_id"));
  if (!j["codec"].is_string()) return Bad(WireError::kJsonField, "codec must be a string");
  auto codec = kvsp::CodecFromName(j["codec"].get<std::string>());
  if (!codec.ok()) return Bad(WireError::kUnknownCodec, "unknown codec");
  r.codec = kvsp::CodecValue(*codec);
  KVCS_ASSIGN_OR_RETURN(uint64_t first, UInt(j["layer_first"], "layer_first", kLayerLimit));
  KVCS_ASSIGN_OR_RETURN(uint64_t count, UInt(j["layer_count"], "layer_count", kLayerLimit));
  if (count == 0 || first + count > kLayerLimit || count > 65535)
    return Bad(WireError::kBadLayerRange, "layer range must be non-empty and within u16 layers");
  r.layer_first = static_cast<uint32_t>(first);
  r.layer_count = static_cast<uint32_t>(count);
  if (j.contains("components")) {
    const auto& c = j["components"];
    if (!c.is_string()) return Bad(WireError::kBadComponents, "components must be a string");
    const std::string& s = c.get_ref<const std::string&>();
    if (s == "k")
      r.components = Components::kK;
    else if (s == "v")
      r.components = Components::kV;
    else if (s == "kv")
      r.components = Components::kKV;
    else
      return Bad(WireError::kBadComponents, "components must be k, v or kv");
  }
  const auto& keys = j["block_keys"];
  if (!keys.is_array()) return Bad(WireError::kJsonField, "block_keys must be an array");
  if (keys.empty() || keys.size() > kMaxBlocks)
    return Bad(WireError::kTooManyBlocks, "block_keys must hold 1..kMaxBlocks keys");
  r.block_keys.reserve(keys.size());
  for (const auto& k : keys) {
    KVCS_ASSIGN_OR_RETURN(Digest d, HexDigest(k, "block key"));
    r.block_keys.push_back(d);
  }
  // One hour per layer is far beyond any engine; bounds the scheduler's arithmetic.
  constexpr uint64_t kMaxMicros = 3'600'000'000ull;
  if (j.contains("compute_us_per_layer")) {
    KVCS_ASSIGN_OR_RETURN(r.compute_us_per_layer,
                          UInt(j["compute_us_per_layer"], "compute_us_per_layer", kMaxMicros));
  }
  if (j.contains("stall_target_us")) {
    KVCS_ASSIGN_OR_RETURN(r.stall_target_us,
                          UInt(j["stall_target_us"], "stall_target_us", kMaxMicros));
  }
  const int shm_members =
      int(j.contains("shm_token")) + int(j.contains("shm_nonce")) + int(j.contains("shm_slots"));
  if (shm_members != 0 && shm_members != 3)
    return Bad(WireError::kJsonField, "shm_token, shm_nonce and shm_slots go together");
  if (shm_members == 3) {
    ShmTarget t;
    KVCS_ASSIGN_OR_RETURN(t.token, HexMember<kShmTokenBytes>(j["shm_token"], "shm_token"));
    KVCS_ASSIGN_OR_RETURN(t.nonce, UInt(j["shm_nonce"], "shm_nonce", UINT64_MAX));
    KVCS_ASSIGN_OR_RETURN(uint64_t slots, UInt(j["shm_slots"], "shm_slots", kMaxShmSlots));
    if (t.nonce == 0 || slots == 0)
      return Bad(WireError::kJsonField, "shm_nonce and shm_slots must be at least 1");
    t.slots = static_cast<uint32_t>(slots);
    r.shm = t;
  }
  return r;
}

std::string SerializeAggregateRequest(const AggregateRequest& r) {
  nlohmann::json j;
  j["v"] = 1;
  j["scope_id"] = ToHex(AsBytes(r.scope_id));
  j["compat_id"] = ToHex(AsBytes(r.compat_id));
  auto codec = kvsp::CodecFromValue(r.codec);
  j["codec"] = codec.ok() ? std::string(kvsp::CodecName(*codec)) : std::string("raw");
  j["layer_first"] = r.layer_first;
  j["layer_count"] = r.layer_count;
  j["components"] = std::string(ComponentsName(r.components));
  auto keys = nlohmann::json::array();
  for (const Digest& k : r.block_keys) keys.push_back(ToHex(AsBytes(k)));
  j["block_keys"] = std::move(keys);
  j["compute_us_per_layer"] = r.compute_us_per_layer;
  j["stall_target_us"] = r.stall_target_us;
  if (r.shm) {
    j["shm_token"] = ToHex(r.shm->token);
    j["shm_nonce"] = r.shm->nonce;
    j["shm_slots"] = r.shm->slots;
  }
  return j.dump();
}

void EncodeStreamHeader(const StreamHeader& h, Bytes* out) {
  ByteWriter w(out);
  w.Append(ByteSpan(kStreamMagic, 4));
  w.U8(kVersion);
  w.U8(static_cast<uint8_t>(h.components));
  w.U16(h.codec);
  w.U16(h.layer_first);
  w.U16(h.layer_count);
  w.U32(h.block_count);
  w.Append(AsBytes(h.compat_id));
  w.Append(AsBytes(h.scope_id));
  w.U8(static_cast<uint8_t>(h.delivery));
  w.U8(0);
  w.U16(0);
}

void EncodeLayerFrameHead(uint16_t layer, uint32_t block_count, Bytes* out, Delivery delivery) {
  ByteWriter w(out);
  w.U8(delivery == Delivery::kShm ? kShmLayerFrameType : kLayerFrameType);
  w.U8(0);
  w.U16(layer);
  w.U32(block_count);
}

void EncodeBlockRecord(const BlockRecord& r, Bytes* out) {
  ByteWriter w(out);
  w.U8(static_cast<uint8_t>(r.status));
  w.U8(static_cast<uint8_t>(r.digest_kind));
  w.U16(0);
  w.U64(r.k_len);
  w.U64(r.v_len);
  w.Append(AsBytes(r.digest));
}

void EncodeShmBlockRecord(const BlockRecord& r, uint64_t offset, Bytes* out) {
  EncodeBlockRecord(r, out);
  ByteWriter w(out);
  w.U64(offset);
}

void EncodeEndFrame(uint32_t status, Bytes* out) {
  ByteWriter w(out);
  w.U8(kEndFrameType);
  w.U8(0);
  w.U16(0);
  w.U32(status);
}

Status ValidateBlockRecord(const BlockRecord& r, Components components) {
  if (static_cast<uint8_t>(r.status) > kMaxBlockStatus)
    return Bad(WireError::kBadStatus, "unknown block status");
  if (static_cast<uint8_t>(r.digest_kind) > 2)
    return Bad(WireError::kBadStatus, "unknown digest kind");
  if (r.status != BlockStatus::kPresent) {
    if (r.digest_kind != DigestKind::kNone || r.k_len || r.v_len || r.digest != Digest{})
      return Bad(WireError::kBadStatus, "an absent block carries lengths or a digest");
    return Status::Ok();
  }
  if (r.digest_kind == DigestKind::kNone)
    return Bad(WireError::kBadStatus, "a present block has no digest");
  if (r.digest_kind == DigestKind::kLayer && components != Components::kKV)
    return Bad(WireError::kBadStatus, "a layer digest needs both K and V");
  if (r.k_len > kMaxSectionBytes || r.v_len > kMaxSectionBytes)
    return Bad(WireError::kTooLarge, "section over kMaxSectionBytes");
  if (components == Components::kK && r.v_len)
    return Bad(WireError::kBadStatus, "V bytes carried when only K was asked");
  if (components == Components::kV && r.k_len)
    return Bad(WireError::kBadStatus, "K bytes carried when only V was asked");
  return Status::Ok();
}

Status StreamDecoder::Fail(Status s) {
  state_ = State::kFailed;
  error_ = s;
  return s;
}

Status StreamDecoder::Feed(ByteSpan in, std::vector<StreamEvent>* events) {
  if (state_ == State::kFailed) return error_;
  size_t pos = 0;
  while (pos < in.size()) {
    if (state_ == State::kDone)
      return Fail(Bad(WireError::kTrailingBytes, "bytes after the end frame"));
    if (state_ == State::kData) {
      LayerBlock& b = layer_.blocks.back();
      size_t n = std::min(in.size() - pos, b.data.size() - data_have_);
      if (n) std::memcpy(b.data.data() + data_have_, in.data() + pos, n);  // data() may be null
      data_have_ += n;
      pos += n;
    } else {
      size_t n = std::min(in.size() - pos, need_ - buf_.size());
      buf_.insert(buf_.end(), in.begin() + pos, in.begin() + pos + n);
      pos += n;
      if (buf_.size() < need_) break;
    }
    KVCS_RETURN_IF_ERROR(Step(events));
  }
  // Zero-length steps (an empty data section, a zero-block layer) complete without input.
  while (state_ == State::kData && data_have_ == layer_.blocks.back().data.size()) {
    KVCS_RETURN_IF_ERROR(Step(events));
  }
  return Status::Ok();
}

// Advances after a fixed item (buf_) or a data section completed.
Status StreamDecoder::Step(std::vector<StreamEvent>* events) {
  auto expect = [&](State s, size_t n) {
    state_ = s;
    need_ = n;
    buf_.clear();
  };
  auto after_block = [&]() {
    if (layer_.blocks.size() < header_.block_count) {
      expect(State::kRecord, RecordBytes());
    } else {
      events->push_back(std::move(layer_));
      layer_ = LayerEvent{};
      ++next_layer_;
      expect(State::kFrameType, kLayerFrameHeadBytes);
    }
  };
  switch (state_) {
    case State::kHeader: {
      ByteReader r(buf_);
      ByteSpan magic;
      uint8_t version = 0, comps = 0, delivery = 0, reserved8 = 0;
      uint16_t reserved = 0;
      StreamHeader h;
      r.Span(4, &magic);
      r.U8(&version);
      r.U8(&comps);
      r.U16(&h.codec);
      r.U16(&h.layer_first);
      r.U16(&h.layer_count);
      r.U32(&h.block_count);
      r.Copy(h.compat_id.data(), 32);
      r.Copy(h.scope_id.data(), 32);
      r.U8(&delivery);
      r.U8(&reserved8);
      r.U16(&reserved);
      if (!std::equal(magic.begin(), magic.end(), kStreamMagic))
        return Fail(Bad(WireError::kBadMagic, "stream does not start with KVAG"));
      if (version != kVersion) return Fail(Bad(WireError::kBadVersion, "stream version != 1"));
      if (comps < 1 || comps > 3)
        return Fail(Bad(WireError::kBadComponents, "components must be 1, 2 or 3"));
      h.components = static_cast<Components>(comps);
      if (reserved || reserved8)
        return Fail(Bad(WireError::kBadReserved, "reserved header field not zero"));
      if (delivery > static_cast<uint8_t>(Delivery::kShm))
        return Fail(Bad(WireError::kBadReserved, "unknown delivery"));
      h.delivery = static_cast<Delivery>(delivery);
      if (h.layer_count == 0 || uint32_t{h.layer_first} + h.layer_count > kLayerLimit)
        return Fail(Bad(WireError::kBadLayerRange, "bad layer range"));
      if (h.block_count == 0 || h.block_count > kMaxBlocks)
        return Fail(Bad(WireError::kTooManyBlocks, "block count outside 1..kMaxBlocks"));
      header_ = h;
      next_layer_ = h.layer_first;
      events->push_back(h);
      expect(State::kFrameType, kLayerFrameHeadBytes);
      return Status::Ok();
    }
    case State::kFrameType: {
      // Layer frame head (8 bytes) or end frame (8 bytes): same size, told apart by type.
      uint8_t type = buf_[0];
      if (type == kEndFrameType) {
        if (buf_[1] || buf_[2] || buf_[3])
          return Fail(Bad(WireError::kBadReserved, "end frame reserved bytes not zero"));
        if (next_layer_ != uint32_t{header_.layer_first} + header_.layer_count &&
            LoadBe32(buf_.data() + 4) == 0)
          return Fail(Bad(WireError::kLayerOutOfOrder, "end frame before the last layer"));
        uint32_t status = LoadBe32(buf_.data() + 4);
        events->push_back(EndEvent{status});
        state_ = State::kDone;
        buf_.clear();
        if (status != 0)
          return Fail(
              Status(Code::kUnavailable,
                     "aggregate: server aborted the stream (status " + std::to_string(status) + ")",
                     static_cast<int>(WireError::kServerAborted)));
        return Status::Ok();
      }
      const bool shm = header_.delivery == Delivery::kShm;
      if (type != (shm ? kShmLayerFrameType : kLayerFrameType))
        return Fail(Bad(WireError::kBadFrameType, "unknown frame type"));
      if (buf_[1]) return Fail(Bad(WireError::kBadReserved, "layer frame reserved byte not zero"));
      uint16_t layer = LoadBe16(buf_.data() + 2);
      uint32_t count = LoadBe32(buf_.data() + 4);
      if (next_layer_ >= uint32_t{header_.layer_first} + header_.layer_count ||
          layer != next_layer_)
        return Fail(Bad(WireError::kLayerOutOfOrder, "layer frame out of order"));
      if (count != header_.block_count)
        return Fail(Bad(WireError::kBlockCountMismatch, "layer frame block count mismatch"));
      layer_.layer = layer;
      layer_.blocks.reserve(count);
      expect(State::kRecord, RecordBytes());
      return Status::Ok();
    }
    case State::kRecord: {
      ByteReader r(buf_);
      uint8_t status = 0, kind = 0;
      uint16_t reserved = 0;
      BlockRecord rec;
      r.U8(&status);
      r.U8(&kind);
      r.U16(&reserved);
      r.U64(&rec.k_len);
      r.U64(&rec.v_len);
      r.Copy(rec.digest.data(), 32);
      if (reserved) return Fail(Bad(WireError::kBadReserved, "block record reserved not zero"));
      if (status > kMaxBlockStatus || kind > 2)
        return Fail(Bad(WireError::kBadStatus, "unknown block status or digest kind"));
      rec.status = static_cast<BlockStatus>(status);
      rec.digest_kind = static_cast<DigestKind>(kind);
      Status valid = ValidateBlockRecord(rec, header_.components);
      if (!valid.ok()) return Fail(valid);
      if (header_.delivery == Delivery::kShm) {
        uint64_t offset = 0;
        r.U64(&offset);
        if (rec.status != BlockStatus::kPresent && offset != 0)
          return Fail(Bad(WireError::kBadStatus, "an absent block has a buffer offset"));
        // Sections are ≤ kMaxSectionBytes each, so this cannot overflow.
        if (offset > UINT64_MAX - rec.k_len - rec.v_len)
          return Fail(Bad(WireError::kTooLarge, "buffer offset out of range"));
        layer_.blocks.push_back(LayerBlock{rec, {}, offset});
        after_block();
        return Status::Ok();
      }
      BlockBytes data;
      if (!spare_.empty()) {
        data = std::move(spare_.back());
        spare_.pop_back();
      }
      data.resize(rec.k_len + rec.v_len);  // default-initialized: no zero-fill
      layer_.blocks.push_back(LayerBlock{rec, std::move(data), 0});
      data_have_ = 0;
      state_ = State::kData;
      buf_.clear();
      return Status::Ok();
    }
    case State::kData:
      if (data_have_ < layer_.blocks.back().data.size()) return Status::Ok();
      after_block();
      return Status::Ok();
    default:
      return Fail(Internal("aggregate: decoder in a bad state"));
  }
}

Status StreamDecoder::Finish() const {
  if (state_ == State::kDone) return Status::Ok();
  if (state_ == State::kFailed) return error_;
  return Status(Code::kNeedMoreData, "aggregate: stream ended before its end frame",
                static_cast<int>(WireError::kTruncated));
}

size_t StreamDecoder::complete_blocks() const {
  switch (state_) {
    case State::kRecord:
      return layer_.blocks.size();
    case State::kData:
      return layer_.blocks.size() - 1;  // the last one's bytes are still arriving
    default:
      return 0;
  }
}

void StreamDecoder::Recycle(LayerEvent&& spent) {
  for (LayerBlock& b : spent.blocks) {
    if (spare_.size() >= header_.block_count) break;
    if (b.data.capacity() > 0) spare_.push_back(std::move(b.data));
  }
  spent.blocks.clear();
}

Status VerifyBlock(const LayerBlock& b) { return VerifyBlockBytes(b.record, ByteSpan(b.data)); }

Status VerifyBlockBytes(const BlockRecord& r, ByteSpan data) {
  if (r.status != BlockStatus::kPresent) return Status::Ok();
  if (data.size() != r.k_len + r.v_len)
    return Corruption("aggregate: block data length mismatch",
                      static_cast<int>(WireError::kDigestMismatch));
  Digest d = Sha256::Hash(data);
  if (d != r.digest)
    return Corruption("aggregate: block data does not match its digest",
                      static_cast<int>(WireError::kDigestMismatch));
  return Status::Ok();
}

void EncodePutHeader(const PutHeader& h, Bytes* out) {
  ByteWriter w(out);
  w.Append(ByteSpan(kPutMagic, 4));
  w.U8(kVersion);
  w.U8(h.flags);
  w.U16(0);
  w.Append(AsBytes(h.scope_id));
  w.U32(h.count);
}

Result<PutHeader> ParsePutHeader(ByteSpan in) {
  if (in.size() < kPutHeaderBytes)
    return Status(Code::kNeedMoreData, "aggregate put: short header",
                  static_cast<int>(WireError::kTruncated));
  if (in.size() > kPutHeaderBytes) return Bad(WireError::kTrailingBytes, "put header too long");
  if (!std::equal(in.begin(), in.begin() + 4, kPutMagic))
    return Bad(WireError::kBadMagic, "put body does not start with KVAP");
  if (in[4] != kVersion) return Bad(WireError::kBadVersion, "put version != 1");
  PutHeader h;
  h.flags = in[5];
  if (h.flags & ~kPutFlagPrefixRecord) return Bad(WireError::kBadReserved, "unknown put flags");
  if (in[6] || in[7]) return Bad(WireError::kBadReserved, "put reserved not zero");
  std::memcpy(h.scope_id.data(), in.data() + 8, 32);
  h.count = LoadBe32(in.data() + 40);
  if (h.count == 0 || h.count > kMaxPutContainers)
    return Bad(WireError::kTooManyBlocks, "put count outside 1..kMaxPutContainers");
  return h;
}

}  // namespace kvcs::objcache
