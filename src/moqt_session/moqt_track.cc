// Track: groups and objects of one published track, bounded (moqt_track.h).
#include "moqt_session/moqt_track.h"

#include <algorithm>

#include "moqt/moqt_fields.h"

namespace kvcs::moqt {

Status TrackErrorStatus(TrackError error, std::string message, Code code) {
  return {code, "moqt track: " + std::move(message), static_cast<int>(error)};
}

Track::Track(FullTrackName name, TrackOptions options)
    : name_(std::move(name)), options_(std::move(options)) {
  if (options_.max_groups == 0) options_.max_groups = 1;
}

Track::~Track() {
  if (options_.budget) options_.budget->Release(charged_);
}

Status Track::StartGroup(uint64_t group_id) {
  if (ended()) return TrackErrorStatus(TrackError::kTrackEnded, "track ended");
  if (highest_group_ && group_id <= *highest_group_) {
    return TrackErrorStatus(
        TrackError::kGroupNotAscending,
        "group " + std::to_string(group_id) + " is not above " + std::to_string(*highest_group_));
  }
  if (open_group_) KVCS_RETURN_IF_ERROR(EndGroup());
  // The new group is the highest: only a full shared budget refuses it.
  KVCS_ASSIGN_OR_RETURN(size_t evict,
                        PlanEviction(group_id, /*new_group=*/true, 0, kTrackGroupOverheadBytes));
  open_group_ = group_id;
  highest_group_ = group_id;
  Charge(groups_[group_id], kTrackGroupOverheadBytes);
  EvictOldest(evict);
  return Status::Ok();
}

Result<Location> Track::AppendObject(ByteSpan payload, Properties properties) {
  if (!open_group_) return TrackErrorStatus(TrackError::kNoOpenGroup, "no open group");
  return AppendObject(std::make_shared<const Bytes>(payload.begin(), payload.end()),
                      std::move(properties));
}

Result<Location> Track::AppendObject(Bytes&& payload, Properties properties) {
  if (!open_group_) return TrackErrorStatus(TrackError::kNoOpenGroup, "no open group");
  return AppendObject(std::make_shared<const Bytes>(std::move(payload)), std::move(properties));
}

Result<Location> Track::AppendObject(std::shared_ptr<const Bytes> payload, Properties properties) {
  if (!open_group_) return TrackErrorStatus(TrackError::kNoOpenGroup, "no open group");
  if (!payload) payload = std::make_shared<const Bytes>();
  const Group& g = groups_[*open_group_];
  uint64_t next = g.objects.empty() ? 0 : g.objects.rbegin()->first + 1;
  PublishedObject o;
  o.location = {*open_group_, next};
  o.publisher_priority = options_.publisher_priority;
  o.properties = std::move(properties);
  o.payload = std::move(payload);
  KVCS_RETURN_IF_ERROR(AddObject(std::move(o)));
  return Location{*open_group_, next};
}

Status Track::EndGroup() {
  if (!open_group_) return TrackErrorStatus(TrackError::kNoOpenGroup, "no open group");
  const Group& g = groups_[*open_group_];
  uint64_t next = g.objects.empty() ? 0 : g.objects.rbegin()->first + 1;
  PublishedObject o;
  o.location = {*open_group_, next};
  o.publisher_priority = options_.publisher_priority;
  o.status = ObjectStatus::kEndOfGroup;
  o.payload = std::make_shared<const Bytes>();
  uint64_t group = *open_group_;
  KVCS_RETURN_IF_ERROR(AddObject(std::move(o)));
  (void)group;
  open_group_.reset();
  return Status::Ok();
}

Status Track::EndTrack() {
  if (ended()) return TrackErrorStatus(TrackError::kTrackEnded, "track ended");
  if (open_group_) KVCS_RETURN_IF_ERROR(EndGroup());
  uint64_t group = highest_group_ ? *highest_group_ + 1 : 0;
  PublishedObject o;
  o.location = {group, 0};
  o.publisher_priority = options_.publisher_priority;
  o.status = ObjectStatus::kEndOfTrack;
  o.payload = std::make_shared<const Bytes>();
  return AddObject(std::move(o));
}

Status Track::AddObject(PublishedObject o) { return Store(std::move(o), /*any_order=*/false); }

Status Track::InsertObject(PublishedObject o) { return Store(std::move(o), /*any_order=*/true); }

Status Track::Store(PublishedObject o, bool any_order) {
  if (failure_) return TrackErrorStatus(TrackError::kTrackEnded, "track failed");
  if (ended() && !(any_order && o.location < *end_of_track_)) {
    return TrackErrorStatus(TrackError::kTrackEnded, "track ended");
  }
  if (!o.payload) o.payload = std::make_shared<const Bytes>();
  if (o.status != ObjectStatus::kNormal && !o.payload->empty()) {
    return TrackErrorStatus(TrackError::kObjectNotAscending, "status objects carry no payload",
                            Code::kInvalidArgument);
  }
  if (o.payload->size() > options_.max_bytes) {
    return TrackErrorStatus(TrackError::kTooLarge, "object larger than the track's byte budget",
                            Code::kResourceExhausted);
  }
  const uint64_t gid = o.location.group;
  if (GroupEvicted(gid)) {
    return TrackErrorStatus(TrackError::kGroupNotAscending, "group already evicted");
  }
  if (open_group_ && gid != *open_group_ && o.status != ObjectStatus::kEndOfTrack) {
    return TrackErrorStatus(TrackError::kGroupNotAscending, "another group is open");
  }
  auto existing = groups_.find(gid);
  const bool new_group = existing == groups_.end();
  if (!new_group) {
    const Group& g = existing->second;
    if (any_order) {
      if (g.objects.count(o.location.object)) {
        return TrackErrorStatus(TrackError::kExists,
                                "object " + std::to_string(o.location.object) + " already stored");
      }
      // Below the group's End of Group (its last object) is fine; at or above it is not. A
      // group ended only by the track's End of Track (its last object a Normal one) still takes
      // objects below the End of Track (checked above): its stream may arrive after the End of
      // Track's, as a relay receives a PUBLISHed track's group streams in any order.
      if (g.ended && !g.objects.empty() && o.location.object > g.objects.rbegin()->first &&
          g.objects.rbegin()->second.status != ObjectStatus::kNormal) {
        return TrackErrorStatus(TrackError::kGroupEnded, "group ended");
      }
      if (o.status != ObjectStatus::kNormal && !g.objects.empty() &&
          o.location.object < g.objects.rbegin()->first) {
        return TrackErrorStatus(TrackError::kObjectNotAscending,
                                "a status object below the group's objects");
      }
    } else {
      if (g.ended) return TrackErrorStatus(TrackError::kGroupEnded, "group ended");
      if (!g.objects.empty() && o.location.object <= g.objects.rbegin()->first) {
        return TrackErrorStatus(TrackError::kObjectNotAscending,
                                "object " + std::to_string(o.location.object) + " not ascending");
      }
    }
  }
  // (A relay's End of Track may sit at the Largest Object its upstream reported.)
  if (o.status == ObjectStatus::kEndOfTrack && largest_ &&
      (any_order ? o.location < *largest_ : o.location <= *largest_)) {
    return TrackErrorStatus(TrackError::kObjectNotAscending,
                            "End of Track below the largest object");
  }
  // Decide the evictions before storing anything: the group written to must survive them (it is
  // read again below, and a relay filling an old group must not lose what it just wrote).
  const uint64_t charge =
      o.payload->size() + kTrackObjectOverheadBytes + (new_group ? kTrackGroupOverheadBytes : 0);
  KVCS_ASSIGN_OR_RETURN(size_t evict, PlanEviction(gid, new_group, o.payload->size(), charge));
  Group& g = groups_[gid];
  Charge(g, charge);
  if (o.status != ObjectStatus::kNormal) g.ended = true;
  g.bytes += o.payload->size();
  bytes_ += o.payload->size();
  if (!largest_ || o.location > *largest_) largest_ = o.location;
  if (!highest_group_ || gid > *highest_group_) highest_group_ = gid;
  if (o.status == ObjectStatus::kEndOfTrack) {
    end_of_track_ = o.location;
    // Every group at or below ends with the track (a relay's may still receive objects below
    // their ends: InsertObject).
    for (auto& [id, grp] : groups_) grp.ended = true;
    open_group_.reset();
  }
  auto [it, inserted] = g.objects.emplace(o.location.object, std::move(o));
  EvictOldest(evict);  // never reaches `gid` (PlanEviction), so `it` stays valid
  Notify(it->second);
  return Status::Ok();
}

Result<size_t> Track::PlanEviction(uint64_t gid, bool new_group, uint64_t payload,
                                   uint64_t charge) const {
  size_t groups = groups_.size() + (new_group ? 1 : 0);
  uint64_t bytes = bytes_ + payload;
  uint64_t freed = 0;
  const ByteBudget* budget = options_.budget.get();
  auto own_over = [&] { return groups > options_.max_groups || bytes > options_.max_bytes; };
  auto budget_short = [&] { return budget && !budget->Fits(charge, freed); };
  const bool evict_for_budget = !options_.keep_whole;
  size_t evict = 0;
  // Oldest first, never the last group, and never `gid`: on counts only, nothing changes yet.
  for (auto it = groups_.begin();
       groups > 1 && (own_over() || (evict_for_budget && budget_short())); ++it) {
    if (it == groups_.end() || it->first >= gid) break;
    --groups;
    bytes -= it->second.bytes;
    freed += it->second.charge;
    ++evict;
  }
  if (groups > 1 && own_over()) {
    return TrackErrorStatus(
        TrackError::kBelowRetained,
        "group " + std::to_string(gid) + " is below the groups this track retains",
        Code::kOutOfRange);
  }
  if (budget_short()) {
    return TrackErrorStatus(TrackError::kBudgetExhausted, "the shared byte budget is full",
                            Code::kResourceExhausted);
  }
  return evict;
}

void Track::Charge(Group& g, uint64_t charge) {
  g.charge += charge;
  charged_ += charge;
  if (options_.budget) options_.budget->Charge(charge);
}

void Track::EvictOldest(size_t count) {
  for (; count > 0 && !groups_.empty(); --count) {
    auto it = groups_.begin();
    bytes_ -= it->second.bytes;
    charged_ -= it->second.charge;
    if (options_.budget) options_.budget->Release(it->second.charge);
    evicted_below_ = it->first + 1;
    groups_.erase(it);
  }
}

void Track::SetLargestKnown(const Location& largest) {
  if (!largest_ || largest > *largest_) largest_ = largest;
}

void Track::StartFilling() {
  filling_ = true;
  complete_through_.reset();
}

void Track::SetCompleteThrough(const Location& through) {
  if (!filling_ || (complete_through_ && through <= *complete_through_)) return;
  complete_through_ = through;
  NotifyProgress();
}

void Track::MarkComplete() {
  if (!filling_) return;
  filling_ = false;
  NotifyProgress();
}

void Track::Fail(PublishDoneCode code, std::string reason) {
  if (failure_) return;
  failure_.emplace(code, std::move(reason));
  filling_ = false;
  NotifyProgress();
}

void Track::NotifyProgress() {
  std::vector<TrackListener*> ls(listeners_.begin(), listeners_.end());
  for (TrackListener* l : ls) {
    if (listeners_.count(l)) l->OnTrackProgress(*this);
  }
}

void Track::Notify(const PublishedObject& o) {
  // Copy: a listener may remove itself (or others) while being notified.
  std::vector<TrackListener*> ls(listeners_.begin(), listeners_.end());
  for (TrackListener* l : ls) {
    if (listeners_.count(l)) l->OnObjectAdded(*this, o);
  }
}

std::optional<Location> Track::largest_normal() const {
  for (auto g = groups_.rbegin(); g != groups_.rend(); ++g) {
    for (auto o = g->second.objects.rbegin(); o != g->second.objects.rend(); ++o) {
      if (o->second.status == ObjectStatus::kNormal) return o->second.location;
    }
  }
  return std::nullopt;
}

const PublishedObject* Track::Find(const Location& loc) const {
  auto g = groups_.find(loc.group);
  if (g == groups_.end()) return nullptr;
  auto o = g->second.objects.find(loc.object);
  return o == g->second.objects.end() ? nullptr : &o->second;
}

const PublishedObject* Track::NextInGroup(uint64_t group, uint64_t min_object) const {
  auto g = groups_.find(group);
  if (g == groups_.end()) return nullptr;
  auto o = g->second.objects.lower_bound(min_object);
  return o == g->second.objects.end() ? nullptr : &o->second;
}

bool Track::GroupEnded(uint64_t group) const {
  auto g = groups_.find(group);
  if (g != groups_.end()) return g->second.ended;
  return ended() && group <= end_of_track_->group;
}

std::optional<uint64_t> Track::NextGroup(std::optional<uint64_t> after, GroupOrder order) const {
  if (groups_.empty()) return std::nullopt;
  if (order == GroupOrder::kAscending) {
    auto it = after ? groups_.upper_bound(*after) : groups_.begin();
    if (it == groups_.end()) return std::nullopt;
    return it->first;
  }
  if (!after) return groups_.rbegin()->first;
  auto it = groups_.lower_bound(*after);
  if (it == groups_.begin()) return std::nullopt;
  return std::prev(it)->first;
}

uint8_t Track::GroupPriority(uint64_t group) const {
  auto g = groups_.find(group);
  if (g == groups_.end() || g->second.objects.empty()) return options_.publisher_priority;
  return g->second.objects.begin()->second.publisher_priority;
}

std::optional<uint64_t> Track::LastNormalObject(uint64_t group) const {
  auto g = groups_.find(group);
  if (g == groups_.end()) return std::nullopt;
  for (auto o = g->second.objects.rbegin(); o != g->second.objects.rend(); ++o) {
    if (o->second.status == ObjectStatus::kNormal) return o->first;
  }
  return std::nullopt;
}

std::optional<uint64_t> Track::oldest_group() const {
  if (groups_.empty()) return std::nullopt;
  return groups_.begin()->first;
}

void Track::SetTrackProperties(Properties properties) {
  for (const KeyValuePair& p : properties) {
    if (p.type == static_cast<uint64_t>(PropertyType::kDefaultPublisherPriority) &&
        p.value <= 255) {
      options_.publisher_priority = static_cast<uint8_t>(p.value);
    } else if (p.type == static_cast<uint64_t>(PropertyType::kDefaultPublisherGroupOrder) &&
               (p.value == static_cast<uint64_t>(GroupOrder::kAscending) ||
                p.value == static_cast<uint64_t>(GroupOrder::kDescending))) {
      options_.group_order = static_cast<GroupOrder>(p.value);
    }
  }
  options_.track_properties = std::move(properties);
}

Properties Track::WireTrackProperties() const {
  Properties p = options_.track_properties;
  auto set = [&p](PropertyType t, uint64_t v) {
    uint64_t type = static_cast<uint64_t>(t);
    auto it =
        std::find_if(p.begin(), p.end(), [&](const KeyValuePair& k) { return k.type == type; });
    if (it != p.end()) return;
    p.push_back(KeyValuePair::Int(type, v));
  };
  if (options_.publisher_priority != 128) {
    set(PropertyType::kDefaultPublisherPriority, options_.publisher_priority);
  }
  if (options_.group_order != GroupOrder::kAscending) {
    set(PropertyType::kDefaultPublisherGroupOrder, static_cast<uint64_t>(options_.group_order));
  }
  std::stable_sort(p.begin(), p.end(),
                   [](const KeyValuePair& a, const KeyValuePair& b) { return a.type < b.type; });
  return p;
}

}  // namespace kvcs::moqt
