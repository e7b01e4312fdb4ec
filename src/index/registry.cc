// KVSP v1 as defined by the project: the Index Service's pure registry (§7).
#include "index/registry.h"

#include <algorithm>
#include <unordered_set>

#include "common/bytes.h"

namespace kvcs::index {
namespace {

std::string ScopeHolder(const Digest& scope_id, std::string_view holder) {
  std::string s(AsStringView(AsBytes(scope_id)));
  s.append(holder);
  return s;
}

std::string ScopeCompat(const Digest& scope_id, const Digest& compat_id) {
  std::string s(AsStringView(AsBytes(scope_id)));
  s.append(AsStringView(AsBytes(compat_id)));
  return s;
}

Status Invalid(IndexError e, std::string msg) { return IndexStatus(e, "index: " + std::move(msg)); }

}  // namespace

size_t Registry::SlotKeyHash::operator()(const SlotKey& k) const {
  // Every byte of the key counts (test and hostile keys may share long runs of bytes), and a
  // per-process seed keeps bucket choice unpredictable to a scope member who searches for keys
  // that collide (public-scope keys are computable by anyone).
  uint64_t h = seed ^ uint64_t(k.kind);
  auto mix = [&h](uint64_t w) {
    h ^= w;
    h *= 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
  };
  for (size_t i = 0; i < kDigestSize; i += 8) mix(LoadBe64(k.key.data() + i));
  mix(LoadBe64(k.scope_id.data()));
  mix(LoadBe64(k.compat_id.data()));
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return size_t(h);
}

namespace {
uint64_t NewHashSeed() {
  uint8_t seed[8];
  RandomBytes(seed, sizeof seed);
  return LoadBe64(seed);
}
}  // namespace

Registry::Registry(RegistryLimits limits)
    : limits_(limits), hash_seed_(NewHashSeed()), slots_(64, SlotKeyHash{hash_seed_}) {}
Registry::~Registry() = default;

std::vector<Record> Registry::RecordsOf(const RegisterRequest& r, uint64_t now_ms) {
  std::vector<Record> out;
  out.reserve(r.block_keys.size() + 1);
  Replica rep{r.replica, now_ms + r.ttl_ms};
  for (const Digest& k : r.block_keys) {
    out.push_back({RecordKind::kBlock, r.scope_id, r.compat_id, k, rep});
  }
  if (r.anchor_key)
    out.push_back({RecordKind::kAnchor, r.scope_id, r.compat_id, *r.anchor_key, rep});
  return out;
}

Status Registry::CheckBounds(const std::vector<SlotKey>& slots, const Digest& scope_id,
                             const std::string& holder, uint64_t now_ms) const {
  size_t added = 0;
  for (const SlotKey& sk : slots) {
    auto it = slots_.find(sk);
    if (it == slots_.end()) {
      ++added;
      continue;
    }
    size_t others_live = 0;
    bool mine = false;
    for (const Entry& e : it->second) {
      if (e.info->holder == holder) {
        mine = true;
      } else if (e.expires_ms > now_ms) {
        ++others_live;
      }
    }
    if (!mine) ++added;
    if (!mine && others_live >= limits_.max_holders_per_key) {
      return Invalid(IndexError::kKeyFull, "a key already has " +
                                               std::to_string(limits_.max_holders_per_key) +
                                               " holders (the limit)");
    }
  }
  if (HolderRecords(scope_id, holder) + added > limits_.max_records_per_holder) {
    return Invalid(IndexError::kHolderFull,
                   "the holder would have more than " +
                       std::to_string(limits_.max_records_per_holder) +
                       " records in this scope; withdraw some or let them expire");
  }
  return Status::Ok();
}

std::vector<Registry::SlotKey> Registry::SlotsOf(const RegisterRequest& r) const {
  std::vector<SlotKey> slots;
  slots.reserve(r.block_keys.size() + 1);
  std::unordered_set<SlotKey, SlotKeyHash> seen(r.block_keys.size() + 1, SlotKeyHash{hash_seed_});
  auto add = [&](RecordKind kind, const Digest& key) {
    SlotKey sk{kind, r.scope_id, r.compat_id, key};
    if (seen.insert(sk).second) slots.push_back(sk);
  };
  for (const Digest& k : r.block_keys) add(RecordKind::kBlock, k);
  if (r.anchor_key) add(RecordKind::kAnchor, *r.anchor_key);
  return slots;
}

Status Registry::CheckRegister(const RegisterRequest& r, uint64_t now_ms) const {
  KVCS_RETURN_IF_ERROR(ValidateReplicaInfo(r.replica));
  if (r.block_keys.empty() || r.block_keys.size() > kMaxKeysPerRequest) {
    return Invalid(IndexError::kTooMany,
                   "a registration has 1.." + std::to_string(kMaxKeysPerRequest) + " keys");
  }
  if (r.ttl_ms == 0 || r.ttl_ms > kMaxTtlMs) {
    return Invalid(IndexError::kOutOfRange, "ttl_ms is outside 1.." + std::to_string(kMaxTtlMs));
  }
  return CheckBounds(SlotsOf(r), r.scope_id, r.replica.holder, now_ms);
}

Status Registry::Register(const RegisterRequest& r, uint64_t now_ms) {
  KVCS_RETURN_IF_ERROR(CheckRegister(r, now_ms));
  auto info = std::make_shared<const ReplicaInfo>(r.replica);
  for (const SlotKey& sk : SlotsOf(r)) Upsert(sk, info, now_ms + r.ttl_ms);
  return Status::Ok();
}

Status Registry::Restore(const Record& rec, uint64_t now_ms) {
  if (rec.replica.expires_ms <= now_ms) return Status::Ok();
  KVCS_RETURN_IF_ERROR(ValidateReplicaInfo(rec.replica.info));
  SlotKey sk{rec.kind, rec.scope_id, rec.compat_id, rec.key};
  KVCS_RETURN_IF_ERROR(CheckBounds({sk}, rec.scope_id, rec.replica.info.holder, now_ms));
  Upsert(sk, std::make_shared<const ReplicaInfo>(rec.replica.info), rec.replica.expires_ms);
  return Status::Ok();
}

void Registry::CountRecord(const SlotKey& slot, std::string_view holder, int delta) {
  auto bump = [delta](std::unordered_map<std::string, size_t>& m, std::string key) {
    if (delta > 0) {
      ++m[key];
      return;
    }
    auto it = m.find(key);
    if (it != m.end() && --it->second == 0) m.erase(it);
  };
  bump(holder_records_, ScopeHolder(slot.scope_id, holder));
  bump(compat_records_, ScopeCompat(slot.scope_id, slot.compat_id));
  records_ = delta > 0 ? records_ + 1 : records_ - 1;
}

void Registry::Upsert(const SlotKey& sk, const std::shared_ptr<const ReplicaInfo>& info,
                      uint64_t expires_ms) {
  Slot& slot = slots_[sk];
  for (Entry& e : slot) {
    if (e.info->holder == info->holder) {
      expiry_.erase(e.expiry);
      e.info = info;
      e.expires_ms = expires_ms;
      e.expiry = expiry_.emplace(expires_ms, ExpiryRef{sk, info->holder});
      return;
    }
  }
  slot.push_back({info, expires_ms, expiry_.emplace(expires_ms, ExpiryRef{sk, info->holder})});
  CountRecord(sk, info->holder, +1);
}

bool Registry::Remove(const SlotKey& sk, std::string_view holder) {
  auto it = slots_.find(sk);
  if (it == slots_.end()) return false;
  Slot& slot = it->second;
  for (size_t i = 0; i < slot.size(); ++i) {
    if (slot[i].info->holder != holder) continue;
    expiry_.erase(slot[i].expiry);
    CountRecord(sk, holder, -1);
    slot[i] = std::move(slot.back());
    slot.pop_back();
    if (slot.empty()) slots_.erase(it);
    return true;
  }
  return false;
}

size_t Registry::Withdraw(const WithdrawRequest& r) {
  size_t removed = 0;
  for (const Digest& k : r.block_keys) {
    removed += Remove({RecordKind::kBlock, r.scope_id, r.compat_id, k}, r.holder);
    removed += Remove({RecordKind::kAnchor, r.scope_id, r.compat_id, k}, r.holder);
  }
  return removed;
}

size_t Registry::Expire(uint64_t now_ms) {
  size_t dropped = 0;
  while (!expiry_.empty() && expiry_.begin()->first <= now_ms) {
    ExpiryRef ref = expiry_.begin()->second;  // a copy: Remove erases the node
    if (!Remove(ref.slot, ref.holder)) expiry_.erase(expiry_.begin());  // never: kept in step
    ++dropped;
  }
  return dropped;
}

bool Registry::HasCompat(const Digest& scope_id, const Digest& compat_id) const {
  return compat_records_.count(ScopeCompat(scope_id, compat_id)) != 0;
}

Status Registry::CheckCompat(const Digest& scope_id, const Digest& compat_id) const {
  if (HasCompat(scope_id, compat_id)) return Status::Ok();
  return IndexStatus(IndexError::kUnknownCompat, "index: no record under this compat_id");
}

size_t Registry::HolderRecords(const Digest& scope_id, std::string_view holder) const {
  auto it = holder_records_.find(ScopeHolder(scope_id, holder));
  return it == holder_records_.end() ? 0 : it->second;
}

std::vector<Replica> Registry::LiveReplicas(const Slot& slot, uint64_t now_ms, size_t max) const {
  std::vector<Replica> out;
  for (const Entry& e : slot) {
    if (e.expires_ms > now_ms) out.push_back({*e.info, e.expires_ms});
  }
  SortReplicas(&out, max);
  return out;
}

Result<LookupResponse> Registry::Lookup(const LookupRequest& r, uint64_t now_ms) const {
  KVCS_RETURN_IF_ERROR(CheckCompat(r.scope_id, r.compat_id));
  LookupResponse out;
  size_t max = std::clamp<size_t>(r.max_replicas, 1, kMaxReplicasPerKey);
  for (const Digest& k : r.block_keys) {
    auto it = slots_.find({RecordKind::kBlock, r.scope_id, r.compat_id, k});
    if (it == slots_.end()) break;
    std::vector<Replica> live = LiveReplicas(it->second, now_ms, max);
    if (live.empty()) break;
    out.entries.push_back({k, std::move(live)});
  }
  out.matched = uint32_t(out.entries.size());
  return out;
}

Result<AnchorsResponse> Registry::Anchors(const AnchorsRequest& r, uint64_t now_ms,
                                          size_t max_replicas) const {
  KVCS_RETURN_IF_ERROR(CheckCompat(r.scope_id, r.compat_id));
  AnchorsResponse out;
  auto it = slots_.find({RecordKind::kAnchor, r.scope_id, r.compat_id, r.anchor_key});
  if (it != slots_.end()) {
    out.replicas =
        LiveReplicas(it->second, now_ms, std::min<size_t>(max_replicas, kMaxReplicasPerKey));
  }
  return out;
}

}  // namespace kvcs::index
