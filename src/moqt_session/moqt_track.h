// Track and TrackStore: what a publisher has published, kept in memory so that sessions can
// serve live delivery, fills and fetches from it. Separate from the session on purpose: one
// store serves many sessions (a server), and a relay can feed a Track from an upstream
// subscription and serve it downstream.
//
// A Track holds whole groups in a bounded map (TrackOptions::max_groups / max_bytes; the oldest
// groups are evicted first, never the newest). Objects within a group have ascending Object IDs
// and all belong to subgroup 0 (KVCS and most media tracks need one subgroup per group). A
// finished group ends with an End of Group status object; a finished track ends with an End of
// Track status object at {last group + 1, 0} (docs/protocols/moqt-session.md, open point 7).
//
// Sessions observe a Track through TrackListener (push: "object added"), then pull objects with
// Find()/NextInGroup() when their streams can take them — a slow subscriber never makes the store
// grow; if the objects it still needs were evicted, its stream is reset (TOO_FAR_BEHIND).
//
// TrackSource is the seam the session uses to find tracks and namespaces; TrackStore is the
// in-memory implementation. Lifetimes: Tracks are shared_ptr (a session keeps the tracks it
// serves alive); listeners are not owned and must remove themselves before they die.
// THREADING: single-threaded, like the sessions that use them (one executor).
#ifndef KVCS_MOQT_SESSION_MOQT_TRACK_H_
#define KVCS_MOQT_SESSION_MOQT_TRACK_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "common/bytes.h"
#include "common/status.h"
#include "moqt/moqt_messages.h"
#include "moqt_session/moqt_session_limits.h"

namespace kvcs::moqt {

// Typed details of Status values returned by Track/TrackStore.
enum class TrackError {
  kNone = 0,
  kTrackEnded = 1,      // the track already has End of Track
  kNoOpenGroup = 2,     // AppendObject/EndGroup without StartGroup
  kGroupNotAscending,   // a group ID not above every earlier group
  kObjectNotAscending,  // an object ID not above the previous one in its group
  kGroupEnded,          // an object after End of Group
  kTooLarge,            // one object larger than the track's byte budget
  kExists,              // CreateTrack of an existing name / duplicate namespace
  kTooMany,             // store bounds (tracks, namespaces)
  kInvalidName,         // namespace/name outside draft limits
};

struct TrackOptions {
  uint8_t publisher_priority = 128;                 // DEFAULT_PUBLISHER_PRIORITY
  GroupOrder group_order = GroupOrder::kAscending;  // DEFAULT_PUBLISHER_GROUP_ORDER
  size_t max_groups = kDefaultMaxGroupsPerTrack;
  uint64_t max_bytes = kDefaultMaxBytesPerTrack;  // payload bytes kept
  // Live objects go out as OBJECT_DATAGRAMs when the session negotiated datagrams and the object
  // fits; otherwise (and for fills and fetches) on streams.
  bool prefer_datagrams = false;
  // Extra track properties (ascending types) sent in SUBSCRIBE_OK, FETCH_OK, TRACK_STATUS_OK.
  Properties track_properties;
};

// One stored object. The payload is shared (immutable, never copied per subscriber).
struct PublishedObject {
  Location location;
  uint64_t subgroup_id = 0;
  uint8_t publisher_priority = 128;
  ObjectStatus status = ObjectStatus::kNormal;
  Properties properties;
  std::shared_ptr<const Bytes> payload;  // never null; empty for status objects
};

class Track;

// Push notifications from a Track. Called synchronously from the producer's call.
class TrackListener {
 public:
  virtual ~TrackListener() = default;
  virtual void OnObjectAdded(Track& track, const PublishedObject& object) = 0;
};

class Track {
 public:
  Track(FullTrackName name, TrackOptions options);
  Track(const Track&) = delete;
  Track& operator=(const Track&) = delete;

  const FullTrackName& name() const { return name_; }
  const TrackOptions& options() const { return options_; }

  // ---- producer API (an original publisher): group by group, ascending object IDs.
  // Opens group `group_id` (REQUIRES above every earlier group). An open group is ended first.
  Status StartGroup(uint64_t group_id);
  // Appends the next object (ID = previous + 1, first 0) of the open group.
  Result<Location> AppendObject(ByteSpan payload, Properties properties = {});
  // The same without copying: the Track keeps `payload` (REQUIRES non-null) as the object's
  // bytes. For producers that already hold each object in its own buffer.
  Result<Location> AppendObject(std::shared_ptr<const Bytes> payload, Properties properties = {});
  // The same, taking the producer's buffer by move (no copy of the bytes).
  Result<Location> AppendObject(Bytes&& payload, Properties properties = {});
  // Appends End of Group to the open group and closes it.
  Status EndGroup();
  // Ends the open group (if any) and appends End of Track at {last group + 1, 0}.
  Status EndTrack();

