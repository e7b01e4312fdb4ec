// RelayMetrics: the relay's counters and gauges, written on the relay's executor and read by the
// metrics endpoint's threads (relaxed atomics), rendered as Prometheus text.
#ifndef KVCS_RELAY_RELAY_METRICS_H_
#define KVCS_RELAY_RELAY_METRICS_H_

#include <atomic>
#include <cstdint>
#include <string>

namespace kvcs::relay {

// Why the relay refused something (label `cause` of kvcs_relay_refusals_total).
enum class Refusal : int {
  kUnauthorized = 0,  // a request outside the session's grants
  kBadToken,          // setup without a token (closed access), forged, expired
  kNoRoute,           // nobody announced the namespace and there is no upstream
  kCacheFull,         // nothing evictable: a new publication or object was refused
  kLoop,              // a request that already passed through this relay
  kTooMany,           // publications or namespaces over their bounds
  kTimeout,           // the upstream did not answer in time
  kUpstreamError,     // the upstream refused (its code is passed on)
  kSlowSubscriber,    // a subscription or fetch cut off: its subscriber took nothing in time
  kUpstreamStalled,   // an upstream feed ended: its session delivered nothing owed in time
  kAlreadyCached,     // a PUBLISH of a track cached whole already (UNINTERESTED)
  kCount
};
const char* RefusalName(Refusal r);

struct RelayMetrics {
  using Counter = std::atomic<uint64_t>;
  Counter sessions_accepted{0};
  Counter sessions_open{0};  // gauge
  Counter subscriptions{0};  // downstream SUBSCRIBE/FETCH/TRACK_STATUS answered
  Counter cache_hits{0};     // answered from a track already cached
  Counter upstream_requests{0};
  Counter merged_requests{0};               // joined an upstream request already in flight
  Counter publishes{0};                     // PUBLISHes accepted into the cache
  Counter publish_joins{0};                 // of those, PUBLISHes of a track already being filled
  Counter upstream_publishes{0};            // PUBLISHes sent on to the upstream relay
  Counter upstream_publishes_delivered{0};  // of those, tracks the upstream then held whole
  Counter upstream_publishes_refused{0};    // of those, refused by the upstream (released here)
  Counter evictions{0};                     // publications evicted
  Counter evicted_bytes{0};
  Counter cached_publications{0};  // gauge
  Counter cached_bytes{0};         // gauge: the byte budget in use
  Counter cache_budget_bytes{0};   // gauge
  Counter objects_in{0};
  Counter bytes_in{0};       // object payload received from upstreams
  Counter announcements{0};  // gauge: namespaces announced by publishers here
  Counter refusals[static_cast<int>(Refusal::kCount)] = {};

  void Refuse(Refusal r) { refusals[static_cast<int>(r)].fetch_add(1, std::memory_order_relaxed); }
  // Prometheus text exposition (version 0.0.4). `bytes_out`, `objects_out`: summed over the
  // sessions by the caller (the sessions count what they send).
  std::string Render(uint64_t bytes_out, uint64_t objects_out) const;
};

}  // namespace kvcs::relay

#endif  // KVCS_RELAY_RELAY_METRICS_H_
