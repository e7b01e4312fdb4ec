#include "engine/load_predictor.h"

#include <cstdint>

#include <gtest/gtest.h>

namespace kvcs::engine {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

TEST(LoadPredictor, AnUnknownPathIsTried) {
  LoadPredictor p;
  LoadDecision d = p.Decide(0, 512 * kMiB, 1);
  EXPECT_TRUE(d.load);
  EXPECT_FALSE(d.probe);
  EXPECT_FALSE(d.rate.has_value());
}

TEST(LoadPredictor, NoRecomputeCostAlwaysLoads) {
  LoadPredictor p;
  p.Record(1000, 0, 1'000'000);  // nothing delivered in a second
  for (int i = 0; i < 40; ++i) EXPECT_TRUE(p.Decide(1000 + i, 512 * kMiB, 0).load);
}

TEST(LoadPredictor, ASlowPathIsSkippedWithBothTimes) {
  LoadPredictor p;
  p.Record(1000, 100 * kMiB, 1'000'000);  // 100 MiB/s
  // 512 MiB: 5.12 s predicted against 300 ms of recompute.
  LoadDecision d = p.Decide(1001, 512 * kMiB, 300'000'000);
  EXPECT_FALSE(d.load);
  EXPECT_NEAR(d.predicted_ms, 5120, 1e-6);
  EXPECT_NEAR(d.recompute_ms, 300, 1e-9);
  ASSERT_TRUE(d.rate.has_value());
  EXPECT_NEAR(*d.rate, 100.0 * kMiB, 1e-3);
}

TEST(LoadPredictor, AFastPathLoads) {
  LoadPredictor p;
  p.Record(1000, 1024 * kMiB, 1'000'000);  // 1 GiB/s: 512 MiB in 500 ms
  EXPECT_TRUE(p.Decide(1001, 512 * kMiB, 600'000'000).load);
  EXPECT_FALSE(p.Decide(1002, 512 * kMiB, 400'000'000).load);
}

TEST(LoadPredictor, NothingDeliveredIsAnInfinitelySlowPath) {
  LoadPredictor p;
  p.Record(1000, 0, 1'000'000);
  LoadDecision d = p.Decide(1001, 1, 1'000'000'000);
  EXPECT_FALSE(d.load);
  EXPECT_GT(d.predicted_ms, 1e300);
}

TEST(LoadPredictor, TheAverageWeighsTheNewestLoadHalf) {
  LoadPredictor p;
  p.Record(0, 100 * kMiB, 1'000'000);
  p.Record(1, 300 * kMiB, 1'000'000);
  EXPECT_NEAR(*p.rate(), 200.0 * kMiB, 1e-3);
  p.Record(2, 0, 1'000'000);
  EXPECT_NEAR(*p.rate(), 100.0 * kMiB, 1e-3);
}

TEST(LoadPredictor, AZeroTimeLoadCountsAsTheMinimum) {
  LoadPredictor p;
  p.Record(0, 1000, 0);
  EXPECT_NEAR(*p.rate(), 1000 * 1e6 / kMinLoadUs, 1e-3);
}

TEST(LoadPredictor, EverySixteenthSkippedLoadIsTried) {
  LoadPredictor p;
  p.Record(1000, 1 * kMiB, 1'000'000);
  for (uint32_t round = 0; round < 3; ++round) {
    for (uint32_t i = 0; i + 1 < kProbeEverySkips; ++i) {
      EXPECT_FALSE(p.Decide(1001, 512 * kMiB, 1).load) << round << " " << i;
    }
    LoadDecision d = p.Decide(1001, 512 * kMiB, 1);
    EXPECT_TRUE(d.load);
    EXPECT_TRUE(d.probe);
  }
}

TEST(LoadPredictor, ALoadIsTriedSixtySecondsAfterTheLastTry) {
  LoadPredictor p;
  p.Record(1000, 1 * kMiB, 1'000'000);
  EXPECT_FALSE(p.Decide(1000 + kProbeAfterMs - 1, 512 * kMiB, 1).load);
  LoadDecision d = p.Decide(1000 + kProbeAfterMs, 512 * kMiB, 1);
  EXPECT_TRUE(d.load && d.probe);
  // The probe is now the last try: the next is skipped again.
  EXPECT_FALSE(p.Decide(1000 + kProbeAfterMs + 1, 512 * kMiB, 1).load);
}

TEST(LoadPredictor, AFasterProbeBringsLoadsBack) {
  LoadPredictor p;
  p.Record(1000, 10 * kMiB, 1'000'000);  // 10 MiB/s: 512 MiB would take 51 s
  for (uint32_t i = 0; i + 1 < kProbeEverySkips; ++i) p.Decide(1001, 512 * kMiB, 1'000'000'000);
  ASSERT_TRUE(p.Decide(1001, 512 * kMiB, 1'000'000'000).probe);
  p.Record(1500, 4096 * kMiB, 1'000'000);  // the link got faster: ~2 GiB/s on average
  LoadDecision d = p.Decide(1501, 512 * kMiB, 1'000'000'000);
  EXPECT_TRUE(d.load);
  EXPECT_FALSE(d.probe);
}

}  // namespace
}  // namespace kvcs::engine
