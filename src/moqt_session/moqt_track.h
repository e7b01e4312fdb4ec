// Track: one published track kept in memory, so that sessions can serve live delivery, fills
// and fetches from it. Separate from the session on purpose: one store (moqt_track_store.h) serves
// many sessions (a server), and a relay can feed a Track from an upstream subscription and serve
// it downstream.
//
// A Track holds whole groups in a bounded map (TrackOptions::max_groups / max_bytes; the oldest
// groups are evicted first, never the newest). Objects within a group have ascending Object IDs
// and all belong to subgroup 0 (KVCS and most media tracks need one subgroup per group). A
// finished group ends with an End of Group status object; a finished track ends with an End of
// Track status object at {last group + 1, 0} (docs/protocols/moqt-session.md, open point 7).
//
// Sessions observe a Track through TrackListener (moqt_track_source.h; push: "object added"),
// then pull objects with Find()/NextInGroup() when their streams can take them — a slow
// subscriber never makes the store grow; if the objects it still needs were evicted, its stream
// is reset (TOO_FAR_BEHIND).
//
// Lifetimes: Tracks are shared_ptr (a session keeps the tracks it serves alive); listeners are
// not owned and must remove themselves before they die.
// THREADING: single-threaded, like the sessions that use them (one executor).
#ifndef KVCS_MOQT_SESSION_MOQT_TRACK_H_
#define KVCS_MOQT_SESSION_MOQT_TRACK_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/bytes.h"
#include "common/status.h"
#include "moqt/moqt_error.h"
#include "moqt/moqt_messages.h"
#include "moqt_session/moqt_byte_budget.h"
#include "moqt_session/moqt_session_limits.h"
#include "moqt_session/moqt_track_source.h"

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
  kBelowRetained,       // AddObject into a group the track's own bounds would evict at once
  kBudgetExhausted,     // the shared ByteBudget is full and this track cannot free enough
};

// A Status carrying `error` as its typed detail ("moqt track: " + message).
Status TrackErrorStatus(TrackError error, std::string message,
                        Code code = Code::kFailedPrecondition);

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
  // The process-wide byte budget this track charges (moqt_byte_budget.h); null: none.
  std::shared_ptr<ByteBudget> budget;
  // Relays caching whole publications: never evict this track's own groups to make room; a
  // write the budget cannot take is refused (kBudgetExhausted) and the owner decides what to
  // drop. max_groups / max_bytes still apply.
  bool keep_whole = false;
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

class Track {
 public:
  Track(FullTrackName name, TrackOptions options);
  ~Track();  // releases its charge on the budget
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
  // within its group, nothing after End of Group / End of Track. An object whose group the
  // track's bounds would evict at once (a new group below the retained ones while the track is
  // full, or the oldest group filled past max_bytes) is refused with kBelowRetained and nothing
  // changes: a write never evicts the group it writes to.
  Status AddObject(PublishedObject object);

  // ---- relays: a Track filled from an upstream subscription, whose fill (objects up to the
  // upstream's Largest, ascending) and live objects (above it) interleave. InsertObject takes
  // objects in any order within a group: any object not yet stored and below its group's End of
  // Group (and below End of Track), in a group the track still accepts. kExists for a duplicate.
  Status InsertObject(PublishedObject object);
  // The upstream's Largest Object (SUBSCRIBE_OK), before the objects up to it have arrived:
  // largest() reports at least this, so downstream subscriptions split live and fill where the
  // upstream did.
  void SetLargestKnown(const Location& largest);
  // The upstream's track properties (SUBSCRIBE_OK), passed on downstream. Its
  // DEFAULT_PUBLISHER_PRIORITY and DEFAULT_PUBLISHER_GROUP_ORDER become this track's defaults,
  // so what the track writes itself (an End of Track learned from PUBLISH_DONE, GroupPriority of
  // an empty group) is scheduled as the original publisher's would be.
  void SetTrackProperties(Properties properties);
  // While filling, only objects at or below complete_through() are known: every one that exists
  // is stored. Fetch and fill streams wait for later ones instead of ending (a gap on a fetch
  // stream means "does not exist"). StartFilling(nullopt): nothing known yet. A Track that never
  // filled (an original publisher's) is complete.
  void StartFilling();
  void SetCompleteThrough(const Location& through);
  void MarkComplete();  // everything that will ever exist is stored
  bool filling() const { return filling_; }
  std::optional<Location> complete_through() const { return complete_through_; }
  // True when every object at or below `upto` that exists is stored.
  bool KnownThrough(const Location& upto) const {
    return !filling_ || (complete_through_ && upto <= *complete_through_);
  }
  // The upstream failed (its error, or the relay could not keep the whole track): subscriptions
  // served from this track end with PUBLISH_DONE `code`, fetches are reset. Final.
  void Fail(PublishDoneCode code, std::string reason);
  const std::optional<std::pair<PublishDoneCode, std::string>>& failure() const { return failure_; }

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
  // The publisher priority of `group`: that of its first retained object (KVCS gives every
  // object of a layer's group the same one), else the track's default. Subgroup headers and
  // data stream send orders use it.
  uint8_t GroupPriority(uint64_t group) const;
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
    uint64_t bytes = 0;   // payload
    uint64_t charge = 0;  // what it holds of the budget: payload + overheads
  };
  // How many of the oldest groups must go so that storing `payload` more bytes (`charge` more
  // of the budget) in `gid` (a new group when `new_group`) keeps the track within max_groups /
  // max_bytes and the budget. The newest group is never evicted; kBelowRetained when `gid`
  // itself would have to go for the track's own bounds (an object for a group below the
  // retained ones, or filling the oldest group past max_bytes); kBudgetExhausted when the
  // budget stays short.
  Result<size_t> PlanEviction(uint64_t gid, bool new_group, uint64_t payload,
                              uint64_t charge) const;
  void EvictOldest(size_t count);
  void Charge(Group& g, uint64_t charge);
  void Notify(const PublishedObject& o);
  void NotifyProgress();
  // The checks AddObject and InsertObject share, then the store.
  Status Store(PublishedObject o, bool any_order);

  FullTrackName name_;
  TrackOptions options_;
  std::map<uint64_t, Group> groups_;
  std::optional<uint64_t> open_group_;     // StartGroup()-opened
  std::optional<uint64_t> highest_group_;  // highest group ever seen
  std::optional<uint64_t> evicted_below_;  // groups < this were evicted
  std::optional<Location> largest_;
  std::optional<Location> end_of_track_;
  uint64_t bytes_ = 0;
  uint64_t charged_ = 0;  // held of options_.budget
  bool filling_ = false;
  std::optional<Location> complete_through_;
  std::optional<std::pair<PublishDoneCode, std::string>> failure_;
  std::set<TrackListener*> listeners_;
};

}  // namespace kvcs::moqt

#endif  // KVCS_MOQT_SESSION_MOQT_TRACK_H_
