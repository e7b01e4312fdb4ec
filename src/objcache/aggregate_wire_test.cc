// Aggregated wire formats: ONE table of byte vectors drives encode, decode, byte-at-a-time,
// every two-part split, every truncation and every single-bit corruption.
#include "objcache/aggregate_wire.h"

#include <gtest/gtest.h>

#include <string>

#include "common/hex.h"

namespace kvcs::objcache {
namespace {

Bytes H(const std::string& hex) {
  std::string clean;
  for (char c : hex)
    if (c != ' ') clean += c;
  auto r = FromHex(clean);
  EXPECT_TRUE(r.ok()) << hex;
  return r.ok() ? *r : Bytes{};
}
std::string Rep(const std::string& byte, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += byte;
  return s;
}
Digest Dg(const std::string& hex) {
  Digest d{};
  Bytes b = H(hex);
  std::copy(b.begin(), b.end(), d.begin());
  return d;
}

const std::string kSha010203 = "039058c6f2c0cb492c533b0a4d14ef77cc0f78abccced5287d84a1a2011cfb81";
const std::string kShaEmpty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
const std::string kShaAABB = "d798d1fac6bd4bb1c11f50312760351013379a0ab6f0a8c0af8a506b96b2525a";

struct Vector {
  const char* name;
  Bytes bytes;
  std::vector<StreamEvent> events;
};

std::vector<Vector> Table() {
  std::vector<Vector> t;
  {
    // kv, codec raw, layer 0 only, 2 blocks: block 0 present (K=0102, V=03), block 1 missing.
    StreamHeader h{Components::kKV, 1, 0, 1, 2, Dg(Rep("11", 32)), Dg(Rep("22", 32))};
    LayerEvent l0{0,
                  {{{BlockStatus::kPresent, DigestKind::kLayer, 2, 1, Dg(kSha010203)}, {1, 2, 3}},
                   {{BlockStatus::kMissing, DigestKind::kNone, 0, 0, Digest{}}, {}}}};
    t.push_back({"kv_one_layer_present_and_missing",
                 H("4b564147 01 03 0001 0000 0001 00000002" + Rep("11", 32) + Rep("22", 32) +
                   "00000000"
                   "4c 00 0000 00000002"
                   "00 01 0000 0000000000000002 0000000000000001" +
                   kSha010203 + "010203" + "01 00 0000" + Rep("00", 16) + Rep("00", 32) +
                   "45 00 0000 00000000"),
                 {h, l0, EndEvent{0}}});
  }
  {
    // k only, zstd codec value 2, layers 5..6, 1 block: layer 5 carries K=aabb (section digest),
    // layer 6 carries an empty K (present, digest of nothing).
    StreamHeader h{Components::kK, 2, 5, 2, 1, Dg(Rep("33", 32)), Dg(Rep("44", 32))};
    LayerEvent l5{
        5, {{{BlockStatus::kPresent, DigestKind::kSection, 2, 0, Dg(kShaAABB)}, {0xaa, 0xbb}}}};
    LayerEvent l6{6, {{{BlockStatus::kPresent, DigestKind::kSection, 0, 0, Dg(kShaEmpty)}, {}}}};
    t.push_back({"k_two_layers_section_digests",
                 H("4b564147 01 01 0002 0005 0002 00000001" + Rep("33", 32) + Rep("44", 32) +
                   "00000000"
                   "4c 00 0005 00000001"
                   "00 02 0000 0000000000000002 0000000000000000" +
                   kShaAABB + "aabb" +
                   "4c 00 0006 00000001"
                   "00 02 0000 0000000000000000 0000000000000000" +
                   kShaEmpty + "45 00 0000 00000000"),
                 {h, l5, l6, EndEvent{0}}});
  }
  {
    // v only, layer 3, 1 block whose layer is not held, then a corrupt-on-server block (2 blocks).
    StreamHeader h{Components::kV, 1, 3, 1, 2, Dg(Rep("55", 32)), Dg(Rep("00", 32))};
    LayerEvent l3{3,
                  {{{BlockStatus::kLayerNotHeld, DigestKind::kNone, 0, 0, Digest{}}, {}},
                   {{BlockStatus::kCorrupt, DigestKind::kNone, 0, 0, Digest{}}, {}}}};
    t.push_back({"v_absent_statuses",
                 H("4b564147 01 02 0001 0003 0001 00000002" + Rep("55", 32) + Rep("00", 32) +
                   "00000000"
                   "4c 00 0003 00000002"
                   "02 00 0000" +
                   Rep("00", 48) + "03 00 0000" + Rep("00", 48) + "45 00 0000 00000000"),
                 {h, l3, EndEvent{0}}});
  }
  {
    // Same-host delivery: kv, layers 0..1, 2 blocks; the bytes are in the registered buffer, the
    // records say where (layer 0 in slot 0 at offset 0, layer 1 in the slot at 0x1000).
    StreamHeader h{Components::kKV, 1, 0, 2, 2, Dg(Rep("11", 32)), Dg(Rep("22", 32)),
                   Delivery::kShm};
    LayerEvent l0{0,
                  {{{BlockStatus::kPresent, DigestKind::kLayer, 2, 1, Dg(kSha010203)}, {}, 0},
                   {{BlockStatus::kMissing, DigestKind::kNone, 0, 0, Digest{}}, {}, 0}}};
    LayerEvent l1{1,
                  {{{BlockStatus::kPresent, DigestKind::kLayer, 1, 1, Dg(kShaAABB)}, {}, 0x1000},
                   {{BlockStatus::kCorrupt, DigestKind::kNone, 0, 0, Digest{}}, {}, 0}}};
    t.push_back({"shm_two_layers_offsets",
                 H("4b564147 01 03 0001 0000 0002 00000002" + Rep("11", 32) + Rep("22", 32) +
                   "01 00 0000"
                   "53 00 0000 00000002"
                   "00 01 0000 0000000000000002 0000000000000001" +
                   kSha010203 + "0000000000000000" + "01 00 0000" + Rep("00", 48) +
                   "0000000000000000"
                   "53 00 0001 00000002"
                   "00 01 0000 0000000000000001 0000000000000001" +
                   kShaAABB + "0000000000001000" + "03 00 0000" + Rep("00", 48) +
                   "0000000000000000" + "45 00 0000 00000000"),
                 {h, l0, l1, EndEvent{0}}});
  }
  return t;
}

Bytes Encode(const std::vector<StreamEvent>& events) {
  Bytes out;
  Delivery delivery = Delivery::kInline;
  for (const auto& e : events) {
    if (auto* h = std::get_if<StreamHeader>(&e)) {
      EncodeStreamHeader(*h, &out);
      delivery = h->delivery;
    }
    if (auto* l = std::get_if<LayerEvent>(&e)) {
      EncodeLayerFrameHead(l->layer, static_cast<uint32_t>(l->blocks.size()), &out, delivery);
      for (const auto& b : l->blocks) {
        if (delivery == Delivery::kShm) {
          EncodeShmBlockRecord(b.record, b.shm_offset, &out);
          continue;
        }
        EncodeBlockRecord(b.record, &out);
        out.insert(out.end(), b.data.begin(), b.data.end());
      }
    }
    if (auto* end = std::get_if<EndEvent>(&e)) EncodeEndFrame(end->status, &out);
  }
  return out;
}

bool Same(const std::vector<StreamEvent>& a, const std::vector<StreamEvent>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].index() != b[i].index()) return false;
    if (auto* h = std::get_if<StreamHeader>(&a[i]))
      if (!(*h == std::get<StreamHeader>(b[i]))) return false;
    if (auto* l = std::get_if<LayerEvent>(&a[i])) {
      const auto& m = std::get<LayerEvent>(b[i]);
      if (l->layer != m.layer || l->blocks.size() != m.blocks.size()) return false;
      for (size_t k = 0; k < l->blocks.size(); ++k)
        if (!(l->blocks[k].record == m.blocks[k].record) || l->blocks[k].data != m.blocks[k].data ||
            l->blocks[k].shm_offset != m.blocks[k].shm_offset)
          return false;
    }
    if (auto* e = std::get_if<EndEvent>(&a[i]))
      if (e->status != std::get<EndEvent>(b[i]).status) return false;
  }
  return true;
}

