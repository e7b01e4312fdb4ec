// The KVSP Index Service's registry (KVSP v1 as defined by the project, spec §7): an in-memory,
// pure map of replica records per (scope, compat, block key) and per (scope, compat, anchor key),
// each with a lease. No I/O and no clock of its own: every call that depends on time takes
// `now_ms` (milliseconds since the Unix epoch). A record is live while now_ms < expires_ms.
//
//   Register  adds or renews the holder's record for each key (and the anchor), all or nothing.
//   Withdraw  removes the holder's records for the keys (and anchor records of the same keys).
//   Lookup    longest prefix: matched = how many leading keys have a live record; the entries
//             list up to max_replicas replicas per matched key in ReplicaBefore order.
//   Anchors   the live anchor records of one Anchor Key.
//   Expire    drops records whose lease ended.
//
// Cost: Lookup and Withdraw are O(keys asked · holders per key); Register adds O(log n) per key
// for the expiry index; Expire costs O(log n) per record dropped. Nothing scans the whole index.
// A record counts as complete: holders register a block only once they hold all of its layers in
// the registered range (docs/protocols/kvsp-index.md).
//
// Not thread-safe; the service serializes calls.
#ifndef KVCS_INDEX_REGISTRY_H_
#define KVCS_INDEX_REGISTRY_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/crypto.h"
#include "common/status.h"
#include "index/index_wire.h"
#include "index/replica.h"

namespace kvcs::index {

// Holders of one block: an engine pool, a few caches and relays, the store. 64 bounds the work
// of one key in a lookup and stops one scope member from growing a key without end.
inline constexpr size_t kMaxHoldersPerKey = 64;
// Records of one holder in one scope: 4 Mi blocks is ~64 Ki prompts of 64 blocks, more than one
// cache node holds; it stops one holder from filling the index.
inline constexpr size_t kMaxRecordsPerHolder = size_t{4} << 20;

struct RegistryLimits {
  size_t max_holders_per_key = kMaxHoldersPerKey;
  size_t max_records_per_holder = kMaxRecordsPerHolder;
};

class Registry {
 public:
  explicit Registry(RegistryLimits limits = {});
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Adds or renews the records of `r` with expires_ms = now_ms + r.ttl_ms. Repeated keys count
  // once. Errors (nothing changes): kInvalidArgument for an invalid request; kResourceExhausted
  // (kKeyFull, kHolderFull) when a bound would be exceeded.
  Status Register(const RegisterRequest& r, uint64_t now_ms);
  // The checks of Register without the change: OK exactly when Register(r, now_ms) would be.
  Status CheckRegister(const RegisterRequest& r, uint64_t now_ms) const;
  // The records Register(r, now_ms) writes, in key order then the anchor (for record stores).
  static std::vector<Record> RecordsOf(const RegisterRequest& r, uint64_t now_ms);
  // Adds or replaces one record with its absolute expiry (reloading a store). An expired record
  // is skipped (OK). Same bounds as Register.
  Status Restore(const Record& rec, uint64_t now_ms);
  // Removes the holder's block and anchor records of each key; returns how many were removed.
  size_t Withdraw(const WithdrawRequest& r);

  // Errors: kNotFound (kUnknownCompat) when the scope has no record under compat_id.
  Result<LookupResponse> Lookup(const LookupRequest& r, uint64_t now_ms) const;
  // Up to max_replicas anchor records. Errors: as Lookup.
  Result<AnchorsResponse> Anchors(const AnchorsRequest& r, uint64_t now_ms,
                                  size_t max_replicas = kMaxReplicasPerKey) const;
  // True while the scope has a record (live or not yet expired by Expire) under compat_id.
  bool HasCompat(const Digest& scope_id, const Digest& compat_id) const;

  // Drops every record with expires_ms <= now_ms; returns how many.
  size_t Expire(uint64_t now_ms);

  size_t size() const { return records_; }
  // Records of `holder` in `scope_id` (live or not yet expired).
  size_t HolderRecords(const Digest& scope_id, std::string_view holder) const;

 private:
  struct SlotKey {
    RecordKind kind;
    Digest scope_id, compat_id, key;
    bool operator==(const SlotKey&) const = default;
  };
  struct SlotKeyHash {
    uint64_t seed = 0;
    size_t operator()(const SlotKey& k) const;
  };
  struct ExpiryRef {
    SlotKey slot;
    std::string holder;
  };
  using ExpiryIndex = std::multimap<uint64_t, ExpiryRef>;
  struct Entry {
    std::shared_ptr<const ReplicaInfo> info;
    uint64_t expires_ms;
    ExpiryIndex::iterator expiry;
  };
  using Slot = std::vector<Entry>;  // one per holder; at most max_holders_per_key

  std::vector<SlotKey> SlotsOf(const RegisterRequest& r) const;
  // Checks the bounds for writing `holder` into each slot; nothing changes.
  Status CheckBounds(const std::vector<SlotKey>& slots, const Digest& scope_id,
                     const std::string& holder, uint64_t now_ms) const;
  void Upsert(const SlotKey& slot, const std::shared_ptr<const ReplicaInfo>& info,
              uint64_t expires_ms);
  bool Remove(const SlotKey& slot, std::string_view holder);
  void CountRecord(const SlotKey& slot, std::string_view holder, int delta);
  std::vector<Replica> LiveReplicas(const Slot& slot, uint64_t now_ms, size_t max) const;
  Status CheckCompat(const Digest& scope_id, const Digest& compat_id) const;

  RegistryLimits limits_;
  uint64_t hash_seed_;
  std::unordered_map<SlotKey, Slot, SlotKeyHash> slots_;
  ExpiryIndex expiry_;
  std::unordered_map<std::string, size_t> holder_records_;  // scope_id bytes + holder
  std::unordered_map<std::string, size_t> compat_records_;  // scope_id bytes + compat_id bytes
  size_t records_ = 0;
};

}  // namespace kvcs::index

#endif  // KVCS_INDEX_REGISTRY_H_
