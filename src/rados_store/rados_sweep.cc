// SweepOrphans (rados_sweep.h).
#include "rados_store/rados_sweep.h"

#include <rados/librados.h>

#include <ctime>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "rados_store/rados_layout.h"

namespace kvcs::rados_store {

namespace {

using store::StoreError;

// Every entry of `oid`'s omap (paged); an absent object has none.
Result<std::vector<std::pair<std::string, std::string>>> AllEntries(RadosIo& io,
                                                                    const std::string& oid) {
  std::vector<std::pair<std::string, std::string>> out;
  std::string after;
  for (;;) {
    auto page = io.OmapList(oid, after, "", 1000, StoreError::kNoSuchKey);
    if (!page.ok()) {
      if (page.status().Is(StoreError::kNoSuchKey)) return out;
      return page.status();
    }
    for (auto& e : page->entries) {
      after = e.first;
      out.push_back(std::move(e));
    }
    if (!page->more || page->entries.empty()) return out;
  }
}

// The versions bucket `b` refers to: every index entry's segments and every part record's.
Result<std::set<std::string>> Referenced(RadosIo& io, const BucketRecord& b) {
  std::set<std::string> out;
  for (uint32_t s = 0; s < b.shards; ++s) {
    KVCS_ASSIGN_OR_RETURN(auto entries, AllEntries(io, IndexShardObject(b.id, s)));
    for (const auto& [key, value] : entries) {
      KVCS_ASSIGN_OR_RETURN(ObjectRecord r, DecodeObject(key, value));
      for (const Segment& seg : r.segments) out.insert(seg.version);
    }
  }
  KVCS_ASSIGN_OR_RETURN(auto uploads, AllEntries(io, UploadsObject(b.id)));
  for (const auto& [key, value] : uploads) {
    if (key.rfind("p/", 0) != 0) continue;  // u/<upload id>: the upload record itself
    KVCS_ASSIGN_OR_RETURN(PartRecord p, DecodePart(value));
    out.insert(p.segment.version);
  }
  return out;
}

}  // namespace

Result<SweepStats> SweepOrphans(RadosIo& io, const SweepOptions& options) {
  SweepStats stats;
  // 1. The names, grouped by bucket id (stripes by version).
  struct BucketObjects {
    std::map<std::string, std::vector<std::string>> versions;  // version -> its stripes
    std::vector<std::string> others;                           // index shards, uploads
  };
  std::map<std::string, BucketObjects> by_bucket;
  {
    rados_list_ctx_t ctx = nullptr;
    int r = rados_nobjects_list_open(io.ioctx(), &ctx);
    if (r < 0) return RadosError(r, "listing the pool", StoreError::kNone);
    const char* entry = nullptr;
    while ((r = rados_nobjects_list_next(ctx, &entry, nullptr, nullptr)) == 0) {
      if (stats.examined >= options.max_objects) {
        stats.complete = false;
        break;
      }
      ++stats.examined;
      auto name = ParseObjectName(entry);
      if (!name) continue;  // kvcs.buckets, or not ours
      BucketObjects& b = by_bucket[name->bucket_id];
      if (name->stripe) {
        b.versions[name->version].emplace_back(entry);
      } else {
        b.others.emplace_back(entry);
      }
    }
    rados_nobjects_list_close(ctx);
    if (r < 0 && r != -ENOENT) return RadosError(r, "listing the pool", StoreError::kNone);
  }
  // 2. What the registry and each listed bucket's index and uploads refer to.
  KVCS_ASSIGN_OR_RETURN(auto registry, AllEntries(io, kBucketRegistryObject));
  std::map<std::string, BucketRecord> buckets;  // by id
  for (const auto& [name, value] : registry) {
    KVCS_ASSIGN_OR_RETURN(BucketRecord b, DecodeBucket(value));
    buckets[b.id] = std::move(b);
  }
  std::vector<std::vector<std::string>> groups;  // unreferenced; a group goes together
  for (auto& [id, objects] : by_bucket) {
    auto it = buckets.find(id);
    if (it == buckets.end()) {  // a bucket id no longer registered: all of it
      std::vector<std::string> all = std::move(objects.others);
      for (auto& [v, stripes] : objects.versions)
        for (auto& s : stripes) all.push_back(std::move(s));
      groups.push_back(std::move(all));
      continue;
    }
    if (objects.versions.empty()) continue;
    KVCS_ASSIGN_OR_RETURN(std::set<std::string> referenced, Referenced(io, it->second));
    for (auto& [v, stripes] : objects.versions) {
      if (!referenced.count(v)) groups.push_back(std::move(stripes));
    }
  }
  // 3. Each group goes when every object of it is older than the grace period.
  const double now = static_cast<double>(std::time(nullptr));
  std::vector<std::string> remove;
  for (auto& group : groups) {
    stats.unreferenced += group.size();
    bool old = true;
    for (const auto& oid : group) {
      uint64_t size = 0;
      time_t mtime = 0;
      int r = rados_stat(io.ioctx(), oid.c_str(), &size, &mtime);
      if (r == -ENOENT) continue;  // removed meanwhile (its publisher, another sweep)
      if (r < 0) return RadosError(r, "stat " + oid, StoreError::kNone);
      if (now - static_cast<double>(mtime) < options.grace_s) old = false;
    }
    if (!old) {
      stats.too_young += group.size();
      continue;
    }
    for (auto& oid : group) remove.push_back(std::move(oid));
  }
  KVCS_RETURN_IF_ERROR(io.RemoveAll(remove));
  stats.removed = remove.size();
  return stats;
}

}  // namespace kvcs::rados_store
