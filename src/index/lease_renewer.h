// LeaseRenewer: when a holder (re-)registers a lease with the KVSP Index Service (spec §7), as
// pure logic with the time passed in: the first attempt at once, a renewal once `renew_fraction`
// of the lease has passed (default half, so one lost renewal still leaves time for a retry), and
// after a failed attempt a retry with exponential backoff (retry_min_ms doubling up to
// retry_max_ms; keep retry_max_ms well below the lease so retries fit inside it). LeaseKeeper
// (lease_keeper.h) drives it with a thread and a client.
//
// Value type; thread-compatible.
#ifndef KVCS_INDEX_LEASE_RENEWER_H_
#define KVCS_INDEX_LEASE_RENEWER_H_

#include <cstdint>

namespace kvcs::index {

struct LeasePolicy {
  uint64_t ttl_ms = 30'000;     // the lease each registration asks for
  double renew_fraction = 0.5;  // renew when this part of the lease has passed (0 < f < 1)
  uint64_t retry_min_ms = 100;  // first retry after a failure
  uint64_t retry_max_ms = 5'000;
};

class LeaseRenewer {
 public:
  explicit LeaseRenewer(LeasePolicy policy);

  // When the next registration should be sent (ms, the caller's clock).
  uint64_t next_attempt_ms() const { return next_ms_; }
  bool Due(uint64_t now_ms) const { return now_ms >= next_ms_; }
  // The index answered 204 to a registration sent at `sent_ms`: the lease runs to sent_ms + ttl
  // (measured from the send, the earliest the index can have started it).
  void OnRegistered(uint64_t sent_ms);
  // The attempt at `now_ms` failed: retry after the backoff (doubling from retry_min_ms up to
  // retry_max_ms, reset by a success).
  void OnFailed(uint64_t now_ms);
  // Whether the last acknowledged lease still runs at `now_ms`.
  bool Live(uint64_t now_ms) const { return now_ms < lease_end_ms_; }
  uint64_t lease_end_ms() const { return lease_end_ms_; }
  uint64_t failures() const { return failures_; }  // consecutive failed attempts
  const LeasePolicy& policy() const { return policy_; }

 private:
  LeasePolicy policy_;
  uint64_t next_ms_ = 0;  // at once
  uint64_t lease_end_ms_ = 0;
  uint64_t backoff_ms_ = 0;
  uint64_t failures_ = 0;
};

}  // namespace kvcs::index

#endif  // KVCS_INDEX_LEASE_RENEWER_H_
