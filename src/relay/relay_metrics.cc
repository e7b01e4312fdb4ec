// Prometheus text for RelayMetrics (relay_metrics.h).
#include "relay/relay_metrics.h"

#include <string_view>

namespace kvcs::relay {

const char* RefusalName(Refusal r) {
  switch (r) {
    case Refusal::kUnauthorized:
      return "unauthorized";
    case Refusal::kBadToken:
      return "bad_token";
    case Refusal::kNoRoute:
      return "no_route";
    case Refusal::kCacheFull:
      return "cache_full";
    case Refusal::kLoop:
      return "loop";
    case Refusal::kTooMany:
      return "too_many";
    case Refusal::kTimeout:
      return "timeout";
    case Refusal::kUpstreamError:
      return "upstream_error";
    case Refusal::kSlowSubscriber:
      return "slow_subscriber";
    case Refusal::kUpstreamStalled:
      return "upstream_stalled";
    case Refusal::kAlreadyCached:
      return "already_cached";
    case Refusal::kCount:
      break;
  }
  return "unknown";
}

std::string RelayMetrics::Render(uint64_t bytes_out, uint64_t objects_out) const {
  std::string out;
  auto line = [&out](std::string_view name, std::string_view type, std::string_view help,
                     uint64_t v) {
    out += "# HELP kvcs_relay_" + std::string(name) + " " + std::string(help) + "\n";
    out += "# TYPE kvcs_relay_" + std::string(name) + " " + std::string(type) + "\n";
    out += "kvcs_relay_" + std::string(name) + " " + std::to_string(v) + "\n";
  };
  auto get = [](const Counter& c) { return c.load(std::memory_order_relaxed); };
  line("sessions_accepted_total", "counter", "MOQT sessions accepted", get(sessions_accepted));
  line("sessions_open", "gauge", "MOQT sessions open", get(sessions_open));
  line("requests_total", "counter", "SUBSCRIBE, FETCH and TRACK_STATUS answered",
       get(subscriptions));
  line("cache_hits_total", "counter", "requests answered from a cached track", get(cache_hits));
  line("upstream_requests_total", "counter", "subscriptions sent upstream", get(upstream_requests));
  line("merged_requests_total", "counter", "requests joined to an upstream request in flight",
       get(merged_requests));
  line("publishes_total", "counter", "PUBLISHes accepted into the cache", get(publishes));
  line("publish_joins_total", "counter",
       "PUBLISHes of a track already being filled (written into the same track)",
       get(publish_joins));
  line("upstream_publishes_total", "counter",
       "PUBLISHes sent on to the upstream relay (re-sends after a reconnect included)",
       get(upstream_publishes));
  line("upstream_publishes_delivered_total", "counter",
       "PUBLISHes of tracks the upstream relay then held whole", get(upstream_publishes_delivered));
  line("upstream_publishes_refused_total", "counter",
       "PUBLISHes the upstream relay refused (the track released here, not sent up again)",
       get(upstream_publishes_refused));
  line("evictions_total", "counter", "publications evicted", get(evictions));
  line("evicted_bytes_total", "counter", "budget bytes freed by evictions", get(evicted_bytes));
  line("cached_publications", "gauge", "publications in the cache", get(cached_publications));
  line("cached_bytes", "gauge", "cache budget in use (payload and per-object overhead)",
       get(cached_bytes));
  line("cache_budget_bytes", "gauge", "cache byte budget", get(cache_budget_bytes));
  line("objects_in_total", "counter", "objects received from upstreams", get(objects_in));
  line("bytes_in_total", "counter", "object payload bytes received from upstreams", get(bytes_in));
  line("objects_out_total", "counter", "objects sent to subscribers", objects_out);
  line("bytes_out_total", "counter", "object payload bytes sent to subscribers", bytes_out);
  line("announced_namespaces", "gauge", "namespaces announced by publishers here",
       get(announcements));
  out += "# HELP kvcs_relay_refusals_total requests and objects refused, by cause\n";
  out += "# TYPE kvcs_relay_refusals_total counter\n";
  for (int i = 0; i < static_cast<int>(Refusal::kCount); ++i) {
    out += "kvcs_relay_refusals_total{cause=\"" +
           std::string(RefusalName(static_cast<Refusal>(i))) + "\"} " +
           std::to_string(refusals[i].load(std::memory_order_relaxed)) + "\n";
  }
  return out;
}

}  // namespace kvcs::relay
