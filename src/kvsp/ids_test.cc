#include "kvsp/ids.h"

#include <gtest/gtest.h>

#include <numeric>

#include "common/hex.h"
#include "kvsp/block_keys.h"
#include "kvsp/descriptor.h"
#include "kvsp/layer_digest.h"

namespace kvcs::kvsp {
namespace {

Digest SpecCompatId() {
  return *FromHexFixed<32>("851898196c814a8d0029a9e763f8ec354cf226a41ec7fabc5ae9c0c6d14c2fa5");
}
Digest SpecChainKey() { return ChainKey(PublicScopeKey(), SpecCompatId()); }
std::vector<uint32_t> Tokens(uint32_t first, size_t n) {
  std::vector<uint32_t> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

TEST(Ids, SpecVectors) {
  EXPECT_EQ(ToHex(ScopeId(PublicScopeKey())),
            "50888d23678bd64d5d97ce667dc69306b04ff6d45cd2067d1792ae533282f63c");
  EXPECT_EQ(ToHex(SpecChainKey()),
            "497ed9d8a187ee3a73e300a752144d1712963c10c7dc875858f77d9b4c59285c");
  ScopeKey other{};
  other[0] = 1;
  EXPECT_NE(ScopeId(other), ScopeId(PublicScopeKey()));
  EXPECT_NE(ChainKey(other, SpecCompatId()), SpecChainKey());
}

TEST(BlockKeys, SpecVectors) {
  auto tokens = Tokens(1000, 40);
  size_t tail = 0;
  auto keys = BlockKeys(SpecChainKey(), 16, tokens, &tail);
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(tail, 8u);
  EXPECT_EQ(ToHex(keys[0]), "68e15e899f708e28651c88f9a2065c74cd2a5cd4bcea09d8a524f304680b74ed");
  EXPECT_EQ(ToHex(keys[1]), "63957209fa7302e933b82c7bc91d228548b84f0c1145f70eace7d69191cd461b");
  auto anchor = Anchor(SpecChainKey(), 16, tokens);
  ASSERT_TRUE(anchor.ok());
  EXPECT_EQ(*anchor, keys[1]);
}

// The fast chain agrees with HMAC computed through common/crypto.h from the spec's formula.
TEST(BlockKeys, MatchesReferenceHmac) {
  Digest ck = SpecChainKey();
  for (uint32_t b : {1u, 3u, 16u, 64u, 255u, 256u, 257u, 1000u}) {
    auto tokens = Tokens(7 * b, 3 * b + b / 2);
    auto keys = BlockKeys(ck, b, tokens);
    ASSERT_EQ(keys.size(), 3u);
    Digest prev{};
    for (size_t i = 0; i < 3; ++i) {
      Bytes msg(prev.begin(), prev.end());
      ByteWriter w(&msg);
      w.U32(b);
      for (size_t t = i * b; t < (i + 1) * b; ++t) w.U32(tokens[t]);
      w.U32(0);
      prev = HmacSha256(ck, msg);
      EXPECT_EQ(keys[i], prev) << "B=" << b << " block " << i;
    }
  }
}

TEST(BlockKeys, MultimodalExtras) {
  Digest ck = SpecChainKey();
  auto tokens = Tokens(1000, 32);
  MmItem a{3, Sha256::Hash("image-a")}, b{9, Sha256::Hash("image-b")};
  std::vector<std::vector<MmItem>> extras = {{a, b}};
  auto keys = BlockKeys(ck, 16, tokens, extras);
  ASSERT_TRUE(keys.ok());
  // Reference: u32(len) counts bytes, 36 per item.
  Bytes msg(32, 0);
  ByteWriter w(&msg);
  w.U32(16);
  for (size_t t = 0; t < 16; ++t) w.U32(tokens[t]);
  w.U32(72);
  for (const MmItem& it : {a, b}) {
    w.U32(it.offset);
    w.Append(AsBytes(it.digest));
  }
  EXPECT_EQ((*keys)[0], HmacSha256(ck, msg));
  auto text = BlockKeys(ck, 16, tokens);
  EXPECT_NE((*keys)[0], text[0]);
  EXPECT_NE((*keys)[1], text[1]);  // the chain carries the difference forward

  BlockKeyChain chain(ck, 16);
  std::vector<uint32_t> block(tokens.begin(), tokens.begin() + 16);
  EXPECT_TRUE(chain.Next(block, std::vector<MmItem>{{16, {}}})
                  .status()
                  .Is(BlockKeyError::kItemOffsetRange));
  EXPECT_TRUE(chain.Next(block, std::vector<MmItem>{b, a}).status().Is(BlockKeyError::kItemOrder));
  std::vector<MmItem> many(kMaxMmItemsPerBlock + 1);
  EXPECT_TRUE(chain.Next(block, many).status().Is(BlockKeyError::kTooManyItems));
  EXPECT_TRUE(chain.Next(std::span<const uint32_t>(tokens).first(15))
                  .status()
                  .Is(BlockKeyError::kWrongBlockSize));
  EXPECT_EQ(chain.index(), 0u);  // failures do not advance the chain
  std::vector<std::vector<MmItem>> too_many_blocks(3);
  EXPECT_TRUE(
      BlockKeys(ck, 16, tokens, too_many_blocks).status().Is(BlockKeyError::kExtrasMismatch));
}

TEST(BlockKeys, ChainIsIncrementalAndResettable) {
  Digest ck = SpecChainKey();
  auto tokens = Tokens(5, 16 * 5 + 3);
  auto all = BlockKeys(ck, 16, tokens);
  ASSERT_EQ(all.size(), 5u);
  BlockKeyChain chain(ck, 16);
  std::vector<Digest> got;
  EXPECT_EQ(chain.Extend(std::span<const uint32_t>(tokens).first(32), &got), 0u);
  EXPECT_EQ(chain.index(), 2u);
  EXPECT_EQ(chain.Extend(std::span<const uint32_t>(tokens).subspan(32), &got), 3u);
  EXPECT_EQ(got, all);
  // Continue from a known key.
  BlockKeyChain resumed(ck, 16);
  resumed.Reset(all[2], 3);
  auto k4 = resumed.Next(std::span<const uint32_t>(tokens).subspan(48, 16));
  ASSERT_TRUE(k4.ok());
  EXPECT_EQ(*k4, all[3]);
  EXPECT_EQ(resumed.index(), 4u);
  // Any token change changes its block's key and every later key, never an earlier one.
  auto changed = tokens;
  changed[40] ^= 1;
  auto keys2 = BlockKeys(ck, 16, changed);
  EXPECT_EQ(keys2[0], all[0]);
  EXPECT_EQ(keys2[1], all[1]);
  for (size_t i = 2; i < 5; ++i) EXPECT_NE(keys2[i], all[i]);
  // The tail never matters.
  changed = tokens;
  changed.back() ^= 1;
  EXPECT_EQ(BlockKeys(ck, 16, changed), all);
  EXPECT_TRUE(Anchor(ck, 16, std::span<const uint32_t>(tokens).first(15))
                  .status()
                  .Is(BlockKeyError::kNoFullBlock));
  EXPECT_TRUE(Anchor(ck, 0, tokens).status().Is(BlockKeyError::kZeroBlockTokens));
  size_t tail = 0;
  EXPECT_TRUE(BlockKeys(ck, 0, tokens, &tail).empty());
  EXPECT_EQ(tail, tokens.size());
}

TEST(LayerDigest, SpecVector) {
  Bytes k(32768), v(32768);
  for (size_t j = 0; j < k.size(); ++j) {
    k[j] = static_cast<uint8_t>(j % 251);
    v[j] = static_cast<uint8_t>((7 * j) % 251);
  }
  EXPECT_EQ(ToHex(LayerDigest(k, v)),
            "bfd7672f22a3b512840efc772219b28f849816b6ae389a06084ec03ae6564bba");
}

}  // namespace
}  // namespace kvcs::kvsp
