// LeaseKeeper: keeps a holder's registrations live in a KVSP Index Service (spec §7) while it
// serves: a thread sends every registration (one RegisterRequest per ≤ kMaxKeysPerRequest keys)
// when the LeaseRenewer says so, and Stop() withdraws them. `kvcs publish` uses it for its
// moqt:// namespace.
//
// Registration never blocks the caller: Start returns at once and the first attempt runs on the
// keeper's thread. Failures are logged (the first one, then when the index answers again) and
// counted; the keeper keeps retrying (LeasePolicy's backoff). Stop() wakes the thread, withdraws
// (each call bounded by the client's timeout) and joins. The clock is a parameter (ms); the
// default is the system clock, as the index's leases are wall-clock times.
//
// Thread-safe: stats() from any thread; Start/Stop from the owner.
#ifndef KVCS_INDEX_LEASE_KEEPER_H_
#define KVCS_INDEX_LEASE_KEEPER_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "index/index_client.h"
#include "index/index_wire.h"
#include "index/lease_renewer.h"

namespace kvcs::index {

struct LeaseKeeperStats {
  uint64_t registered = 0;  // successful rounds (every request acknowledged)
  uint64_t failed = 0;      // failed rounds
  bool live = false;        // the last acknowledged lease still runs
  std::string last_error;
};

class LeaseKeeper {
 public:
  // `requests` are sent as given except ttl_ms, which is policy.ttl_ms.
  LeaseKeeper(IndexClient client, std::vector<RegisterRequest> requests, LeasePolicy policy,
              std::function<uint64_t()> now_ms = {});
  ~LeaseKeeper();  // Stop()
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  void Start();
  // Stops renewing and withdraws every key registered; returns the withdrawal's status (OK when
  // never started).
  Status Stop();
  LeaseKeeperStats stats() const;

 private:
  void Loop();
  Status RegisterAll();

  IndexClient client_;
  std::vector<RegisterRequest> requests_;
  std::function<uint64_t()> now_ms_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  LeaseRenewer renewer_;  // guarded by mu_
  LeaseKeeperStats stats_;
  bool stop_ = false;
  bool started_ = false;
  std::thread thread_;
};

// Splits a holder's keys into registrations of at most kMaxKeysPerRequest keys; the anchor (when
// given) goes with the chunk holding the last key.
std::vector<RegisterRequest> ChunkRegistration(const RegisterRequest& whole);

// The withdrawal matching a registration.
WithdrawRequest WithdrawalOf(const RegisterRequest& r);

}  // namespace kvcs::index

#endif  // KVCS_INDEX_LEASE_KEEPER_H_
