// A replica record of the KVSP Index Service (KVSP v1 as defined by the project, spec §7): who
// holds one block (or, for an anchor record, the whole prefix ending at one Anchor Key), on which
// tier, in which codecs, which layers, and until when (the lease).
//
// ReplicaInfo is what a holder registers; Replica adds the lease expiry. Tiers are ordered fastest
// first, and lookups list replicas in ReplicaBefore order. Value types; thread-compatible.
#ifndef KVCS_INDEX_REPLICA_H_
#define KVCS_INDEX_REPLICA_H_

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/crypto.h"
#include "common/status.h"
#include "kvsp/codec.h"

namespace kvcs::index {

// Where a holder keeps the block, fastest first: the order lookups list replicas in.
enum class Tier : uint8_t {
  kGpu = 0,          // "gpu": an engine's HBM (an engine or a relay next to it serves it)
  kCpu = 1,          // "cpu": host DRAM of an engine or a cache node
  kRelay = 2,        // "relay": a MOQT relay's cache
  kDisk = 3,         // "disk": local SSD of a cache node
  kObjectStore = 4,  // "object-store": a durable store (kvcs store, S3 behind it)
};
inline constexpr int kTierCount = 5;
std::string_view TierName(Tier t);
// Exact lowercase names above; anything else is kInvalidArgument.
Result<Tier> TierFromName(std::string_view name);

struct ReplicaInfo {
  std::string holder;  // "https://…" / "http://…" KVSP holder or "moqt://…" full KVCS namespace
  Tier tier = Tier::kObjectStore;
  std::vector<kvsp::Codec> codecs;  // distinct, in the holder's order of preference
  uint32_t layer_first = 0;
  uint32_t layer_count = 0;  // >= 1; the holder has every one of these layers of the block
  bool operator==(const ReplicaInfo&) const = default;
};

struct Replica {
  ReplicaInfo info;
  uint64_t expires_ms = 0;  // lease end, milliseconds since the Unix epoch
  bool operator==(const Replica&) const = default;
};

// Codecs as stored by the record stores: names joined by ',' ("raw,zstd"), and back (strict:
// registered names only, at least one).
std::string CodecListText(const std::vector<kvsp::Codec>& codecs);
Result<std::vector<kvsp::Codec>> ParseCodecListText(std::string_view text);

// A block record says the holder has the block `key`; an anchor record says the holder has every
// block of the prefix ending at the Anchor Key `key` (§7 anchors).
enum class RecordKind : uint8_t { kBlock = 0, kAnchor = 1 };

// One record as the registry and the record stores keep it.
struct Record {
  RecordKind kind = RecordKind::kBlock;
  Digest scope_id{};
  Digest compat_id{};
  Digest key{};
  Replica replica;
  bool operator==(const Record&) const = default;
};

// Lookup order: faster tier first, then the longer lease (fresher registration) first, then
// holder name, so that the order is total and the same on every index node.
bool ReplicaBefore(const Replica& a, const Replica& b);

// Sorts in ReplicaBefore order and keeps at most `max` replicas.
void SortReplicas(std::vector<Replica>* replicas, size_t max);

}  // namespace kvcs::index

#endif  // KVCS_INDEX_REPLICA_H_
