// A hostile QUIC client for tests and load runs over 127.0.0.1: raw non-blocking UDP sockets
// (each bound to a fresh source port), junk packets that parse as client Initials, and the
// capture of real client Initials (from clients aimed at a UDP black hole) that, replayed to a
// server, each open a real half-open handshake there.
#ifndef KVCS_QUIC_TEST_TOOLS_INITIAL_FLOOD_H_
#define KVCS_QUIC_TEST_TOOLS_INITIAL_FLOOD_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

namespace kvcs::quic::test {

using Packet = std::vector<uint8_t>;

// Non-blocking UDP sockets on 127.0.0.x, each on its own ephemeral port; closed at the end.
class RawSockets {
 public:
  RawSockets() = default;
  ~RawSockets() { CloseAll(); }
  RawSockets(const RawSockets&) = delete;
  RawSockets& operator=(const RawSockets&) = delete;
  void CloseAll();
  // A socket bound to `ip`:0; -1 on failure.
  int Open(const char* ip);
  size_t size() const { return fds_.size(); }
  static uint16_t Port(int fd);
  // Sends `p` to 127.0.0.1:port.
  static void Send(int fd, uint16_t port, const Packet& p);

 private:
  std::vector<int> fds_;
};

// 1200 bytes that parse as a QUIC v1 Initial (random CIDs, no token) but decrypt to nothing.
Packet JunkInitial(std::mt19937& rng);

// Up to `n` real client Initials with distinct DCIDs. `start_clients(port)` starts n clients
// aimed at 127.0.0.1:port (a black hole this opens) and keeps them until it returns from
// `run_until`; `run_until(pred)` drives their event loop until pred holds or its own deadline.
std::vector<Packet> CaptureInitials(
    size_t n, const std::function<void(uint16_t port)>& start_clients,
    const std::function<void(const std::function<bool()>&)>& run_until);

}  // namespace kvcs::quic::test

#endif  // KVCS_QUIC_TEST_TOOLS_INITIAL_FLOOD_H_