// Decodes with the given chunking; returns events, or the first error.
Result<std::vector<StreamEvent>> Decode(ByteSpan bytes, size_t chunk) {
  StreamDecoder d;
  std::vector<StreamEvent> ev;
  for (size_t i = 0; i < bytes.size(); i += chunk) {
    KVCS_RETURN_IF_ERROR(d.Feed(bytes.subspan(i, std::min(chunk, bytes.size() - i)), &ev));
  }
  KVCS_RETURN_IF_ERROR(d.Finish());
  bool shm = false;
  for (const auto& e : ev) {
    if (auto* h = std::get_if<StreamHeader>(&e)) shm = h->delivery == Delivery::kShm;
    // A shm stream's bytes are in the registered buffer; the client checks them there.
    if (auto* l = std::get_if<LayerEvent>(&e); l && !shm)
      for (const auto& b : l->blocks) KVCS_RETURN_IF_ERROR(VerifyBlock(b));
  }
  return ev;
}

TEST(AggregateWire, EncodeMatchesTable) {
  for (const auto& v : Table()) EXPECT_EQ(Encode(v.events), v.bytes) << v.name;
}

TEST(AggregateWire, DecodeWholeByteAtATimeAndEverySplit) {
  for (const auto& v : Table()) {
    for (size_t chunk : {v.bytes.size(), size_t{1}, size_t{7}}) {
      auto r = Decode(v.bytes, chunk);
      ASSERT_TRUE(r.ok()) << v.name << " chunk " << chunk << ": " << r.status().ToString();
      EXPECT_TRUE(Same(*r, v.events)) << v.name << " chunk " << chunk;
    }
    for (size_t cut = 0; cut <= v.bytes.size(); ++cut) {
      StreamDecoder d;
      std::vector<StreamEvent> ev;
      ASSERT_TRUE(d.Feed(ByteSpan(v.bytes).first(cut), &ev).ok());
      ASSERT_TRUE(d.Feed(ByteSpan(v.bytes).subspan(cut), &ev).ok());
      ASSERT_TRUE(d.Finish().ok());
      EXPECT_TRUE(Same(ev, v.events)) << v.name << " split at " << cut;
    }
  }
}

