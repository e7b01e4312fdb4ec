// RawSockets, JunkInitial, CaptureInitials: see initial_flood.h.
#include "quic/test_tools/initial_flood.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>

namespace kvcs::quic::test {

void RawSockets::CloseAll() {
  for (int fd : fds_) close(fd);
  fds_.clear();
}

int RawSockets::Open(const char* ip) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  inet_pton(AF_INET, ip, &a.sin_addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  fds_.push_back(fd);
  return fd;
}

uint16_t RawSockets::Port(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

void RawSockets::Send(int fd, uint16_t port, const Packet& p) {
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  sendto(fd, p.data(), p.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof(to));
}

Packet JunkInitial(std::mt19937& rng) {
  Packet p(1200);
  for (auto& b : p) b = static_cast<uint8_t>(rng());
  p[0] = 0xc3;  // long header, fixed bit, Initial, 4-byte packet number
  p[1] = p[2] = p[3] = 0;
  p[4] = 1;   // version 1
  p[5] = 8;   // DCID length (8 random bytes follow)
  p[14] = 8;  // SCID length
  p[23] = 0;  // token length
  constexpr size_t kRest = 1200 - 26;
  p[24] = static_cast<uint8_t>(0x40 | (kRest >> 8));
  p[25] = static_cast<uint8_t>(kRest & 0xff);
  return p;
}

std::vector<Packet> CaptureInitials(
    size_t n, const std::function<void(uint16_t port)>& start_clients,
    const std::function<void(const std::function<bool()>&)>& run_until) {
  RawSockets hole;
  int fd = hole.Open("127.0.0.1");
  if (fd < 0) return {};
  start_clients(RawSockets::Port(fd));
  std::map<Packet, Packet> by_dcid;
  run_until([&] {
    uint8_t buf[2048];
    ssize_t r;
    while ((r = recv(fd, buf, sizeof(buf), 0)) > 0) {
      if (r < 1200 || (buf[0] & 0xf0) != 0xc0 || buf[5] > 20) continue;  // Initial only
      Packet dcid(buf + 6, buf + 6 + buf[5]);
      by_dcid.emplace(dcid, Packet(buf, buf + r));
    }
    return by_dcid.size() >= n;
  });
  std::vector<Packet> out;
  for (auto& [dcid, p] : by_dcid) out.push_back(p);
  return out;
}

}  // namespace kvcs::quic::test
