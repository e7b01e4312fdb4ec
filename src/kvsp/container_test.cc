#include "kvsp/container.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "common/hex.h"

namespace kvcs::kvsp {
namespace {

// One table of byte vectors: each used for encode, decode, every truncation and every bit flip.
struct Vector {
  std::string name;
  ContainerHeader header;  // layer_count filled by the encoder
  std::vector<std::pair<Bytes, Bytes>> sections;
  SectionShape k_shape, v_shape;
  std::string hex;  // computed independently (Python hashlib + struct)
};

Bytes Seq(uint8_t first, size_t n) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(first + i);
  return b;
}

Digest Fill(uint8_t v) {
  Digest d;
  d.fill(v);
  return d;
}

const std::vector<Vector>& Vectors() {
  static const std::vector<Vector> v = [] {
    std::vector<Vector> out;
    {
      Vector x;
      x.name = "raw_two_layers";
      x.header.codec = Codec::kRaw;
      x.header.compat_id = Fill(0x11);
      x.header.block_key = Fill(0x22);
      x.header.block_index = 1;
      x.header.block_tokens = 2;
      x.header.layer_first = 3;
      x.sections = {{Seq(0x00, 8), Seq(0x10, 8)}, {Seq(0x20, 8), Seq(0x30, 8)}};
      x.k_shape = x.v_shape = {2, 1, 2, Dtype::kBf16};
      x.hex =
          "4b565350"
          "01"
          "00"
          "0001"
          "0000005c"                                                          // magic..header_len
          "1111111111111111111111111111111111111111111111111111111111111111"  // compat_id
          "2222222222222222222222222222222222222222222222222222222222222222"  // block_key
          "00000001"
          "00000002"
          "0003"
          "0002"
          "0000"
          "0000"  // index..reserved
          "0003"
          "0000"
          "0000000000000008"
          "0000000000000008"  // layer 3
          "25398eac925fcfc8683be7f3c9543e03d65304e01505aed717a8922d51319803"
          "0004"
          "0000"
          "0000000000000008"
          "0000000000000008"  // layer 4
          "6527d1c8ed705869a8acb6d6559d1c151a76865e84cf457bdab2bc0cab35b205"
          "0001020304050607"
          "1011121314151617"
          "2021222324252627"
          "3031323334353637";
      out.push_back(x);
    }
    {
      Vector x;  // MLA-like: V empty, one layer at 0
      x.name = "raw_mla_one_layer";
      x.header.codec = Codec::kRaw;
      x.header.compat_id = Fill(0xa5);
      x.header.block_key = Fill(0x5a);
      x.header.block_index = 7;
      x.header.block_tokens = 1;
      x.header.layer_first = 0;
      x.sections = {{Seq(0x40, 4), Bytes{}}};
      x.k_shape = {1, 1, 2, Dtype::kBf16};
      x.v_shape = {0, 1, 2, Dtype::kBf16};
      x.hex =
          "4b565350"
          "01"
          "00"
          "0001"
          "0000005c"
          "a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5"
          "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a"
          "00000007"
          "00000001"
          "0000"
          "0001"
          "0000"
          "0000"
          "0000"
          "0000"
          "0000000000000004"
          "0000000000000000"
          "aed5d0d7bf85a4042c67fcc73fbad18a1cc404c47f417b408dc475138622e390"
          "40414243";
      out.push_back(x);
    }
    return out;
  }();
  return v;
}

std::vector<LayerSections> Spans(const Vector& v) {
  std::vector<LayerSections> s;
  for (const auto& [k, vv] : v.sections) s.push_back({k, vv});
  return s;
}

ContainerExpectation Expect(const Vector& v) {
  ContainerExpectation e;
  e.compat_id = v.header.compat_id;
  e.block_key = v.header.block_key;
  e.block_index = v.header.block_index;
  e.block_tokens = v.header.block_tokens;
  e.codec = v.header.codec;
  e.layer_first = v.header.layer_first;
  e.layer_count = static_cast<uint16_t>(v.sections.size());
  e.k_shape = v.k_shape;
  e.v_shape = v.v_shape;
  return e;
}

TEST(Container, EncodeMatchesVectors) {
  for (const auto& v : Vectors()) {
    auto enc = EncodeContainer(v.header, Spans(v));
    ASSERT_TRUE(enc.ok()) << v.name << enc.status().ToString();
    EXPECT_EQ(ToHex(*enc), v.hex) << v.name;
  }
}

TEST(Container, DecodeVectors) {
  for (const auto& v : Vectors()) {
    Bytes bytes = *FromHex(v.hex);
    auto view = VerifyContainer(bytes, Expect(v));
    ASSERT_TRUE(view.ok()) << v.name << view.status().ToString();
    EXPECT_EQ(view->header.compat_id, v.header.compat_id);
    EXPECT_EQ(view->header.block_key, v.header.block_key);
    EXPECT_EQ(view->header.block_index, v.header.block_index);
    EXPECT_EQ(view->header.block_tokens, v.header.block_tokens);
    EXPECT_EQ(view->header.layer_first, v.header.layer_first);
    EXPECT_EQ(view->header.layer_count, v.sections.size());
    EXPECT_EQ(view->total_size, bytes.size());
    EXPECT_EQ(view->header_len, kFixedHeaderBytes);
    EXPECT_EQ(view->payload_offset, kFixedHeaderBytes + kLayerEntryBytes * v.sections.size());
    for (size_t i = 0; i < v.sections.size(); ++i) {
      uint32_t layer = v.header.layer_first + static_cast<uint32_t>(i);
      auto sec = LayerBytes(*view, bytes, layer);
      ASSERT_TRUE(sec.ok());
      EXPECT_EQ(Bytes(sec->k.begin(), sec->k.end()), v.sections[i].first);
      EXPECT_EQ(Bytes(sec->v.begin(), sec->v.end()), v.sections[i].second);
      const LayerEntry* e = view->Find(layer);
      ASSERT_NE(e, nullptr);
      EXPECT_EQ(e->digest, LayerDigest(v.sections[i].first, v.sections[i].second));
    }
    EXPECT_EQ(view->Find(v.header.layer_first + 99), nullptr);
  }
}

TEST(Container, EveryTruncationNeedsMoreBytes) {
  for (const auto& v : Vectors()) {
    Bytes bytes = *FromHex(v.hex);
    for (size_t n = 0; n < bytes.size(); ++n) {
      auto r = DecodeContainer(ByteSpan(bytes).first(n));
      ASSERT_FALSE(r.ok()) << v.name << " prefix " << n;
      EXPECT_EQ(r.status().code(), Code::kNeedMoreData) << v.name << " prefix " << n;
      EXPECT_TRUE(r.status().Is(ContainerError::kTruncated)) << r.status().ToString();
      // The header parser succeeds exactly once header and table are present.
      auto head = ParseContainerHeader(ByteSpan(bytes).first(n));
      uint64_t table_end = kFixedHeaderBytes + kLayerEntryBytes * v.sections.size();
      EXPECT_EQ(head.ok(), n >= table_end) << n;
      if (n >= kFixedHeaderBytes) {
        auto ps = ContainerPrefixSize(ByteSpan(bytes).first(n));
        ASSERT_TRUE(ps.ok());
        EXPECT_EQ(*ps, table_end);
      }
    }
    Bytes longer = bytes;
    longer.push_back(0);
    EXPECT_TRUE(DecodeContainer(longer).status().Is(ContainerError::kTrailingBytes));
  }
}

TEST(Container, EveryBitFlipIsCaught) {
  for (const auto& v : Vectors()) {
    Bytes bytes = *FromHex(v.hex);
    ContainerExpectation want = Expect(v);
    const size_t table_end = kFixedHeaderBytes + kLayerEntryBytes * v.sections.size();
    for (size_t i = 0; i < bytes.size(); ++i) {
      for (int bit = 0; bit < 8; ++bit) {
        Bytes c = bytes;
        c[i] ^= static_cast<uint8_t>(1 << bit);
        auto r = VerifyContainer(c, want);
        ASSERT_FALSE(r.ok()) << v.name << " byte " << i << " bit " << bit;
        if (i >= table_end) {
          // Payload flips are caught by the digest of the layer holding the byte.
          EXPECT_TRUE(r.status().Is(ContainerError::kDigestMismatch)) << r.status().ToString();
        }
      }
    }
  }
}

TEST(Container, PayloadFlipNamesTheLayer) {
  const Vector& v = Vectors()[0];
  Bytes bytes = *FromHex(v.hex);
  Bytes c = bytes;
  c[kFixedHeaderBytes + 2 * kLayerEntryBytes + 16 + 3] ^= 1;  // layer 4's K
  auto r = DecodeContainer(c);
  EXPECT_TRUE(r.status().Is(ContainerError::kDigestMismatch));
  EXPECT_NE(r.status().message().find("layer 4"), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().code(), Code::kCorruption);
}

// Specific corruptions give specific errors.
TEST(Container, TypedStructuralErrors) {
  const Vector& v = Vectors()[0];
  const Bytes good = *FromHex(v.hex);
  auto with = [&](size_t at, std::initializer_list<uint8_t> bytes) {
    Bytes c = good;
    size_t i = at;
    for (uint8_t b : bytes) c[i++] = b;
    return c;
  };
  const size_t t0 = kFixedHeaderBytes, t1 = kFixedHeaderBytes + kLayerEntryBytes;
  struct Case {
    std::string name;
    Bytes bytes;
    ContainerError want;
  };
  std::vector<Case> cases = {
      {"magic", with(0, {'K', 'V', 'S', 'Q'}), ContainerError::kBadMagic},
      {"version", with(4, {2}), ContainerError::kBadVersion},
      {"flags", with(5, {0x80}), ContainerError::kBadFlags},
      {"codec_reserved", with(6, {0, 0}), ContainerError::kUnknownCodec},
      {"codec_unknown", with(6, {0, 8}), ContainerError::kUnknownCodec},
      {"codec_private", with(6, {0xff, 0x00}), ContainerError::kUnknownCodec},
      {"header_len", with(8, {0, 0, 0, 0x5d}), ContainerError::kHeaderLenMismatch},
      {"params_for_raw", with(88, {0, 1}), ContainerError::kBadCodecParams},
      {"reserved_header", with(90, {0, 1}), ContainerError::kReservedNonZero},
      {"zero_layers", with(86, {0, 0}), ContainerError::kBadLayerCount},
      {"layers_past_u16", with(84, {0xff, 0xff}), ContainerError::kBadLayerCount},
      {"layer_number", with(t1, {0, 5}), ContainerError::kLayerNumber},
      {"layer_number_first", with(t0, {0, 4}), ContainerError::kLayerNumber},
      {"reserved_table", with(t0 + 2, {0, 1}), ContainerError::kReservedNonZero},
      {"section_too_large", with(t0 + 4, {0x00, 0x00, 0x00, 0x01, 0, 0, 0, 0}),
       ContainerError::kSectionTooLarge},
      {"k_len_longer", with(t0 + 4 + 7, {9}), ContainerError::kTruncated},
      {"v_len_shorter", with(t1 + 12 + 7, {7}), ContainerError::kTrailingBytes},
      {"digest", with(t1 + 20, {0}), ContainerError::kDigestMismatch},
  };
  for (const auto& c : cases) {
    auto r = DecodeContainer(c.bytes);
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_TRUE(r.status().Is(c.want))
        << c.name << ": " << r.status().ToString() << " want " << ContainerErrorName(c.want);
  }
  // A registered codec we do not implement may carry parameters (bounded).
  ContainerHeader h = v.header;
  h.codec = Codec::kCachegen;
  h.codec_params = {1, 2, 3};
  auto enc = EncodeContainer(h, Spans(v));
  ASSERT_TRUE(enc.ok());
  auto dec = DecodeContainer(*enc);
  ASSERT_TRUE(dec.ok()) << dec.status().ToString();
  EXPECT_EQ(dec->header.codec_params, (Bytes{1, 2, 3}));
  EXPECT_EQ(dec->header_len, kFixedHeaderBytes + 3);
}

TEST(Container, ExpectationMismatches) {
  const Vector& v = Vectors()[0];
  const Bytes good = *FromHex(v.hex);
  ASSERT_TRUE(VerifyContainer(good, Expect(v)).ok());
  struct Case {
    std::string name;
    std::function<void(ContainerExpectation*)> change;
    ContainerError want;
  };
  std::vector<Case> cases = {
      {"compat", [](auto* e) { e->compat_id[31] ^= 1; }, ContainerError::kCompatIdMismatch},
      {"key", [](auto* e) { e->block_key[0] ^= 1; }, ContainerError::kBlockKeyMismatch},
      {"index", [](auto* e) { e->block_index = 2; }, ContainerError::kBlockIndexMismatch},
      {"tokens", [](auto* e) { e->block_tokens = 16; }, ContainerError::kBlockTokensMismatch},
      {"codec", [](auto* e) { e->codec = Codec::kZstd; }, ContainerError::kCodecMismatch},
      {"first", [](auto* e) { e->layer_first = 2; }, ContainerError::kLayerRangeMismatch},
      {"count", [](auto* e) { e->layer_count = 3; }, ContainerError::kLayerRangeMismatch},
      {"shape", [](auto* e) { e->k_shape->head_dim = 3; }, ContainerError::kSectionSizeMismatch},
      {"vshape", [](auto* e) { e->v_shape->tokens = 0; }, ContainerError::kSectionSizeMismatch},
  };
  for (const auto& c : cases) {
    ContainerExpectation e = Expect(v);
    c.change(&e);
    auto r = VerifyContainer(good, e);
    EXPECT_TRUE(r.status().Is(c.want)) << c.name << ": " << r.status().ToString();
  }
}

TEST(Container, ServeAndVerifyOneLayerByRange) {
  const Vector& v = Vectors()[0];
  const Bytes bytes = *FromHex(v.hex);
  // A client fetches header + table first, then one layer's byte range.
  auto need = ContainerPrefixSize(ByteSpan(bytes).first(kFixedHeaderBytes));
  ASSERT_TRUE(need.ok());
  auto view = ParseContainerHeader(ByteSpan(bytes).first(*need));
  ASSERT_TRUE(view.ok());
  const LayerEntry* e = view->Find(4);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->both(), (ByteRange{kFixedHeaderBytes + 2 * kLayerEntryBytes + 16, 16}));
  ByteSpan range = ByteSpan(bytes).subspan(e->both().offset, e->both().length);
  EXPECT_TRUE(VerifyLayer(*view, 4, range.first(e->k_len), range.subspan(e->k_len)).ok());
  Bytes bad(range.begin(), range.end());
  bad[15] ^= 0x40;
  EXPECT_TRUE(VerifyLayer(*view, 4, ByteSpan(bad).first(8), ByteSpan(bad).subspan(8))
                  .Is(ContainerError::kDigestMismatch));
  EXPECT_TRUE(VerifyLayer(*view, 4, ByteSpan(bad).first(7), ByteSpan(bad).subspan(7))
                  .Is(ContainerError::kSectionSizeMismatch));
  EXPECT_TRUE(
      VerifyLayer(*view, 5, range.first(8), range.subspan(8)).Is(ContainerError::kNoSuchLayer));
}

