#include "quic/rx_pump.h"

#include <unistd.h>

#include <utility>

namespace kvcs::quic {

namespace asio = boost::asio;

RxPump::RxPump(asio::io_context& io, UdpSocket* sock, const LossShimConfig& shim, Deliver deliver,
               std::function<void()> batch_done)
    : io_(io),
      sock_(sock),
      desc_(io, dup(sock->fd())),
      shim_(shim),
      deliver_(std::move(deliver)),
      batch_done_(std::move(batch_done)),
      delay_timer_(io) {}

void RxPump::Stop() {
  alive_ = std::make_shared<char>(0);
  boost::system::error_code ec;
  desc_.cancel(ec);
  desc_.close(ec);
  delay_timer_.cancel();
}

void RxPump::WaitWrite(std::function<void()> on_writable) {
  if (write_waiting_) return;
  write_waiting_ = true;
  std::weak_ptr<char> alive = alive_;
  desc_.async_wait(asio::posix::stream_descriptor::wait_write,
                   [this, alive, cb = std::move(on_writable)](const boost::system::error_code& ec) {
                     if (ec || alive.expired()) return;
                     write_waiting_ = false;
                     cb();
                   });
}

void RxPump::WaitRead() {
  std::weak_ptr<char> alive = alive_;
  desc_.async_wait(asio::posix::stream_descriptor::wait_read,
                   [this, alive](const boost::system::error_code& ec) {
                     if (ec || alive.expired()) return;
                     OnReadable();
                   });
}

void RxPump::OnReadable() {
  std::weak_ptr<char> alive = alive_;
  for (int i = 0; i < kRxBatchesPerWakeup; ++i) {
    if (sock_->RecvBatch(&rx_) == 0) break;
    for (const RxDatagram& d : rx_) {
      switch (shim_.Decide()) {
        case LossShim::Verdict::kDeliver:
          deliver_(*d.from, d.data, d.len);
          break;
        case LossShim::Verdict::kDrop:
          ++shim_.dropped;
          break;
        case LossShim::Verdict::kDelay:
          ++shim_.delayed;
          delayed_.push_back({std::chrono::steady_clock::now() +
                                  std::chrono::microseconds(shim_.config().delay_us),
                              *d.from, std::vector<uint8_t>(d.data, d.data + d.len)});
          ArmDelay();
          break;
      }
      if (alive.expired()) return;
    }
    batch_done_();
    if (alive.expired()) return;
  }
  WaitRead();
}

void RxPump::ArmDelay() {
  if (delay_armed_ || delayed_.empty()) return;
  delay_armed_ = true;
  delay_timer_.expires_at(delayed_.front().due);
  std::weak_ptr<char> alive = alive_;
  delay_timer_.async_wait([this, alive](const boost::system::error_code& ec) {
    if (ec || alive.expired()) return;
    delay_armed_ = false;
    auto now = std::chrono::steady_clock::now();
    while (!delayed_.empty() && delayed_.front().due <= now) {
      Delayed d = std::move(delayed_.front());
      delayed_.pop_front();
      deliver_(d.from, d.data.data(), d.data.size());
      if (alive.expired()) return;
    }
    batch_done_();
    if (alive.expired()) return;
    ArmDelay();
  });
}

}  // namespace kvcs::quic
