#include "quic/send_scheduler.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace kvcs::quic {
namespace {

using Entry = SendScheduler::Entry;
constexpr uint64_t kDefault = transport::Stream::kDefaultSendOrder;

// Feeds the queue the way Connection::Flush does: the front sends one packet and rotates.
std::vector<int64_t> Serve(SendScheduler& s, int packets) {
  std::vector<int64_t> order;
  for (int i = 0; i < packets; ++i) {
    Entry* e = s.Front();
    if (!e) break;
    order.push_back(e->stream_id());
    s.PopFront(e, /*requeue=*/true);
  }
  return order;
}

TEST(SendSchedulerTest, LowestSendOrderFirstRoundRobinWithinOne) {
  SendScheduler s(100);
  Entry a(0), b(4), c(8);
  s.SetSendOrder(&c, kDefault - 1, /*requeue=*/false);  // not queued: only the order changes
  s.Enqueue(&a);
  s.Enqueue(&b);
  s.Enqueue(&c);
  s.Enqueue(&a);  // already queued: no second place
  EXPECT_TRUE(a.queued());
  EXPECT_EQ(Serve(s, 3), (std::vector<int64_t>{8, 8, 8}));
  s.PopFront(&c, /*requeue=*/false);
  EXPECT_FALSE(c.queued());
  EXPECT_EQ(Serve(s, 5), (std::vector<int64_t>{0, 4, 0, 4, 0}));
}

TEST(SendSchedulerTest, PopFrontIgnoresAStreamNotAtTheFront) {
  SendScheduler s(100);
  Entry a(0), b(4);
  s.Enqueue(&a);
  s.Enqueue(&b);
  s.PopFront(&b, /*requeue=*/false);
  EXPECT_TRUE(b.queued());
  EXPECT_EQ(s.Front(), &a);
}

TEST(SendSchedulerTest, RemoveAndEmpty) {
  SendScheduler s(100);
  Entry a(0), b(4);
  s.Enqueue(&a);
  s.Enqueue(&b);
  s.Remove(&a);
  s.Remove(&a);  // not queued: nothing happens
  EXPECT_FALSE(a.queued());
  EXPECT_EQ(s.Front(), &b);
  s.PopFront(&b, /*requeue=*/false);
  EXPECT_EQ(s.Front(), nullptr);
}

TEST(SendSchedulerTest, SetSendOrderMovesAQueuedStreamToTheBackOfItsNewOrder) {
  SendScheduler s(100);
  Entry a(0), b(4), c(8);
  s.Enqueue(&a);
  s.SetSendOrder(&b, 7, /*requeue=*/false);
  s.Enqueue(&b);
  s.Enqueue(&c);
  s.SetSendOrder(&a, 7, /*requeue=*/true);
  EXPECT_EQ(a.send_order(), 7u);
  EXPECT_EQ(Serve(s, 3), (std::vector<int64_t>{4, 0, 4}));
  // Without requeue (nothing left to send) it leaves the queue.
  s.SetSendOrder(&a, 3, /*requeue=*/false);
  EXPECT_FALSE(a.queued());
  EXPECT_EQ(Serve(s, 2), (std::vector<int64_t>{4, 4}));
}

TEST(SendSchedulerTest, BudgetCountsUnsentBytes) {
  SendScheduler s(100);
  EXPECT_TRUE(s.HasBudget());
  EXPECT_FALSE(s.Recount(0, 60));
  EXPECT_FALSE(s.Recount(0, 40));
  EXPECT_EQ(s.unsent(), 100u);
  EXPECT_FALSE(s.HasBudget());
  EXPECT_TRUE(s.Recount(40, 10));  // freed room
  EXPECT_EQ(s.unsent(), 70u);
  EXPECT_TRUE(s.HasBudget());
}

TEST(SendSchedulerTest, WaitersWakeLowestOrderFirstFifoWithinOneWhileBudgetHasRoom) {
  SendScheduler s(100);
  Entry a(0), b(4), c(8), d(12);
  s.SetSendOrder(&c, kDefault - 1, /*requeue=*/false);
  s.Recount(0, 100);
  for (Entry* e : {&a, &b, &c, &d}) s.AddWaiter(e);
  s.AddWaiter(&a);  // already waiting: keeps its place
  EXPECT_TRUE(a.waiting());
  EXPECT_FALSE(s.WakeDue());                                      // the budget is used up
  std::map<int64_t, Entry*> live = {{0, &a}, {8, &c}, {12, &d}};  // stream 4 is gone
  auto find = [&](int64_t id) -> Entry* {
    auto it = live.find(id);
    return it == live.end() ? nullptr : it->second;
  };
  EXPECT_EQ(s.NextWaiter(find), nullptr);

  s.Recount(100, 99);
  EXPECT_TRUE(s.WakeDue());
  s.set_wake_pending(true);
  EXPECT_FALSE(s.WakeDue());
  s.set_wake_pending(false);
  EXPECT_EQ(s.NextWaiter(find), &c);
  EXPECT_FALSE(c.waiting());
  s.Recount(0, 1);  // the woken stream wrote: the budget is used up again
  EXPECT_EQ(s.NextWaiter(find), nullptr);
  s.Recount(1, 0);
  EXPECT_EQ(s.NextWaiter(find), &a);
  EXPECT_EQ(s.NextWaiter(find), &d);  // 4 skipped
  EXPECT_EQ(s.NextWaiter(find), nullptr);
  EXPECT_FALSE(s.WakeDue());
}

TEST(SendSchedulerTest, SetSendOrderMovesAWaiterToTheBackOfItsNewOrder) {
  SendScheduler s(10);
  Entry a(0), b(4), c(8);
  s.Recount(0, 10);
  s.AddWaiter(&a);
  s.AddWaiter(&b);
  s.SetSendOrder(&c, 5, /*requeue=*/false);
  s.AddWaiter(&c);
  s.SetSendOrder(&a, 5, /*requeue=*/false);
  EXPECT_TRUE(a.waiting());
  s.Recount(10, 0);
  std::map<int64_t, Entry*> live = {{0, &a}, {4, &b}, {8, &c}};
  auto find = [&](int64_t id) { return live.at(id); };
  EXPECT_EQ(s.NextWaiter(find), &c);
  EXPECT_EQ(s.NextWaiter(find), &a);
  EXPECT_EQ(s.NextWaiter(find), &b);
  EXPECT_EQ(s.NextWaiter(find), nullptr);
}

TEST(SendSchedulerTest, ClearForgetsQueueWaitersAndPendingWake) {
  SendScheduler s(10);
  Entry a(0), b(4);
  s.Enqueue(&a);
  s.Recount(0, 10);
  s.AddWaiter(&b);
  s.set_wake_pending(true);
  s.Clear();
  EXPECT_EQ(s.Front(), nullptr);
  s.Recount(10, 0);
  EXPECT_FALSE(s.WakeDue());  // no waiters left, and no wake pending
  EXPECT_EQ(s.NextWaiter([](int64_t) -> Entry* { return nullptr; }), nullptr);
}

}  // namespace
}  // namespace kvcs::quic