TEST(Container, StreamedBackToBackSplitsBySize) {
  Bytes stream;
  for (const auto& v : Vectors()) {
    Bytes b = *FromHex(v.hex);
    stream.insert(stream.end(), b.begin(), b.end());
  }
  size_t at = 0, count = 0;
  while (at < stream.size()) {
    auto head = ParseContainerHeader(ByteSpan(stream).subspan(at));
    ASSERT_TRUE(head.ok());
    auto full = DecodeContainer(ByteSpan(stream).subspan(at, head->total_size));
    ASSERT_TRUE(full.ok());
    at += head->total_size;
    ++count;
  }
  EXPECT_EQ(count, Vectors().size());
}

TEST(Container, FromRawEveryCodecRoundTrips) {
  auto d = ParseDescriptor(
      R"({"kvsp":1,"model":"m","model_rev":"r","tokenizer_rev":"t","attn":"gqa","layers":4,"kv_heads":2,"head_dim":8,"kv_dtype":"bf16","block_tokens":4,"layout":"thd"})");
  ASSERT_TRUE(d.ok());
  std::mt19937 rng(3);
  std::vector<Bytes> raw(8, Bytes(KSectionBytes(*d)));
  for (auto& r : raw) {
    for (size_t i = 0; i < r.size(); i += 2) {
      r[i] = static_cast<uint8_t>(rng());
      r[i + 1] = static_cast<uint8_t>(0x3c + rng() % 3);  // bf16 values around 0.01..0.1
    }
  }
  std::vector<LayerSections> layers;
  for (int l = 0; l < 4; ++l) layers.push_back({raw[2 * l], raw[2 * l + 1]});
  Digest cid = CompatId(*d), key = Fill(9);
  for (Codec c : {Codec::kRaw, Codec::kZstd, Codec::kFp8E4m3, Codec::kInt8}) {
    auto enc = EncodeContainerFromRaw(*d, cid, key, 3, c, 0, layers);
    ASSERT_TRUE(enc.ok()) << enc.status().ToString();
    auto view = VerifyContainer(*enc, ExpectFor(*d, cid, key, 3, c, 0, 4));
    ASSERT_TRUE(view.ok()) << CodecName(c) << view.status().ToString();
    for (uint32_t l = 0; l < 4; ++l) {
      auto sec = LayerBytes(*view, *enc, l);
      ASSERT_TRUE(sec.ok());
      auto k = DecodeSection(c, KShape(*d), sec->k);
      ASSERT_TRUE(k.ok()) << k.status().ToString();
      if (c == Codec::kRaw || c == Codec::kZstd) {
        EXPECT_EQ(*k, raw[2 * l]);
      }
      EXPECT_EQ(k->size(), raw[2 * l].size());
      Bytes kk, vv;
      ASSERT_TRUE(DecodeLayerRaw(*view, *enc, l, *d, &kk, &vv).ok());
      EXPECT_EQ(kk, *k);
      EXPECT_EQ(vv.size(), raw[2 * l + 1].size());
      if (c == Codec::kRaw || c == Codec::kZstd) {
        EXPECT_EQ(vv, raw[2 * l + 1]);
      }
    }
  }
  // Encoder refuses what it cannot write.
  ContainerHeader h;
  EXPECT_TRUE(EncodeContainer(h, {}).status().Is(ContainerError::kBadLayerCount));
  h.layer_first = 65535;
  std::vector<LayerSections> two(2);
  EXPECT_TRUE(EncodeContainer(h, two).status().Is(ContainerError::kBadLayerCount));
  h.layer_first = 0;
  h.codec_params = {1};
  EXPECT_TRUE(EncodeContainer(h, two).status().Is(ContainerError::kBadCodecParams));
}

}  // namespace
}  // namespace kvcs::kvsp
