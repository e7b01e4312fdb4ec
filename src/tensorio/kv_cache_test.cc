#include "tensorio/kv_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/hex.h"
#include "kvsp/block_keys.h"
#include "kvsp/container.h"

namespace kvcs::tensorio {
namespace {

namespace fs = std::filesystem;

// A small cache: 2 layers, 2 KV heads, head_dim 4, bf16, B = 4, T = 10 (2 full blocks, tail 2).
constexpr const char* kDescriptor =
    R"({"kvsp":1,"model":"test/tiny","model_rev":"r1","tokenizer_rev":"t1","attn":"gqa",)"
    R"("layers":2,"kv_heads":2,"head_dim":4,"kv_dtype":"bf16","block_tokens":4,"layout":"thd"})";
constexpr uint64_t kT = 10, kH = 2, kD = 4, kL = 2;

struct TinyCache {
  std::vector<Bytes> k, v;
  Bytes ids;
  std::map<std::string, std::string> meta = {{"kvsp.descriptor", kDescriptor}, {"format", "pt"}};
  std::vector<TensorToWrite> tensors;

  TinyCache() {
    for (uint64_t l = 0; l < kL; ++l) {
      Bytes kb(kT * kH * kD * 2), vb(kb.size());
      for (size_t i = 0; i < kb.size(); ++i) {
        kb[i] = uint8_t(i * 7 + l * 13 + 1);
        vb[i] = uint8_t(i * 11 + l * 5 + 3);
      }
      k.push_back(kb);
      v.push_back(vb);
    }
    for (uint64_t t = 0; t < kT; ++t) {
      uint64_t id = 1000 + t;
      for (int j = 0; j < 8; ++j) ids.push_back(uint8_t(id >> (8 * j)));
    }
    Rebuild();
  }
  void Rebuild() {
    tensors.clear();
    for (uint64_t l = 0; l < kL; ++l) {
      tensors.push_back({"layers." + std::to_string(l) + ".k", Dtype::kBF16, {kT, kH, kD}, k[l]});
      tensors.push_back({"layers." + std::to_string(l) + ".v", Dtype::kBF16, {kT, kH, kD}, v[l]});
    }
    tensors.push_back({"token_ids", Dtype::kI64, {kT}, ids});
  }
  Bytes Encode() const { return *EncodeSafetensors(tensors, meta); }
};

fs::path TempDir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("kvcs_kv_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(p);
  return p;
}

TEST(KvCache, ReadsTheConvention) {
  TinyCache c;
  Bytes file = c.Encode();
  auto v = SafetensorsView::Parse(file);
  ASSERT_TRUE(v.ok());
  auto kv = ReadKvCache(*v);
  ASSERT_TRUE(kv.ok()) << kv.status().ToString();
  EXPECT_EQ(kv->tokens(), kT);
  EXPECT_EQ(kv->full_blocks(), 2u);
  EXPECT_EQ(kv->tail_tokens(), 2u);
  EXPECT_EQ(kv->token_ids[3], 1003u);
  ByteSpan s = kv->KSection(1, 2);  // layer 1, block 2: tokens 4..7
  ASSERT_EQ(s.size(), 4 * kH * kD * 2);
  EXPECT_EQ(0, std::memcmp(s.data(), c.k[1].data() + 4 * kH * kD * 2, s.size()));
}

TEST(KvCache, RejectsViolationsWithTypedErrors) {
  struct Case {
    const char* name;
    std::function<void(TinyCache&)> mutate;
    KvCacheError want;
  };
  std::vector<Case> cases = {
      {"no_descriptor", [](TinyCache& c) { c.meta.erase("kvsp.descriptor"); },
       KvCacheError::kNoDescriptor},
      {"bad_descriptor", [](TinyCache& c) { c.meta["kvsp.descriptor"] = "{\"kvsp\":2}"; },
       KvCacheError::kBadDescriptor},
      {"missing_v", [](TinyCache& c) { c.tensors.erase(c.tensors.begin() + 3); },
       KvCacheError::kMissingTensor},
      {"missing_token_ids", [](TinyCache& c) { c.tensors.pop_back(); },
       KvCacheError::kMissingTensor},
      {"wrong_dtype", [](TinyCache& c) { c.tensors[0].dtype = Dtype::kF16; },
       KvCacheError::kWrongDtype},
      {"wrong_shape",
       [](TinyCache& c) {
         c.tensors[0].shape = {kT, kD, kH};
       },
       KvCacheError::kWrongShape},
      {"token_count_differs",
       [](TinyCache& c) {
         c.tensors.back().shape = {kT - 1};
         c.tensors.back().data = c.tensors.back().data.subspan(0, (kT - 1) * 8);
       },
       KvCacheError::kWrongShape},
      {"token_ids_float", [](TinyCache& c) { c.tensors.back().dtype = Dtype::kF64; },
       KvCacheError::kWrongDtype},
      {"negative_token",
       [](TinyCache& c) {
         for (int j = 0; j < 8; ++j) c.ids[8 + j] = 0xff;
       },
       KvCacheError::kTokenOutOfRange},
      {"unexpected_tensor",
       [](TinyCache& c) {
         c.tensors.push_back({"layers.2.k", Dtype::kBF16, {kT, kH, kD}, c.k[0]});
       },
       KvCacheError::kUnexpectedTensor},
  };
  for (auto& tc : cases) {
    TinyCache c;
    tc.mutate(c);
    Bytes file = *EncodeSafetensors(c.tensors, c.meta);
    auto v = SafetensorsView::Parse(file);
    ASSERT_TRUE(v.ok()) << tc.name;
    auto kv = ReadKvCache(*v);
    ASSERT_FALSE(kv.ok()) << tc.name;
    EXPECT_TRUE(kv.status().Is(tc.want)) << tc.name << ": " << kv.status().ToString();
  }
}

Bytes Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void Spit(const fs::path& p, const Bytes& b) {
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), b.size());
}

