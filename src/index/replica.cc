// KVSP v1 as defined by the project: replica records of the Index Service (§7).
#include "index/replica.h"

#include <algorithm>
#include <array>

namespace kvcs::index {
namespace {

constexpr std::array<std::string_view, kTierCount> kTierNames = {"gpu", "cpu", "relay", "disk",
                                                                 "object-store"};

}  // namespace

std::string_view TierName(Tier t) {
  auto i = static_cast<size_t>(t);
  return i < kTierNames.size() ? kTierNames[i] : "unknown";
}

Result<Tier> TierFromName(std::string_view name) {
  for (size_t i = 0; i < kTierNames.size(); ++i) {
    if (kTierNames[i] == name) return static_cast<Tier>(i);
  }
  return InvalidArgument("unknown tier (use gpu, cpu, relay, disk or object-store)");
}

bool ReplicaBefore(const Replica& a, const Replica& b) {
  if (a.info.tier != b.info.tier) return a.info.tier < b.info.tier;
  if (a.expires_ms != b.expires_ms) return a.expires_ms > b.expires_ms;
  return a.info.holder < b.info.holder;
}

void SortReplicas(std::vector<Replica>* replicas, size_t max) {
  if (replicas->size() > max) {
    std::partial_sort(replicas->begin(), replicas->begin() + std::ptrdiff_t(max), replicas->end(),
                      ReplicaBefore);
    replicas->resize(max);
  } else {
    std::sort(replicas->begin(), replicas->end(), ReplicaBefore);
  }
}

}  // namespace kvcs::index
