// WaitList: a notify from another thread wakes a parked coroutine; the deadline ends a wait; a
// coroutine destroyed while parked leaves nothing behind for a later notify to post to.
#include "objcache/wait_list.h"

#include <gtest/gtest.h>

#include <optional>
#include <thread>

namespace kvcs::objcache {
namespace {

namespace asio = boost::asio;

TEST(WaitList, NotifyFromAnotherThreadWakesTheWaiter) {
  asio::io_context ioc;
  auto strand = asio::make_strand(ioc);
  std::mutex mu;
  bool flag = false;
  WaitList list;
  std::optional<bool> result;
  asio::co_spawn(
      strand,
      [&]() -> asio::awaitable<void> {
        result = co_await list.WaitUntil(mu, strand, WaitList::Clock::time_point::max(),
                                         [&] { return flag; });
      },
      asio::detached);
  // Run until the coroutine is parked (registered), then set the flag from another thread.
  while (true) {
    ioc.run_one();
    std::lock_guard<std::mutex> l(mu);
    if (list.waiting() == 1) break;
  }
  std::thread other([&] {
    std::lock_guard<std::mutex> l(mu);
    flag = true;
    list.NotifyAllLocked();
  });
  other.join();
  ioc.run();
  ASSERT_TRUE(result.has_value());
  EXPECT_TRUE(*result);
  std::lock_guard<std::mutex> l(mu);
  EXPECT_EQ(list.waiting(), 0u);
}

TEST(WaitList, DeadlineEndsTheWait) {
  asio::io_context ioc;
  auto strand = asio::make_strand(ioc);
  std::mutex mu;
  WaitList list;
  std::optional<bool> result;
  asio::co_spawn(
      strand,
      [&]() -> asio::awaitable<void> {
        result = co_await list.WaitUntil(mu, strand, WaitList::Clock::now(), [] { return false; });
      },
      asio::detached);
  ioc.run();
  ASSERT_TRUE(result.has_value());
  EXPECT_FALSE(*result);
  EXPECT_EQ(list.waiting(), 0u);
}

TEST(WaitList, DestroyedWaiterUnregisters) {
  std::mutex mu;
  WaitList list;
  {
    asio::io_context ioc;
    auto strand = asio::make_strand(ioc);
    asio::co_spawn(
        strand,
        [&]() -> asio::awaitable<void> {
          co_await list.WaitUntil(mu, strand, WaitList::Clock::time_point::max(),
                                  [] { return false; });
        },
        asio::detached);
    while (true) {
      ioc.run_one();
      std::lock_guard<std::mutex> l(mu);
      if (list.waiting() == 1) break;
    }
  }  // the io_context and the parked coroutine's frame are gone
  std::lock_guard<std::mutex> l(mu);
  EXPECT_EQ(list.waiting(), 0u);  // so a notify now posts to no dead executor
  list.NotifyAllLocked();
}

}  // namespace
}  // namespace kvcs::objcache
