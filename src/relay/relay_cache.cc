// RelayCache: publications evicted whole, LRU, never in use (relay_cache.h).
#include "relay/relay_cache.h"

#include <algorithm>
#include <limits>
#include <tuple>

namespace kvcs::relay {

RelayCache::RelayCache(uint64_t budget_bytes, size_t max_publications)
    : budget_(std::make_shared<moqt::ByteBudget>(budget_bytes)),
      max_publications_(max_publications) {}

std::shared_ptr<moqt::Track> RelayCache::Find(const moqt::FullTrackName& name, uint64_t now_ms) {
  auto p = pubs_.find(name.track_namespace);
  if (p == pubs_.end()) return nullptr;
  auto t = p->second.tracks.find(name.name);
  if (t == p->second.tracks.end()) return nullptr;
  p->second.last_used_ms = std::max(p->second.last_used_ms, now_ms);
  return t->second;
}

Result<std::shared_ptr<moqt::Track>> RelayCache::Create(
    const moqt::FullTrackName& name, moqt::TrackOptions options, uint64_t now_ms,
    std::vector<moqt::TrackNamespace>* evicted) {
  auto p = pubs_.find(name.track_namespace);
  if (p != pubs_.end()) {
    if (p->second.tracks.count(name.name))
      return Status{Code::kAlreadyExists, "track already cached", 0};
    if (p->second.tracks.size() >= kMaxTracksPerPublication) {
      return ResourceExhausted("publication has " + std::to_string(kMaxTracksPerPublication) +
                               " tracks (the bound per publication)");
    }
  } else if (pubs_.size() >= max_publications_ && !MakeRoom(kFreeOneSlot, evicted)) {
    return ResourceExhausted("the relay holds " + std::to_string(max_publications_) +
                             " publications, all in use");
  }
  // Room for the track's first group and object records at least.
  if (!MakeRoom(moqt::kTrackGroupOverheadBytes + moqt::kTrackObjectOverheadBytes, evicted)) {
    return ResourceExhausted("relay cache full: every cached publication is in use");
  }
  options.budget = budget_;
  options.keep_whole = true;
  // Whole tracks: the budget is their only bound (a track's own default, 1 GiB, would evict the
  // first layers of a 64K-token KV track, 4 GiB).
  options.max_bytes = std::numeric_limits<uint64_t>::max();
  auto track = std::make_shared<moqt::Track>(name, std::move(options));
  Publication& pub = pubs_[name.track_namespace];
  if (pub.tracks.empty()) pub.seq = next_seq_++;
  pub.last_used_ms = std::max(pub.last_used_ms, now_ms);
  pub.tracks[name.name] = track;
  return track;
}

void RelayCache::Remove(const moqt::FullTrackName& name) {
  auto p = pubs_.find(name.track_namespace);
  if (p == pubs_.end()) return;
  p->second.tracks.erase(name.name);
  if (p->second.tracks.empty()) pubs_.erase(p);
}

bool RelayCache::InUse(const moqt::TrackNamespace& ns) const {
  auto p = pubs_.find(ns);
  if (p == pubs_.end()) return false;
  for (const auto& [n, t] : p->second.tracks) {
    if (t.use_count() > 1) return true;
  }
  return false;
}

bool RelayCache::MakeRoom(uint64_t bytes, std::vector<moqt::TrackNamespace>* evicted) {
  const bool want_slot = bytes == kFreeOneSlot;
  if (!want_slot && budget_->Fits(bytes, 0)) return true;
  // Idle publications, least recently used first.
  std::vector<std::tuple<uint64_t, uint64_t, moqt::TrackNamespace>> idle;
  for (const auto& [ns, p] : pubs_) {
    if (!InUse(ns)) idle.emplace_back(p.last_used_ms, p.seq, ns);
  }
  std::sort(idle.begin(), idle.end());
  for (const auto& [used, seq, ns] : idle) {
    const uint64_t before = budget_->used();
    pubs_.erase(ns);  // the tracks die here and release their charge
    evictions_++;
    evicted_bytes_ += before - budget_->used();
    if (evicted) evicted->push_back(ns);
    if (want_slot || budget_->Fits(bytes, 0)) return true;
  }
  return false;
}

}  // namespace kvcs::relay
