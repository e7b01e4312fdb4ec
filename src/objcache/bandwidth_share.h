// The bandwidth cap aggregated GETs share (docs/protocols/scheduler.md): SharedBandwidth is one
// Service's BandwidthScheduler, and BandwidthShare one request's part of it: admitted with its
// scheduling inputs, paced before each write at the rate the scheduler grants it, told of each
// delivered layer, finished when it ends. Without a cap (bandwidth_cap <= 0) a share does nothing.
//
// SharedBandwidth is thread-safe (the scheduler is guarded by a mutex); a BandwidthShare belongs
// to one request's coroutine.
#ifndef KVCS_OBJCACHE_BANDWIDTH_SHARE_H_
#define KVCS_OBJCACHE_BANDWIDTH_SHARE_H_

#include <atomic>
#include <cstdint>
#include <mutex>

#include "common/asio.h"
#include "objcache/aggregate_wire.h"
#include "s3/extension.h"
#include "sched/pacer.h"
#include "sched/scheduler.h"

namespace kvcs::objcache {

// Seconds on the steady clock: the time the scheduler and the pacer are given.
double NowSeconds();

class SharedBandwidth {
 public:
  // cap: bytes/s all shares together; <= 0 disables pacing.
  SharedBandwidth(double cap, sched::Options options);
  SharedBandwidth(const SharedBandwidth&) = delete;
  SharedBandwidth& operator=(const SharedBandwidth&) = delete;

 private:
  friend class BandwidthShare;
  const bool on_;
  std::mutex mu_;
  sched::BandwidthScheduler scheduler_;
  std::atomic<uint64_t> next_id_{1};
};

class BandwidthShare {
 public:
  // Admits `req`, whose first layer is paced as first_layer_bytes (PacedLayerBytes: the bytes
  // Before is given for it); finished by the destructor.
  BandwidthShare(SharedBandwidth& shared, const AggregateRequest& req, double first_layer_bytes);
  ~BandwidthShare();
  BandwidthShare(const BandwidthShare&) = delete;
  BandwidthShare& operator=(const BandwidthShare&) = delete;

  // Waits until `bytes` may be written at the granted rate. REQUIRES: `ex` is the strand this
  // coroutine runs on.
  s3::Awaitable<void> Before(boost::asio::any_io_executor ex, double bytes);
  void LayerDelivered();

 private:
  SharedBandwidth& shared_;
  const uint64_t id_;
  sched::Pacer pacer_;
};

}  // namespace kvcs::objcache

#endif  // KVCS_OBJCACHE_BANDWIDTH_SHARE_H_
