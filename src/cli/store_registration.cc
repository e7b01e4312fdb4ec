// kvcs store's registrations with a KVSP Index Service. See store_registration.h.
#include "cli/store_registration.h"

#include <utility>

#include "common/log.h"
#include "index/lease_keeper.h"

namespace kvcs::cli {
namespace {

uint64_t WallNowMs() {
  return uint64_t(std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count());
}

}  // namespace

IndexAnnouncer::IndexAnnouncer(index::IndexClient client, std::string holder, std::string kv_bucket,
                               uint64_t ttl_ms, size_t max_pending)
    : holder_(std::move(holder)),
      kv_bucket_(std::move(kv_bucket)),
      ttl_ms_(ttl_ms),
      max_pending_(max_pending),
      queue_(std::move(client), {.max_pending = max_pending}) {}

template <typename Send>
bool IndexAnnouncer::Announce(std::span<const objcache::StoredBlock> blocks,
                              std::optional<Digest> anchor, Send send) {
  size_t i = 0;
  while (i < blocks.size()) {
    const objcache::StoredBlock& b = blocks[i];
    index::RegisterRequest r;
    r.compat_id = b.compat_id;
    r.scope_id = b.scope_id;
    r.replica = {holder_, index::Tier::kObjectStore, {b.codec}, b.layer_first, b.layer_count};
    r.ttl_ms = ttl_ms_;
    for (; i < blocks.size(); ++i) {
      const objcache::StoredBlock& c = blocks[i];
      if (c.scope_id != b.scope_id || c.compat_id != b.compat_id || c.codec != b.codec ||
          c.layer_first != b.layer_first || c.layer_count != b.layer_count) {
        break;
      }
      r.block_keys.push_back(c.block_key);
    }
    // The anchor goes with the run holding the chain's last key (every block of the chain is
    // held, so this holder has the whole prefix).
    if (anchor && i == blocks.size()) r.anchor_key = anchor;
    for (index::RegisterRequest& chunk : index::ChunkRegistration(r)) {
      if (!send(std::move(chunk))) return false;
    }
  }
  return true;
}

void IndexAnnouncer::OnStored(const std::string& bucket,
                              std::span<const objcache::StoredBlock> blocks,
                              std::optional<Digest> anchor) {
  if (bucket != kv_bucket_) return;  // the KVSP endpoints serve this bucket only
  Announce(blocks, anchor, [this](index::RegisterRequest r) {
    queue_.Enqueue(std::move(r));  // a full queue drops (counted): never block a PUT
    return true;
  });
}

void IndexAnnouncer::OnDeleted(const std::string& bucket, const objcache::DeletedBlock& d) {
  if (bucket != kv_bucket_ || d.other_codecs_remain) return;
  queue_.Enqueue(index::WithdrawRequest{d.compat_id, d.scope_id, holder_, {d.block_key}});
}

bool IndexAnnouncer::Renew(std::span<const objcache::StoredBlock> blocks,
                           std::optional<Digest> anchor) {
  const size_t below = std::max<size_t>(1, max_pending_ / 2);
  return Announce(blocks, anchor, [&](index::RegisterRequest r) {
    return queue_.EnqueueWhenBelow(std::move(r), below);
  });
}

HoldingsRenewal::HoldingsRenewal(store::ObjectStore& store, IndexAnnouncer& announcer,
                                 HoldingsRenewalOptions options)
    : store_(store), announcer_(announcer), options_(options), renewer_(options.policy) {}

HoldingsRenewal::~HoldingsRenewal() { Stop(); }

void HoldingsRenewal::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_) return;
  started_ = true;
  thread_ = std::thread([this] { Loop(); });
}

void HoldingsRenewal::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!started_ || stop_) return;
    stop_ = true;
  }
  cv_.notify_all();
  announcer_.StopWaiting();
  thread_.join();
}

HoldingsRenewalStats HoldingsRenewal::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

bool HoldingsRenewal::RunPass() {
  // Replays what the bucket holds through the announcer, waiting for room in its queue.
  class Replay final : public objcache::BlockEvents {
   public:
    explicit Replay(IndexAnnouncer& a) : a_(a) {}
    void OnStored(const std::string&, std::span<const objcache::StoredBlock> blocks,
                  std::optional<Digest> anchor) override {
      if (!stopped_ && !a_.Renew(blocks, anchor)) stopped_ = true;
    }
    void OnDeleted(const std::string&, const objcache::DeletedBlock&) override {}
    bool stopped_ = false;

   private:
    IndexAnnouncer& a_;
  } replay(announcer_);
  objcache::PaceFn pace = [&](std::chrono::nanoseconds d) {
    std::unique_lock<std::mutex> lock(mu_);
    // The wait is the pacing itself (reads per second), not a synchronization; Stop cuts it.
    cv_.wait_for(lock, d, [this] { return stop_; });
    return !stop_ && !replay.stopped_;
  };
  uint64_t failed_before = announcer_.stats().failed + announcer_.stats().dropped;
  auto started = std::chrono::steady_clock::now();
  auto r = objcache::ReplayStoredBlocks(store_, announcer_.kv_bucket(), replay, options_.inventory,
                                        pace);
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - started);
  std::lock_guard<std::mutex> lock(mu_);
  if (!r.ok()) {
    KVCS_LOG_WARN("index: re-registering bucket {} failed (retrying): {}", announcer_.kv_bucket(),
                  r.status().message());
    ++stats_.failed_passes;
    return false;
  }
  if (r->stopped || replay.stopped_) return true;  // a shutdown
  ++stats_.passes;
  stats_.blocks = r->blocks;
  stats_.anchors = r->anchors;
  stats_.skipped = r->skipped;
  KVCS_LOG_INFO("index: announced {} blocks and {} prefixes of bucket {} ({} skipped) in {} ms",
                r->blocks, r->anchors, announcer_.kv_bucket(), r->skipped, took.count());
  auto interval = options_.policy.ttl_ms * options_.policy.renew_fraction;
  if (double(took.count()) > interval) {
    KVCS_LOG_WARN(
        "index: a pass over bucket {} took {} ms, longer than the renewal interval ({} ms): "
        "raise the scan rate or the lease",
        announcer_.kv_bucket(), took.count(), uint64_t(interval));
  }
  uint64_t failed_after = announcer_.stats().failed + announcer_.stats().dropped;
  if (failed_after != failed_before) {
    ++stats_.failed_passes;
    return false;
  }
  return true;
}

void HoldingsRenewal::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    uint64_t now = WallNowMs();
    if (!renewer_.Due(now)) {
      // The wait is the schedule itself (the renewal time), not a synchronization.
      cv_.wait_for(lock, std::chrono::milliseconds(renewer_.next_attempt_ms() - now),
                   [this] { return stop_; });
      continue;
    }
    lock.unlock();
    bool ok = RunPass();
    lock.lock();
    // A pass renews every lease it sent from its start on (sent later, they end later).
    if (ok) {
      renewer_.OnRegistered(now);
    } else {
      renewer_.OnFailed(WallNowMs());
    }
  }
}

}  // namespace kvcs::cli