// The client hands each delivered layer's buffers back (Recycle); later layers, of other sizes,
// decode into them byte-exact.
TEST(AggregateWire, RecycledBuffersDecodeTheSameEvents) {
  for (const auto& v : Table()) {
    for (size_t chunk : {size_t{1}, size_t{7}, v.bytes.size()}) {
      StreamDecoder d;
      std::vector<StreamEvent> ev, kept;
      for (size_t i = 0; i < v.bytes.size(); i += chunk) {
        ASSERT_TRUE(
            d.Feed(ByteSpan(v.bytes).subspan(i, std::min(chunk, v.bytes.size() - i)), &ev).ok())
            << v.name;
        for (auto& e : ev) {
          kept.push_back(e);  // a copy: the original's buffers go back to the decoder
          if (auto* l = std::get_if<LayerEvent>(&e)) d.Recycle(std::move(*l));
        }
        ev.clear();
      }
      ASSERT_TRUE(d.Finish().ok()) << v.name;
      EXPECT_TRUE(Same(kept, v.events)) << v.name << " chunk " << chunk;
    }
  }
}

TEST(AggregateWire, EveryTruncationNeedsMore) {
  for (const auto& v : Table()) {
    for (size_t n = 0; n < v.bytes.size(); ++n) {
      StreamDecoder d;
      std::vector<StreamEvent> ev;
      ASSERT_TRUE(d.Feed(ByteSpan(v.bytes).first(n), &ev).ok()) << v.name << " prefix " << n;
      Status s = d.Finish();
      EXPECT_EQ(s.code(), Code::kNeedMoreData) << v.name << " prefix " << n;
      EXPECT_TRUE(s.Is(WireError::kTruncated));
    }
  }
}

