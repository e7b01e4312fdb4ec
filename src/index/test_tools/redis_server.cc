#include "index/test_tools/redis_server.h"

#include <hiredis/hiredis.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <thread>
#include <vector>

extern char** environ;

namespace kvcs::index::testing {

RedisServer::RedisServer(std::chrono::milliseconds ready_bound) {
  char tmpl[] = "/tmp/kvcs-redis-XXXXXX";
  if (!::mkdtemp(tmpl)) {
    error_ = "mkdtemp failed";
    return;
  }
  dir_ = tmpl;
  socket_ = dir_ + "/redis.sock";
  std::vector<std::string> args = {"redis-server",
                                   "--port",
                                   "0",
                                   "--unixsocket",
                                   socket_,
                                   "--unixsocketperm",
                                   "700",
                                   "--dir",
                                   dir_,
                                   "--save",
                                   "",
                                   "--appendonly",
                                   "no",
                                   "--daemonize",
                                   "no",
                                   "--logfile",
                                   dir_ + "/redis.log"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  if (::posix_spawnp(&pid_, "redis-server", nullptr, nullptr, argv.data(), environ) != 0) {
    pid_ = -1;
    error_ = "redis-server is not installed (scripts/bootstrap.sh installs it)";
    return;
  }
  auto deadline = std::chrono::steady_clock::now() + ready_bound;
  while (std::chrono::steady_clock::now() < deadline) {
    if (Ping()) {
      ok_ = true;
      return;
    }
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      error_ = "redis-server exited at start; see its log";
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // poll interval, bounded
  }
  error_ = "redis-server did not answer PING in time";
}

RedisServer::~RedisServer() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

bool RedisServer::Ping() const {
  timeval tv{0, 200 * 1000};
  redisContext* c = redisConnectUnixWithTimeout(socket_.c_str(), tv);
  bool ok = false;
  if (c && !c->err) {
    auto* r = static_cast<redisReply*>(redisCommand(c, "PING"));
    ok = r && r->type == REDIS_REPLY_STATUS;
    if (r) freeReplyObject(r);
  }
  if (c) redisFree(c);
  return ok;
}

}  // namespace kvcs::index::testing
