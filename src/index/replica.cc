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

std::string CodecListText(const std::vector<kvsp::Codec>& codecs) {
  std::string out;
  for (kvsp::Codec c : codecs) {
    if (!out.empty()) out.push_back(',');
    out.append(kvsp::CodecName(c));
  }
  return out;
}

Result<std::vector<kvsp::Codec>> ParseCodecListText(std::string_view text) {
  std::vector<kvsp::Codec> out;
  if (text.empty()) return InvalidArgument("empty codec list");
  while (true) {
    size_t comma = text.find(',');
    KVCS_ASSIGN_OR_RETURN(kvsp::Codec c, kvsp::CodecFromName(text.substr(0, comma)));
    out.push_back(c);
    if (comma == std::string_view::npos) return out;
    text = text.substr(comma + 1);
  }
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