TEST(AggregateWire, EveryBitFlipIsCaught) {
  // A flip must make decoding fail, verification fail, or change what the client sees (the
  // client compares the header with its request and the layer/block structure with its plan).
  for (const auto& v : Table()) {
    for (size_t i = 0; i < v.bytes.size(); ++i) {
      for (int bit = 0; bit < 8; ++bit) {
        Bytes b = v.bytes;
        b[i] ^= uint8_t(1u << bit);
        auto r = Decode(b, b.size());
        EXPECT_TRUE(!r.ok() || !Same(*r, v.events)) << v.name << " byte " << i << " bit " << bit;
      }
    }
  }
}

TEST(AggregateWire, TypedErrors) {
  const Bytes good = Table()[0].bytes;
  struct Case {
    const char* name;
    size_t offset;
    uint8_t value;
    WireError error;
  } cases[] = {
      {"magic", 0, 'X', WireError::kBadMagic},
      {"version", 4, 2, WireError::kBadVersion},
      {"components", 5, 4, WireError::kBadComponents},
      {"header reserved", 83, 1, WireError::kBadReserved},
      {"layer count zero", 11, 0, WireError::kBadLayerRange},
      {"frame type", 84, 'X', WireError::kBadFrameType},
      {"layer out of order", 87, 1, WireError::kLayerOutOfOrder},
      {"block count", 91, 3, WireError::kBlockCountMismatch},
      {"status", 92, 9, WireError::kBadStatus},
      {"record reserved", 95, 1, WireError::kBadReserved},
      {"section too large", 96, 0x10, WireError::kTooLarge},
  };
  for (const auto& c : cases) {
    Bytes b = good;
    b[c.offset] = c.value;
    auto r = Decode(b, 1);
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_TRUE(r.status().Is(c.error)) << c.name << ": " << r.status().ToString();
  }
  Bytes trailing = good;
  trailing.push_back(0);
  EXPECT_TRUE(Decode(trailing, 3).status().Is(WireError::kTrailingBytes));
  Bytes aborted = good;
  aborted.back() = 7;
  EXPECT_TRUE(Decode(aborted, 3).status().Is(WireError::kServerAborted));
  Bytes data_flip = good;
  data_flip[92 + 52] ^= 1;  // first data byte
  auto r = Decode(data_flip, 5);
  EXPECT_EQ(r.status().code(), Code::kCorruption);
  EXPECT_TRUE(r.status().Is(WireError::kDigestMismatch));

  // Same-host streams: their own frame type, a known delivery, no offset on an absent block.
  const Bytes shm = Table()[3].bytes;
  struct Case shm_cases[] = {
      {"unknown delivery", 80, 2, WireError::kBadReserved},
      {"inline frame in a shm stream", 84, kLayerFrameType, WireError::kBadFrameType},
      {"offset on an absent block", 92 + 60 + 59, 1, WireError::kBadStatus},
  };
  for (const auto& c : shm_cases) {
    Bytes b = shm;
    b[c.offset] = c.value;
    auto rs = Decode(b, 1);
    ASSERT_FALSE(rs.ok()) << c.name;
    EXPECT_TRUE(rs.status().Is(c.error)) << c.name << ": " << rs.status().ToString();
  }
  Bytes shm_in_inline = good;
  shm_in_inline[84] = kShmLayerFrameType;
  EXPECT_TRUE(Decode(shm_in_inline, 1).status().Is(WireError::kBadFrameType));
}

TEST(AggregateWire, VerifyBlockBytes) {
  BlockRecord r{BlockStatus::kPresent, DigestKind::kLayer, 2, 1, Dg(kSha010203)};
  const uint8_t good[] = {1, 2, 3}, bad[] = {1, 2, 4};
  EXPECT_TRUE(VerifyBlockBytes(r, good).ok());
  EXPECT_TRUE(VerifyBlockBytes(r, bad).Is(WireError::kDigestMismatch));
  EXPECT_TRUE(VerifyBlockBytes(r, ByteSpan(good, 2)).Is(WireError::kDigestMismatch));
}

