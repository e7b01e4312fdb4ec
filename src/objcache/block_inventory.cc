// Replaying the blocks a bucket holds. See block_inventory.h.
#include "objcache/block_inventory.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <vector>

#include "common/hex.h"
#include "objcache/block_layout.h"

namespace kvcs::objcache {
namespace {

constexpr std::string_view kLayoutRoot = "kvsp/";

// "kvsp/<scope>/<compat>/prefix/<anchor>": the scope, compat and anchor of a prefix record key.
struct PrefixRecordName {
  Digest scope_id{}, compat_id{}, anchor_key{};
};
std::optional<PrefixRecordName> ParsePrefixRecordKey(std::string_view key) {
  constexpr std::string_view kMid = "/prefix/";
  if (key.size() != 5 + 64 + 1 + 64 + kMid.size() + 64 || key.substr(0, 5) != kLayoutRoot ||
      key[69] != '/' || key.substr(134, kMid.size()) != kMid) {
    return std::nullopt;
  }
  PrefixRecordName n;
  const std::pair<size_t, Digest*> parts[3] = {
      {5, &n.scope_id}, {70, &n.compat_id}, {134 + kMid.size(), &n.anchor_key}};
  for (auto [at, out] : parts) {
    std::string_view hex = key.substr(at, 64);
    if (!IsLowerHex(hex, 64)) return std::nullopt;
    auto d = FromHexFixed<32>(hex);
    if (!d.ok()) return std::nullopt;
    *out = *d;
  }
  return n;
}

class Pass {
 public:
  Pass(store::ObjectStore& store, const std::string& bucket, BlockEvents& events,
       const BlockInventoryOptions& options, const PaceFn& pace)
      : store_(store), bucket_(bucket), events_(events), options_(options), pace_(pace) {}

  Result<BlockInventoryStats> Run() {
    store::ListOptions lo;
    lo.prefix = std::string(kLayoutRoot);
    for (;;) {
      auto page_or = store_.List(bucket_, lo);
      // No bucket yet: it holds nothing.
      if (!page_or.ok() && page_or.status().Is(store::StoreError::kNoSuchBucket)) break;
      KVCS_ASSIGN_OR_RETURN(store::ListResult page, std::move(page_or));
      for (const store::ObjectMeta& m : page.objects) {
        ++stats_.objects;
        if (!Visit(m.key)) {
          stats_.stopped = true;
          Flush();
          return stats_;
        }
      }
      if (!page.truncated) break;
      lo.start_after = page.next_marker;
    }
    Flush();
    return stats_;
  }

 private:
  // False when `pace` ended the pass.
  bool Visit(const std::string& key) {
    if (auto b = ParseBlockObjectKey(key)) {
      EnterGroup(b->scope_id, b->compat_id);
      if (last_key_ && *last_key_ == b->block_key) return true;  // another codec of it
      if (!Pace()) return false;
      auto view = ReadView(key);
      if (!view.ok() || view->header.compat_id != b->compat_id ||
          view->header.block_key != b->block_key || view->header.codec != b->codec) {
        ++stats_.skipped;
        return true;
      }
      last_key_ = b->block_key;
      StoredBlock s{b->scope_id,
                    b->compat_id,
                    b->block_key,
                    b->codec,
                    view->header.layer_first,
                    view->header.layer_count};
      if (held_.size() < options_.max_group_keys) {
        held_.push_back(s);  // in key order: the List is
      } else {
        group_overflow_ = true;
      }
      batch_.push_back(s);
      if (batch_.size() >= options_.max_batch) Flush();
      return true;
    }
    if (auto p = ParsePrefixRecordKey(key)) {
      EnterGroup(p->scope_id, p->compat_id);
      if (group_overflow_) {
        ++stats_.anchors_unchecked;
        return true;
      }
      if (!Pace()) return false;
      const StoredBlock* anchor = Held(p->anchor_key);
      auto rec = anchor ? ReadRecord(key) : Result<PrefixRecord>(Status(Code::kNotFound, ""));
      bool whole = rec.ok() && rec->compat_id == p->compat_id && rec->anchor_key == p->anchor_key &&
                   std::all_of(rec->block_keys.begin(), rec->block_keys.end(),
                               [&](const Digest& k) { return Held(k) != nullptr; });
      if (!whole) {
        ++stats_.skipped;
        return true;
      }
      Flush();
      events_.OnStored(bucket_, std::span<const StoredBlock>(anchor, 1), p->anchor_key);
      ++stats_.anchors;
      return true;
    }
    return true;  // not of the layout (e.g. a user's own object)
  }

  void EnterGroup(const Digest& scope, const Digest& compat) {
    if (group_ && group_->first == scope && group_->second == compat) return;
    Flush();
    group_.emplace(scope, compat);
    held_.clear();
    group_overflow_ = false;
    last_key_.reset();
  }

  void Flush() {
    if (batch_.empty()) return;
    events_.OnStored(bucket_, batch_, std::nullopt);
    stats_.blocks += batch_.size();
    batch_.clear();
  }

  const StoredBlock* Held(const Digest& key) const {
    auto it =
        std::lower_bound(held_.begin(), held_.end(), key,
                         [](const StoredBlock& b, const Digest& k) { return b.block_key < k; });
    return it != held_.end() && it->block_key == key ? &*it : nullptr;
  }

  bool Pace() {
    if (options_.max_blocks_per_s <= 0) return true;
    auto now = std::chrono::steady_clock::now();
    auto step = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(1.0 / options_.max_blocks_per_s));
    if (next_read_ < now) next_read_ = now;  // no burst after a slow stretch
    auto wait = next_read_ - now;
    next_read_ += step;
    return wait.count() <= 0 || pace_(wait);
  }

  Result<kvsp::ContainerView> ReadView(const std::string& key) {
    KVCS_ASSIGN_OR_RETURN(auto reader, store_.Open(bucket_, key));
    return ReadContainerView(*reader);
  }

  Result<PrefixRecord> ReadRecord(const std::string& key) {
    KVCS_ASSIGN_OR_RETURN(auto reader, store_.Open(bucket_, key));
    if (reader->meta().size > kMaxPrefixRecordBytes) return Corruption("prefix record too large");
    std::string text(reader->meta().size, '\0');
    KVCS_ASSIGN_OR_RETURN(
        size_t n, reader->ReadAt(
                      0, std::span<uint8_t>(reinterpret_cast<uint8_t*>(text.data()), text.size())));
    text.resize(n);
    return ParsePrefixRecord(text);
  }

  store::ObjectStore& store_;
  const std::string& bucket_;
  BlockEvents& events_;
  const BlockInventoryOptions& options_;
  const PaceFn& pace_;
  BlockInventoryStats stats_;
  std::optional<std::pair<Digest, Digest>> group_;  // (scope, compat) being walked
  std::vector<StoredBlock> held_;                   // its blocks so far, in key order
  bool group_overflow_ = false;
  std::optional<Digest> last_key_;
  std::vector<StoredBlock> batch_;
  std::chrono::steady_clock::time_point next_read_{};
};

}  // namespace

Result<BlockInventoryStats> ReplayStoredBlocks(store::ObjectStore& store, const std::string& bucket,
                                               BlockEvents& events,
                                               const BlockInventoryOptions& options,
                                               const PaceFn& pace) {
  return Pass(store, bucket, events, options, pace).Run();
}

}  // namespace kvcs::objcache
