// Lease renewal timing. See lease_renewer.h.
#include "index/lease_renewer.h"

#include <algorithm>

namespace kvcs::index {

LeaseRenewer::LeaseRenewer(LeasePolicy policy) : policy_(policy) {
  policy_.ttl_ms = std::max<uint64_t>(policy_.ttl_ms, 1);
  if (!(policy_.renew_fraction > 0 && policy_.renew_fraction < 1)) policy_.renew_fraction = 0.5;
  policy_.retry_min_ms = std::max<uint64_t>(policy_.retry_min_ms, 1);
  policy_.retry_max_ms = std::max(policy_.retry_max_ms, policy_.retry_min_ms);
}

void LeaseRenewer::OnRegistered(uint64_t sent_ms) {
  lease_end_ms_ = std::max(lease_end_ms_, sent_ms + policy_.ttl_ms);
  // At least 1 ms later, so a tiny lease cannot make the keeper spin.
  next_ms_ = sent_ms + std::max<uint64_t>(1, uint64_t(policy_.ttl_ms * policy_.renew_fraction));
  backoff_ms_ = 0;
  failures_ = 0;
}

void LeaseRenewer::OnFailed(uint64_t now_ms) {
  backoff_ms_ =
      backoff_ms_ == 0 ? policy_.retry_min_ms : std::min(backoff_ms_ * 2, policy_.retry_max_ms);
  ++failures_;
  next_ms_ = now_ms + backoff_ms_;
}

}  // namespace kvcs::index
