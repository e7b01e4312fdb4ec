// A hostile HTTP client for tests and load runs over 127.0.0.0/8: ConnectionHog holds `count`
// TCP connections spread over local addresses, each sent a greeting (a partial request head, the
// "slowloris" pattern, or a whole request after which the connection stays idle), and reopens
// every connection the server closes, on its own thread, until destroyed. Also the blocking
// helpers it is built on (ConnectFrom, SendAll).
#ifndef KVCS_HTTP_TEST_TOOLS_CONNECTION_HOG_H_
#define KVCS_HTTP_TEST_TOOLS_CONNECTION_HOG_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace kvcs::http::test {

// A partial request head that never completes, and a whole request (then idle keep-alive).
inline constexpr char kPartialHead[] = "GET /slow HTTP/1.1\r\nHost: h\r\nX-Slow: ";
inline constexpr char kWholeRequest[] = "GET /idle HTTP/1.1\r\nHost: h\r\n\r\n";

// A blocking TCP connection from `from` (a 127.x.y.z address) to 127.0.0.1:port with 2 s send
// and receive timeouts (connect included); -1 on failure.
int ConnectFrom(const std::string& from, uint16_t port);
// Sends all of `data` (blocking); false on failure.
bool SendAll(int fd, const std::string& data);

class ConnectionHog {
 public:
  ConnectionHog(uint16_t port, std::vector<std::string> addresses, size_t count,
                std::string greeting);
  ~ConnectionHog();
  ConnectionHog(const ConnectionHog&) = delete;
  ConnectionHog& operator=(const ConnectionHog&) = delete;

  size_t open() const { return open_; }          // connections open at the last poll
  size_t reopened() const { return reopened_; }  // connections the server closed, reopened

 private:
  void Reopen(size_t i);
  void Loop();

  uint16_t port_;
  std::vector<std::string> addresses_;
  std::string greeting_;
  std::vector<int> fds_;
  std::atomic<bool> stop_{false};
  std::atomic<size_t> open_{0};
  std::atomic<size_t> reopened_{0};
  std::thread thread_;
};

}  // namespace kvcs::http::test

#endif  // KVCS_HTTP_TEST_TOOLS_CONNECTION_HOG_H_