fs::path ContainerFile(const fs::path& dir, const Digest& block_key) {
  return dir / (ToHex(block_key) + ".kvsp");
}

class PackRoundTrip : public ::testing::TestWithParam<kvsp::Codec> {};

TEST_P(PackRoundTrip, UnpackGivesTheFullBlocksBitExact) {
  TinyCache c;
  Bytes file = c.Encode();
  auto v = SafetensorsView::Parse(file);
  auto kv = ReadKvCache(*v);
  ASSERT_TRUE(kv.ok());
  fs::path dir = TempDir("rt" + std::to_string(int(GetParam())));
  auto r = PackDirectory(*kv, kvsp::PublicScopeKey(), true, GetParam(), dir.string());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->blocks, 2u);
  EXPECT_EQ(r->tail_tokens, 2u);
  EXPECT_TRUE(fs::exists(ContainerFile(dir, r->block_keys[0])));
  // The keys are the chain's.
  Digest chain = kvsp::ChainKey(kvsp::PublicScopeKey(), kvsp::CompatId(kv->descriptor));
  EXPECT_EQ(r->block_keys, kvsp::BlockKeys(chain, 4, kv->token_ids));
  // Packing twice into the same directory is refused.
  EXPECT_EQ(
      PackDirectory(*kv, kvsp::PublicScopeKey(), true, GetParam(), dir.string()).status().code(),
      Code::kAlreadyExists);

  std::string out = (dir / "back.safetensors").string();
  auto u = UnpackDirectory(dir.string(), out, std::nullopt);
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_TRUE(u->keys_rederived);
  EXPECT_EQ(u->tokens, 8u);
  auto back = SafetensorsFile::Open(out);
  ASSERT_TRUE(back.ok());
  auto kv2 = ReadKvCache(back->view());
  ASSERT_TRUE(kv2.ok()) << kv2.status().ToString();
  EXPECT_EQ(kv2->tokens(), 8u);
  bool lossless = GetParam() == kvsp::Codec::kRaw || GetParam() == kvsp::Codec::kZstd;
  for (uint32_t l = 0; l < kL; ++l) {
    ASSERT_EQ(kv2->k[l].size(), 8 * kH * kD * 2);
    if (lossless) {
      EXPECT_EQ(0, std::memcmp(kv2->k[l].data(), c.k[l].data(), kv2->k[l].size())) << l;
      EXPECT_EQ(0, std::memcmp(kv2->v[l].data(), c.v[l].data(), kv2->v[l].size())) << l;
    }
  }
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(kv2->token_ids[i], 1000 + i);
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Codecs, PackRoundTrip,
                         ::testing::Values(kvsp::Codec::kRaw, kvsp::Codec::kZstd));

