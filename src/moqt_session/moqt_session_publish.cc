// MoqtSessionImpl's PUBLISH (draft-22 §10, message 0x1D): a subscription the publisher initiates.
//
// Publisher side (PublishTrack): the PUBLISH goes out on a request stream of ours with a Track
// Alias, FORWARD and the track's LARGEST_OBJECT; its subscription is served at once like an
// answered SUBSCRIBE with Next Object (an IncomingRequest under the PUBLISH's Request ID), so no
// live object is missed while the answer travels. The objects that existed before come as a fill
// when the subscriber asks for them (REQUEST_UPDATE with FILL_PARAMETERS). PUBLISH_DONE waits for
// PUBLISH_OK and, when objects existed, for that first update, but for no longer than
// publish_done_wait_ms after PUBLISH_OK (a subscriber that wants no fill never sends it).
// REQUEST_ERROR ends it all.
//
// Subscriber side (HandlePublish): AuthorizeRequest(kPublish), then MoqtSessionCallbacks::OnPublish
// accepts with a SubscribeVisitor or refuses. Accepted, the subscription is an OutgoingRequest
// under the PUBLISH's Request ID on the peer's request stream, so everything a subscription of
// ours does (alias attribution, fills, PUBLISH_DONE and its stream count, Unsubscribe) applies.
#include "moqt_session/moqt_filters.h"
#include "moqt_session/moqt_session.h"
#include "moqt_session/moqt_session_impl.h"

