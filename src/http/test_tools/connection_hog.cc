// ConnectionHog: see connection_hog.h.
#include "http/test_tools/connection_hog.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>

namespace kvcs::http::test {

int ConnectFrom(const std::string& from, uint16_t port) {
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

ConnectionHog::ConnectionHog(uint16_t port, std::vector<std::string> addresses, size_t count,
                             std::string greeting)
    : port_(port), addresses_(std::move(addresses)), greeting_(std::move(greeting)) {
  fds_.resize(count, -1);
  for (size_t i = 0; i < count; ++i) Reopen(i);
  thread_ = std::thread([this] { Loop(); });
}

ConnectionHog::~ConnectionHog() {
  stop_ = true;
  thread_.join();
  for (int fd : fds_)
    if (fd >= 0) close(fd);
}

void ConnectionHog::Reopen(size_t i) {
  if (fds_[i] >= 0) close(fds_[i]);
  fds_[i] = ConnectFrom(addresses_[i % addresses_.size()], port_);
  if (fds_[i] >= 0 && !SendAll(fds_[i], greeting_)) {
    close(fds_[i]);
    fds_[i] = -1;
  }
  if (fds_[i] >= 0) fcntl(fds_[i], F_SETFL, fcntl(fds_[i], F_GETFL) | O_NONBLOCK);
}

void ConnectionHog::Loop() {
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

}  // namespace kvcs::http::test