TEST(AggregateWire, RecordConsistency) {
  BlockRecord missing_with_len{BlockStatus::kMissing, DigestKind::kNone, 1, 0, {}};
  EXPECT_TRUE(ValidateBlockRecord(missing_with_len, Components::kKV).Is(WireError::kBadStatus));
  BlockRecord layer_digest_k{BlockStatus::kPresent, DigestKind::kLayer, 1, 0, {}};
  EXPECT_TRUE(ValidateBlockRecord(layer_digest_k, Components::kK).Is(WireError::kBadStatus));
  BlockRecord v_in_k{BlockStatus::kPresent, DigestKind::kSection, 1, 1, {}};
  EXPECT_TRUE(ValidateBlockRecord(v_in_k, Components::kK).Is(WireError::kBadStatus));
  BlockRecord no_digest{BlockStatus::kPresent, DigestKind::kNone, 1, 1, {}};
  EXPECT_TRUE(ValidateBlockRecord(no_digest, Components::kKV).Is(WireError::kBadStatus));
}

// Request JSON: one table of (text, struct) for parse and serialize, and a table of rejects.
TEST(AggregateRequestJson, RoundTrip) {
  const std::string k1 = Rep("ab", 32), k2 = Rep("cd", 32);
  const std::string text = "{\"block_keys\":[\"" + k1 + "\",\"" + k2 +
                           "\"],\"codec\":\"zstd\",\"compat_id\":\"" + Rep("11", 32) +
                           "\",\"components\":\"v\",\"compute_us_per_layer\":640,"
                           "\"layer_count\":4,\"layer_first\":2,\"scope_id\":\"" +
                           Rep("22", 32) + "\",\"stall_target_us\":200,\"v\":1}";
  auto r = ParseAggregateRequest(text);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->codec, 2);
  EXPECT_EQ(r->layer_first, 2u);
  EXPECT_EQ(r->layer_count, 4u);
  EXPECT_EQ(r->components, Components::kV);
  ASSERT_EQ(r->block_keys.size(), 2u);
  EXPECT_EQ(r->block_keys[1], Dg(k2));
  EXPECT_EQ(r->compute_us_per_layer, 640u);
  EXPECT_EQ(r->stall_target_us, 200u);
  EXPECT_EQ(SerializeAggregateRequest(*r), text);  // nlohmann sorts members: canonical
  EXPECT_FALSE(r->shm.has_value());

  // The same request delivered into a registered buffer.
  const std::string shm_text =
      text.substr(0, text.size() - 1)
          .replace(text.find("\"stall_target_us\""), 0,
                   "\"shm_nonce\":18446744073709551615,\"shm_slots\":3,\"shm_token\":\"" +
                       Rep("0f", 16) + "\",") +
      "}";
  auto rs = ParseAggregateRequest(shm_text);
  ASSERT_TRUE(rs.ok()) << rs.status().ToString() << " " << shm_text;
  ASSERT_TRUE(rs->shm.has_value());
  EXPECT_EQ(rs->shm->nonce, UINT64_MAX);
  EXPECT_EQ(rs->shm->slots, 3u);
  EXPECT_EQ(rs->shm->token[15], 0x0f);
  EXPECT_EQ(SerializeAggregateRequest(*rs), shm_text);
}

