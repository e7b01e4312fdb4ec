#include "engine/load_deadline.h"

#include <cstdint>

#include <gtest/gtest.h>

namespace kvcs::engine {
namespace {

TEST(LoadDeadline, PricedIsWhatRecomputingTheLoadedPrefixCosts) {
  // 256 blocks of 16 tokens over 32 layers at 10 µs per token and layer: 1.31 s.
  EXPECT_EQ(MoqtLoadDeadlineMs(256, 16, 32, 10'000, 1ull << 30), 1310);
  // The bytes do not matter once a cost is given.
  EXPECT_EQ(MoqtLoadDeadlineMs(256, 16, 32, 10'000, 1), 1310);
}

TEST(LoadDeadline, PricedNeverBelowOneSecond) {
  EXPECT_EQ(MoqtLoadDeadlineMs(3, 4, 3, 1, 1ull << 40), kPricedFloorMs);
  EXPECT_EQ(kPricedFloorMs, 1000u);
}

TEST(LoadDeadline, UnpricedIsTwoSecondsPlusTheBytesAtTenMBPerSecond) {
  EXPECT_EQ(MoqtLoadDeadlineMs(3, 4, 3, 0, 0), 2000u);
  // 512 MiB (4K tokens of Llama-3.1-8B): 2 s + 53.7 s.
  EXPECT_EQ(MoqtLoadDeadlineMs(256, 16, 32, 0, 512ull << 20), 2000u + 53'687u);
}

TEST(LoadDeadline, AHugeCostSaturatesInsteadOfWrapping) {
  const uint64_t d = MoqtLoadDeadlineMs(UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT64_MAX, 0);
  EXPECT_EQ(d, UINT64_MAX / 2);  // stream::RecomputeBoundMs's saturation
}

}  // namespace
}  // namespace kvcs::engine