  // ---- general insertion (relays): any object whose group is still accepted, ascending IDs
  // within its group, nothing after End of Group / End of Track.
  Status AddObject(PublishedObject object);

  // ---- queries (sessions)
  // Largest Location published (status objects included); nullopt before the first object.
  std::optional<Location> largest() const { return largest_; }
  // The largest Normal object (what a fetch can return); nullopt if none.
  std::optional<Location> largest_normal() const;
  bool ended() const { return end_of_track_.has_value(); }
  std::optional<Location> end_of_track() const { return end_of_track_; }
  const PublishedObject* Find(const Location& loc) const;
  // The first object of `group` with Object ID >= min_object, or nullptr.
  const PublishedObject* NextInGroup(uint64_t group, uint64_t min_object) const;
  // Whether `group` has ended (End of Group / End of Track seen, or a later group started while
  // it was open with StartGroup()).
  bool GroupEnded(uint64_t group) const;
  // The next retained group strictly after `group` in `order` (nullopt: none yet).
  std::optional<uint64_t> NextGroup(std::optional<uint64_t> after, GroupOrder order) const;
  // The last Normal object of `group`, or nullopt.
  std::optional<uint64_t> LastNormalObject(uint64_t group) const;
  // The oldest group still retained (nullopt when empty); groups below were evicted.
  std::optional<uint64_t> oldest_group() const;
  bool GroupEvicted(uint64_t group) const { return evicted_below_ && group < *evicted_below_; }
  uint64_t stored_bytes() const { return bytes_; }
  // Track properties as sent on the wire (DEFAULT_PUBLISHER_PRIORITY and GROUP_ORDER included).
  Properties WireTrackProperties() const;

  // Listeners are not owned; remove before destruction.
  void AddListener(TrackListener* l) { listeners_.insert(l); }
  void RemoveListener(TrackListener* l) { listeners_.erase(l); }

 private:
  struct Group {
    std::map<uint64_t, PublishedObject> objects;
    bool ended = false;
    uint64_t bytes = 0;
  };
  void Evict();
  void Notify(const PublishedObject& o);

  FullTrackName name_;
  TrackOptions options_;
  std::map<uint64_t, Group> groups_;
  std::optional<uint64_t> open_group_;     // StartGroup()-opened
  std::optional<uint64_t> highest_group_;  // highest group ever seen
  std::optional<uint64_t> evicted_below_;  // groups < this were evicted
  std::optional<Location> largest_;
  std::optional<Location> end_of_track_;
  uint64_t bytes_ = 0;
  std::set<TrackListener*> listeners_;
};

// Namespace changes of a TrackSource (for SUBSCRIBE_NAMESPACE).
class NamespaceListener {
 public:
  virtual ~NamespaceListener() = default;
  virtual void OnNamespaceAdded(const TrackNamespace& ns) = 0;
  virtual void OnNamespaceRemoved(const TrackNamespace& ns) = 0;
};

// Where a session finds the tracks it publishes. A relay implements it over its cache.
class TrackSource {
 public:
  virtual ~TrackSource() = default;
  // nullptr: no such track (the session answers DOES_NOT_EXIST).
  virtual std::shared_ptr<Track> FindTrack(const FullTrackName& name) = 0;
  // Every namespace currently served (track namespaces and announced ones), deduplicated.
  virtual std::vector<TrackNamespace> ListNamespaces() = 0;
  virtual void AddNamespaceListener(NamespaceListener* l) = 0;
  virtual void RemoveNamespaceListener(NamespaceListener* l) = 0;
};

// The in-memory TrackSource: tracks created by the local publisher plus namespaces announced to
// us (PUBLISH_NAMESPACE) that we pass on to SUBSCRIBE_NAMESPACE subscribers.
class TrackStore : public TrackSource {
 public:
  TrackStore() = default;
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

  std::map<FullTrackName, std::shared_ptr<Track>, NameLess> tracks_;
  // Tracks per namespace, so namespace bookkeeping is O(log n) per track instead of a scan of
  // every track (a store holds up to kMaxTracksPerStore).
  std::map<TrackNamespace, size_t> track_ns_refs_;
  std::set<TrackNamespace> announced_;
  std::set<NamespaceListener*> ns_listeners_;
};

// True when `prefix` is a prefix (field-wise) of `ns`.
bool NamespaceHasPrefix(const TrackNamespace& ns, const TrackNamespace& prefix);

}  // namespace kvcs::moqt

#endif  // KVCS_MOQT_SESSION_MOQT_TRACK_H_