TEST(AggregateRequestJson, Rejects) {
  const std::string ids =
      "\"scope_id\":\"" + Rep("22", 32) + "\",\"compat_id\":\"" + Rep("11", 32) + "\"";
  const std::string key = "[\"" + Rep("ab", 32) + "\"]";
  auto req = [&](const std::string& extra) {
    return "{\"v\":1," + ids + ",\"codec\":\"raw\",\"layer_first\":0,\"layer_count\":1," + extra +
           "}";
  };
  struct Case {
    std::string text;
    WireError error;
  } cases[] = {
      {"[1]", WireError::kJsonSyntax},
      {"{", WireError::kJsonSyntax},
      {req("\"block_keys\":" + key + ",\"extra\":1"), WireError::kJsonField},
      {req("\"block_keys\":[]"), WireError::kTooManyBlocks},
      {req("\"block_keys\":[\"" + Rep("AB", 32) + "\"]"), WireError::kBadHex},
      {req("\"block_keys\":[\"abc\"]"), WireError::kBadHex},
      {req("\"block_keys\":" + key + ",\"components\":\"x\""), WireError::kBadComponents},
      {req("\"block_keys\":" + key + ",\"stall_target_us\":-1"), WireError::kJsonField},
      {req("\"block_keys\":" + key + ",\"stall_target_us\":1.5"), WireError::kJsonField},
      {"{\"v\":2," + ids +
           ",\"codec\":\"raw\",\"layer_first\":0,\"layer_count\":1,\"block_keys\":" + key + "}",
       WireError::kBadVersion},
      {"{\"v\":1," + ids +
           ",\"codec\":\"nope\",\"layer_first\":0,\"layer_count\":1,\"block_keys\":" + key + "}",
       WireError::kUnknownCodec},
      {"{\"v\":1," + ids +
           ",\"codec\":\"raw\",\"layer_first\":0,\"layer_count\":0,\"block_keys\":" + key + "}",
       WireError::kBadLayerRange},
      {"{\"v\":1," + ids +
           ",\"codec\":\"raw\",\"layer_first\":65535,\"layer_count\":2,\"block_keys\":" + key + "}",
       WireError::kBadLayerRange},
      {"{\"v\":1," + ids + ",\"codec\":\"raw\",\"layer_first\":0,\"block_keys\":" + key + "}",
       WireError::kJsonField},
      {req("\"block_keys\":" + key + ",\"shm_token\":\"" + Rep("00", 16) + "\""),
       WireError::kJsonField},
      {req("\"block_keys\":" + key + ",\"shm_token\":\"" + Rep("0A", 16) +
           "\",\"shm_nonce\":1,\"shm_slots\":1"),
       WireError::kBadHex},
      {req("\"block_keys\":" + key + ",\"shm_token\":\"" + Rep("00", 15) +
           "\",\"shm_nonce\":1,\"shm_slots\":1"),
       WireError::kBadHex},
      {req("\"block_keys\":" + key + ",\"shm_token\":\"" + Rep("00", 16) +
           "\",\"shm_nonce\":0,\"shm_slots\":1"),
       WireError::kJsonField},
      {req("\"block_keys\":" + key + ",\"shm_token\":\"" + Rep("00", 16) +
           "\",\"shm_nonce\":1,\"shm_slots\":0"),
       WireError::kJsonField},
      {req("\"block_keys\":" + key + ",\"shm_token\":\"" + Rep("00", 16) +
           "\",\"shm_nonce\":1,\"shm_slots\":65536"),
       WireError::kJsonField},
  };
  for (const auto& c : cases) {
    auto r = ParseAggregateRequest(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_TRUE(r.status().Is(c.error)) << c.text << " -> " << r.status().ToString();
  }
  EXPECT_TRUE(ParseAggregateRequest(req("\"block_keys\":" + key)).ok());
}

TEST(PutHeader, TableRoundTripTruncationCorruption) {
  PutHeader h{kPutFlagPrefixRecord, Dg(Rep("22", 32)), 3};
  Bytes expect = H("4b564150 01 01 0000" + Rep("22", 32) + "00000003");
  Bytes got;
  EncodePutHeader(h, &got);
  EXPECT_EQ(got, expect);
  auto r = ParsePutHeader(expect);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, h);
  for (size_t n = 0; n < expect.size(); ++n)
    EXPECT_EQ(ParsePutHeader(ByteSpan(expect).first(n)).status().code(), Code::kNeedMoreData);
  struct Case {
    size_t offset;
    uint8_t value;
    WireError error;
  } cases[] = {{0, 'X', WireError::kBadMagic},     {4, 9, WireError::kBadVersion},
               {5, 2, WireError::kBadReserved},    {6, 1, WireError::kBadReserved},
               {43, 0, WireError::kTooManyBlocks}, {40, 0xff, WireError::kTooManyBlocks}};
  for (const auto& c : cases) {
    Bytes b = expect;
    b[c.offset] = c.value;
    EXPECT_TRUE(ParsePutHeader(b).status().Is(c.error)) << c.offset;
  }
}

}  // namespace
}  // namespace kvcs::objcache
