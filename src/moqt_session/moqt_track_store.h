// TrackStore: the in-memory TrackSource (moqt_track_source.h). It holds the tracks created by
// the local publisher (shared_ptr<Track>, moqt_track.h) plus namespaces announced to us
// (PUBLISH_NAMESPACE) that we pass on to SUBSCRIBE_NAMESPACE subscribers, and tells its
// NamespaceListeners when a namespace appears or disappears. Bounded by kMaxTracksPerStore and
// kMaxAnnouncedNamespaces (moqt_session_limits.h). One store serves many sessions.
// THREADING: single-threaded, like the sessions that use it (one executor).
#ifndef KVCS_MOQT_SESSION_MOQT_TRACK_STORE_H_
#define KVCS_MOQT_SESSION_MOQT_TRACK_STORE_H_

#include <map>
#include <memory>
#include <set>
#include <tuple>
#include <vector>

#include "common/status.h"
#include "moqt/moqt_messages.h"
#include "moqt_session/moqt_byte_budget.h"
#include "moqt_session/moqt_track.h"
#include "moqt_session/moqt_track_source.h"

namespace kvcs::moqt {

// The in-memory TrackSource: tracks created by the local publisher plus namespaces announced to
// us (PUBLISH_NAMESPACE) that we pass on to SUBSCRIBE_NAMESPACE subscribers.
class TrackStore : public TrackSource {
 public:
  TrackStore() = default;
  // Every track created without its own TrackOptions::budget charges `budget`.
  explicit TrackStore(std::shared_ptr<ByteBudget> budget) : budget_(std::move(budget)) {}
  TrackStore(const TrackStore&) = delete;
  TrackStore& operator=(const TrackStore&) = delete;

  Result<std::shared_ptr<Track>> CreateTrack(const FullTrackName& name,
                                             const TrackOptions& options = {});
  void RemoveTrack(const FullTrackName& name);
  size_t track_count() const { return tracks_.size(); }

  // Namespaces served without local tracks (e.g. announced by a peer).
  Status AddAnnouncedNamespace(const TrackNamespace& ns);
  void RemoveAnnouncedNamespace(const TrackNamespace& ns);

  std::shared_ptr<Track> FindTrack(const FullTrackName& name) override;
  std::vector<TrackNamespace> ListNamespaces() override;
  void AddNamespaceListener(NamespaceListener* l) override { ns_listeners_.insert(l); }
  void RemoveNamespaceListener(NamespaceListener* l) override { ns_listeners_.erase(l); }

 private:
  struct NameLess {
    bool operator()(const FullTrackName& a, const FullTrackName& b) const {
      return std::tie(a.track_namespace, a.name) < std::tie(b.track_namespace, b.name);
    }
  };
  size_t NamespaceRefs(const TrackNamespace& ns) const;
  void NotifyAdded(const TrackNamespace& ns);
  void NotifyRemoved(const TrackNamespace& ns);

  std::shared_ptr<ByteBudget> budget_;  // may be null
  std::map<FullTrackName, std::shared_ptr<Track>, NameLess> tracks_;
  // Tracks per namespace, so namespace bookkeeping is O(log n) per track instead of a scan of
  // every track (a store holds up to kMaxTracksPerStore).
  std::map<TrackNamespace, size_t> track_ns_refs_;
  std::set<TrackNamespace> announced_;
  std::set<NamespaceListener*> ns_listeners_;
};

}  // namespace kvcs::moqt

#endif  // KVCS_MOQT_SESSION_MOQT_TRACK_STORE_H_
