// ReplayStoredBlocks over a LocalStore in a temporary directory: batching by scope and compat,
// one report per block whatever its codecs, mislabelled objects skipped, prefix records reported
// only with their whole chain, a missing bucket empty, and an early stop.
#include "objcache/block_inventory.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <vector>

#include "kvsp/container.h"
#include "objcache/block_layout.h"
#include "store/local_store.h"

namespace kvcs::objcache {
namespace {

Digest D(uint8_t a, uint8_t b = 0) {
  Digest d{};
  d.fill(a);
  d[31] = b;
  return d;
}

struct Recorder final : BlockEvents {
  struct Call {
    std::vector<StoredBlock> blocks;
    std::optional<Digest> anchor;
  };
  void OnStored(const std::string&, std::span<const StoredBlock> b,
                std::optional<Digest> anchor) override {
    calls.push_back({{b.begin(), b.end()}, anchor});
  }
  void OnDeleted(const std::string&, const DeletedBlock&) override {}
  std::vector<Call> calls;
};

class BlockInventoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kvcs-inventory-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    store_ = std::move(*store::LocalStore::Open(root_));
    ASSERT_TRUE(store_->CreateBucket("kvcache").ok());
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(root_);
  }
  void PutObject(const std::string& key, ByteSpan bytes) {
    auto w = store_->Put("kvcache", key, {});
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Write(bytes).ok());
    ASSERT_TRUE((*w)->Commit().ok());
  }
  // A 2-layer container of `key` stored under the name of (scope, compat, named_key).
  void PutBlock(const Digest& scope, const Digest& compat, const Digest& key,
                kvsp::Codec codec = kvsp::Codec::kRaw, std::optional<Digest> named = {}) {
    kvsp::ContainerHeader h;
    h.codec = codec;
    h.compat_id = compat;
    h.block_key = key;
    h.block_index = 1;
    h.block_tokens = 16;
    h.layer_first = 3;
    uint8_t k[8] = {1}, v[8] = {2};
    std::vector<kvsp::LayerSections> layers(2, {ByteSpan(k, 8), ByteSpan(v, 8)});
    auto bytes = kvsp::EncodeContainer(h, layers);
    ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
    PutObject(BlockObjectKey(scope, compat, named.value_or(key), kvsp::CodecName(codec)), *bytes);
  }
  void PutPrefix(const Digest& scope, const Digest& compat, std::vector<Digest> keys) {
    std::string rec = EncodePrefixRecord({compat, keys.back(), keys});
    PutObject(PrefixRecordKey(scope, compat, keys.back()), AsBytes(rec));
  }
  Result<BlockInventoryStats> Replay(Recorder* r, BlockInventoryOptions o = {}) {
    o.max_blocks_per_s = 0;
    return ReplayStoredBlocks(*store_, "kvcache", *r, o, [](auto) { return true; });
  }

  std::string root_;
  std::unique_ptr<store::LocalStore> store_;
};

TEST_F(BlockInventoryTest, BatchesBlocksAndChecksChains) {
  const Digest s = D(1), c1 = D(2), c2 = D(3);
  for (uint8_t i = 0; i < 5; ++i) PutBlock(s, c1, D(9, i));
  PutBlock(s, c1, D(9, 2), kvsp::Codec::kZstd);          // a second codec: reported once
  PutBlock(s, c1, D(9, 7), kvsp::Codec::kRaw, D(9, 8));  // named as another block: skipped
  PutObject("kvsp/not-a-block", AsBytes(std::string_view("x")));
  PutPrefix(s, c1, {D(9, 0), D(9, 1), D(9, 2)});  // whole: reported
  PutPrefix(s, c1, {D(9, 3), D(9, 6), D(9, 4)});  // K 6 is missing: skipped
  PutBlock(s, c2, D(9, 0));
  Recorder r;
  auto st = Replay(&r, {.max_batch = 3});
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(st->blocks, 6u);
  EXPECT_EQ(st->anchors, 1u);
  EXPECT_EQ(st->skipped, 2u);
  ASSERT_EQ(r.calls.size(), 4u);  // c1: 3 + 2 blocks, the anchor; c2: 1 block
  EXPECT_EQ(r.calls[0].blocks.size(), 3u);
  EXPECT_EQ(r.calls[1].blocks.size(), 2u);
  EXPECT_EQ(r.calls[0].blocks[0].layer_first, 3u);
  EXPECT_EQ(r.calls[0].blocks[0].layer_count, 2u);
  EXPECT_EQ(r.calls[0].blocks[2].codec, kvsp::Codec::kRaw);
  ASSERT_EQ(r.calls[2].blocks.size(), 1u);
  EXPECT_EQ(r.calls[2].blocks[0].block_key, D(9, 2));
  EXPECT_EQ(r.calls[2].anchor, D(9, 2));
  EXPECT_EQ(r.calls[3].blocks[0].compat_id, c2);
  EXPECT_FALSE(r.calls[3].anchor.has_value());
}

TEST_F(BlockInventoryTest, MissingBucketIsEmptyAndPaceStops) {
  Recorder r;
  auto none = ReplayStoredBlocks(*store_, "nobucket", r, {}, [](auto) { return true; });
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->objects, 0u);
  for (uint8_t i = 0; i < 4; ++i) PutBlock(D(1), D(2), D(9, i));
  int waits = 0;
  auto st = ReplayStoredBlocks(*store_, "kvcache", r, {.max_blocks_per_s = 1},
                               [&](auto) { return ++waits < 2; });
  ASSERT_TRUE(st.ok());
  EXPECT_TRUE(st->stopped);
  EXPECT_LT(st->blocks, 4u);
}

}  // namespace
}  // namespace kvcs::objcache
