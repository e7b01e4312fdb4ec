// VerifyQueue: every item of a batch runs exactly once (published at once or bit by bit, with or
// without helpers), Finish returns only after all ran, Abandon runs nothing unstarted and waits
// for what runs, batches follow one another, and a helper takes items while the owner is away.
#include "objcache/verify_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>
#include <vector>

namespace kvcs::objcache {
namespace {

TEST(VerifyQueue, FinishRunsEveryItemOnceWithoutHelpers) {
  VerifyQueue q(0);
  std::vector<int> runs(100, 0);
  std::vector<std::thread::id> where(100);
  q.Begin(runs.size(), [&](size_t i) {
    ++runs[i];
    where[i] = std::this_thread::get_id();
  });
  q.Publish(10);
  q.Publish(5);  // counts only grow
  q.Finish();
  for (size_t i = 0; i < runs.size(); ++i) {
    EXPECT_EQ(runs[i], 1) << i;
    EXPECT_EQ(where[i], std::this_thread::get_id()) << i;
  }
}

TEST(VerifyQueue, EveryItemRunsOnceWithHelpersPublishedBitByBit) {
  VerifyQueue q(3);
  for (int batch = 0; batch < 20; ++batch) {
    std::vector<std::atomic<int>> runs(257);
    q.Begin(runs.size(), [&](size_t i) { runs[i].fetch_add(1); });
    for (size_t n = 0; n <= runs.size(); n += 16) q.Publish(n);
    q.Finish();
    for (size_t i = 0; i < runs.size(); ++i) ASSERT_EQ(runs[i].load(), 1) << batch << " " << i;
  }
}

TEST(VerifyQueue, AHelperTakesItemsWhileTheOwnerIsAway) {
  VerifyQueue q(1);
  std::promise<std::thread::id> ran;
  q.Begin(1, [&](size_t) { ran.set_value(std::this_thread::get_id()); });
  q.Publish(1);
  // The owner does not call Finish until the item ran: only the helper can have run it.
  std::thread::id helper = ran.get_future().get();
  EXPECT_NE(helper, std::this_thread::get_id());
  q.Finish();
}

TEST(VerifyQueue, AbandonRunsNothingUnstartedAndWaitsForWhatRuns) {
  {
    VerifyQueue q(0);
    int runs = 0;
    q.Begin(8, [&](size_t) { ++runs; });
    q.Publish(8);
    q.Abandon();  // no helper started any: none runs
    EXPECT_EQ(runs, 0);
    q.Finish();  // no batch: nothing
    EXPECT_EQ(runs, 0);
  }
  VerifyQueue q(1);
  std::promise<void> started, go;
  std::shared_future<void> go_f = go.get_future().share();
  std::atomic<bool> finished{false};
  std::atomic<int> runs{0};
  q.Begin(2, [&](size_t) {
    if (runs.fetch_add(1) == 0) {
      started.set_value();
      go_f.wait();
      finished = true;
    }
  });
  q.Publish(1);  // the helper takes item 0 and waits in it
  started.get_future().wait();
  std::thread releaser([&] { go.set_value(); });
  q.Abandon();  // returns only once item 0 finished; item 1 was never published
  EXPECT_TRUE(finished.load());
  EXPECT_EQ(runs.load(), 1);
  releaser.join();
  // The next batch runs normally.
  std::atomic<int> next{0};
  q.Begin(4, [&](size_t) { next.fetch_add(1); });
  q.Finish();
  EXPECT_EQ(next.load(), 4);
}

}  // namespace
}  // namespace kvcs::objcache
