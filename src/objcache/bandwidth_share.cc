// SharedBandwidth and BandwidthShare. See bandwidth_share.h.
#include "objcache/bandwidth_share.h"

#include <algorithm>
#include <chrono>

namespace kvcs::objcache {

namespace asio = boost::asio;

namespace {

s3::Awaitable<void> SleepUntil(asio::any_io_executor ex, double when) {
  double now = NowSeconds();
  if (when <= now) co_return;
  asio::steady_timer timer(ex);
  timer.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(when - now)));
  boost::system::error_code ec;
  co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

}  // namespace

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

SharedBandwidth::SharedBandwidth(double cap, sched::Options options)
    : on_(cap > 0), scheduler_(cap > 0 ? cap : 1, options) {}

BandwidthShare::BandwidthShare(SharedBandwidth& shared, const AggregateRequest& req,
                               double first_layer_bytes)
    : shared_(shared), id_(shared.next_id_.fetch_add(1)) {
  if (!shared_.on_) return;
  sched::Demand d;
  d.id = id_;
  d.bytes_per_layer = std::max(1.0, first_layer_bytes);
  d.compute_per_layer = double(req.compute_us_per_layer) * 1e-6;
  d.stall_target = double(req.stall_target_us) * 1e-6;
  d.layers_remaining = req.layer_count;
  std::lock_guard<std::mutex> lock(shared_.mu_);
  (void)shared_.scheduler_.Admit(d, NowSeconds());
}

BandwidthShare::~BandwidthShare() {
  if (!shared_.on_) return;
  std::lock_guard<std::mutex> lock(shared_.mu_);
  (void)shared_.scheduler_.Finish(id_, NowSeconds());
}

s3::Awaitable<void> BandwidthShare::Before(asio::any_io_executor ex, double bytes) {
  if (!shared_.on_) co_return;
  // The rate is re-read at least every kRecheck while waiting: the scheduler reallocates on every
  // admission, layer and finish, and a request held to the rate it had when it sent its previous
  // window would leave its new share of the cap unused (docs/protocols/scheduler.md, Pacing).
  constexpr double kRecheck = 2e-3;
  for (;;) {
    double rate;
    {
      std::lock_guard<std::mutex> lock(shared_.mu_);
      rate = shared_.scheduler_.RateOf(id_);
    }
    double now = NowSeconds();
    double wait = pacer_.Wait(now, rate);
    if (wait <= 0) break;
    co_await SleepUntil(ex, now + std::min(wait, kRecheck));
  }
  pacer_.Sent(bytes);
}

void BandwidthShare::LayerDelivered() {
  if (!shared_.on_) return;
  std::lock_guard<std::mutex> lock(shared_.mu_);
  (void)shared_.scheduler_.LayerDelivered(id_, NowSeconds());
}

}  // namespace kvcs::objcache
