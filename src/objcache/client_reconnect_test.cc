// objcache::Client over a keep-alive connection the server closed while it was idle (as
// `kvcs store` does past its head deadline): the next request goes out on a fresh connection
// and succeeds instead of failing with "Broken pipe" or an early end of stream. The server is a
// few lines of POSIX sockets on 127.0.0.1 that answers one request per connection, then closes.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <future>
#include <string>
#include <thread>

#include "objcache/client.h"

namespace kvcs::objcache {
namespace {

// Listens on 127.0.0.1; serve(n) answers one request on each of the next n connections with
// 200 "ok" (keep-alive, as far as the client can tell) and closes each one right after.
class OneShotServer {
 public:
  OneShotServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd_, 8), 0);
    timeval limit{5, 0};  // accept gives up after 5 s when the client never connects
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~OneShotServer() { ::close(fd_); }
  uint16_t port() const { return port_; }

  // Serves one connection; returns once it is closed.
  void ServeOne() {
    int c = ::accept(fd_, nullptr, nullptr);
    ASSERT_GE(c, 0);
    std::string in;
    char buf[4096];
    while (in.find("\r\n\r\n") == std::string::npos) {
      ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) break;
      in.append(buf, static_cast<size_t>(n));
    }
    const std::string answer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    ::send(c, answer.data(), answer.size(), MSG_NOSIGNAL);
    ::close(c);
  }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

TEST(ClientReconnect, ARequestAfterTheServerClosedTheIdleConnectionSucceeds) {
  OneShotServer server;
  ClientOptions o;
  o.port = server.port();
  Client client(o);
  for (int i = 0; i < 3; ++i) {
    // Each request is answered and its connection closed by the server before the next one.
    std::thread t([&server] { server.ServeOne(); });
    auto r = client.Request("GET", "/bucket/key", "", {}, {}, /*sign=*/false);
    t.join();
    ASSERT_TRUE(r.ok()) << "request " << i << ": " << r.status().ToString();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(std::string(r->body.begin(), r->body.end()), "ok");
  }
}

}  // namespace
}  // namespace kvcs::objcache
