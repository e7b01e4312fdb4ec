// RxPump: the receive side of one UDP socket (quic/udp.h) on a Boost.Asio io_context, shared by
// the server (quic/server.cc) and the client (quic/client.cc). It waits for readability, receives
// up to kRxBatchesPerWakeup batches per wakeup, applies the test-only loss shim (drop, or hold a
// copy back until a deadline), hands each datagram to `deliver` and runs `batch_done` after each
// batch. It also waits for writability when the socket blocked a send.
//
// Internal to src/quic. Single-threaded: everything runs on the io_context's one thread.
#ifndef KVCS_QUIC_RX_PUMP_H_
#define KVCS_QUIC_RX_PUMP_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "common/asio.h"
#include "quic/udp.h"

namespace kvcs::quic {

class RxPump {
 public:
  using Deliver = std::function<void(const SockAddr&, const uint8_t*, size_t)>;
  // recvmmsg batches handled per readiness wakeup before yielding to timers and other handlers.
  static constexpr int kRxBatchesPerWakeup = 4;

  RxPump(boost::asio::io_context& io, UdpSocket* sock, const LossShimConfig& shim, Deliver deliver,
         std::function<void()> batch_done);
  ~RxPump() { Stop(); }

  void Start() { WaitRead(); }
  // Cancels every wait; no callback runs afterwards.
  void Stop();
  // Calls `on_writable` once the socket is writable (one wait at a time).
  void WaitWrite(std::function<void()> on_writable);
  LossShim& shim() { return shim_; }

 private:
  struct Delayed {
    std::chrono::steady_clock::time_point due;
    SockAddr from;
    std::vector<uint8_t> data;
  };

  void WaitRead();
  void OnReadable();
  void ArmDelay();

  boost::asio::io_context& io_;
  UdpSocket* sock_;
  boost::asio::posix::stream_descriptor desc_;  // a dup of the socket fd, for readiness only
  LossShim shim_;
  Deliver deliver_;
  std::function<void()> batch_done_;
  std::vector<RxDatagram> rx_;
  std::deque<Delayed> delayed_;
  boost::asio::steady_timer delay_timer_;
  bool delay_armed_ = false;
  bool write_waiting_ = false;
  std::shared_ptr<char> alive_ = std::make_shared<char>(0);
};

}  // namespace kvcs::quic

#endif  // KVCS_QUIC_RX_PUMP_H_
