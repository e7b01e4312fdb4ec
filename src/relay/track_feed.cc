// TrackFeed: an upstream subscription filling one cached track (track_feed.h).
#include "relay/track_feed.h"

#include <utility>

#include "moqt/moqt_error.h"
#include "moqt_session/moqt_byte_budget.h"
#include "relay/relay.h"

namespace kvcs::relay {

using moqt::Location;
using moqt::ObjectStatus;

TrackFeed::TrackFeed(Relay* relay, std::shared_ptr<moqt::Track> track, moqt::MoqtSession* session,
                     uint64_t deadline_ms)
    : relay_(relay), track_(std::move(track)), session_(session), deadline_ms_(deadline_ms) {
  track_->StartFilling();
}

void TrackFeed::AddWaiter(moqt::TrackResolved done) {
  waiters_.push_back(std::move(done));
  Wake();
}

void TrackFeed::OnSubscribeOk(const moqt::SubscribeOkInfo& info) {
  if (ended_) return;
  auto self = shared_from_this();
  answered_ = true;
  upstream_largest_ = info.largest;
  if (info.largest) {
    track_->SetLargestKnown(*info.largest);
  } else {
    fill_done_ = true;  // nothing published upstream yet: no fill
  }
  track_->SetTrackProperties(info.track_properties);
  Advance();
  Wake();
  if (!ended_) relay_->PublishAnswered(track_->name());  // a PUBLISH here goes on upstream now
}

moqt::PublishedObject ToStoredObject(const moqt::ReceivedObject& o) {
  moqt::PublishedObject po;
  po.location = o.location;
  po.subgroup_id = o.subgroup_id;
  po.publisher_priority = o.publisher_priority;
  po.status = o.status;
  if (o.properties) po.properties = *o.properties;
  po.payload = o.SharedPayload();  // the session's reassembly buffer when it has one: no copy
  return po;
}

uint64_t StoredObjectCharge(const moqt::ReceivedObject& o) {
  return o.payload.size() + moqt::kTrackObjectOverheadBytes + moqt::kTrackGroupOverheadBytes;
}

void TrackFeed::OnObject(const moqt::ReceivedObject& o) {
  if (ended_) return;
  auto self = shared_from_this();
  moqt::PublishedObject po = ToStoredObject(o);
  const uint64_t charge = StoredObjectCharge(o);
  Status st = relay_->MakeRoom(charge)
                  ? track_->InsertObject(std::move(po))
                  : moqt::TrackErrorStatus(moqt::TrackError::kBudgetExhausted, "cache full");
  if (st.Is(moqt::TrackError::kBudgetExhausted)) {
    relay_->metrics_.Refuse(Refusal::kCacheFull);
    Finish(false, moqt::PublishDoneCode::kExcessiveLoad,
           "relay cache full: every cached publication is in use");
    return;
  }
  if (!st.ok() && !st.Is(moqt::TrackError::kExists)) {
    Finish(false, moqt::PublishDoneCode::kMalformedTrack,
           "upstream object refused: " + st.message());
    return;
  }
  relay_->metrics_.objects_in.fetch_add(1, std::memory_order_relaxed);
  relay_->metrics_.bytes_in.fetch_add(o.payload.size(), std::memory_order_relaxed);
  if (o.via == moqt::DeliveryKind::kFill) {
    fill_last_ = o.location;
  } else {
    LiveGroup& g = live_[o.location.group];
    g.last = o.location.object;
    if (o.status == ObjectStatus::kEndOfGroup || o.status == ObjectStatus::kEndOfTrack) {
      g.ended = true;
    }
  }
  relay_->UpdateCacheGauges();
  Advance();
  Wake();
}

void TrackFeed::OnFillComplete(bool clean) {
  if (ended_) return;
  auto self = shared_from_this();
  if (!clean) {
    Finish(false, moqt::PublishDoneCode::kInternalError, "the upstream's fill stream was reset");
    return;
  }
  fill_done_ = true;
  Advance();
  Wake();
}

void TrackFeed::OnComplete(const moqt::SubscriptionDone& done) {
  if (ended_) return;
  auto self = shared_from_this();
  session_ = nullptr;  // the subscription is over: nothing to cancel
  if (done.error) {
    relay_->metrics_.Refuse(Refusal::kUpstreamError);
    RefuseAll(static_cast<moqt::RequestErrorCode>(done.error->error_code),
              "upstream: " + done.error->reason);
    Finish(false, moqt::PublishDoneCode::kInternalError, "upstream refused");
    return;
  }
  if (done.track_ended && done.all_streams_received && !fill_done_) {
    // The fill this feed asked for has not ended: the objects before the upstream's Largest are
    // not all here, whatever the subscription says (the session waits for a fill it knows is
    // coming; this is a publisher that ended the track without it).
    Finish(false, moqt::PublishDoneCode::kInternalError,
           "the upstream ended the track before its fill arrived");
    return;
  }
  if (done.track_ended && done.all_streams_received) {
    EndAtLargest();
    Finish(true, moqt::PublishDoneCode::kTrackEnded, "");
    return;
  }
  if (EndedAndKnown()) {
    // End of Track arrived and everything before it: complete, whatever happened to the
    // session after (a publisher that closed right after its last object).
    Finish(true, moqt::PublishDoneCode::kTrackEnded, "");
    return;
  }
  std::string why =
      done.session_closed ? "the upstream session ended" : "the upstream subscription ended early";
  if (answered_ && !fill_done_) why += " (its fill did not arrive whole)";
  if (!done.reason.empty()) why += ": " + done.reason;
  const auto code = done.status ? moqt::PublishDoneCodeFromWire(*done.status)
                                : moqt::PublishDoneCode::kInternalError;
  Finish(false,
         code == moqt::PublishDoneCode::kTrackEnded ? moqt::PublishDoneCode::kInternalError : code,
         why);
}

bool TrackFeed::EndedAndKnown() const {
  return answered_ && track_->ended() && fill_done_ &&
         track_->KnownThrough(*track_->end_of_track());
}

bool TrackFeed::OwesData() const {
  if (!answered_ || ended_) return false;
  if (!fill_done_) return true;
  std::optional<Location> largest = track_->largest();
  return largest && largest->group > 0 && !track_->KnownThrough({largest->group - 1, UINT64_MAX});
}

void TrackFeed::Abandon(moqt::RequestErrorCode code, const std::string& reason) {
  if (ended_) return;
  auto self = shared_from_this();
  if (EndedAndKnown()) {
    Finish(true, moqt::PublishDoneCode::kTrackEnded, "");
    return;
  }
  RefuseAll(code, reason);
  Finish(false, moqt::PublishDoneCode::kInternalError, reason);
}

void TrackFeed::EndAtLargest() {
  if (track_->ended()) return;
  // The upstream's track had ended before we subscribed: its End of Track is its Largest
  // Object (the fill carries no status objects).
  std::optional<Location> largest = track_->largest();
  Location eot{0, 0};
  if (largest) {
    const bool eot_at_largest = largest->object == 0 && !track_->NextInGroup(largest->group, 0);
    eot = eot_at_largest ? *largest : Location{largest->group + 1, 0};
  }
  moqt::PublishedObject e;
  e.location = eot;
  e.publisher_priority = track_->options().publisher_priority;  // the upstream's default
  e.status = ObjectStatus::kEndOfTrack;
  (void)track_->InsertObject(std::move(e));
}

void TrackFeed::CompletedElsewhere() {
  if (ended_) return;
  auto self = shared_from_this();
  EndAtLargest();
  if (session_) {
    moqt::MoqtSession* s = session_;
    session_ = nullptr;
    (void)s->Unsubscribe(request_id_);
  }
  Finish(true, moqt::PublishDoneCode::kTrackEnded, "");
}

void TrackFeed::Advance() {
  if (!fill_done_) {
    if (fill_last_) track_->SetCompleteThrough(*fill_last_);
    return;
  }
  // Known through the Largest Object at subscribe time, then group by group through the live
  // objects, from the first group the live objects must start with: each live group arrives in
  // order on its own stream, but the streams of different groups may arrive in any order, so a
  // group counts only once every group before it ended.
  std::optional<Location> cur = upstream_largest_;
  uint64_t g = 0;  // no Largest: nothing was published before us, every group comes live
  if (cur) {
    g = cur->group;
    if (LargestIsStatus()) {
      cur = Location{g, UINT64_MAX};  // the Largest was its group's End of Group
      ++g;
    }
  }
  for (;;) {
    auto it = live_.find(g);
    if (it == live_.end()) break;  // not (yet) received: nothing after it is known
    if (it->second.last && (!cur || Location{g, *it->second.last} > *cur)) {
      cur = Location{g, *it->second.last};
    }
    if (!it->second.ended) break;
    cur = Location{g, UINT64_MAX};
    ++g;
  }
  if (cur) track_->SetCompleteThrough(*cur);
}

bool TrackFeed::LargestIsStatus() const {
  // After the fill (which carries Normal objects only, every one up to the Largest), the
  // Largest is a status object exactly when no Normal object sits at it: End of Group (End of
  // Track ends the feed through OnComplete).
  const moqt::PublishedObject* at = track_->Find(*upstream_largest_);
  return at == nullptr || at->status != ObjectStatus::kNormal;
}

void TrackFeed::Wake() {
  if (!answered_) return;
  // Every request is answered as soon as the upstream answered (its Largest Object is known). A
  // FETCH does not wait for its range: the session's fetch stream sends each object once
  // everything before it is known and ends only when the whole range is, so a consumer of a
  // finished cache starts on layer a while later layers still come from the upstream.
  std::vector<moqt::TrackResolved> ready = std::move(waiters_);
  waiters_.clear();
  for (moqt::TrackResolved& done : ready) {
    moqt::TrackResolution r;
    if (track_->failure()) {
      r.error = moqt::RequestErrorCode::kInternalError;
      r.reason = "relay: " + track_->failure()->second;
    } else {
      r.track = track_;
    }
    done(std::move(r));
  }
}

void TrackFeed::RefuseAll(moqt::RequestErrorCode code, const std::string& reason) {
  std::vector<moqt::TrackResolved> all = std::move(waiters_);
  waiters_.clear();
  for (moqt::TrackResolved& done : all) {
    moqt::TrackResolution r;
    r.error = code;
    r.reason = reason;
    done(std::move(r));
  }
}

void TrackFeed::Finish(bool complete, moqt::PublishDoneCode code, const std::string& reason) {
  if (ended_) return;
  ended_ = true;
  if (complete) {
    fill_done_ = true;
    track_->MarkComplete();
    Wake();
  } else {
    track_->Fail(code, reason);
    Wake();  // waiters answered with the failure
    if (session_) {
      moqt::MoqtSession* s = session_;
      session_ = nullptr;
      (void)s->Unsubscribe(request_id_);
    }
  }
  relay_->FeedEnded(this);
}

}  // namespace kvcs::relay
