// A real redis-server for tests: started in a fresh temporary directory, listening only on a unix
// socket there (--port 0: no TCP), with persistence off; stopped (SIGTERM, then SIGKILL) and the
// directory removed on destruction. Readiness is a PING answered within a bound, not a sleep.
// Shared by the unit tests and the end-to-end tests (test-only: kvcs_index_test_tools).
#ifndef KVCS_INDEX_TEST_TOOLS_REDIS_SERVER_H_
#define KVCS_INDEX_TEST_TOOLS_REDIS_SERVER_H_

#include <sys/types.h>

#include <chrono>
#include <string>

namespace kvcs::index::testing {

class RedisServer {
 public:
  // Starts redis-server; ok() is false (and error() says why) when it is missing or never
  // answered PING within `ready_bound`.
  explicit RedisServer(std::chrono::milliseconds ready_bound = std::chrono::seconds(10));
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  const std::string& socket() const { return socket_; }

 private:
  bool Ping() const;

  pid_t pid_ = -1;
  bool ok_ = false;
  std::string dir_, socket_, error_;
};

}  // namespace kvcs::index::testing

#endif  // KVCS_INDEX_TEST_TOOLS_REDIS_SERVER_H_
