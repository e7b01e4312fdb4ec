// RelayCache: the relay's tracks, grouped into publications (one namespace = one publication: a
// KVCS cache is useless in part), all charging one ByteBudget. Publications are evicted whole,
// least recently used first, and only when nothing serves from them: a publication is in use
// while any of its tracks is held by someone besides the cache (a session serving a subscriber
// or fetch, an upstream feed filling it). Tracks never evict their own groups (keep_whole, and no
// byte bound of their own: the budget is the only one): when
// the budget is full and nothing can be evicted, the write is refused and the caller ends that
// track cleanly.
// Pure logic: the clock is passed in. THREADING: single-threaded (the relay's executor).
#ifndef KVCS_RELAY_RELAY_CACHE_H_
#define KVCS_RELAY_RELAY_CACHE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "moqt/moqt_messages.h"
#include "moqt_session/moqt_byte_budget.h"
#include "moqt_session/moqt_track.h"

namespace kvcs::relay {

// A relay holds few, large publications (a KVCS cache is tens of MiB to GiB); 4,096 bounds the
// bookkeeping, and a KVCS publication has a handful of tracks (k, v, encodings, manifests per
// segment); 256 leaves room for many segments.
inline constexpr size_t kDefaultMaxPublications = 4096;
inline constexpr size_t kMaxTracksPerPublication = 256;

class RelayCache {
 public:
  RelayCache(uint64_t budget_bytes, size_t max_publications = kDefaultMaxPublications);
  RelayCache(const RelayCache&) = delete;
  RelayCache& operator=(const RelayCache&) = delete;

  // The cached track, or nullptr; a hit counts as a use of its publication.
  std::shared_ptr<moqt::Track> Find(const moqt::FullTrackName& name, uint64_t now_ms);
  // A new, empty track charging the budget, never evicting its own groups. Errors:
  // kAlreadyExists, kResourceExhausted (publication or track bounds, after trying to evict).
  // Publications evicted to make room are appended to `evicted` (may be null).
  Result<std::shared_ptr<moqt::Track>> Create(const moqt::FullTrackName& name,
                                              moqt::TrackOptions options, uint64_t now_ms,
                                              std::vector<moqt::TrackNamespace>* evicted);
  // Drops one track (a feed that failed); its publication goes when it has no tracks left.
  void Remove(const moqt::FullTrackName& name);
  // Evicts least-recently-used publications not in use until `bytes` more fit in the budget.
  // Returns whether they fit; the namespaces evicted are appended to `evicted`.
  bool MakeRoom(uint64_t bytes, std::vector<moqt::TrackNamespace>* evicted);

  // Whether any track of the publication `ns` is held by someone besides the cache.
  bool InUse(const moqt::TrackNamespace& ns) const;
  bool Contains(const moqt::TrackNamespace& ns) const { return pubs_.count(ns) != 0; }
  size_t publication_count() const { return pubs_.size(); }
  const std::shared_ptr<moqt::ByteBudget>& budget() const { return budget_; }
  uint64_t evictions() const { return evictions_; }
  uint64_t evicted_bytes() const { return evicted_bytes_; }
  // Every cached track, read-only (inspection: tests, diagnostics); no use is recorded.
  void ForEachTrack(const std::function<void(const moqt::Track&)>& f) const {
    for (const auto& [ns, p] : pubs_) {
      for (const auto& [name, t] : p.tracks) f(*t);
    }
  }

 private:
  struct Publication {
    std::map<std::string, std::shared_ptr<moqt::Track>> tracks;
    uint64_t last_used_ms = 0;
    uint64_t seq = 0;  // creation order: breaks ties of last_used_ms
  };
  // MakeRoom's request for one publication slot rather than bytes.
  static constexpr uint64_t kFreeOneSlot = UINT64_MAX;

  std::shared_ptr<moqt::ByteBudget> budget_;
  size_t max_publications_;
  std::map<moqt::TrackNamespace, Publication> pubs_;
  uint64_t next_seq_ = 0;
  uint64_t evictions_ = 0;
  uint64_t evicted_bytes_ = 0;
};

}  // namespace kvcs::relay

#endif  // KVCS_RELAY_RELAY_CACHE_H_