TEST(Unpack, RefusesADamagedContainerAndWritesNothing) {
  TinyCache c;
  Bytes file = c.Encode();
  auto v = SafetensorsView::Parse(file);
  auto kv = ReadKvCache(*v);
  fs::path dir = TempDir("bad");
  auto r = PackDirectory(*kv, kvsp::PublicScopeKey(), true, kvsp::Codec::kRaw, dir.string());
  ASSERT_TRUE(r.ok());
  fs::path victim = ContainerFile(dir, r->block_keys[1]);
  Bytes b = Slurp(victim);
  b[b.size() - 1] ^= 0x01;  // a K/V byte of the last layer
  Spit(victim, b);
  std::string out = (dir / "back.safetensors").string();
  auto u = UnpackDirectory(dir.string(), out, std::nullopt);
  ASSERT_FALSE(u.ok());
  EXPECT_TRUE(u.status().Is(kvsp::ContainerError::kDigestMismatch)) << u.status().ToString();
  EXPECT_NE(u.status().message().find(victim.filename().string()), std::string::npos);
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(out + ".tmp"));

  // Swapping two containers: each is intact but not the block the index lists.
  Spit(victim, Slurp(ContainerFile(dir, r->block_keys[0])));
  u = UnpackDirectory(dir.string(), out, std::nullopt);
  ASSERT_FALSE(u.ok());
  EXPECT_TRUE(u.status().Is(kvsp::ContainerError::kBlockKeyMismatch)) << u.status().ToString();
  fs::remove_all(dir);
}

TEST(Unpack, PrivateScopeRederivesOnlyWithTheKey) {
  TinyCache c;
  Bytes file = c.Encode();
  auto v = SafetensorsView::Parse(file);
  auto kv = ReadKvCache(*v);
  kvsp::ScopeKey key{};
  key[0] = 42;
  fs::path dir = TempDir("priv");
  ASSERT_TRUE(PackDirectory(*kv, key, false, kvsp::Codec::kRaw, dir.string()).ok());
  std::string out = (dir / "o.safetensors").string();
  auto u = UnpackDirectory(dir.string(), out, std::nullopt);
  ASSERT_TRUE(u.ok());
  EXPECT_FALSE(u->keys_rederived);
  fs::remove(out);
  u = UnpackDirectory(dir.string(), out, key);
  ASSERT_TRUE(u.ok());
  EXPECT_TRUE(u->keys_rederived);
  kvsp::ScopeKey wrong{};
  u = UnpackDirectory(dir.string(), out + "2", wrong);
  EXPECT_TRUE(u.status().Is(KvCacheError::kKeyChainMismatch));
  fs::remove_all(dir);
}

class PackedInMemory : public ::testing::TestWithParam<kvsp::Codec> {};

TEST_P(PackedInMemory, LoadGivesTheFullBlocksLayerMajorBitExact) {
  TinyCache c;
  Bytes file = c.Encode();
  auto v = SafetensorsView::Parse(file);
  auto kv = ReadKvCache(*v);
  ASSERT_TRUE(kv.ok());
  fs::path dir = TempDir("mem" + std::to_string(int(GetParam())));
  ASSERT_TRUE(PackDirectory(*kv, kvsp::PublicScopeKey(), true, GetParam(), dir.string()).ok());
  std::vector<uint64_t> progress;
  auto p = PackedKvCache::Load(dir.string(), std::nullopt, [&](uint64_t done, uint64_t total) {
    EXPECT_EQ(total, 2u);
    progress.push_back(done);
  });
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(progress, (std::vector<uint64_t>{1, 2}));
  EXPECT_TRUE(p->index().public_scope);
  EXPECT_TRUE(p->index().keys_rederived);
  EXPECT_EQ(p->index().tail_tokens_not_packed, 2u);
  EXPECT_EQ(p->index().scope_id, kvsp::ScopeId(kvsp::PublicScopeKey()));
  EXPECT_GT(p->container_bytes(), 0u);
  // Moving the cache keeps its view on the same bytes.
  PackedKvCache moved = std::move(*p);
  const KvCacheView& m = moved.view();
  EXPECT_EQ(m.tokens(), 8u);
  EXPECT_EQ(m.full_blocks(), 2u);
  EXPECT_EQ(m.tail_tokens(), 0u);
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(m.token_ids[i], 1000 + i);
  ASSERT_EQ(m.k.size(), kL);
  for (uint32_t l = 0; l < kL; ++l) {
    ASSERT_EQ(m.k[l].size(), 8 * kH * kD * 2);
    ASSERT_EQ(m.v[l].size(), 8 * kH * kD * 2);
    EXPECT_EQ(0, std::memcmp(m.k[l].data(), c.k[l].data(), m.k[l].size())) << l;
    EXPECT_EQ(0, std::memcmp(m.v[l].data(), c.v[l].data(), m.v[l].size())) << l;
    // The same sections a safetensors view gives, block by block.
    for (uint64_t b = 1; b <= 2; ++b) {
      EXPECT_EQ(0, std::memcmp(m.KSection(l, b).data(), kv->KSection(l, b).data(),
                               kv->KSection(l, b).size()));
    }
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(LosslessCodecs, PackedInMemory,
                         ::testing::Values(kvsp::Codec::kRaw, kvsp::Codec::kZstd));

TEST(PackedKvCacheLoad, RefusesDamagedSwappedMissingAndForeignScope) {
  TinyCache c;
  Bytes file = c.Encode();
  auto v = SafetensorsView::Parse(file);
  auto kv = ReadKvCache(*v);
  kvsp::ScopeKey key{};
  key[0] = 7;
  fs::path dir = TempDir("membad");
  auto r = PackDirectory(*kv, key, false, kvsp::Codec::kRaw, dir.string());
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(PackedKvCache::Load(dir.string(), key).ok());
  // Another scope's key: the Block Keys do not re-derive.
  kvsp::ScopeKey wrong{};
  EXPECT_TRUE(
      PackedKvCache::Load(dir.string(), wrong).status().Is(KvCacheError::kKeyChainMismatch));
  // One flipped K/V byte: the container's digest.
  fs::path victim = ContainerFile(dir, r->block_keys[1]);
  Bytes b = Slurp(victim);
  b[b.size() - 1] ^= 0x01;
  Spit(victim, b);
  auto p = PackedKvCache::Load(dir.string(), key);
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(p.status().Is(kvsp::ContainerError::kDigestMismatch)) << p.status().ToString();
  EXPECT_NE(p.status().message().find("block 2"), std::string::npos) << p.status().ToString();
  // Block 1's intact container in block 2's place.
  Spit(victim, Slurp(ContainerFile(dir, r->block_keys[0])));
  EXPECT_TRUE(
      PackedKvCache::Load(dir.string(), key).status().Is(kvsp::ContainerError::kBlockKeyMismatch));
  // A container missing.
  fs::remove(victim);
  p = PackedKvCache::Load(dir.string(), key);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), Code::kNotFound) << p.status().ToString();
  // No index at all.
  fs::remove(dir / "index.json");
  EXPECT_FALSE(PackedKvCache::Load(dir.string(), key).ok());
  fs::remove_all(dir);
}

