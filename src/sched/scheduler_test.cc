// Scheduler, pacer and simulator tests: hand-computed cases (numbers derived in the comments).
#include "sched/scheduler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "sched/pacer.h"
#include "sched/simulator.h"

namespace kvcs::sched {
namespace {

Demand D(uint64_t id, double b, double c, double s, bool first = false, uint32_t left = 10) {
  Demand d;
  d.id = id;
  d.bytes_per_layer = b;
  d.compute_per_layer = c;
  d.stall_target = s;
  d.layers_remaining = left;
  d.first_layer_pending = first;
  return d;
}

TEST(Allocate, SingleRequestGetsWholeCapWhenSaturated) {
  // min = 100/1.5, sat = 100/1 = 100 <= cap: sat + (1000-100) leftover = 1000.
  auto g = Allocate({D(1, 100, 1, 0.5)}, 1000);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_NEAR(g[0].min_rate, 100 / 1.5, 1e-9);
  EXPECT_NEAR(g[0].rate, 1000, 1e-9);
}

TEST(Allocate, WaterFillsAboveMinimumsUpToSaturation) {
  // A: min 100/2=50, sat 100. B: min 300/3=100, sat 300. cap 250.
  // Level λ with clamp(λ,50,100)+clamp(λ,100,300)=250 → 100+λ=250 → λ=150: A=100, B=150.
  auto g = Allocate({D(1, 100, 1, 1), D(2, 300, 1, 2)}, 250);
  EXPECT_NEAR(g[0].rate, 100, 1e-6);
  EXPECT_NEAR(g[1].rate, 150, 1e-6);
}

TEST(Allocate, FirstLayerPendingHasNoSaturation) {
  // A (first layer pending): min 50, sat ∞. B: min 50, sat 100. cap 300:
  // max(λ,50) + clamp(λ,50,100) = 300 → λ=200: A=200, B=100.
  auto g = Allocate({D(1, 100, 1, 1, /*first=*/true), D(2, 100, 1, 1)}, 300);
  EXPECT_NEAR(g[0].rate, 200, 1e-6);
  EXPECT_NEAR(g[1].rate, 100, 1e-6);
}

TEST(Allocate, DegradeEvenlyAddsTheSameStallToEveryone) {
  // A: b=100, c+s=2 (min 50). B: b=100, c+s=4 (min 25). cap 50 < 75.
  // 100/(2+Δ) + 100/(4+Δ) = 50 → Δ² + 2Δ - 4 = 0 → Δ = √5 - 1.
  Options o;
  o.shortfall = Shortfall::kDegradeEvenly;
  auto g = Allocate({D(1, 100, 1, 1), D(2, 100, 3, 1)}, 50, o);
  double delta = std::sqrt(5.0) - 1;
  EXPECT_NEAR(g[0].rate, 100 / (2 + delta), 1e-6);
  EXPECT_NEAR(g[1].rate, 100 / (4 + delta), 1e-6);
  EXPECT_NEAR(g[0].rate + g[1].rate, 50, 1e-6);
}

TEST(Allocate, LeastSlackFirstServesTightestFirstWithFloor) {
  // mins A=50 (tight), B=25; cap 60. Floor = 60·(1/8)/2 = 3.75 each, 52.5 left.
  // A: 3.75 + min(46.25, 52.5) = 50; left 6.25. B: 3.75 + 6.25 = 10.
  auto g = Allocate({D(2, 100, 3, 1), D(1, 100, 1, 1)}, 60);
  EXPECT_NEAR(g[1].rate, 50, 1e-9);
  EXPECT_NEAR(g[0].rate, 10, 1e-9);
}

TEST(Allocate, LeastSlackTiesGoToFewestBytesLeft) {
  // Same shape; 2 layers left beats 5 layers left. cap 60: floor 3.75 each.
  // id 2: 3.75 + 46.25 = 50; id 1: 3.75 + 6.25 = 10.
  auto g = Allocate({D(1, 100, 1, 1, false, 5), D(2, 100, 1, 1, false, 2)}, 60);
  EXPECT_NEAR(g[1].rate, 50, 1e-9);
  EXPECT_NEAR(g[0].rate, 10, 1e-9);
}

TEST(Allocate, EqualShareIgnoresDemandsAndSkipsFinished) {
  Options o;
  o.policy = Policy::kEqualShare;
  auto g = Allocate({D(1, 1, 1, 1), D(2, 1000, 0, 0), D(3, 5, 1, 1, false, 0)}, 90, o);
  EXPECT_NEAR(g[0].rate, 45, 1e-9);
  EXPECT_NEAR(g[1].rate, 45, 1e-9);
  EXPECT_EQ(g[2].rate, 0);
}

TEST(Allocate, NeverExceedsCapAndHonoursMinimumsWhenTheyFit) {
  uint64_t s = 7;
  auto rnd = [&] {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (s >> 11) * 0x1.0p-53;
  };
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<Demand> ds;
    int n = 1 + static_cast<int>(rnd() * 8);
    for (int i = 0; i < n; ++i)
      ds.push_back(
          D(i, 1 + rnd() * 1000, rnd() * 2, rnd(), rnd() < 0.3, static_cast<uint32_t>(rnd() * 3)));
    double cap = 1 + rnd() * 2000;
    for (auto shortfall : {Shortfall::kLeastSlackFirst, Shortfall::kDegradeEvenly}) {
      Options o;
      o.shortfall = shortfall;
      auto g = Allocate(ds, cap, o);
      double sum = 0, mins = 0;
      for (size_t i = 0; i < g.size(); ++i) {
        ASSERT_GE(g[i].rate, 0);
        sum += g[i].rate;
        if (ds[i].layers_remaining) mins += g[i].min_rate;
      }
      ASSERT_LE(sum, cap * (1 + 1e-9));
      for (size_t i = 0; i < g.size(); ++i) {
        if (!ds[i].layers_remaining) continue;
        if (mins <= cap) {
          ASSERT_GE(g[i].rate, g[i].min_rate * (1 - 1e-9));
        }
        ASSERT_GT(g[i].rate, 0) << "every request starts at once";
      }
    }
  }
}

TEST(Validate, RejectsBadDemands) {
  EXPECT_FALSE(ValidateDemand(D(1, 0, 1, 1)).ok());
  EXPECT_FALSE(ValidateDemand(D(1, 1, -1, 1)).ok());
  EXPECT_FALSE(ValidateDemand(D(1, 1, 1, std::nan(""))).ok());
  EXPECT_FALSE(ValidateDemand(D(1, std::numeric_limits<double>::infinity(), 1, 1)).ok());
  EXPECT_TRUE(ValidateDemand(D(1, 1, 0, 0)).ok());
}

TEST(BandwidthScheduler, AdmitDeliverFinish) {
  BandwidthScheduler s(300);
  ASSERT_TRUE(s.Admit(D(1, 100, 1, 1, true), 0).ok());
  EXPECT_EQ(s.Admit(D(1, 100, 1, 1, true), 0).code(), Code::kInvalidArgument);
  ASSERT_TRUE(s.Admit(D(2, 100, 1, 1, true, 1), 0).ok());
  // Both first-layer pending, identical: 150 each.
  EXPECT_NEAR(s.RateOf(1), 150, 1e-6);
  ASSERT_TRUE(s.LayerDelivered(2, 0.5).ok());
  // Now as FirstLayerPendingHasNoSaturation... but 2 has 0 layers left: 1 takes all.
  EXPECT_NEAR(s.RateOf(1), 300, 1e-6);
  EXPECT_EQ(s.RateOf(2), 0);
  ASSERT_TRUE(s.Finish(2, 1).ok());
  EXPECT_EQ(s.Finish(2, 1).code(), Code::kNotFound);
  EXPECT_EQ(s.LayerDelivered(9, 1).code(), Code::kNotFound);
  EXPECT_EQ(s.active(), 1u);
}

TEST(Pacer, SpacesSendsAndCapsIdleCredit) {
  Pacer p(/*burst=*/0.001);
  EXPECT_DOUBLE_EQ(p.Wait(0, 100), 0);  // nothing owed: the first write goes at once
  p.Sent(50);                           // 0.5 s of link
  EXPECT_DOUBLE_EQ(p.Wait(0, 100), 0.5);
  EXPECT_NEAR(p.Wait(0.5, 100), 0, 1e-12);
  p.Sent(50);
  EXPECT_NEAR(p.Wait(10, 100), 0, 1e-12);  // idle: at most 1 ms of credit
  p.Sent(100);
  EXPECT_NEAR(p.Wait(10, 100), 0.999, 1e-9);
  EXPECT_DOUBLE_EQ(p.Wait(20, 0), 0);  // unpaced: the debt is forgiven
  EXPECT_DOUBLE_EQ(p.Wait(20, 100), 0);
}

TEST(Pacer, ARateRiseWhileWaitingAppliesAtOnce) {
  Pacer p;
  EXPECT_DOUBLE_EQ(p.Wait(0, 10), 0);
  p.Sent(100);                          // 10 s owed at 10 B/s
  EXPECT_NEAR(p.Wait(1, 10), 9, 1e-9);  // 1 s repaid at 10 B/s: 90 B left
  EXPECT_NEAR(p.Wait(1, 90), 1, 1e-9);  // the rate rises: 1 s more, not 9
  EXPECT_NEAR(p.Wait(1.5, 90), 0.5, 1e-9);
  EXPECT_NEAR(p.Wait(1.5, 45), 1, 1e-9);  // and falls
  EXPECT_NEAR(p.Wait(2.5, 45), 0, 1e-9);
}

TEST(Simulate, OneRequestByHand) {
  // 1 block, 2 layers of 100 B, cap 100 B/s, c = 0.5 s. Layer 0 at t=1 (whole cap), compute
  // 1..1.5; layer 1 at t=2 → stall 0.5, done 2.5. Added = 2.5 - 1.0 compute = 1.5.
  SimRequest r{.id = 1,
               .arrival = 0,
               .blocks = 1,
               .layers = 2,
               .block_layer_bytes = 100,
               .compute_per_layer = 0.5,
               .stall_target = 0};
  auto res = Simulate({r}, 100, {});
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_NEAR((*res)[0].first_layer_wait, 1, 1e-9);
  EXPECT_NEAR((*res)[0].stall, 0.5, 1e-9);
  EXPECT_NEAR((*res)[0].added_ttft, 1.5, 1e-9);
  EXPECT_NEAR((*res)[0].done, 2.5, 1e-9);
}

TEST(Simulate, ComputeHidesTransfer) {
  // 4 layers of 100 B at 100 B/s, c = 2 s: only the first layer's 1 s is added.
  SimRequest r{.id = 1,
               .arrival = 3,
               .blocks = 2,
               .layers = 4,
               .block_layer_bytes = 50,
               .compute_per_layer = 2,
               .stall_target = 0.1};
  auto res = Simulate({r}, 100, {});
  ASSERT_TRUE(res.ok());
  EXPECT_NEAR((*res)[0].added_ttft, 1, 1e-9);
  EXPECT_NEAR((*res)[0].stall, 0, 1e-9);
}

TEST(Simulate, StallTargetBeatsEqualShareOnMixedContexts) {
  // A long request whose compute hides its transfer and a short one with little compute:
  // equal sharing gives the long one bandwidth it cannot use in time.
  ComputeModel m;
  SimRequest lg{.id = 1,
                .arrival = 0,
                .blocks = 4096,
                .layers = 32,
                .block_layer_bytes = 65536,
                .compute_per_layer = m.PerLayer(65536, 8192),
                .stall_target = 2e-4};
  SimRequest sh{.id = 2,
                .arrival = 0.05,
                .blocks = 256,
                .layers = 32,
                .block_layer_bytes = 65536,
                .compute_per_layer = m.PerLayer(4096, 512),
                .stall_target = 2e-4};
  Options eq;
  eq.policy = Policy::kEqualShare;
  auto a = Simulate({lg, sh}, 25e9, eq);
  auto b = Simulate({lg, sh}, 25e9, {});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_LT((*b)[1].added_ttft, (*a)[1].added_ttft);
  EXPECT_LT((*b)[0].added_ttft + (*b)[1].added_ttft, (*a)[0].added_ttft + (*a)[1].added_ttft);
}

TEST(Simulate, RejectsMalformed) {
  SimRequest r{.id = 1, .blocks = 0, .layers = 1, .block_layer_bytes = 1};
  EXPECT_EQ(Simulate({r}, 1, {}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(Simulate({}, 0, {}).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace kvcs::sched