namespace kvcs::moqt {

// ----------------------------------------------------------------------------- publisher side
Result<uint64_t> MoqtSessionImpl::PublishTrack(const FullTrackName& name,
                                               const PublishOptions& options,
                                               std::shared_ptr<PublishVisitor> visitor) {
  Status err;
  if (!CheckReady(&err)) return err;
  std::shared_ptr<Track> track = source_ ? source_->FindTrack(name) : nullptr;
  if (!track) return ApiErr(SessionApiError::kNoSuchTrack, "no such track", Code::kNotFound);
  Publish m;
  m.request_id = next_request_id_;
  m.track = name;
  m.track_alias = next_alias_;
  m.params.authorization_tokens = options.auth_tokens;
  if (!options.forward) m.params.forward = false;
  m.params.largest_object = track->largest();
  if (track->options().group_order != GroupOrder::kAscending) {
    m.params.group_order = track->options().group_order;
  }
  m.track_properties = track->WireTrackProperties();
  OutgoingRequest out;
  out.id = m.request_id;
  out.track = name;
  out.publish_visitor = std::move(visitor);
  Result<uint64_t> id = OpenRequest(RequestKind::kPublish, std::move(out), m, false);
  if (!id.ok()) return id;
  ++next_alias_;
  IncomingRequest r;
  r.kind = RequestKind::kSubscribe;
  r.id = *id;
  r.stream = out_requests_[*id].stream;
  r.track = track;
  r.alias = m.track_alias;
  r.live = SubscriptionRange(LocationFilter{LocationFilterType::kNextObject}, track->largest());
  r.group_order = track->options().group_order;
  r.forward = options.forward;
  r.awaiting_publish_ok = true;
  r.awaiting_fill_request = track->largest().has_value();
  if (track->ended()) r.done_pending = true;
  in_requests_.emplace(*id, std::move(r));
  ServeTrack(track, *id);
  return id;
}

void MoqtSessionImpl::OnPublishResponse(StreamId id, OutgoingRequest& r, ControlMessage m) {
  const uint64_t rid = r.id;
  if (!r.answered) {
    r.answered = true;
    if (auto* e = std::get_if<RequestError>(&m)) {
      EndPublish(rid, *e);
      return;
    }
    auto* ok = std::get_if<RequestOk>(&m);
    if (!ok) {
      ProtocolViolation("PUBLISH answered with something else");
      return;
    }
    if (!ok->track_properties.empty()) {
      ProtocolViolation("track properties outside TRACK_STATUS_OK");
      return;
    }
    if (auto it = in_requests_.find(rid); it != in_requests_.end()) {
      it->second.awaiting_publish_ok = false;
      it->second.publish_ok_at_ms = Now();
    }
    if (auto v = r.publish_visitor) v->OnPublishResult(std::nullopt);
    if (closing_) return;
    MaybePublishDone(rid);
    return;
  }
  auto* u = std::get_if<RequestUpdate>(&m);
  if (!u) {
    ProtocolViolation(std::string("unexpected ") + std::string(MessageTypeName(MessageTypeOf(m))) +
                      " for a PUBLISH");
    return;
  }
  auto it = in_requests_.find(rid);
  if (it == in_requests_.end()) {
    // An update racing with our PUBLISH_DONE: nothing to update, its Request ID is used.
    (void)CheckPeerRequestId(u->request_id);
    return;
  }
  it->second.awaiting_fill_request = false;
  OnLaterRequestMessage(id, it->second, std::move(m));
  if (!closing_) MaybePublishDone(rid);
}

void MoqtSessionImpl::EndPublish(uint64_t id, const RequestError& error) {
  auto it = out_requests_.find(id);
  if (it == out_requests_.end() || it->second.kind != RequestKind::kPublish) return;
  std::shared_ptr<PublishVisitor> v = it->second.publish_visitor;
  const StreamId sid = it->second.stream;
  EndIncomingRequest(id, /*reset_streams=*/true);
  FinishOutgoingRequest(id);
  FinStream(sid);
  if (v) {
    v->OnPublishResult(error);
    v->OnPublishDone(false);
  }
}

void MoqtSessionImpl::MaybeFinishPublish(uint64_t id) {
  auto it = out_requests_.find(id);
  if (it == out_requests_.end() || it->second.kind != RequestKind::kPublish) return;
  if (!it->second.fin_received || in_requests_.count(id)) return;
  std::shared_ptr<PublishVisitor> v = it->second.publish_visitor;
  FinishOutgoingRequest(id);
  if (v) v->OnPublishDone(true);
}

// ---------------------------------------------------------------------------- subscriber side
bool MoqtSessionImpl::PublishedToUs(StreamId id, uint64_t request_id) const {
  auto it = out_requests_.find(request_id);
  return it != out_requests_.end() && it->second.stream == id &&
         it->second.kind == RequestKind::kSubscribe;
}

void MoqtSessionImpl::HandlePublish(StreamId id, const Publish& m) {
  if (!CheckTokens(m.params.authorization_tokens, false)) return;
  if (alias_to_sub_.count(m.track_alias)) {
    Close(SessionError::kDuplicateTrackAlias, "PUBLISH reuses a Track Alias in use");
    return;
  }
  // A refusal: REQUEST_ERROR + FIN; its data streams (parked, or arriving later) are stopped.
  auto refuse = [this, id, &m](RequestErrorCode code, std::string reason) {
    SendRequestError(id, code, std::move(reason));
    RetireAlias(m.track_alias);
    UnparkData(m.track_alias);
  };
  if (cb_) {
    if (auto err =
            cb_->AuthorizeRequest(MessageType::kPublish, m.track, m.params.authorization_tokens)) {
      refuse(*err, "refused");
      return;
    }
  }
  IncomingPublish in;
  in.request_id = m.request_id;
  in.track = m.track;
  in.track_alias = m.track_alias;
  in.largest = m.params.largest_object;
  in.forward = m.params.forward.value_or(true);
  in.track_properties = m.track_properties;
  in.tokens = m.params.authorization_tokens;
  PublishAnswer answer = cb_ ? cb_->OnPublish(in) : PublishAnswer{};
  if (closing_ || !Entry(id)) return;
  if (!answer.visitor) {
    refuse(answer.error, answer.reason);
    return;
  }
  OutgoingRequest r;
  r.kind = RequestKind::kSubscribe;
  r.id = m.request_id;
  r.stream = id;
  r.answered = true;
  r.track = m.track;
  r.sub_visitor = answer.visitor;
  r.sub_options.filter = m.params.location_filter.value_or(LocationFilter{});
  r.sub_options.group_order = m.params.group_order;
  r.sub_options.forward = in.forward;
  r.alias = m.track_alias;
  r.live_range = SubscriptionRange(r.sub_options.filter, in.largest);
  out_requests_[r.id] = std::move(r);
  alias_to_sub_[m.track_alias] = m.request_id;
  (void)SendControl(id, RequestOk{});  // PUBLISH_OK
  SubscribeOkInfo info;
  info.track_alias = m.track_alias;
  info.largest = in.largest;
  info.expires_ms = m.params.expires_ms;
  info.track_properties = m.track_properties;
  answer.visitor->OnSubscribeOk(info);
  if (closing_ || !out_requests_.count(m.request_id)) return;
  if (answer.fill_existing && in.largest && in.forward) {
    // {0,0}..L: everything before the live part (which starts after L) exactly once.
    SubscriptionUpdate fill;
    fill.fill = LocationFilter{LocationFilterType::kAbsoluteRange, 0, 0, in.largest->group,
                               in.largest->object};
    (void)UpdateSubscription(m.request_id, fill);
    if (closing_) return;
  }
  UnparkData(m.track_alias);
}

}  // namespace kvcs::moqt
