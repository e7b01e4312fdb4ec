// OutgoingDataStream: writing one subgroup or fetch stream from the Track
// (moqt_outgoing_data_stream.h).
#include "moqt_session/moqt_outgoing_data_stream.h"

#include <algorithm>
#include <utility>

#include "moqt/moqt_error.h"
#include "moqt_session/moqt_send_order.h"

namespace kvcs::moqt {

std::unique_ptr<OutgoingDataStream> OutgoingDataStream::Subgroup(
    SessionToDataStreamInterface* session, transport::StreamId id, uint64_t owner, uint64_t alias,
    uint64_t group, uint64_t first_object, uint8_t publisher_priority, const WireOptions& wire) {
  std::unique_ptr<OutgoingDataStream> d(new OutgoingDataStream(session, id, owner));
  d->group_ = group;
  d->next_object_ = first_object;
  SubgroupHeader h;
  h.track_alias = alias;
  h.group_id = group;
  h.id_mode = SubgroupIdMode::kZero;
  h.publisher_priority = publisher_priority;
  h.has_properties = true;
  h.first_object = first_object == 0;
  d->header_ = h;
  d->subgroup_writer_ = std::make_unique<SubgroupStreamWriter>(h, wire);
  d->wire_ = wire;
  return d;
}

std::unique_ptr<OutgoingDataStream> OutgoingDataStream::Fetch(SessionToDataStreamInterface* session,
                                                              transport::StreamId id,
                                                              FetchStreamParams params,
                                                              const WireOptions& wire) {
  std::unique_ptr<OutgoingDataStream> d(new OutgoingDataStream(session, id, params.owner));
  d->fetch_writer_ = std::make_unique<FetchStreamWriter>(params.order, wire);
  d->fetch_ = std::move(params);
  d->wire_ = wire;
  return d;
}

void OutgoingDataStream::WriteHeader(transport::Stream& s, const Track& track) {
  Bytes header;
  if (!fetch_) {
    (void)AppendSubgroupHeader(*header_, &header, wire_);
    (void)Put(s, header, false);
    return;
  }
  const FetchStreamParams& f = *fetch_;
  (void)AppendFetchHeader(FetchHeader{f.header_id}, &header, wire_);
  // Unknown leading range: the oldest groups of the range were evicted (ascending only).
  if (f.order == GroupOrder::kAscending && track.GroupEvicted(f.range.start.group)) {
    std::optional<uint64_t> oldest = track.oldest_group();
    uint64_t last_unknown = oldest ? *oldest - 1 : f.range.end->group;
    if (f.range.end && last_unknown > f.range.end->group) last_unknown = f.range.end->group;
    EndOfRange m{EndOfRangeKind::kUnknown, {last_unknown, UINT64_MAX}};
    if (fetch_writer_->AppendEndOfRange(m, &header).ok()) {
      cursor_ = m.location;
    }
  }
  (void)Put(s, header, false);
}

void OutgoingDataStream::Pump(transport::Stream& s, const IncomingRequest& owner) {
  if (fetch_) {
    PumpFetch(s, *owner.track);
  } else {
    PumpSubgroup(s, owner);
  }
}

void OutgoingDataStream::PumpSubgroup(transport::Stream& s, const IncomingRequest& sub) {
  const Track& track = *sub.track;
  if (!FlushPendingPayload(s)) return;
  while (s.CanWrite()) {
    const PublishedObject* o = track.NextInGroup(group_, next_object_);
    if (!o) {
      if (track.GroupEvicted(group_)) {
        s.ResetWithCode(static_cast<uint64_t>(StreamResetCode::kTooFarBehind));
        Finish();
      } else if ((track.GroupEnded(group_) || track.ended()) &&
                 track.KnownThrough({group_, UINT64_MAX})) {
        // The group's end was not in our range: just FIN. A relay's track may have its End of
        // Track before the rest of this group (its upstream's streams arrive in any order):
        // then the group ends only once it is known whole (the session pumps on progress).
        (void)Put(s, {}, true);
        Finish();
      }
      return;
    }
    const bool last_id = o->location.object == UINT64_MAX;  // no object can follow it
    next_object_ = o->location.object + 1;
    bool skip = false;
    if (!sub.live.Contains(o->location)) {
      if (sub.live.end && o->location > *sub.live.end) {
        (void)Put(s, {}, true);
        Finish();
        return;
      }
      skip = true;
    } else if (o->status == ObjectStatus::kNormal &&
               !PassesRangeFilters(sub.filters, o->subgroup_id, o->location.object,
                                   o->publisher_priority, o->properties)) {
      skip = true;
    }
    if (skip) {
      if (last_id) return;
      continue;
    }
    // Header and payload are written separately: the payload goes from the Track's shared
    // buffer into the transport by reference (WriteShared: no per-subscriber copy).
    Bytes header;
    Status st = subgroup_writer_->AppendObjectHeader(
        o->location.object, o->status,
        o->status == ObjectStatus::kNormal ? o->properties : Properties{}, o->payload->size(),
        &header);
    if (!st.ok()) {
      s.ResetWithCode(static_cast<uint64_t>(StreamResetCode::kInternalError));
      Finish();
      return;
    }
    bool last = o->status != ObjectStatus::kNormal;
    if (!Put(s, header, last).ok()) return;
    session_->ObjectSent(o->payload->size());
    if (last) {
      Finish();
      return;
    }
    if (!WritePayload(s, o->payload)) return;
  }
}

Status OutgoingDataStream::Put(transport::Stream& s, ByteSpan data, bool fin) {
  Status st = s.Write(data, fin);
  if (st.ok()) written_bytes_ += data.size();
  return st;
}

Status OutgoingDataStream::PutShared(transport::Stream& s,
                                     const std::shared_ptr<const Bytes>& payload) {
  Status st = s.WriteShared(payload, false);
  if (st.ok()) written_bytes_ += payload->size();
  return st;
}

bool OutgoingDataStream::WritePayload(transport::Stream& s,
                                      const std::shared_ptr<const Bytes>& payload) {
  if (payload->empty()) return true;
  if (s.CanWrite() && PutShared(s, payload).ok()) return true;
  pending_payload_ = payload;  // resumed by FlushPendingPayload on the next pump
  return false;
}

bool OutgoingDataStream::FlushPendingPayload(transport::Stream& s) {
  if (!pending_payload_) return true;
  if (!s.CanWrite() || !PutShared(s, pending_payload_).ok()) return false;
  pending_payload_.reset();
  return true;
}

const PublishedObject* OutgoingDataStream::NextFetchObject(const Track& t) const {
  const FetchStreamParams& f = *fetch_;
  const LocationRange& r = f.range;
  if (r.empty() || !r.end) return nullptr;
  const bool asc = f.order == GroupOrder::kAscending;
  std::optional<uint64_t> g;
  uint64_t min_obj = 0;
  if (cursor_) {
    g = cursor_->group;
    if (cursor_->object == UINT64_MAX) {
      g = t.NextGroup(g, f.order);
      min_obj = 0;
    } else {
      min_obj = cursor_->object + 1;
    }
  } else {
    g = asc ? r.start.group : r.end->group;
    min_obj = *g == r.start.group ? r.start.object : 0;
  }
  while (g) {
    if (asc ? *g > r.end->group : *g < r.start.group) return nullptr;
    if (*g == r.start.group) min_obj = std::max(min_obj, r.start.object);
    const PublishedObject* o = t.NextInGroup(*g, min_obj);
    while (o && o->status != ObjectStatus::kNormal) {
      o = o->location.object == UINT64_MAX ? nullptr : t.NextInGroup(*g, o->location.object + 1);
    }
    if (o && r.Contains(o->location)) return o;
    g = t.NextGroup(g, f.order);
    min_obj = 0;
  }
  return nullptr;
}

void OutgoingDataStream::PumpFetch(transport::Stream& s, const Track& track) {
  const FetchStreamParams& f = *fetch_;
  if (!FlushPendingPayload(s)) return;
  while (s.CanWrite()) {
    if (cursor_ && f.order == GroupOrder::kAscending && cursor_->object != UINT64_MAX &&
        (track.GroupEvicted(cursor_->group) ||
         (track.GroupEvicted(cursor_->group + 1) && cursor_->group + 1 <= f.range.end->group))) {
      // Objects we still had to send were evicted under us: the rest of the current group, or
      // later groups. Going on would present them as non-existent (a gap on a fetch stream
      // means "does not exist").  (A cursor at Object 2^64-1 is an End of Unknown Range marker
      // that already covers its evicted groups.)
      s.ResetWithCode(static_cast<uint64_t>(StreamResetCode::kTooFarBehind));
      Finish();
      return;
    }
    if (track.failure()) {
      s.ResetWithCode(static_cast<uint64_t>(StreamResetCode::kInternalError));
      Finish();
      return;
    }
    const PublishedObject* o = NextFetchObject(track);
    if (track.filling()) {
      // A relay's track still filling from its upstream: what is not stored yet may still
      // arrive, so wait (OnObjectAdded / OnTrackProgress pump again) until everything up to the
      // next stored object — or, descending or at the end of the stored objects, up to the end
      // of the range — is known.
      const bool asc = f.order == GroupOrder::kAscending;
      const Location need = (asc && o) ? o->location : *f.range.end;
      if (!track.KnownThrough(need)) return;
    }
    if (!o) {
      (void)Put(s, {}, true);
      Finish();
      return;
    }
    if (!cursor_ || cursor_->group != o->location.group) {
      s.SetSendOrder(
          DataSendOrder(f.priority, o->publisher_priority, f.order, o->location.group, f.fill));
    }
    cursor_ = o->location;
    if (!PassesRangeFilters(f.filters, o->subgroup_id, o->location.object, o->publisher_priority,
                            o->properties)) {
      continue;
    }
    ObjectHeader h;
    h.location = o->location;
    h.subgroup_id = o->subgroup_id;
    h.publisher_priority = o->publisher_priority;
    h.properties = o->properties;
    h.payload_length = o->payload->size();
    Bytes header;
    if (!fetch_writer_->AppendObjectHeader(h, &header).ok()) {
      s.ResetWithCode(static_cast<uint64_t>(StreamResetCode::kInternalError));
      Finish();
      return;
    }
    if (!Put(s, header, false).ok()) return;
    session_->ObjectSent(o->payload->size());
    if (!WritePayload(s, o->payload)) return;
  }
}

}  // namespace kvcs::moqt
