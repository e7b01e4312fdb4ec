// TrackStore: the in-memory TrackSource (moqt_track_store.h).
#include "moqt_session/moqt_track_store.h"

#include <tuple>

#include "moqt/moqt_fields.h"

namespace kvcs::moqt {

Result<std::shared_ptr<Track>> TrackStore::CreateTrack(const FullTrackName& name,
                                                       const TrackOptions& options) {
  Status valid = ValidateFullTrackName(name);
  if (!valid.ok()) {
    return TrackErrorStatus(TrackError::kInvalidName, valid.message(), Code::kInvalidArgument);
  }
  if (tracks_.count(name))
    return TrackErrorStatus(TrackError::kExists, "track exists", Code::kAlreadyExists);
  if (tracks_.size() >= kMaxTracksPerStore) {
    return TrackErrorStatus(TrackError::kTooMany, "too many tracks", Code::kResourceExhausted);
  }
  bool new_ns = NamespaceRefs(name.track_namespace) == 0;
  TrackOptions o = options;
  if (!o.budget) o.budget = budget_;
  auto t = std::make_shared<Track>(name, std::move(o));
  tracks_[name] = t;
  track_ns_refs_[name.track_namespace]++;
  if (new_ns) NotifyAdded(name.track_namespace);
  return t;
}

void TrackStore::RemoveTrack(const FullTrackName& name) {
  if (!tracks_.erase(name)) return;
  auto it = track_ns_refs_.find(name.track_namespace);
  if (it != track_ns_refs_.end() && --it->second == 0) track_ns_refs_.erase(it);
  if (NamespaceRefs(name.track_namespace) == 0) NotifyRemoved(name.track_namespace);
}

Status TrackStore::AddAnnouncedNamespace(const TrackNamespace& ns) {
  size_t total = 0;
  Status valid = ValidateNamespace(ns, &total);
  if (!valid.ok())
    return TrackErrorStatus(TrackError::kInvalidName, valid.message(), Code::kInvalidArgument);
  if (announced_.count(ns))
    return TrackErrorStatus(TrackError::kExists, "namespace exists", Code::kAlreadyExists);
  if (announced_.size() >= kMaxAnnouncedNamespaces) {
    return TrackErrorStatus(TrackError::kTooMany, "too many namespaces", Code::kResourceExhausted);
  }
  bool new_ns = NamespaceRefs(ns) == 0;
  announced_.insert(ns);
  if (new_ns) NotifyAdded(ns);
  return Status::Ok();
}

void TrackStore::RemoveAnnouncedNamespace(const TrackNamespace& ns) {
  if (announced_.erase(ns) && NamespaceRefs(ns) == 0) NotifyRemoved(ns);
}

std::shared_ptr<Track> TrackStore::FindTrack(const FullTrackName& name) {
  auto it = tracks_.find(name);
  return it == tracks_.end() ? nullptr : it->second;
}

std::vector<TrackNamespace> TrackStore::ListNamespaces() {
  std::set<TrackNamespace> all(announced_);
  for (const auto& [ns, n] : track_ns_refs_) all.insert(ns);
  return {all.begin(), all.end()};
}

size_t TrackStore::NamespaceRefs(const TrackNamespace& ns) const {
  auto it = track_ns_refs_.find(ns);
  return announced_.count(ns) + (it == track_ns_refs_.end() ? 0 : it->second);
}

void TrackStore::NotifyAdded(const TrackNamespace& ns) {
  std::vector<NamespaceListener*> ls(ns_listeners_.begin(), ns_listeners_.end());
  for (NamespaceListener* l : ls) {
    if (ns_listeners_.count(l)) l->OnNamespaceAdded(ns);
  }
}

void TrackStore::NotifyRemoved(const TrackNamespace& ns) {
  std::vector<NamespaceListener*> ls(ns_listeners_.begin(), ns_listeners_.end());
  for (NamespaceListener* l : ls) {
    if (ns_listeners_.count(l)) l->OnNamespaceRemoved(ns);
  }
}

}  // namespace kvcs::moqt
