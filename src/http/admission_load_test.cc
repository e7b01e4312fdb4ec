// http::Server under hostile load over 127.0.0.0/8 (loopback only): one client holds thousands
// of partial request heads or idle keep-alive connections and reopens each one the server
// closes, while a well-behaved client on another loopback address (127.0.0.2) sends ordinary
// requests; every one must succeed. Also: the per-address cap refuses the hog's extra
// connections, and the default cap holds against ~3000 connections. Bounded in count and time.
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

namespace kvcs::http {
namespace {

// A blocking TCP connection from `from` (a 127.x.y.z address) to 127.0.0.1:port with 2 s send
// and receive timeouts (connect included); -1 on failure.
int Connect(const std::string& from, uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in local{};
  local.sin_family = AF_INET;
  inet_pton(AF_INET, from.c_str(), &local.sin_addr);
  sockaddr_in peer{};
  peer.sin_family = AF_INET;
  peer.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &peer.sin_addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0 ||
      connect(fd, reinterpret_cast<sockaddr*>(&peer), sizeof peer) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool SendAll(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// One well-behaved request from 127.0.0.2 on a new connection; the whole response.
std::string GoodRequest(uint16_t port) {
  int fd = Connect("127.0.0.2", port);
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

// The hostile client: `count` connections spread over `addresses`, each sent `greeting` (a
// partial head, or a whole request after which the connection stays idle); every connection the
// server closes is reopened, until destroyed.
class Hog {
 public:
  Hog(uint16_t port, std::vector<std::string> addresses, size_t count, std::string greeting)
      : port_(port), addresses_(std::move(addresses)), greeting_(std::move(greeting)) {
    fds_.resize(count, -1);
    for (size_t i = 0; i < count; ++i) Reopen(i);
    thread_ = std::thread([this] { Loop(); });
  }
  ~Hog() {
    stop_ = true;
    thread_.join();
    for (int fd : fds_)
      if (fd >= 0) close(fd);
  }
  size_t open() const { return open_; }
  size_t reopened() const { return reopened_; }

 private:
  void Reopen(size_t i) {
    if (fds_[i] >= 0) close(fds_[i]);
    fds_[i] = Connect(addresses_[i % addresses_.size()], port_);
    if (fds_[i] >= 0 && !SendAll(fds_[i], greeting_)) {
      close(fds_[i]);
      fds_[i] = -1;
    }
    if (fds_[i] >= 0) fcntl(fds_[i], F_SETFL, fcntl(fds_[i], F_GETFL) | O_NONBLOCK);
  }
  void Loop() {
    std::vector<pollfd> p(fds_.size());
    while (!stop_) {
      size_t live = 0;
      for (size_t i = 0; i < fds_.size(); ++i) {
        p[i] = {fds_[i], POLLIN, 0};
        live += fds_[i] >= 0;
      }
      open_ = live;
      poll(p.data(), p.size(), 20);
      for (size_t i = 0; i < fds_.size() && !stop_; ++i) {
        bool closed = fds_[i] < 0;
        if (!closed && (p[i].revents & (POLLIN | POLLHUP | POLLERR))) {
          char buf[4096];
          ssize_t n = recv(fds_[i], buf, sizeof buf, 0);  // a response: stay idle
          closed = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
        }
        if (closed) {
          Reopen(i);
          ++reopened_;
        }
      }
    }
  }

  uint16_t port_;
  std::vector<std::string> addresses_;
  std::string greeting_;
  std::vector<int> fds_;
  std::atomic<bool> stop_{false};
  std::atomic<size_t> open_{0};
  std::atomic<size_t> reopened_{0};
  std::thread thread_;
};

constexpr char kPartialHead[] = "GET /slow HTTP/1.1\r\nHost: h\r\nX-Slow: ";
constexpr char kWholeRequest[] = "GET /idle HTTP/1.1\r\nHost: h\r\n\r\n";

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
