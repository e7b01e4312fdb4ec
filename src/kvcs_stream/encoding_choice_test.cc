// The codec choice rule (encoding_choice.h): the raw pair while the link keeps up with the
// compute, the fewest bytes once the link is the limit.
#include "kvcs_stream/encoding_choice.h"

#include <gtest/gtest.h>

#include "kvcs_stream/test_tools/test_cache.h"

namespace kvcs::stream {
namespace {

const Encoding kRawPair{kvsp::Codec::kRaw, false};
const Encoding kRawKv{kvsp::Codec::kRaw, true};
const Encoding kFp8Kv{kvsp::Codec::kFp8E4m3, true};
const Encoding kInt8Kv{kvsp::Codec::kInt8, true};
const Encoding kZstdPair{kvsp::Codec::kZstd, false};

TEST(Encoding, CommandLineNames) {
  EXPECT_EQ(*ParseEncoding("kv.int8"), (Encoding{kvsp::Codec::kInt8, true}));
  EXPECT_EQ(*ParseEncoding("kv.fp8-e4m3"), (Encoding{kvsp::Codec::kFp8E4m3, true}));
  EXPECT_EQ(*ParseEncoding("k+v.zstd"), (Encoding{kvsp::Codec::kZstd, false}));
  EXPECT_EQ(*ParseEncoding("k+v.raw"), Encoding{});
  for (std::string bad : {"", "kv", "kv.", "k+v.lz4", "v.raw", "KV.raw", "kv.raw.s0"}) {
    EXPECT_EQ(ParseEncoding(bad).status().code(), Code::kInvalidArgument) << bad;
  }
  // Parsed is not yet valid: a joint track takes only fixed-size codecs.
  EXPECT_FALSE(CheckEncoding(*ParseEncoding("kv.zstd")).ok());
}

TEST(EncodingChoice, BytesPerTokenLayer) {
  kvsp::Descriptor d = test::SmallDescriptor(4, 4);  // bf16, 2 heads x 8
  EXPECT_DOUBLE_EQ(*BytesPerTokenLayer(d, kRawPair), 2.0 * 2 * 8 * 2);
  EXPECT_DOUBLE_EQ(*BytesPerTokenLayer(d, kRawKv), 64.0);
  // fp8: one byte per element plus 2 float32 scales per section of 4 tokens.
  EXPECT_DOUBLE_EQ(*BytesPerTokenLayer(d, kFp8Kv), 2.0 * (4 * 16 + 2 * 4) / 4);
  EXPECT_FALSE(BytesPerTokenLayer(d, kZstdPair).has_value());
  EXPECT_DOUBLE_EQ(*BytesPerTokenLayer(d, kZstdPair, 0.75), 48.0);
}

TEST(EncodingChoice, RawWhileTheLinkKeepsUpWithTheCompute) {
  kvsp::Descriptor d = test::SmallDescriptor(4, 4);
  const std::vector<Encoding> offered = {kFp8Kv, kRawPair};
  // 64 bytes per token-layer at 64 MB/s take 1000 ns: equal to the compute, still hidden.
  ChoiceInputs in{64e6, 1000};
  EXPECT_EQ(ChooseEncoding(d, offered, in), kRawPair);
  in.compute_ns_per_token_layer = 999;  // now the link is the limit
  EXPECT_EQ(ChooseEncoding(d, offered, in), kFp8Kv);
  in.allow_lossy = false;  // nothing lossless is smaller
  EXPECT_EQ(ChooseEncoding(d, offered, in), kRawPair);
  in.zstd_ratio = 0.8;
  const std::vector<Encoding> with_zstd = {kRawPair, kZstdPair, kFp8Kv};
  EXPECT_EQ(ChooseEncoding(d, with_zstd, in), kZstdPair);
  in.allow_lossy = true;
  EXPECT_EQ(ChooseEncoding(d, with_zstd, in), kFp8Kv);
}

TEST(EncodingChoice, TiesAndUnknowns) {
  kvsp::Descriptor d = test::SmallDescriptor(4, 4);
  ChoiceInputs slow{1e3, 1};
  // Same bytes: the raw pair before kv.raw; fp8 and int8 are the same size: offer order.
  EXPECT_EQ(ChooseEncoding(d, std::vector<Encoding>{kRawKv, kRawPair}, slow), kRawPair);
  EXPECT_EQ(ChooseEncoding(d, std::vector<Encoding>{kInt8Kv, kFp8Kv}, slow), kInt8Kv);
  // No measured rate: the raw pair if offered, else the first.
  EXPECT_EQ(ChooseEncoding(d, std::vector<Encoding>{kFp8Kv, kRawPair}, {}), kRawPair);
  EXPECT_EQ(ChooseEncoding(d, std::vector<Encoding>{kFp8Kv, kRawKv}, {}), kFp8Kv);
  // zstd without a ratio is never preferred.
  EXPECT_EQ(ChooseEncoding(d, std::vector<Encoding>{kZstdPair, kRawKv}, slow), kRawKv);
}

TEST(EncodingChoice, OfferedEncodingsOfAManifestSegment) {
  profile::ManifestSegment s;
  for (const char* n : {"k.raw.s0", "kv.fp8-e4m3.s0", "v.raw.s0", "k.zstd.s0"}) {
    s.tracks.push_back(*profile::ParseTrackName(n));
  }
  std::vector<Encoding> e = OfferedEncodings(s);
  ASSERT_EQ(e.size(), 2u);  // k.zstd without v.zstd is not an encoding
  EXPECT_EQ(e[0], kFp8Kv);
  EXPECT_EQ(e[1], kRawPair);
}

}  // namespace
}  // namespace kvcs::stream