// An index whose cache would not fit in memory is refused before anything is allocated or read
// (no container file exists here): 65,535 layers of 1 MiB sections are 128 GiB.
TEST(PackedKvCacheLoad, RefusesACacheAboveTheMemoryBoundBeforeReadingIt) {
  kvsp::Descriptor d = *kvsp::ParseDescriptor(kDescriptor);
  d.layers = 65535;
  d.kv_heads = 8;
  d.head_dim = 4096;
  d.block_tokens = 16;
  std::vector<uint32_t> tokens(16, 7);
  const Digest compat = kvsp::CompatId(d);
  const Digest key = kvsp::BlockKeys(kvsp::ChainKey(kvsp::PublicScopeKey(), compat), 16, tokens)[0];
  nlohmann::json idx = {
      {"kvcs_pack", 1},
      {"descriptor", nlohmann::json::parse(kvsp::CanonicalJson(d))},
      {"compat_id", ToHex(compat)},
      {"scope", "public"},
      {"scope_id", ToHex(kvsp::ScopeId(kvsp::PublicScopeKey()))},
      {"blocks", {{{"index", 1}, {"block_key", ToHex(key)}, {"file", ToHex(key) + ".kvsp"}}}},
      {"token_ids", tokens},
      {"tail_tokens", 0}};
  fs::path dir = TempDir("huge");
  fs::create_directories(dir);
  std::ofstream(dir / "index.json") << idx.dump();
  auto p = PackedKvCache::Load(dir.string(), std::nullopt);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), Code::kResourceExhausted) << p.status().ToString();
  EXPECT_NE(p.status().message().find("kvcs unpack"), std::string::npos);
  fs::remove_all(dir);
}

TEST(Pack, NoFullBlockIsRefused) {
  TinyCache c;
  c.tensors.clear();
  Bytes k(3 * kH * kD * 2), ids(3 * 8);
  for (uint64_t l = 0; l < kL; ++l) {
    c.tensors.push_back({"layers." + std::to_string(l) + ".k", Dtype::kBF16, {3, kH, kD}, k});
    c.tensors.push_back({"layers." + std::to_string(l) + ".v", Dtype::kBF16, {3, kH, kD}, k});
  }
  c.tensors.push_back({"token_ids", Dtype::kI64, {3}, ids});
  Bytes file = *EncodeSafetensors(c.tensors, c.meta);
  auto v = SafetensorsView::Parse(file);
  auto kv = ReadKvCache(*v);
  ASSERT_TRUE(kv.ok());
  EXPECT_EQ(kv->tail_tokens(), 3u);
  auto r =
      PackDirectory(*kv, kvsp::PublicScopeKey(), true, kvsp::Codec::kRaw, TempDir("none").string());
  EXPECT_TRUE(r.status().Is(KvCacheError::kNoFullBlock));
}

}  // namespace
}  // namespace kvcs::tensorio
