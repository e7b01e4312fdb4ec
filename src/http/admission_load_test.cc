// http::Server under hostile load over 127.0.0.0/8 (loopback only): one client holds thousands
// of partial request heads or idle keep-alive connections and reopens each one the server
// closes, while a well-behaved client on another loopback address (127.0.0.2) sends ordinary
// requests; every one must succeed. Also: the per-address cap refuses the hog's extra
// connections, the default cap holds against ~3000 connections, and a well-behaved keep-alive
// connection between two requests is not evicted by a hog reopening its idle connections, and
// connections waiting for a head hold no body-sized receive buffer (closed ones none at all).
// Bounded in count and time.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "http/server.h"
#include "http/test_tools/connection_hog.h"

namespace kvcs::http {
namespace {

using test::ConnectFrom;
using test::kPartialHead;
using test::kWholeRequest;
using test::SendAll;
using Hog = test::ConnectionHog;

// One well-behaved request from 127.0.0.2 on a new connection; the whole response.
std::string GoodRequest(uint16_t port) {
  int fd = ConnectFrom("127.0.0.2", port);
  if (fd < 0) return "connect failed";
  std::string out;
  if (SendAll(fd, "GET /ok HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")) {
    char buf[4096];
    for (;;) {
      ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  return out;
}

class AdmissionLoadTest : public ::testing::Test {
 protected:
  void StartServer(Limits limits) {
    ServerOptions o;
    o.io_threads = 2;
    o.limits = limits;
    server_ = std::make_unique<Server>(std::move(o));
    server_->router().SetFallback([](HandlerContext& ctx) -> Awaitable<void> {
      co_await SendComplete(ctx.response, 200, {}, "ok");
    });
    ASSERT_TRUE(server_->Start().ok());
    thread_ = std::thread([this] { server_->Run(false); });
  }
  void TearDown() override {
    if (!server_) return;
    server_->Stop();
    thread_.join();
  }
  // `n` well-behaved requests, one after another; every one must be answered 200.
  void ExpectGoodClientServed(int n) {
    for (int i = 0; i < n; ++i) {
      std::string r = GoodRequest(server_->port());
      ASSERT_EQ(r.rfind("HTTP/1.1 200", 0), 0u) << "request " << i << ": " << r;
    }
  }
  static Limits SmallCap() {
    Limits l;
    l.max_connections = 256;
    l.max_connections_per_address = 256;  // the hog alone can fill the cap
    return l;
  }

  std::unique_ptr<Server> server_;
  std::thread thread_;
};

TEST_F(AdmissionLoadTest, PartialHeadsDoNotLockOutAWellBehavedClient) {
  StartServer(SmallCap());
  Hog hog(server_->port(), {"127.0.0.1"}, 2000, kPartialHead);
  ExpectGoodClientServed(50);  // while the hog's heads are young (within the eviction grace)
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  ExpectGoodClientServed(50);  // and once they are old
  AdmissionMetrics m = server_->admission_metrics();
  EXPECT_GT(m.evicted_head_pending, 0u);
  EXPECT_GT(hog.reopened(), 0u);
}

TEST_F(AdmissionLoadTest, IdleKeepAliveConnectionsDoNotLockOutAWellBehavedClient) {
  StartServer(SmallCap());
  Hog hog(server_->port(), {"127.0.0.1"}, 1000, kWholeRequest);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let the hog's requests finish
  ExpectGoodClientServed(100);
  AdmissionMetrics m = server_->admission_metrics();
  EXPECT_GT(m.evicted_idle, 0u);
}

TEST_F(AdmissionLoadTest, AKeepAliveConnectionBetweenRequestsSurvivesAFastReopeningHog) {
  Limits l = SmallCap();
  l.header_timeout = std::chrono::seconds(60);  // the good connection's wait is never cut short
  l.min_idle_age = std::chrono::seconds(60);    // ... nor old enough to be evicted, on any machine
  l.max_connections_per_address = 1024;         // only the total cap stops the hog
  StartServer(l);
  int fd = ConnectFrom("127.0.0.2", server_->port());
  ASSERT_GE(fd, 0);
  // One keep-alive request and its whole response ("ok", 2 bytes of body).
  auto request = [fd]() -> std::string {
    if (!SendAll(fd, "GET /ok HTTP/1.1\r\nHost: h\r\n\r\n")) return "send failed";
    std::string out;
    char buf[4096];
    while (out.find("\r\n\r\nok") == std::string::npos) {
      ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return out + " [closed]";
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  };
  std::string first = request();
  ASSERT_EQ(first.rfind("HTTP/1.1 200", 0), 0u) << first;
  {
    // The hog fills the cap with idle keep-alive connections and reopens each one closed.
    Hog hog(server_->port(), {"127.0.0.1"}, 600, kWholeRequest);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    for (;;) {  // until the hog's newcomers have met the full cap a few hundred times
      AdmissionMetrics m = server_->admission_metrics();
      if (m.refused_full + m.evicted_idle + m.evicted_head_pending >= 300) break;
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the hog never reached the cap";
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::string second = request();
    EXPECT_EQ(second.rfind("HTTP/1.1 200", 0), 0u) << second;
  }
  close(fd);
}

TEST_F(AdmissionLoadTest, WaitingConnectionsHoldSmallBuffersAndClosedOnesNone) {
  StartServer(SmallCap());
  // Polls until the server runs `n` connection coroutines; bounded.
  auto wait_for = [this](size_t n) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (server_->connection_memory().connections != n) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
  };
  {
    Hog slow(server_->port(), {"127.0.0.1"}, 100, kPartialHead);
    Hog idle(server_->port(), {"127.0.0.3"}, 100, kWholeRequest);
    ASSERT_TRUE(wait_for(200)) << server_->connection_memory().connections;
    ConnectionMemory m = server_->connection_memory();
    // A head buffer each (4 KiB), not a body-sized one (64 KiB; 12.8 MiB for the 200).
    EXPECT_LE(m.receive_buffer_bytes, 200u * 4096) << m.receive_buffer_bytes;
  }
  // A keep-alive request with a 200 KiB body: a body-sized buffer while it is read, a head
  // buffer again once the connection waits for its next request.
  int fd = ConnectFrom("127.0.0.2", server_->port());
  ASSERT_GE(fd, 0);
  // Under max_drain_bytes: the handler ignores the body, the server drains it and keeps the
  // connection.
  std::string body(200 * 1024, 'x');
  ASSERT_TRUE(SendAll(fd, "PUT /b HTTP/1.1\r\nHost: h\r\nContent-Length: " +
                              std::to_string(body.size()) + "\r\n\r\n" + body));
  std::string out;
  char buf[4096];
  while (out.find("\r\n\r\nok") == std::string::npos) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    ASSERT_GT(n, 0) << out;
    out.append(buf, static_cast<size_t>(n));
  }
  EXPECT_EQ(out.rfind("HTTP/1.1 200", 0), 0u) << out;
  ASSERT_TRUE(wait_for(1));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (server_->connection_memory().receive_buffer_bytes > 4096 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_LE(server_->connection_memory().receive_buffer_bytes, 4096u);
  close(fd);
  // Every connection closed: no buffer is left.
  ASSERT_TRUE(wait_for(0));
  EXPECT_EQ(server_->connection_memory().receive_buffer_bytes, 0u);
}

TEST_F(AdmissionLoadTest, PerAddressCapRefusesTheHogsExtraConnections) {
  Limits l = SmallCap();
  l.max_connections_per_address = 32;
  StartServer(l);
  {
    Hog hog(server_->port(), {"127.0.0.1"}, 100, kPartialHead);
    ExpectGoodClientServed(20);
    AdmissionMetrics m = server_->admission_metrics();
    EXPECT_GE(m.refused_address_connections, 100u - 32u);
    EXPECT_EQ(m.evicted_head_pending, 0u);  // the cap was never reached
  }
}

TEST_F(AdmissionLoadTest, DefaultCapHoldsAgainstThreeThousandPartialHeads) {
  rlimit r{};
  getrlimit(RLIMIT_NOFILE, &r);
  r.rlim_cur = r.rlim_max;
  setrlimit(RLIMIT_NOFILE, &r);
  getrlimit(RLIMIT_NOFILE, &r);
  // The hog's 3000 fds plus the server's 1024 plus slack.
  if (r.rlim_cur < 5000) GTEST_SKIP() << "RLIMIT_NOFILE " << r.rlim_cur << " < 5000";
  StartServer(Limits{});
  // 15 addresses × 200 connections: each under the per-address cap, together past the total.
  std::vector<std::string> addresses;
  for (int i = 3; i < 18; ++i) addresses.push_back("127.0.0." + std::to_string(i));
  Hog hog(server_->port(), addresses, 3000, kPartialHead);
  ExpectGoodClientServed(100);
  AdmissionMetrics m = server_->admission_metrics();
  EXPECT_GT(m.evicted_head_pending, 0u);
  EXPECT_EQ(m.refused_full, 0u);
}

}  // namespace
}  // namespace kvcs::http
