// The seams between a publishing session and what it publishes: TrackSource (where a session
// finds the tracks and namespaces it serves; TrackStore in moqt_track_store.h is the in-memory
// one, a relay implements it over its cache), TrackListener (push notifications from a Track:
// "object added"; the session then pulls the objects when its streams can take them) and
// NamespaceListener (namespace changes of a TrackSource, for SUBSCRIBE_NAMESPACE).
//
// Listeners are not owned and must remove themselves before they die.
// THREADING: single-threaded, like the sessions that use them (one executor).
#ifndef KVCS_MOQT_SESSION_MOQT_TRACK_SOURCE_H_
#define KVCS_MOQT_SESSION_MOQT_TRACK_SOURCE_H_

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "moqt/moqt_error.h"
#include "moqt/moqt_messages.h"

namespace kvcs::moqt {

class Track;
struct PublishedObject;

// Push notifications from a Track. Called synchronously from the producer's call.
class TrackListener {
 public:
  virtual ~TrackListener() = default;
  virtual void OnObjectAdded(Track& track, const PublishedObject& object) = 0;
  // A relay's Track learnt more of what exists (Track::SetCompleteThrough / MarkComplete) or
  // failed (Track::Fail): fetch and fill streams waiting on it may go on or must end.
  virtual void OnTrackProgress(Track& track) {}
};

// Namespace changes of a TrackSource (for SUBSCRIBE_NAMESPACE).
class NamespaceListener {
 public:
  virtual ~NamespaceListener() = default;
  virtual void OnNamespaceAdded(const TrackNamespace& ns) = 0;
  virtual void OnNamespaceRemoved(const TrackNamespace& ns) = 0;
};

// A request for a track, as a session hands it to its TrackSource.
struct TrackQuery {
  MessageType type = MessageType::kSubscribe;  // kSubscribe, kFetch or kTrackStatus
  FullTrackName name;
  std::vector<AuthToken> tokens;  // the request's AUTHORIZATION TOKENs
  // kFetch: the requested range, so a relay can answer once it holds that much.
  std::optional<LocationFilter> fetch_range;
};

// The answer: a track, or the REQUEST_ERROR to send (a relay passes on its upstream's).
struct TrackResolution {
  std::shared_ptr<Track> track;
  RequestErrorCode error = RequestErrorCode::kDoesNotExist;
  std::string reason = "no such track";
};
using TrackResolved = std::function<void(TrackResolution)>;

// Where a session finds the tracks it publishes. A relay implements it over its cache.
class TrackSource {
 public:
  virtual ~TrackSource() = default;
  // nullptr: no such track (the session answers DOES_NOT_EXIST).
  virtual std::shared_ptr<Track> FindTrack(const FullTrackName& name) = 0;
  // The asynchronous form every incoming SUBSCRIBE, FETCH and TRACK_STATUS goes through: `done`
  // is called exactly once, now or later (a relay answers once its upstream has). The session
  // keeps the request pending meanwhile and drops a late answer when the requester has left
  // (stream reset, session closed). Default: FindTrack, answered at once.
  virtual void ResolveTrack(const TrackQuery& query, TrackResolved done) {
    TrackResolution r;
    r.track = FindTrack(query.name);
    done(std::move(r));
  }
  // Every namespace currently served (track namespaces and announced ones), deduplicated.
  virtual std::vector<TrackNamespace> ListNamespaces() = 0;
  virtual void AddNamespaceListener(NamespaceListener* l) = 0;
  virtual void RemoveNamespaceListener(NamespaceListener* l) = 0;
};

// True when `prefix` is a prefix (field-wise) of `ns`.
inline bool NamespaceHasPrefix(const TrackNamespace& ns, const TrackNamespace& prefix) {
  if (prefix.size() > ns.size()) return false;
  return std::equal(prefix.begin(), prefix.end(), ns.begin());
}

}  // namespace kvcs::moqt

#endif  // KVCS_MOQT_SESSION_MOQT_TRACK_SOURCE_H_
