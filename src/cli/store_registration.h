// How `kvcs store --index` keeps the blocks it holds registered with a KVSP Index Service
// (docs/protocols/kvsp-index.md §Holders): IndexAnnouncer turns what aggregated PUTs stored and
// deletes removed (objcache::BlockEvents) into registrations and withdrawals on a background
// RegistrationQueue; HoldingsRenewal re-announces everything the KV bucket holds on disk, once at
// start (what a previous run stored) and then every half lease (renewal), paced and in batches,
// on its own thread.
//
// Thread-safe: the announcer's events come from the server's threads; HoldingsRenewal's Start and
// Stop from the owner. Stop the renewal before the announcer goes.
#ifndef KVCS_CLI_STORE_REGISTRATION_H_
#define KVCS_CLI_STORE_REGISTRATION_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>

#include "index/index_client.h"
#include "index/lease_renewer.h"
#include "index/registration_queue.h"
#include "objcache/block_events.h"
#include "objcache/block_inventory.h"
#include "store/object_store.h"

namespace kvcs::cli {

// holder = PUBLIC_URL/_kvsp (the KVSP §8 endpoints), tier object-store. OnStored/OnDeleted never
// block (the queue drops when full); Renew waits for room (keeping half the queue free for them).
class IndexAnnouncer final : public objcache::BlockEvents {
 public:
  IndexAnnouncer(index::IndexClient client, std::string holder, std::string kv_bucket,
                 uint64_t ttl_ms, size_t max_pending);

  void OnStored(const std::string& bucket, std::span<const objcache::StoredBlock> blocks,
                std::optional<Digest> anchor) override;
  void OnDeleted(const std::string& bucket, const objcache::DeletedBlock& d) override;
  // As OnStored, but waits while half the queue is taken; false once StopWaiting() was called.
  bool Renew(std::span<const objcache::StoredBlock> blocks, std::optional<Digest> anchor);
  void StopWaiting() { queue_.StopWaiters(); }

  const std::string& holder() const { return holder_; }
  const std::string& kv_bucket() const { return kv_bucket_; }
  uint64_t ttl_ms() const { return ttl_ms_; }
  index::RegistrationQueueStats stats() const { return queue_.stats(); }
  bool WaitIdle(std::chrono::milliseconds bound) { return queue_.WaitIdle(bound); }

 private:
  // The registrations of `blocks`: one per run that shares scope, compat, codec and layers, split
  // at kMaxKeysPerRequest; the anchor with the run holding the last key. False: stop.
  template <typename Send>
  bool Announce(std::span<const objcache::StoredBlock> blocks, std::optional<Digest> anchor,
                Send send);

  const std::string holder_, kv_bucket_;
  const uint64_t ttl_ms_;
  const size_t max_pending_;
  index::RegistrationQueue queue_;
};

struct HoldingsRenewalOptions {
  objcache::BlockInventoryOptions inventory;  // batch size, pacing
  index::LeasePolicy policy;                  // ttl_ms: the announcer's; renew after half of it
};

struct HoldingsRenewalStats {
  uint64_t passes = 0;         // complete passes over the bucket
  uint64_t blocks = 0;         // blocks announced by the last complete pass
  uint64_t anchors = 0;        // prefix records announced by the last complete pass
  uint64_t skipped = 0;        // objects skipped by the last complete pass
  uint64_t failed_passes = 0;  // passes that ended on a store error or saw failed sends
};

class HoldingsRenewal {
 public:
  HoldingsRenewal(store::ObjectStore& store, IndexAnnouncer& announcer,
                  HoldingsRenewalOptions options);
  ~HoldingsRenewal();  // Stop()
  HoldingsRenewal(const HoldingsRenewal&) = delete;
  HoldingsRenewal& operator=(const HoldingsRenewal&) = delete;

  void Start();  // the first pass begins at once, on the renewal thread
  void Stop();   // ends a pass in progress (at its next object or wait) and joins
  HoldingsRenewalStats stats() const;

 private:
  void Loop();
  // One pass; true when it completed without errors or failed sends.
  bool RunPass();

  store::ObjectStore& store_;
  IndexAnnouncer& announcer_;
  const HoldingsRenewalOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  index::LeaseRenewer renewer_;  // guarded by mu_
  HoldingsRenewalStats stats_;
  bool stop_ = false;
  bool started_ = false;
  std::thread thread_;
};

}  // namespace kvcs::cli

#endif  // KVCS_CLI_STORE_REGISTRATION_H_
