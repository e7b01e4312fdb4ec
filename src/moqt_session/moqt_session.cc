// MoqtSession and MoqtSessionImpl: the session itself (moqt_session.h, moqt_session_impl.h).
#include "moqt_session/moqt_session.h"

#include <algorithm>

#include "moqt/moqt_datagram.h"
#include "moqt/moqt_error.h"
#include "moqt/moqt_fields.h"
#include "moqt/moqt_limits.h"
#include "moqt_session/moqt_send_order.h"
#include "moqt_session/moqt_session_impl.h"

namespace kvcs::moqt {
namespace {

bool PrefixesOverlap(const TrackNamespace& a, const TrackNamespace& b) {
  return NamespaceHasPrefix(a, b) || NamespaceHasPrefix(b, a);
}

// The visitor installed on every transport stream the session adopts (owned by the stream): it
// forwards the stream's events by StreamId, so a stream that outlives its state in the session
// finds nothing rather than a dangling pointer.
class SessionStreamVisitor : public transport::StreamVisitor {
 public:
  SessionStreamVisitor(MoqtSessionImpl* s, StreamId id) : s_(s), id_(id) {}
  void OnCanRead() override { s_->OnStreamReadable(id_); }
  void OnCanWrite() override { s_->OnStreamWritable(id_); }
  void OnResetStreamReceived(transport::ErrorCode code) override { s_->OnStreamReset(id_, code); }
  void OnStopSendingReceived(transport::ErrorCode code) override {
    s_->OnStreamStopSending(id_, code);
  }
  void OnStreamClosed() override { s_->OnStreamGone(id_); }

 private:
  MoqtSessionImpl* s_;
  StreamId id_;
};

}  // namespace

// ----------------------------------------------------------------------- MoqtSessionImpl
MoqtSessionImpl::MoqtSessionImpl(transport::Session* t, MoqtSessionConfig config,
                                 MoqtSessionCallbacks* cb, TrackSource* source)
    : config_(std::move(config)), t_(t), cb_(cb), source_(source) {
  next_request_id_ = config_.perspective == Perspective::kClient ? 0 : 1;
  peer_next_ = config_.perspective == Perspective::kClient ? 1 : 0;
  t_->SetVisitor(this);
  if (t_->IsOpen()) Start();
}

MoqtSessionImpl::~MoqtSessionImpl() {
  alive_.reset();
  for (auto& [t, v] : served_) t->RemoveListener(this);
  for (auto& [id, r] : in_requests_) {
    if (r.ns_forwarder && source_) source_->RemoveNamespaceListener(r.ns_forwarder.get());
  }
  if (!closed_) {
    for (auto& [id, e] : streams_) {
      if (transport::Stream* s = t_->GetStreamById(id)) s->SetVisitor(nullptr);
    }
    t_->SetVisitor(nullptr);
  }
}

MoqtSessionImpl::StreamEntry* MoqtSessionImpl::Entry(StreamId id) {
  auto it = streams_.find(id);
  return it == streams_.end() ? nullptr : &it->second;
}

void MoqtSessionImpl::Adopt(transport::Stream* s, StreamEntry::Role role) {
  StreamEntry& e = streams_[s->GetStreamId()];
  e.role = role;
  s->SetVisitor(std::make_unique<SessionStreamVisitor>(this, s->GetStreamId()));
}

void MoqtSessionImpl::Start() {
  if (started_ || closing_) return;
  started_ = true;
  transport::Stream* s = t_->OpenOutgoingUnidirectionalStream();
  if (!s) {
    Close(SessionError::kInternalError, "cannot open the control stream");
    return;
  }
  Adopt(s, StreamEntry::Role::kControlOut);
  s->SetSendOrder(kControlSendOrder);
  control_out_ = s->GetStreamId();
  Setup setup;
  SetupOptions& o = setup.options;
  if (config_.perspective == Perspective::kClient) {
    o.path = config_.path;
    o.authority = config_.authority;
  }
  o.authorization_tokens = config_.setup_auth_tokens;
  o.max_filter_ranges = config_.max_filter_ranges;
  if (!config_.implementation.empty()) o.implementation = config_.implementation;
  Status st = SendControl(*control_out_, setup);
  if (!st.ok()) Close(SessionError::kInternalError, "SETUP: " + st.message());
}

void MoqtSessionImpl::Close(SessionError code, std::string_view reason) {
  if (closing_) return;
  closing_ = true;
  DetachFromSource();
  t_->CloseSession(static_cast<uint64_t>(code), reason);
}

void MoqtSessionImpl::DetachFromSource() {
  for (auto& [t, v] : served_) t->RemoveListener(this);
  served_.clear();
  for (auto& [id, r] : in_requests_) {
    if (r.ns_forwarder && source_) source_->RemoveNamespaceListener(r.ns_forwarder.get());
    r.ns_forwarder.reset();
  }
}

void MoqtSessionImpl::OnSessionReady() { Start(); }

void MoqtSessionImpl::OnSessionClosed(const transport::CloseInfo& info) {
  if (closed_) return;
  closing_ = true;
  closed_ = true;
  DetachFromSource();
  in_requests_.clear();
  streams_.clear();
  // Every outstanding request of ours ends now.
  auto reqs = std::move(out_requests_);
  out_requests_.clear();
  for (auto& [id, r] : reqs) {
    if (r.publish_visitor) {
      if (!r.answered) {
        r.publish_visitor->OnPublishResult(
            MakeRequestError(RequestErrorCode::kInternalError, "session closed"));
      }
      r.publish_visitor->OnPublishDone(false);
    } else if (r.sub_visitor) {
      SubscriptionDone d;
      d.session_closed = true;
      d.all_streams_received = false;
      d.track_ended = r.eot_seen;
      r.sub_visitor->OnComplete(d);
    } else if (r.fetch_visitor) {
      FetchDone d;
      d.session_closed = true;
      r.fetch_visitor->OnComplete(d);
    } else if (r.ns_visitor) {
      r.ns_visitor->OnClosed(MakeRequestError(RequestErrorCode::kInternalError, "session closed"));
    } else if (r.status_cb && !r.answered) {
      TrackStatusReply rep;
      rep.error = MakeRequestError(RequestErrorCode::kInternalError, "session closed");
      r.status_cb(rep);
    } else if (r.result_cb && !r.answered) {
      r.result_cb(MakeRequestError(RequestErrorCode::kInternalError, "session closed"));
    }
  }
  if (cb_) cb_->OnSessionClosed(info.code, info.reason, info.by_peer);
}

// ------------------------------------------------------------------------ writing helpers
Status MoqtSessionImpl::SendControl(StreamId id, const ControlMessage& m, bool fin) {
  Bytes bytes;
  KVCS_RETURN_IF_ERROR(AppendControlMessage(m, &bytes, config_.wire));
  StreamEntry* e = Entry(id);
  if (!e) return ApiErr(SessionApiError::kClosed, "stream gone");
  e->out_bytes += bytes.size();
  e->out.push_back(std::move(bytes));
  if (fin) e->fin_after_out = true;
  FlushControl(id);
  return Status::Ok();
}

void MoqtSessionImpl::FlushControl(StreamId id) {
  StreamEntry* e = Entry(id);
  transport::Stream* s = TStream(id);
  if (!e || !s || e->fin_sent) return;
  while (!e->out.empty() && s->CanWrite()) {
    bool last = e->out.size() == 1 && e->fin_after_out;
    if (!s->Write(e->out.front(), last).ok()) return;
    e->out_bytes -= e->out.front().size();
    e->out.pop_front();
    if (last) e->fin_sent = true;
  }
  if (e->out.empty() && e->fin_after_out && !e->fin_sent && s->CanWrite()) {
    if (s->Write({}, true).ok()) e->fin_sent = true;
  }
}

void MoqtSessionImpl::FinStream(StreamId id) {
  StreamEntry* e = Entry(id);
  if (!e || e->fin_sent) return;
  e->fin_after_out = true;
  FlushControl(id);
}

bool MoqtSessionImpl::CheckReady(Status* err) {
  if (closing_) {
    *err = ApiErr(SessionApiError::kClosed, "session closed");
    return false;
  }
  if (!setup_received_) {
    *err = ApiErr(SessionApiError::kNotReady, "SETUP not exchanged yet");
    return false;
  }
  if (peer_goaway_) {
    *err = ApiErr(SessionApiError::kGoingAway, "peer sent GOAWAY");
    return false;
  }
  if (out_requests_.size() >= kMaxOutgoingRequests) {
    *err = ApiErr(SessionApiError::kTooManyRequests, "too many requests", Code::kResourceExhausted);
    return false;
  }
  return true;
}

Result<uint64_t> MoqtSessionImpl::OpenRequest(RequestKind kind, OutgoingRequest req,
                                              const ControlMessage& first, bool fin) {
  Bytes probe;
  Status valid = AppendControlMessage(first, &probe, config_.wire);
  if (!valid.ok()) {
    return ApiErr(SessionApiError::kInvalid, valid.message(), Code::kInvalidArgument);
  }
  transport::Stream* s = t_->OpenOutgoingBidirectionalStream();
  if (!s) return ApiErr(SessionApiError::kNoStreamCredit, "no bidi stream credit");
  Adopt(s, StreamEntry::Role::kRequestOut);
  s->SetSendOrder(kRequestSendOrder);
  StreamEntry& e = streams_[s->GetStreamId()];
  e.parser = std::make_unique<ControlStreamParser>(config_.wire);
  e.has_request = true;
  e.request_id = req.id;
  req.kind = kind;
  req.stream = s->GetStreamId();
  uint64_t id = req.id;
  out_requests_[id] = std::move(req);
  next_request_id_ += 2;
  Status st = SendControl(s->GetStreamId(), first, fin);
  if (!st.ok()) return st;
  return id;
}

bool MoqtSessionImpl::CheckPeerRequestId(uint64_t id) {
  uint64_t parity = config_.perspective == Perspective::kClient ? 1 : 0;
  if (id % 2 != parity || id < peer_next_ || peer_seen_.count(id)) {
    Close(SessionError::kInvalidRequestId, "request ID " + std::to_string(id));
    return false;
  }
  peer_seen_.insert(id);
  for (;;) {
    while (peer_seen_.count(peer_next_)) {
      peer_seen_.erase(peer_next_);
      peer_next_ += 2;
    }
    // Too many IDs above a gap: the missing IDs are given up (their streams were reset before
    // any byte arrived, or their first message could not be parsed) rather than closing a
    // session that did nothing wrong. A request that still arrives with such an ID is then a
    // duplicate (INVALID_REQUEST_ID).
    if (peer_seen_.size() <= kMaxRequestIdGaps) return true;
    peer_next_ = *peer_seen_.begin();
  }
}

bool MoqtSessionImpl::CheckTokens(const std::vector<AuthToken>& tokens, bool in_setup) {
  // We advertise no MAX_AUTH_TOKEN_CACHE_SIZE (0): aliases cannot be registered with us.
  for (const AuthToken& t : tokens) {
    switch (t.alias_type) {
      case AuthTokenAliasType::kUseValue:
        break;
      case AuthTokenAliasType::kRegister:
        if (!in_setup) {  // in SETUP an over-budget REGISTER is treated as USE_VALUE
          Close(SessionError::kAuthTokenCacheOverflow, "token alias cache is 0");
          return false;
        }
        break;
      case AuthTokenAliasType::kDelete:
      case AuthTokenAliasType::kUseAlias:
        if (in_setup) {
          ProtocolViolation("token alias DELETE/USE_ALIAS in SETUP");
        } else {
          Close(SessionError::kUnknownAuthTokenAlias, "unknown token alias");
        }
        return false;
    }
  }
  return true;
}

// --------------------------------------------------------------------------- stream events
void MoqtSessionImpl::OnIncomingBidirectionalStreamAvailable() {
  while (transport::Stream* s = t_->AcceptIncomingBidirectionalStream()) {
    if (closing_) {
      s->ResetAndStop(static_cast<uint64_t>(StreamResetCode::kSessionClosed));
      continue;
    }
    Adopt(s, StreamEntry::Role::kRequestIn);
    s->SetSendOrder(kRequestSendOrder);
    StreamEntry& e = streams_[s->GetStreamId()];
    e.parser = std::make_unique<ControlStreamParser>(config_.wire);
    if (!setup_received_) {
      parked_requests_.push_back(s->GetStreamId());
      continue;
    }
    ReadRequestStream(s->GetStreamId());
  }
}

void MoqtSessionImpl::OnIncomingUnidirectionalStreamAvailable() {
  while (transport::Stream* s = t_->AcceptIncomingUnidirectionalStream()) {
    if (closing_) {
      s->SendStopSending(static_cast<uint64_t>(StreamResetCode::kSessionClosed));
      continue;
    }
    Adopt(s, StreamEntry::Role::kUnknownUni);
    stats_.data_streams_accepted++;
    ProbeUniStream(s->GetStreamId());
  }
}

void MoqtSessionImpl::OnStreamReadable(StreamId id) {
  if (closing_) return;
  StreamEntry* e = Entry(id);
  if (!e) return;
  switch (e->role) {
    case StreamEntry::Role::kUnknownUni:
      ProbeUniStream(id);
      break;
    case StreamEntry::Role::kControlIn:
      ReadControlIn(id);
      break;
    case StreamEntry::Role::kRequestIn:
      if (setup_received_) ReadRequestStream(id);
      break;
    case StreamEntry::Role::kRequestOut:
      ReadRequestStream(id);
      break;
    case StreamEntry::Role::kDataIn:
      if (!e->parked) ReadDataIn(id);
      break;
    default:
      break;
  }
}

void MoqtSessionImpl::OnStreamWritable(StreamId id) {
  if (closing_) return;
  StreamEntry* e = Entry(id);
  if (!e) return;
  if (e->role == StreamEntry::Role::kDataOut) {
    PumpData(id);
    return;
  }
  FlushControl(id);
  // A peer request stream we stopped reading because its answers backed up: resume.
  if (e->role == StreamEntry::Role::kRequestIn && setup_received_ &&
      e->out_bytes <= kMaxRequestStreamBacklogBytes) {
    ReadRequestStream(id);
  }
}

void MoqtSessionImpl::OnStreamReset(StreamId id, uint64_t code) {
  if (closing_) return;
  StreamEntry* e = Entry(id);
  if (!e) return;
  switch (e->role) {
    case StreamEntry::Role::kControlIn:
      ProtocolViolation("control stream reset");
      return;
    case StreamEntry::Role::kRequestIn:
      resolving_.erase(id);
      if (e->has_request && PublishedToUs(id, e->request_id)) {
        // The publisher cancelled a subscription it had PUBLISHed to us.
        OutgoingRequest& r = out_requests_.find(e->request_id)->second;
        r.stream_trouble = true;
        r.AssumePublishDone("request stream reset", Now());
        MaybeCompleteSubscription(r.id);
        return;
      }
      if (e->has_request) EndIncomingRequest(e->request_id, true);
      if (transport::Stream* s = TStream(id)) {
        s->ResetWithCode(static_cast<uint64_t>(StreamResetCode::kCancelled));
      }
      return;
    case StreamEntry::Role::kRequestOut: {
      e->read_fin = true;
      if (!e->has_request) return;
      auto it = out_requests_.find(e->request_id);
      if (it == out_requests_.end()) return;
      OutgoingRequest& r = it->second;
      if (r.kind == RequestKind::kSubscribeNamespace || r.kind == RequestKind::kPublishNamespace) {
        FinishOutgoingRequest(r.id);
        return;
      }
      if (r.kind == RequestKind::kPublish) {
        EndPublish(r.id, MakeRequestError(RequestErrorCode::kInternalError, "request reset"));
        return;
      }
      if (r.kind == RequestKind::kSubscribe) {
        r.stream_trouble = true;
        r.AssumePublishDone("request stream reset", Now());
        MaybeCompleteSubscription(r.id);
        return;
      }
      if (r.kind == RequestKind::kFetch) {
        r.fetch_data_reset = true;
        if (!r.answered) {
          r.answered = true;
        }
        MaybeCompleteFetch(r.id);
        return;
      }
      FinishOutgoingRequest(r.id);
      return;
    }
    case StreamEntry::Role::kDataIn:
    case StreamEntry::Role::kUnknownUni:
      if (e->parked) {
        e->parked = false;
        if (parked_data_) --parked_data_;
      }
      if (e->in && !e->in->ended()) DataStreamEnded(*e->in, false);
      return;
    default:
      return;
  }
}

void MoqtSessionImpl::OnStreamStopSending(StreamId id, uint64_t code) {
  if (closing_) return;
  StreamEntry* e = Entry(id);
  if (!e) return;
  switch (e->role) {
    case StreamEntry::Role::kControlOut:
      ProtocolViolation("STOP_SENDING on the control stream");
      return;
    case StreamEntry::Role::kRequestIn:
      resolving_.erase(id);
      if (e->has_request) EndIncomingRequest(e->request_id, true);
      if (transport::Stream* s = TStream(id)) {
        s->SendStopSending(static_cast<uint64_t>(StreamResetCode::kCancelled));
      }
      return;
    case StreamEntry::Role::kRequestOut: {
      // The subscriber of a PUBLISH cancelled it (STOP_SENDING on our request stream).
      auto it = e->has_request ? out_requests_.find(e->request_id) : out_requests_.end();
      if (it != out_requests_.end() && it->second.kind == RequestKind::kPublish) {
        EndPublish(it->second.id, MakeRequestError(RequestErrorCode::kInternalError, "cancelled"));
        if (transport::Stream* s = TStream(id)) {
          s->ResetWithCode(static_cast<uint64_t>(StreamResetCode::kCancelled));
        }
      }
      return;
    }
    case StreamEntry::Role::kDataOut: {
      OutgoingDataStream* d = e->out_data.get();
      if (!d || d->finished()) return;
      if (!d->is_fetch()) {
        if (auto it = in_requests_.find(d->owner()); it != in_requests_.end()) {
          it->second.stopped_groups.insert(d->group());
        }
      }
      DataOutFinished(*d);
      return;
    }
    default:
      return;
  }
}

void MoqtSessionImpl::OnStreamGone(StreamId id) {
  auto it = streams_.find(id);
  if (it == streams_.end()) return;
  StreamEntry& e = it->second;
  if (e.parked && parked_data_) --parked_data_;
  if (e.in) e.in->ReleasePayload();
  if (e.out_data) retired_written_ += e.out_data->written_bytes();  // taken (or reset)
  if (!t_->IsOpen()) {  // the session is going away: OnSessionClosed reports the rest
    streams_.erase(it);
    return;
  }
  if (e.role == StreamEntry::Role::kDataOut && e.out_data && !e.out_data->finished() && !closing_) {
    DataOutFinished(*e.out_data);
  }
  if (e.role == StreamEntry::Role::kDataIn && e.in && !e.in->ended() && !closing_) {
    DataStreamEnded(*e.in, false);
  }
  resolving_.erase(id);
  streams_.erase(id);
}

// ------------------------------------------------------------------------- control stream
void MoqtSessionImpl::ReadControlIn(StreamId id) {
  transport::Stream* s = TStream(id);
  StreamEntry* e = Entry(id);
  if (!s || !e) return;
  for (;;) {
    transport::Stream::PeekResult p = s->PeekReadable();
    if (p.data.empty() && !p.fin) return;
    e->parser->Append(p.data);
    bool fin = s->Consume(p.data.size()) || (p.fin && p.data.empty());
    for (;;) {
      Result<ControlMessage> m = e->parser->Next();
      if (!m.ok()) {
        if (m.status().code() == Code::kNeedMoreData) break;
        Close(DispositionOf(m.status()).session_code, "control stream: " + m.status().message());
        return;
      }
      OnControlMessage(id, std::move(*m));
      if (closing_) return;
      e = Entry(id);
      if (!e) return;
    }
    if (fin) {
      ProtocolViolation("control stream closed");
      return;
    }
    if (p.data.empty()) return;
  }
}

void MoqtSessionImpl::OnControlMessage(StreamId id, ControlMessage m) {
  if (!setup_received_) {
    if (auto* setup = std::get_if<Setup>(&m)) {
      OnSetup(*setup);
      return;
    }
    ProtocolViolation("first control message is not SETUP");
    return;
  }
  if (auto* g = std::get_if<moqt::GoAway>(&m)) {
    if (peer_goaway_) {
      ProtocolViolation("second GOAWAY");
      return;
    }
    if (config_.perspective == Perspective::kServer && !g->new_session_uri.empty()) {
      ProtocolViolation("client GOAWAY with a URI");
      return;
    }
    peer_goaway_ = true;
    if (cb_) cb_->OnGoAway(g->new_session_uri);
    return;
  }
  ProtocolViolation(std::string("unexpected ") + std::string(MessageTypeName(MessageTypeOf(m))) +
                    " on the control stream");
}

void MoqtSessionImpl::OnSetup(const Setup& s) {
  const SetupOptions& o = s.options;
  if (config_.perspective == Perspective::kClient && (o.path || o.authority)) {
    ProtocolViolation("server SETUP carries PATH or AUTHORITY");
    return;
  }
  if (!CheckTokens(o.authorization_tokens, true)) return;
  if (cb_) {
    if (std::optional<SessionError> err = cb_->OnPeerSetup(o)) {
      Close(*err, "SETUP refused");
      return;
    }
  }
  peer_setup_ = o;
  setup_received_ = true;
  if (cb_) cb_->OnSetupComplete(peer_setup_);
  if (closing_) return;
  std::vector<StreamId> parked = std::move(parked_requests_);
  parked_requests_.clear();
  for (StreamId id : parked) {
    if (closing_) return;
    ReadRequestStream(id);
  }
  // Data streams held before SETUP.
  std::vector<StreamId> ids;
  for (auto& [id, e] : streams_) {
    if (e.role == StreamEntry::Role::kUnknownUni) ids.push_back(id);
  }
  for (StreamId id : ids) {
    if (closing_) return;
    ProbeUniStream(id);
  }
}

// ------------------------------------------------------------------------ request streams
void MoqtSessionImpl::ReadRequestStream(StreamId id) {
  for (;;) {
    StreamEntry* e = Entry(id);
    transport::Stream* s = TStream(id);
    if (!e || !s || e->read_fin) return;
    // Drain the messages the parser holds. While our answers on a peer's request stream are
    // backed up (the peer does not read them), stop: unread bytes hold the peer by flow control,
    // and OnStreamWritable resumes here once the answers drain.
    for (;;) {
      if (e->role == StreamEntry::Role::kRequestIn &&
          e->out_bytes > kMaxRequestStreamBacklogBytes) {
        return;
      }
      Result<ControlMessage> m = e->parser->Next();
      if (!m.ok()) {
        if (m.status().code() == Code::kNeedMoreData) break;
        ErrorDisposition d = DispositionOf(m.status());
        if (!d.close_session && e->role == StreamEntry::Role::kRequestIn && !e->has_request) {
          // A range-filter content error in a new request: refuse the request, keep the session.
          // The request ID cannot be read from a body we failed to parse; the stream carries no
          // further messages, so the request ends here.
          SendRequestError(id, d.request_code, m.status().message());
          if (transport::Stream* st = TStream(id)) {
            st->SendStopSending(static_cast<uint64_t>(StreamResetCode::kCancelled));
          }
          return;
        }
        Close(d.session_code, "request stream: " + m.status().message());
        return;
      }
      if (e->role == StreamEntry::Role::kRequestIn) {
        if (!e->has_request) {
          OnFirstRequestMessage(id, std::move(*m));
        } else if (auto it = in_requests_.find(e->request_id); it != in_requests_.end()) {
          OnLaterRequestMessage(id, it->second, std::move(*m));
        } else if (PublishedToUs(id, e->request_id)) {
          OnResponseMessage(id, out_requests_.find(e->request_id)->second, std::move(*m));
        } else if (auto* u = std::get_if<RequestUpdate>(&*m)) {
          // An update racing with the end of its request (PUBLISH_DONE sent): nothing to
          // update, but its Request ID is used all the same.
          if (!CheckPeerRequestId(u->request_id)) return;
        } else {
          ProtocolViolation("unexpected message on a finished request stream");
        }
      } else if (e->has_request) {
        if (auto it = out_requests_.find(e->request_id); it != out_requests_.end()) {
          OnResponseMessage(id, it->second, std::move(*m));
        }
      }
      if (closing_) return;
      e = Entry(id);
      if (!e || e->read_fin) return;
    }
    if (e->fin_pending) {
      OnRequestStreamFin(id, *e);
      return;
    }
    transport::Stream::PeekResult p = s->PeekReadable();
    if (p.data.empty() && !p.fin) return;
    e->parser->Append(p.data);
    if (s->Consume(p.data.size()) || (p.fin && p.data.empty())) e->fin_pending = true;
  }
}

void MoqtSessionImpl::OnRequestStreamFin(StreamId id, StreamEntry& e) {
  e.read_fin = true;
  if (!e.parser->OnFin().ok()) {
    ProtocolViolation("request stream ended inside a message");
    return;
  }
  if (e.role == StreamEntry::Role::kRequestIn) {
    if (!e.has_request) ProtocolViolation("request stream ended without a request");
    // A subscription PUBLISHed to us ends like one we sent, but our FIN waits for its
    // completion (every counted stream received): the publisher reads it as delivered.
    // Other requests end by our answer.
    if (!e.has_request || !PublishedToUs(id, e.request_id)) return;
    OutgoingRequest& r = out_requests_.find(e.request_id)->second;
    r.fin_received = true;
    if (!r.done) r.stream_trouble = true;
    r.AssumePublishDone("request stream ended without PUBLISH_DONE", Now());
    MaybeCompleteSubscription(r.id);  // FINs our side once complete
    return;
  }
  if (!e.has_request) return;
  auto it = out_requests_.find(e.request_id);
  if (it != out_requests_.end()) {
    OutgoingRequest& r = it->second;
    r.fin_received = true;
    switch (r.kind) {
      case RequestKind::kSubscribe:
        if (!r.done) r.stream_trouble = true;
        r.AssumePublishDone("request stream ended without PUBLISH_DONE", Now());
        MaybeCompleteSubscription(r.id);
        break;
      case RequestKind::kFetch:
        if (!r.answered) r.fetch_data_reset = true;
        MaybeCompleteFetch(r.id);
        break;
      case RequestKind::kPublish:
        if (!r.answered) {
          EndPublish(r.id, MakeRequestError(RequestErrorCode::kInternalError,
                                            "request stream ended without an answer"));
          break;
        }
        // The subscriber's FIN after our PUBLISH_DONE: delivered. Still serving: PUBLISH_DONE
        // (with our FIN) comes first, then MaybeFinishPublish.
        if (in_requests_.count(r.id)) return;
        MaybeFinishPublish(r.id);
        break;
      default:
        FinishOutgoingRequest(r.id);
    }
  }
  if (closing_) return;
  FinStream(id);
}

void MoqtSessionImpl::SendRequestError(StreamId id, RequestErrorCode code, std::string reason,
                                       bool fin) {
  RequestError e = MakeRequestError(code, std::move(reason));
  if (e.reason.size() > kMaxReasonPhraseBytes) e.reason.resize(kMaxReasonPhraseBytes);
  (void)SendControl(id, e, fin);
}

void MoqtSessionImpl::OnFirstRequestMessage(StreamId id, ControlMessage m) {
  StreamEntry* e = Entry(id);
  stats_.incoming_requests++;
  uint64_t rid = 0;
  std::visit(
      [&rid](const auto& msg) {
        using T = std::decay_t<decltype(msg)>;
        if constexpr (std::is_same_v<T, moqt::Subscribe> || std::is_same_v<T, moqt::Fetch> ||
                      std::is_same_v<T, moqt::TrackStatus> || std::is_same_v<T, Publish> ||
                      std::is_same_v<T, moqt::PublishNamespace> ||
                      std::is_same_v<T, moqt::SubscribeNamespace> ||
                      std::is_same_v<T, SubscribeTracks>) {
          rid = msg.request_id;
        }
      },
      m);
  MessageType type = MessageTypeOf(m);
  switch (type) {
    case MessageType::kSubscribe:
    case MessageType::kFetch:
    case MessageType::kTrackStatus:
    case MessageType::kPublish:
    case MessageType::kPublishNamespace:
    case MessageType::kSubscribeNamespace:
    case MessageType::kSubscribeTracks:
      break;
    default:
      ProtocolViolation(std::string(MessageTypeName(type)) + " opens a request stream");
      return;
  }
  if (!CheckPeerRequestId(rid)) return;
  e->has_request = true;
  e->request_id = rid;
  if (in_requests_.size() + resolving_.size() >= kMaxIncomingRequests) {
    SendRequestError(id, RequestErrorCode::kExcessiveLoad, "too many requests");
    return;
  }
  switch (type) {
    case MessageType::kSubscribe:
      HandleSubscribe(id, std::get<moqt::Subscribe>(m));
      break;
    case MessageType::kFetch:
      HandleFetch(id, std::get<moqt::Fetch>(m));
      break;
    case MessageType::kTrackStatus:
      HandleTrackStatus(id, std::get<moqt::TrackStatus>(m));
      break;
    case MessageType::kPublishNamespace:
      HandlePublishNamespace(id, std::get<moqt::PublishNamespace>(m));
      break;
    case MessageType::kSubscribeNamespace:
      HandleSubscribeNamespace(id, std::get<moqt::SubscribeNamespace>(m));
      break;
    case MessageType::kPublish:
      HandlePublish(id, std::get<Publish>(m));
      break;
    default:  // SUBSCRIBE_TRACKS: we do not ask for pushed tracks
      SendRequestError(id, RequestErrorCode::kNotSupported, "not supported");
      break;
  }
}

void MoqtSessionImpl::OnLaterRequestMessage(StreamId id, IncomingRequest& r, ControlMessage m) {
  auto* u = std::get_if<RequestUpdate>(&m);
  if (!u) {
    ProtocolViolation(std::string("unexpected ") + std::string(MessageTypeName(MessageTypeOf(m))) +
                      " on a request stream");
    return;
  }
  if (!CheckPeerRequestId(u->request_id)) return;
  if (!CheckTokens(u->params.authorization_tokens, false)) return;
  if (r.kind == RequestKind::kSubscribe) {
    HandleSubscriptionUpdate(r, *u);
    return;
  }
  if (r.kind == RequestKind::kFetch) {
    // Only SUBSCRIBER_PRIORITY (and tokens) apply to a fetch.
    if (u->params.subscriber_priority) {
      r.subscriber_priority = *u->params.subscriber_priority;
    }
    (void)SendControl(id, RequestOk{});
    return;
  }
  SendRequestError(id, RequestErrorCode::kNotSupported, "update not supported", false);
}

std::optional<RequestErrorCode> MoqtSessionImpl::CheckRangeFilters(const RangeFilters& f) {
  if (CountRanges(f) > config_.max_filter_ranges) return RequestErrorCode::kInvalidFilter;
  return std::nullopt;
}

// ------------------------------------------------------------------------- publisher side
void MoqtSessionImpl::HandleSubscribe(StreamId id, const moqt::Subscribe& m) {
  if (!CheckTokens(m.params.authorization_tokens, false)) return;
  if (cb_) {
    if (auto err = cb_->AuthorizeRequest(MessageType::kSubscribe, m.track,
                                         m.params.authorization_tokens)) {
      SendRequestError(id, *err, "refused");
      return;
    }
  }
  if (auto err = CheckRangeFilters(m.params.range_filters)) {
    SendRequestError(id, *err, "too many filter ranges");
    return;
  }
  if (m.params.fill_parameters) {
    if (auto err = CheckRangeFilters(m.params.fill_parameters->range_filters)) {
      SendRequestError(id, *err, "too many filter ranges");
      return;
    }
  }
  ResolveThen(id, {MessageType::kSubscribe, m.track, m.params.authorization_tokens, {}},
              [this, id, m](std::shared_ptr<Track> track) { AnswerSubscribe(id, m, track); });
}

void MoqtSessionImpl::ResolveThen(StreamId id, TrackQuery query,
                                  std::function<void(std::shared_ptr<Track>)> next) {
  if (!source_) {
    SendRequestError(id, RequestErrorCode::kDoesNotExist, "no such track");
    return;
  }
  resolving_.insert(id);
  std::weak_ptr<int> alive = alive_;
  source_->ResolveTrack(query, [this, alive, id, next = std::move(next)](TrackResolution r) {
    if (alive.expired() || closing_) return;
    if (resolving_.erase(id) == 0 || !Entry(id)) return;  // the requester left
    if (!r.track) {
      SendRequestError(id, r.error, r.reason);
      return;
    }
    next(std::move(r.track));
  });
}

void MoqtSessionImpl::AnswerSubscribe(StreamId id, const moqt::Subscribe& m,
                                      std::shared_ptr<Track> track) {
  IncomingRequest r;
  r.kind = RequestKind::kSubscribe;
  r.id = m.request_id;
  r.stream = id;
  r.track = track;
  r.alias = next_alias_++;
  LocationFilter filter = m.params.location_filter.value_or(LocationFilter{});
  r.live = SubscriptionRange(filter, track->largest());
  r.filters = m.params.range_filters;
  r.subscriber_priority = m.params.subscriber_priority.value_or(128);
  r.group_order = m.params.group_order.value_or(track->options().group_order);
  r.forward = m.params.forward.value_or(true);
  SubscribeOk ok;
  ok.track_alias = r.alias;
  if (track->largest()) ok.params.largest_object = track->largest();
  bool include = m.params.include_properties.value_or(true);
  if (include) ok.track_properties = track->WireTrackProperties();
  if (!SendControl(id, ok).ok()) {
    SendRequestError(id, RequestErrorCode::kInternalError, "SUBSCRIBE_OK");
    return;
  }
  uint64_t rid = r.id;
  auto [it, inserted] = in_requests_.emplace(rid, std::move(r));
  IncomingRequest& sub = it->second;
  if (m.params.fill_parameters && sub.forward) {
    StartFill(sub, rid, *m.params.fill_parameters, filter);
  }
  if (track->ended()) sub.done_pending = true;
  ServeTrack(track, rid);
  MaybePublishDone(rid);
}

void MoqtSessionImpl::StartFill(IncomingRequest& sub, uint64_t header_id, const FillParameters& fp,
                                const LocationFilter& sub_filter) {
  // Fill range: the inner LOCATION_FILTER, else the subscription's; kNone = the whole track; the
  // end is clamped to the Largest Object now (FETCH rules).
  LocationFilter f = fp.location_filter.value_or(sub_filter);
  FetchStreamParams p;
  p.owner = sub.id;
  p.header_id = header_id;
  p.range = FetchRange(f, sub.track->largest());
  if (p.range.empty()) return;  // empty fill range: no stream
  p.order = fp.group_order.value_or(sub.group_order);
  p.priority = fp.subscriber_priority.value_or(sub.subscriber_priority);
  p.filters = fp.range_filters.empty() ? sub.filters : fp.range_filters;
  p.fill = true;
  OpenFetchStream(std::move(p));
}

void MoqtSessionImpl::OpenFetchStream(FetchStreamParams p) {
  auto it = in_requests_.find(p.owner);
  if (it == in_requests_.end()) return;
  IncomingRequest& owner = it->second;
  transport::Stream* s = t_->OpenOutgoingUnidirectionalStream();
  if (!s) {
    pending_fetch_opens_.push_back(std::move(p));
    return;
  }
  if (p.fill) owner.streams_opened++;
  Adopt(s, StreamEntry::Role::kDataOut);
  StreamId sid = s->GetStreamId();
  StreamEntry& e = streams_[sid];
  const uint8_t priority = p.priority;
  const GroupOrder order = p.order;
  const uint64_t start_group = p.range.start.group;
  e.out_data = OutgoingDataStream::Fetch(this, sid, std::move(p), config_.wire);
  owner.data_streams.insert(sid);
  if (owner.kind == RequestKind::kFetch) owner.fetch_stream = sid;
  stats_.data_streams_opened++;
  s->SetSendOrder(
      DataSendOrder(priority, owner.track->GroupPriority(start_group), order, start_group, true));
  e.out_data->WriteHeader(*s, *owner.track);
  PumpData(sid);
}

void MoqtSessionImpl::OpenGroupStream(IncomingRequest& sub, uint64_t group, uint64_t first_object) {
  transport::Stream* s = t_->OpenOutgoingUnidirectionalStream();
  if (!s) {
    sub.waiting_groups.push_back({group, first_object});
    pending_group_opens_.push_back({sub.id, {group, first_object}});
    sub.group_streams[group] = 0;  // reserved
    return;
  }
  Adopt(s, StreamEntry::Role::kDataOut);
  StreamId sid = s->GetStreamId();
  StreamEntry& e = streams_[sid];
  e.out_data = OutgoingDataStream::Subgroup(this, sid, sub.id, sub.alias, group, first_object,
                                            sub.track->GroupPriority(group), config_.wire);
  sub.group_streams[group] = sid;
  sub.data_streams.insert(sid);
  sub.streams_opened++;
  stats_.data_streams_opened++;
  s->SetSendOrder(DataSendOrder(sub.subscriber_priority, sub.track->GroupPriority(group),
                                sub.group_order, group, false));
  e.out_data->WriteHeader(*s, *sub.track);
  PumpData(sid);
}

void MoqtSessionImpl::OnCanCreateNewOutgoingUnidirectionalStream() {
  if (closing_) return;
  while (!pending_fetch_opens_.empty() && t_->CanOpenNextOutgoingUnidirectionalStream()) {
    FetchStreamParams p = std::move(pending_fetch_opens_.front());
    pending_fetch_opens_.pop_front();
    auto it = in_requests_.find(p.owner);
    if (it == in_requests_.end()) continue;
    OpenFetchStream(std::move(p));
  }
  while (!pending_group_opens_.empty() && t_->CanOpenNextOutgoingUnidirectionalStream()) {
    auto [sub_id, g] = pending_group_opens_.front();
    pending_group_opens_.pop_front();
    auto it = in_requests_.find(sub_id);
    if (it == in_requests_.end()) continue;
    IncomingRequest& sub = it->second;
    auto w = std::find(sub.waiting_groups.begin(), sub.waiting_groups.end(), g);
    if (w == sub.waiting_groups.end()) continue;
    sub.waiting_groups.erase(w);
    sub.group_streams.erase(g.first);
    OpenGroupStream(sub, g.first, g.second);
  }
}

void MoqtSessionImpl::ServeTrack(const std::shared_ptr<Track>& t, uint64_t sub) {
  auto& entry = served_[t.get()];
  if (!entry.first) {
    entry.first = t;
    t->AddListener(this);
  }
  entry.second.insert(sub);
}

void MoqtSessionImpl::UnserveTrack(Track* t, uint64_t sub) {
  auto it = served_.find(t);
  if (it == served_.end()) return;
  it->second.second.erase(sub);
  if (it->second.second.empty()) {
    t->RemoveListener(this);
    served_.erase(it);
  }
}

void MoqtSessionImpl::OnTrackProgress(Track& track) {
  if (closing_) return;
  if (track.failure()) {
    EndRequestsOnFailedTrack(track);
    return;
  }
  auto it = served_.find(&track);
  if (it == served_.end()) return;
  std::vector<uint64_t> reqs(it->second.second.begin(), it->second.second.end());
  for (uint64_t rid : reqs) {
    MaybeSendFetchOk(rid);  // before its stream may end: FETCH_OK first
    if (closing_) return;
    auto rit = in_requests_.find(rid);
    if (rit == in_requests_.end()) continue;
    // Fetch and fill streams wait for what is known, and so does the FIN of a group stream
    // whose group ended (or the track's End of Track reached it) before the rest of the group
    // arrived (a relay's upstream): only those can move on progress, so only those are pumped
    // (progress comes with almost every object a relay receives).
    std::vector<StreamId> ds(rit->second.data_streams.begin(), rit->second.data_streams.end());
    for (StreamId sid : ds) {
      if (closing_) return;
      StreamEntry* e = Entry(sid);
      if (e && e->out_data &&
          (e->out_data->is_fetch() || track.ended() || track.GroupEnded(e->out_data->group()))) {
        PumpData(sid);
      }
    }
    if (closing_) return;
    if (track.ended()) MaybePublishDone(rid);
  }
}

void MoqtSessionImpl::EndRequestsOnFailedTrack(Track& track) {
  auto it = served_.find(&track);
  if (it == served_.end()) return;
  const PublishDoneCode code = track.failure()->first;
  const std::string reason = track.failure()->second;  // PUBLISH_DONE says why
  std::vector<uint64_t> reqs(it->second.second.begin(), it->second.second.end());
  for (uint64_t rid : reqs) {
    if (closing_) return;
    EndServedRequest(rid, StreamResetCode::kCancelled, code, reason);
  }
}

void MoqtSessionImpl::EndServedRequest(uint64_t id, StreamResetCode reset, PublishDoneCode code,
                                       std::string reason) {
  auto rit = in_requests_.find(id);
  if (rit == in_requests_.end()) return;
  IncomingRequest& r = rit->second;
  std::vector<StreamId> ds(r.data_streams.begin(), r.data_streams.end());
  for (StreamId sid : ds) CancelDataOut(sid, reset);
  r.data_streams.clear();
  r.group_streams.clear();
  DropPendingOpens(r);
  if (r.kind == RequestKind::kFetch) {
    EndFetch(id, RequestErrorCode::kInternalError, reason);
    return;
  }
  r.forward = false;  // no new subgroup streams
  r.done_pending = true;
  r.done_code = code;
  r.done_reason = std::move(reason);
  MaybePublishDone(id);
}

void MoqtSessionImpl::CheckStalledPeer() {
  if (config_.subscriber_stall_ms == 0 || closing_) return;
  const uint64_t now = Now();
  // What the peer has taken of our data streams (written minus still buffered), and whether
  // any bytes wait for it.
  uint64_t taken = retired_written_;
  bool waiting = !pending_group_opens_.empty() || !pending_fetch_opens_.empty();
  for (auto& [sid, e] : streams_) {
    if (e.role != StreamEntry::Role::kDataOut || !e.out_data) continue;
    const transport::Stream* s = t_->GetStreamById(sid);
    const uint64_t written = e.out_data->written_bytes();
    const uint64_t buffered = s ? std::min<uint64_t>(s->BufferedBytes(), written) : 0;
    taken += written - buffered;
    waiting = waiting || buffered > 0;
  }
  const bool progress = taken != last_taken_;
  last_taken_ = taken;
  if (!waiting || progress) {
    stalled_since_ms_.reset();
    if (waiting) stalled_since_ms_ = now;
    return;
  }
  if (!stalled_since_ms_) stalled_since_ms_ = now;
  const uint64_t stalled = now - *stalled_since_ms_;
  if (stalled < config_.subscriber_stall_ms) return;
  // Every request with data waiting for this peer is cut off: bytes it wrote that the peer
  // has not acknowledged (on any of its streams, finished ones too), a stream that cannot
  // write (the connection's budget or the stream's buffer is full), or a stream waiting for
  // the peer's credit. Those with nothing waiting (a live subscription between objects) stay,
  // and go the same way once data waits for them.
  std::set<uint64_t> owners;
  for (const auto& [group_owner, open] : pending_group_opens_) owners.insert(group_owner);
  for (const FetchStreamParams& p : pending_fetch_opens_) owners.insert(p.owner);
  for (const auto& [sid, e] : streams_) {
    if (e.role != StreamEntry::Role::kDataOut || !e.out_data) continue;
    const transport::Stream* s = t_->GetStreamById(sid);
    if (s && (s->BufferedBytes() > 0 || (!e.out_data->finished() && !s->CanWrite()))) {
      owners.insert(e.out_data->owner());
    }
  }
  std::vector<uint64_t> cut;
  for (uint64_t id : owners) {
    auto it = in_requests_.find(id);
    // (A subscription whose track ended waits for its streams to drain: cut off too.)
    if (it != in_requests_.end() && it->second.track &&
        (it->second.kind == RequestKind::kSubscribe || it->second.kind == RequestKind::kFetch)) {
      cut.push_back(id);
    }
  }
  for (uint64_t id : cut) {
    if (closing_) return;
    CutOffSlowRequest(id, stalled);
  }
}

void MoqtSessionImpl::CutOffSlowRequest(uint64_t id, uint64_t stalled_ms) {
  auto it = in_requests_.find(id);
  if (it == in_requests_.end()) return;
  const MessageType type =
      it->second.kind == RequestKind::kFetch ? MessageType::kFetch : MessageType::kSubscribe;
  const FullTrackName name = it->second.track->name();
  // Its streams that wrote their last byte but still wait for the peer go too: the peer must
  // not take a later End of Track for a whole delivery.
  std::vector<StreamId> tails;
  for (const auto& [sid, e] : streams_) {
    if (e.role == StreamEntry::Role::kDataOut && e.out_data && e.out_data->finished() &&
        e.out_data->owner() == id) {
      tails.push_back(sid);
    }
  }
  for (StreamId sid : tails) {
    transport::Stream* s = TStream(sid);
    if (s && s->BufferedBytes() > 0) {
      s->ResetWithCode(static_cast<uint64_t>(StreamResetCode::kTooFarBehind));
    }
  }
  if (type == MessageType::kFetch) {
    // Its FETCH_OK (with FIN) is still on its way: reset the request stream too, so the
    // subscriber learns the fetch failed even if its data stream's header never reached it.
    if (transport::Stream* s = TStream(it->second.stream)) {
      s->ResetWithCode(static_cast<uint64_t>(StreamResetCode::kTooFarBehind));
    }
    it->second.fetch_ok_pending.reset();  // nothing more goes on that stream
  }
  EndServedRequest(
      id, StreamResetCode::kTooFarBehind, PublishDoneCode::kTooFarBehind,
      "too far behind: the subscriber took nothing for " + std::to_string(stalled_ms) + " ms");
  if (cb_) cb_->OnSubscriberCutOff(type, name, id, stalled_ms);
}

void MoqtSessionImpl::OnObjectAdded(Track& track, const PublishedObject& o) {
  if (closing_) return;
  auto it = served_.find(&track);
  if (it == served_.end()) return;
  std::vector<uint64_t> subs(it->second.second.begin(), it->second.second.end());
  for (uint64_t sid : subs) {
    if (closing_) return;
    auto rit = in_requests_.find(sid);
    if (rit == in_requests_.end()) continue;
    IncomingRequest& sub = rit->second;
    if (track.filling()) {
      // A relay's track still filling: fetch and fill streams may be waiting for this object.
      std::vector<StreamId> ds(sub.data_streams.begin(), sub.data_streams.end());
      for (StreamId ds_id : ds) {
        StreamEntry* e = Entry(ds_id);
        if (e && e->out_data && e->out_data->is_fetch()) PumpData(ds_id);
        if (closing_) return;
      }
      rit = in_requests_.find(sid);
      if (rit == in_requests_.end()) continue;
    }
    if (rit->second.kind != RequestKind::kSubscribe) continue;
    if (o.status == ObjectStatus::kEndOfTrack) {
      // Open group streams without their own end are finished by the track's end.
      std::vector<StreamId> open;
      for (auto& [g, stream] : sub.group_streams) {
        if (stream != 0 && g != o.location.group) open.push_back(stream);
      }
      for (StreamId stream : open) PumpData(stream);
      if (closing_) return;
    }
    if (auto g = sub.group_streams.find(o.location.group);
        g != sub.group_streams.end() && g->second != 0 && !sub.live.Contains(o.location)) {
      PumpData(g->second);  // e.g. the range ends inside this group: the stream FINs
    } else if (sub.forward && sub.live.Contains(o.location) &&
               !sub.stopped_groups.count(o.location.group)) {
      bool sent = false;
      if (track.options().prefer_datagrams && o.status == ObjectStatus::kNormal &&
          !sub.group_streams.count(o.location.group)) {
        SendDatagram(sub, o, &sent);
      }
      if (!sent) {
        auto g = sub.group_streams.find(o.location.group);
        if (g == sub.group_streams.end()) {
          OpenGroupStream(sub, o.location.group, o.location.object);
        } else if (g->second != 0) {
          PumpData(g->second);
        }
      }
    }
    if (closing_) return;
    if (o.status == ObjectStatus::kEndOfTrack) {
      rit = in_requests_.find(sid);
      if (rit == in_requests_.end()) continue;
      rit->second.done_pending = true;
    }
    MaybePublishDone(sid);
  }
}

void MoqtSessionImpl::SendDatagram(IncomingRequest& sub, const PublishedObject& o, bool* sent) {
  *sent = false;
  size_t max = t_->GetMaxDatagramSize();
  if (max == 0) return;
  ObjectDatagram d;
  d.track_alias = sub.alias;
  d.location = o.location;
  d.publisher_priority = o.publisher_priority;
  d.properties = o.properties;
  if (!PassesRangeFilters(sub.filters, 0, o.location.object, o.publisher_priority, o.properties)) {
    *sent = true;  // filtered out: nothing to send
    return;
  }
  Bytes out;
  if (!AppendObjectDatagram(d, *o.payload, &out, config_.wire).ok() || out.size() > max) return;
  if (t_->SendOrQueueDatagram(out).ok()) {
    *sent = true;
    stats_.datagrams_sent++;
    stats_.objects_sent++;
  }
}

void MoqtSessionImpl::PumpData(StreamId id) {
  if (closing_) return;
  StreamEntry* e = Entry(id);
  if (!e || !e->out_data || e->out_data->finished()) return;
  transport::Stream* s = TStream(id);
  auto rit = in_requests_.find(e->out_data->owner());
  if (!s || rit == in_requests_.end()) return;
  e->out_data->Pump(*s, rit->second);
}

void MoqtSessionImpl::DataOutFinished(OutgoingDataStream& d) {
  if (d.finished()) return;
  d.MarkFinished();
  const StreamId id = d.id();
  auto it = in_requests_.find(d.owner());
  if (it == in_requests_.end()) return;
  IncomingRequest& r = it->second;
  r.data_streams.erase(id);
  if (!d.is_fetch()) {
    auto g = r.group_streams.find(d.group());
    if (g != r.group_streams.end() && g->second == id) r.group_streams.erase(g);
  }
  if (r.kind == RequestKind::kFetch) {
    // A stream that ended with its FIN the moment its end became known: FETCH_OK goes first.
    // Otherwise (stopped by the peer, reset: its objects evicted, the stream gone) the End
    // Location is still unknown and never will be for this request.
    const uint64_t fid = r.id;
    if (!r.track->failure()) MaybeSendFetchOk(fid);
    EndFetch(fid, RequestErrorCode::kInternalError,
             "the fetch's data stream ended before its End Location was known");
    return;
  }
  MaybePublishDone(r.id);
}

void MoqtSessionImpl::EndFetch(uint64_t id, RequestErrorCode code, const std::string& reason) {
  auto it = in_requests_.find(id);
  if (it == in_requests_.end() || it->second.kind != RequestKind::kFetch) return;
  IncomingRequest& r = it->second;
  if (r.fetch_ok_pending) {
    r.fetch_ok_pending.reset();
    SendRequestError(r.stream, code, reason);
  }
  EndIncomingRequest(id, false);
}

void MoqtSessionImpl::MaybePublishDone(uint64_t sub_id) {
  auto it = in_requests_.find(sub_id);
  if (it == in_requests_.end()) return;
  IncomingRequest& r = it->second;
  if (r.kind != RequestKind::kSubscribe || !r.done_pending) return;
  if (r.awaiting_publish_ok || r.awaiting_fill_request) return;
  if (!r.data_streams.empty() || !r.waiting_groups.empty()) return;
  // A relay's track can have its End of Track before the groups below it (its upstream's group
  // streams arrive in any order): those still on their way go out first (OnTrackProgress).
  if (r.done_code == PublishDoneCode::kTrackEnded && r.track && r.track->ended() &&
      !r.track->KnownThrough(*r.track->end_of_track())) {
    return;
  }
  for (const FetchStreamParams& p : pending_fetch_opens_) {
    if (p.owner == sub_id) return;
  }
  PublishDone done;
  done.status_code = static_cast<uint64_t>(r.done_code);
  done.stream_count = r.streams_opened;
  done.reason = !r.done_reason.empty()                        ? r.done_reason
                : r.done_code == PublishDoneCode::kTrackEnded ? "track ended"
                                                              : "done";
  (void)SendControl(r.stream, done, true);
  EndIncomingRequest(sub_id, false);
  MaybeFinishPublish(sub_id);
}

void MoqtSessionImpl::EndIncomingRequest(uint64_t id, bool reset_streams) {
  auto it = in_requests_.find(id);
  if (it == in_requests_.end()) return;
  IncomingRequest& r = it->second;
  if (reset_streams) {
    std::vector<StreamId> ds(r.data_streams.begin(), r.data_streams.end());
    for (StreamId sid : ds) CancelDataOut(sid);
  }
  if (r.track) UnserveTrack(r.track.get(), id);
  if (r.ns_forwarder && source_) source_->RemoveNamespaceListener(r.ns_forwarder.get());
  if (r.kind == RequestKind::kPublishNamespace && cb_) cb_->OnPublishNamespaceDone(r.prefix);
  DropPendingOpens(r);
  in_requests_.erase(id);
}

void MoqtSessionImpl::CancelDataOut(StreamId sid, StreamResetCode code) {
  if (transport::Stream* s = TStream(sid)) {
    s->ResetWithCode(static_cast<uint64_t>(code));
  }
  if (StreamEntry* e = Entry(sid); e && e->out_data) e->out_data->MarkFinished();
}

void MoqtSessionImpl::DropPendingGroupOpens(IncomingRequest& r) {
  const uint64_t id = r.id;
  r.waiting_groups.clear();
  pending_group_opens_.erase(
      std::remove_if(pending_group_opens_.begin(), pending_group_opens_.end(),
                     [id](const auto& p) { return p.first == id; }),
      pending_group_opens_.end());
}

void MoqtSessionImpl::DropPendingOpens(IncomingRequest& r) {
  DropPendingGroupOpens(r);
  const uint64_t id = r.id;
  pending_fetch_opens_.erase(
      std::remove_if(pending_fetch_opens_.begin(), pending_fetch_opens_.end(),
                     [id](const FetchStreamParams& p) { return p.owner == id; }),
      pending_fetch_opens_.end());
}

void MoqtSessionImpl::HandleSubscriptionUpdate(IncomingRequest& r, const RequestUpdate& m) {
  const MessageParameters& p = m.params;
  std::optional<RequestErrorCode> err = CheckRangeFilters(p.range_filters);
  if (!err && p.fill_parameters) err = CheckRangeFilters(p.fill_parameters->range_filters);
  if (err) {
    SendRequestError(r.stream, *err, "update refused", false);
    // A failed update terminates the subscription (PUBLISH_DONE UPDATE_FAILED).
    std::vector<StreamId> ds(r.data_streams.begin(), r.data_streams.end());
    for (StreamId sid : ds) CancelDataOut(sid);
    r.data_streams.clear();
    r.group_streams.clear();
    DropPendingOpens(r);  // streams still waiting for credit are never opened now
    r.forward = false;
    r.done_pending = true;
    r.done_code = PublishDoneCode::kUpdateFailed;
    MaybePublishDone(r.id);
    return;
  }
  if (p.subscriber_priority) {
    r.subscriber_priority = *p.subscriber_priority;
    for (auto& [g, sid] : r.group_streams) {
      if (transport::Stream* s = sid ? TStream(sid) : nullptr) {
        s->SetSendOrder(DataSendOrder(r.subscriber_priority, r.track->GroupPriority(g),
                                      r.group_order, g, false));
      }
    }
  }
  LocationFilter filter{LocationFilterType::kNone};
  if (p.location_filter) {
    filter = *p.location_filter;
    r.live = SubscriptionRange(filter, r.track->largest());
  }
  if (!p.range_filters.empty()) r.filters = p.range_filters;
  bool paused = false;
  if (p.forward) {
    if (r.forward && !*p.forward) {
      // Forwarding off: no more objects on this subscription's subgroup streams. The open ones
      // are reset (they would otherwise go on pulling from the Track) and those waiting for
      // credit are dropped; fills already running are left alone (reference §13).
      std::vector<std::pair<uint64_t, StreamId>> open(r.group_streams.begin(),
                                                      r.group_streams.end());
      for (auto [g, sid] : open) {
        if (sid == 0) continue;
        CancelDataOut(sid);
        r.data_streams.erase(sid);
      }
      r.group_streams.clear();
      DropPendingGroupOpens(r);
      paused = true;
    } else if (!r.forward && *p.forward) {
      r.stopped_groups.clear();  // a subgroup the subscriber stopped may be reopened now
    }
    r.forward = *p.forward;
  }
  RequestOk ok;
  if (r.track->largest()) ok.params.largest_object = r.track->largest();
  (void)SendControl(r.stream, ok);
  const uint64_t sub_id = r.id;
  if (p.fill_parameters && r.forward) {
    StartFill(r, m.request_id, *p.fill_parameters,
              p.location_filter ? filter : LocationFilter{LocationFilterType::kNone});
  }
  if (paused) MaybePublishDone(sub_id);  // the reset streams may have been the last ones
}

void MoqtSessionImpl::HandleFetch(StreamId id, const moqt::Fetch& m) {
  if (!CheckTokens(m.params.authorization_tokens, false)) return;
  if (cb_) {
    if (auto err =
            cb_->AuthorizeRequest(MessageType::kFetch, m.track, m.params.authorization_tokens)) {
      SendRequestError(id, *err, "refused");
      return;
    }
  }
  if (auto err = CheckRangeFilters(m.params.range_filters)) {
    SendRequestError(id, *err, "too many filter ranges");
    return;
  }
  ResolveThen(id,
              {MessageType::kFetch, m.track, m.params.authorization_tokens,
               m.params.location_filter.value_or(LocationFilter{})},
              [this, id, m](std::shared_ptr<Track> track) { AnswerFetch(id, m, track); });
}

void MoqtSessionImpl::AnswerFetch(StreamId id, const moqt::Fetch& m, std::shared_ptr<Track> track) {
  std::optional<Location> largest = track->largest();
  LocationFilter f = m.params.location_filter.value_or(LocationFilter{});
  LocationRange range = FetchRange(f, largest);
  // Nothing published, or the start lies beyond the Largest Object: INVALID_RANGE (read
  // literally, this refuses Next Object and Relative Start 0; docs/protocols/moqt-session.md).
  if (!largest || FilterStart(f, largest) > *largest) {
    SendRequestError(id, RequestErrorCode::kInvalidRange, "start beyond the largest object");
    return;
  }
  FetchOk ok;
  ok.end_location = *range.end;
  IncomingRequest r;
  r.kind = RequestKind::kFetch;
  r.id = m.request_id;
  r.stream = id;
  r.track = track;
  r.subscriber_priority = m.params.subscriber_priority.value_or(128);
  r.fetch_ok_with_properties = m.params.include_properties.value_or(true);
  r.fetch_ok_pending = ok;
  in_requests_.emplace(r.id, std::move(r));
  // Served like a subscription, so that a relay's track still filling wakes the fetch stream.
  ServeTrack(track, m.request_id);
  MaybeSendFetchOk(m.request_id);
  FetchStreamParams p;
  p.owner = m.request_id;
  p.header_id = m.request_id;
  p.range = range;
  p.order = m.params.group_order.value_or(GroupOrder::kAscending);
  p.priority = m.params.subscriber_priority.value_or(128);
  p.filters = m.params.range_filters;
  OpenFetchStream(std::move(p));
}

void MoqtSessionImpl::MaybeSendFetchOk(uint64_t id) {
  auto it = in_requests_.find(id);
  if (it == in_requests_.end() || !it->second.fetch_ok_pending) return;
  IncomingRequest& r = it->second;
  const Track& track = *r.track;
  FetchOk ok = *r.fetch_ok_pending;
  Location& end = ok.end_location;
  if (end.object == UINT64_MAX) {
    // The range ends with its group: the End Location is that group's last object, unknown
    // while a relay's copy of the group is still filling.
    if (!track.KnownThrough({end.group, UINT64_MAX})) return;
    std::optional<uint64_t> last = track.LastNormalObject(end.group);
    end.object = last ? *last : 0;
  }
  std::optional<Location> last_normal = track.largest_normal();
  ok.end_of_track = track.ended() && (!last_normal || end >= *last_normal);
  if (r.fetch_ok_with_properties) ok.track_properties = track.WireTrackProperties();
  r.fetch_ok_pending.reset();
  (void)SendControl(r.stream, ok, true);
}

void MoqtSessionImpl::HandleTrackStatus(StreamId id, const moqt::TrackStatus& m) {
  if (!CheckTokens(m.params.authorization_tokens, false)) return;
  if (cb_) {
    if (auto err = cb_->AuthorizeRequest(MessageType::kTrackStatus, m.track,
                                         m.params.authorization_tokens)) {
      SendRequestError(id, *err, "refused");
      return;
    }
  }
  ResolveThen(id, {MessageType::kTrackStatus, m.track, m.params.authorization_tokens, {}},
              [this, id, m](std::shared_ptr<Track> track) { AnswerTrackStatus(id, m, track); });
}

void MoqtSessionImpl::AnswerTrackStatus(StreamId id, const moqt::TrackStatus& m,
                                        std::shared_ptr<Track> track) {
  RequestOk ok;
  if (track->largest()) ok.params.largest_object = track->largest();
  if (m.params.include_properties.value_or(true))
    ok.track_properties = track->WireTrackProperties();
  (void)SendControl(id, ok, true);
}

void MoqtSessionImpl::HandlePublishNamespace(StreamId id, const moqt::PublishNamespace& m) {
  if (!CheckTokens(m.params.authorization_tokens, false)) return;
  size_t count = 0;
  for (auto& [rid, r] : in_requests_) count += r.kind == RequestKind::kPublishNamespace;
  if (count >= kMaxNamespacesPerSession) {
    SendRequestError(id, RequestErrorCode::kExcessiveLoad, "too many namespaces");
    return;
  }
  if (cb_) {
    if (auto err = cb_->AuthorizeRequest(MessageType::kPublishNamespace,
                                         FullTrackName{m.track_namespace, ""},
                                         m.params.authorization_tokens)) {
      SendRequestError(id, *err, "refused");
      return;
    }
    if (auto err = cb_->OnPublishNamespace(m.track_namespace)) {
      SendRequestError(id, *err, "refused");
      return;
    }
  }
  IncomingRequest r;
  r.kind = RequestKind::kPublishNamespace;
  r.id = m.request_id;
  r.stream = id;
  r.prefix = m.track_namespace;
  in_requests_.emplace(r.id, std::move(r));
  (void)SendControl(id, RequestOk{});
}

void MoqtSessionImpl::HandleSubscribeNamespace(StreamId id, const moqt::SubscribeNamespace& m) {
  if (!CheckTokens(m.params.authorization_tokens, false)) return;
  if (cb_) {
    if (auto err =
            cb_->AuthorizeRequest(MessageType::kSubscribeNamespace, FullTrackName{m.prefix, ""},
                                  m.params.authorization_tokens)) {
      SendRequestError(id, *err, "refused");
      return;
    }
  }
  for (auto& [rid, r] : in_requests_) {
    if (r.kind == RequestKind::kSubscribeNamespace && PrefixesOverlap(r.prefix, m.prefix)) {
      SendRequestError(id, RequestErrorCode::kPrefixOverlap, "prefix overlaps an active one");
      return;
    }
  }
  if (!source_) {
    SendRequestError(id, RequestErrorCode::kDoesNotExist, "nothing published here");
    return;
  }
  IncomingRequest r;
  r.kind = RequestKind::kSubscribeNamespace;
  r.id = m.request_id;
  r.stream = id;
  r.prefix = m.prefix;
  r.ns_forwarder = std::make_unique<NamespaceForwarder>(this, r.id, m.prefix);
  auto [it, ins] = in_requests_.emplace(r.id, std::move(r));
  IncomingRequest& req = it->second;
  (void)SendControl(id, RequestOk{});
  source_->AddNamespaceListener(req.ns_forwarder.get());
  for (const TrackNamespace& ns : source_->ListNamespaces()) {
    if (closing_) return;
    // Looked up again each time: a subscriber that does not read may have ended the request.
    auto live = in_requests_.find(m.request_id);
    if (live == in_requests_.end()) return;
    live->second.ns_forwarder->OnNamespaceAdded(ns);
    if (closing_) return;
  }
}

void MoqtSessionImpl::SendNamespaceMessage(uint64_t request_id, const ControlMessage& message) {
  if (closing_) return;
  auto it = in_requests_.find(request_id);
  if (it == in_requests_.end()) return;
  IncomingRequest& r = it->second;
  (void)SendControl(r.stream, message);
  // A subscriber that does not read its NAMESPACE messages: end the request rather than queue
  // without bound (reference §12: the publisher may reset a namespace subscription flow control
  // blocks).
  StreamEntry* e = Entry(r.stream);
  if (e && e->out_bytes > kMaxNamespaceBacklogBytes) {
    StreamId sid = r.stream;
    e->out.clear();
    e->out_bytes = 0;
    EndIncomingRequest(request_id, false);
    if (transport::Stream* s = TStream(sid)) {
      s->ResetAndStop(static_cast<uint64_t>(StreamResetCode::kExcessiveLoad));
    }
  }
}

// ------------------------------------------------------------------------ subscriber side
void MoqtSessionImpl::OnResponseMessage(StreamId id, OutgoingRequest& r, ControlMessage m) {
  if (auto* g = std::get_if<moqt::GoAway>(&m)) {
    (void)g;  // a per-request GOAWAY: nothing to migrate to in this implementation
    return;
  }
  const uint64_t rid = r.id;
  auto* err = std::get_if<RequestError>(&m);
  switch (r.kind) {
    case RequestKind::kSubscribe: {
      if (!r.answered) {
        r.answered = true;
        if (err) {
          auto v = r.sub_visitor;
          SubscriptionDone d;
          d.error = *err;
          d.all_streams_received = false;
          FinishOutgoingRequest(rid);
          FinStream(id);
          if (v) v->OnComplete(d);
          return;
        }
        auto* ok = std::get_if<SubscribeOk>(&m);
        if (!ok) {
          ProtocolViolation("SUBSCRIBE answered with something else");
          return;
        }
        if (auto a = alias_to_sub_.find(ok->track_alias); a != alias_to_sub_.end()) {
          auto other = out_requests_.find(a->second);
          if (other != out_requests_.end() && !(other->second.track == r.track)) {
            Close(SessionError::kDuplicateTrackAlias, "track alias reused");
            return;
          }
        }
        r.alias = ok->track_alias;
        alias_to_sub_[ok->track_alias] = rid;
        r.live_range = SubscriptionRange(r.sub_options.filter, ok->params.largest_object);
        if (r.sub_options.fill) {
          // FILL_PARAMETERS without a LOCATION_FILTER: the subscription's.
          r.FillAnswered(rid,
                         r.sub_options.fill->type == LocationFilterType::kNone
                             ? r.sub_options.filter
                             : *r.sub_options.fill,
                         ok->params.largest_object);
        }
        SubscribeOkInfo info;
        info.track_alias = ok->track_alias;
        info.largest = ok->params.largest_object;
        info.expires_ms = ok->params.expires_ms;
        info.track_properties = ok->track_properties;
        auto v = r.sub_visitor;
        if (v) v->OnSubscribeOk(info);
        if (closing_) return;
        UnparkData(ok->track_alias);
        return;
      }
      if (std::holds_alternative<RequestOk>(m) || err) {
        if (r.pending_updates.empty()) {
          ProtocolViolation("REQUEST_OK/REQUEST_ERROR without an update");
          return;
        }
        uint64_t uid = r.pending_updates.front();
        r.pending_updates.pop_front();
        std::optional<LocationFilter> fill;
        if (auto f = r.fill_updates.find(uid); f != r.fill_updates.end()) {
          fill = f->second;
          r.fill_updates.erase(f);  // answered: owed when accepted, nothing when refused
        }
        if (auto* ok = std::get_if<RequestOk>(&m)) {
          if (!ok->track_properties.empty()) {
            ProtocolViolation("track properties outside TRACK_STATUS_OK");
            return;
          }
          if (fill) r.FillAnswered(uid, *fill, ok->params.largest_object);
          // A new filter applies from the Largest Object the publisher reports with the OK.
          if (!r.live_range) {
            r.live_range = SubscriptionRange(r.sub_options.filter, ok->params.largest_object);
          }
        }
        auto v = r.sub_visitor;
        std::optional<RequestError> e;
        if (err) e = *err;
        if (v) v->OnUpdateResult(uid, e);
        return;
      }
      if (auto* done = std::get_if<PublishDone>(&m)) {
        if (r.done) {
          ProtocolViolation("second PUBLISH_DONE");
          return;
        }
        r.done = *done;
        r.done_at_ms = Now();
        MaybeCompleteSubscription(rid);
        return;
      }
      if (std::holds_alternative<PublishStateNotify>(m)) return;
      ProtocolViolation(std::string("unexpected ") +
                        std::string(MessageTypeName(MessageTypeOf(m))) + " for a subscription");
      return;
    }
    case RequestKind::kPublish:
      OnPublishResponse(id, r, std::move(m));
      return;
    case RequestKind::kFetch: {
      if (r.answered) {
        ProtocolViolation("unexpected message after FETCH_OK");
        return;
      }
      r.answered = true;
      if (err) {
        auto v = r.fetch_visitor;
        FetchDone d;
        d.error = *err;
        FinishOutgoingRequest(rid);
        if (v) v->OnComplete(d);
        return;
      }
      auto* ok = std::get_if<FetchOk>(&m);
      if (!ok) {
        ProtocolViolation("FETCH answered with something else");
        return;
      }
      r.fetch_ok = *ok;
      MaybeCompleteFetch(rid);
      return;
    }
    case RequestKind::kTrackStatus: {
      if (r.answered) {
        ProtocolViolation("unexpected message after TRACK_STATUS_OK");
        return;
      }
      r.answered = true;
      TrackStatusReply rep;
      if (err) {
        rep.error = *err;
      } else if (auto* ok = std::get_if<RequestOk>(&m)) {
        rep.largest = ok->params.largest_object;
        rep.track_properties = ok->track_properties;
      } else {
        ProtocolViolation("TRACK_STATUS answered with something else");
        return;
      }
      auto cb = r.status_cb;
      FinishOutgoingRequest(rid);
      if (cb) cb(rep);
      return;
    }
    case RequestKind::kPublishNamespace: {
      if (r.answered) {
        ProtocolViolation("unexpected message after PUBLISH_NAMESPACE answer");
        return;
      }
      r.answered = true;
      std::optional<RequestError> e;
      if (err) {
        e = *err;
      } else if (auto* ok = std::get_if<RequestOk>(&m)) {
        if (!ok->track_properties.empty()) {
          ProtocolViolation("track properties outside TRACK_STATUS_OK");
          return;
        }
      } else {
        ProtocolViolation("PUBLISH_NAMESPACE answered with something else");
        return;
      }
      auto cb = r.result_cb;
      if (err) FinishOutgoingRequest(rid);
      if (cb) cb(e);
      return;
    }
    case RequestKind::kSubscribeNamespace: {
      if (!r.answered) {
        r.answered = true;
        if (err) {
          auto v = r.ns_visitor;
          FinishOutgoingRequest(rid);
          if (v) v->OnClosed(*err);
          return;
        }
        auto* ok = std::get_if<RequestOk>(&m);
        if (!ok) {
          ProtocolViolation("SUBSCRIBE_NAMESPACE answered with something else");
          return;
        }
        if (!ok->track_properties.empty()) {
          ProtocolViolation("track properties outside TRACK_STATUS_OK");
          return;
        }
        // A copy: the visitor may end the request (and drop r's reference) from the callback.
        if (auto v = r.ns_visitor) v->OnRequestOk();
        return;
      }
      auto v = r.ns_visitor;
      if (auto* n = std::get_if<Namespace>(&m)) {
        if (r.active_ns.count(n->suffix)) {
          ProtocolViolation("NAMESPACE for an active namespace");
          return;
        }
        if (r.active_ns.size() >= kMaxNamespacesPerSession) {
          Close(SessionError::kProtocolViolation, "too many namespaces");
          return;
        }
        r.active_ns.insert(n->suffix);
        if (v) v->OnNamespace(n->suffix);
        return;
      }
      if (auto* n = std::get_if<NamespaceDone>(&m)) {
        if (!r.active_ns.erase(n->suffix)) {
          ProtocolViolation("NAMESPACE_DONE before its NAMESPACE");
          return;
        }
        if (v) v->OnNamespaceDone(n->suffix);
        return;
      }
      ProtocolViolation("unexpected message for SUBSCRIBE_NAMESPACE");
      return;
    }
    default:
      ProtocolViolation("unexpected response");
  }
}

void MoqtSessionImpl::ProbeUniStream(StreamId id) {
  if (closing_) return;
  StreamEntry* e = Entry(id);
  transport::Stream* s = TStream(id);
  if (!e || !s) return;
  transport::Stream::PeekResult p = s->PeekReadable();
  if (p.data.empty()) {
    if (p.fin) ProtocolViolation("empty unidirectional stream");
    return;
  }
  Result<UniStreamKind> kind = PeekUniStreamType(p.data);
  if (!kind.ok()) {
    if (kind.status().code() == Code::kNeedMoreData) {
      if (p.fin) ProtocolViolation("unidirectional stream ended inside its type");
      return;
    }
    ProtocolViolation("unknown unidirectional stream type");
    return;
  }
  if (*kind == UniStreamKind::kControl) {
    if (control_in_) {
      ProtocolViolation("second control stream");
      return;
    }
    control_in_ = id;
    e->role = StreamEntry::Role::kControlIn;
    e->parser = std::make_unique<ControlStreamParser>(config_.wire);
    ReadControlIn(id);
    return;
  }
  if (!setup_received_) return;  // held until SETUP (flow control stops the peer)
  if (*kind == UniStreamKind::kSubgroup) {
    // Read the header without consuming: the Track Alias decides whether we read on.
    IncomingDataStream::HeaderPeek probe =
        IncomingDataStream::PeekSubgroupHeader(p.data, config_.wire);
    if (probe.header && !alias_to_sub_.count(probe.header->track_alias)) {
      bool retired = std::find(retired_aliases_.begin(), retired_aliases_.end(),
                               probe.header->track_alias) != retired_aliases_.end();
      if (retired || parked_data_ >= kMaxParkedDataStreams) {
        e->role = StreamEntry::Role::kDataIn;
        s->SendStopSending(static_cast<uint64_t>(StreamResetCode::kCancelled));
        return;
      }
      if (!e->parked) {
        e->parked = true;
        ++parked_data_;
      }
      return;  // parked until SUBSCRIBE_OK names the alias
    }
    if (!probe.header && !probe.failed && !p.fin && p.data.size() < kMaxDataUnitBytes) return;
  }
  if (e->parked) {
    e->parked = false;
    if (parked_data_) --parked_data_;
  }
  e->role = StreamEntry::Role::kDataIn;
  e->in = std::make_unique<IncomingDataStream>(this, id, config_.wire);
  ReadDataIn(id);
}

void MoqtSessionImpl::UnparkData(uint64_t alias) {
  std::vector<StreamId> ids;
  for (auto& [id, e] : streams_) {
    if (e.role == StreamEntry::Role::kUnknownUni && e.parked) ids.push_back(id);
  }
  (void)alias;
  for (StreamId id : ids) {
    if (closing_) return;
    ProbeUniStream(id);
  }
}

void MoqtSessionImpl::ReadDataIn(StreamId id) {
  for (;;) {
    if (closing_) return;
    StreamEntry* e = Entry(id);
    transport::Stream* s = TStream(id);
    if (!e || !s || !e->in) return;
    transport::Stream::PeekResult p = s->PeekReadable();
    if (p.data.empty() && !p.fin) return;
    if (e->in->refused()) {
      s->Consume(p.data.size());
      return;
    }
    // Parsed in place (no copy): the view stays valid because nothing calls into this stream
    // until OnData returns — STOP_SENDING requested from inside a callback (Unsubscribe,
    // CancelFetch, a refused object) is deferred until then (StopReading).
    parsing_data_ = id;
    e->in->OnData(p.data, p.fin);
    parsing_data_.reset();
    if (deferred_stop_) {
      uint64_t code = *deferred_stop_;
      deferred_stop_.reset();
      s->SendStopSending(code);
      return;
    }
    if (closing_) return;
    bool fin = s->Consume(p.data.size()) || p.fin;
    if (fin || p.data.empty()) return;
  }
}

void MoqtSessionImpl::StopReading(StreamId id, uint64_t code) {
  if (parsing_data_ == id) {
    if (!deferred_stop_) deferred_stop_ = code;
    return;
  }
  if (transport::Stream* s = TStream(id)) s->SendStopSending(code);
}

bool MoqtSessionImpl::AttributeSubgroup(IncomingDataStream& d, const SubgroupHeader& h) {
  auto a = alias_to_sub_.find(h.track_alias);
  if (a == alias_to_sub_.end()) {
    RefuseDataStream(d, StreamResetCode::kCancelled);
    return false;
  }
  auto it = out_requests_.find(a->second);
  if (it == out_requests_.end()) {
    RefuseDataStream(d, StreamResetCode::kCancelled);
    return false;
  }
  OutgoingRequest& r = it->second;
  d.Attribute(r.id, /*fill=*/false);
  if (!r.CountDataStream()) {
    ProtocolViolation("more data streams than PUBLISH_DONE counted");
    return false;
  }
  return true;
}

std::optional<GroupOrder> MoqtSessionImpl::AttributeFetch(IncomingDataStream& d,
                                                          uint64_t request_id) {
  auto o = fetch_id_owner_.find(request_id);
  if (o == fetch_id_owner_.end()) {
    uint64_t parity = config_.perspective == Perspective::kClient ? 0 : 1;
    bool ours = request_id % 2 == parity && request_id < next_request_id_;
    if (!ours) {
      ProtocolViolation("fetch stream for a request we never sent");
      return std::nullopt;
    }
    RefuseDataStream(d, StreamResetCode::kCancelled);
    return std::nullopt;
  }
  auto it = out_requests_.find(o->second);
  if (it == out_requests_.end()) {
    RefuseDataStream(d, StreamResetCode::kCancelled);
    return std::nullopt;
  }
  OutgoingRequest& r = it->second;
  if (r.kind == RequestKind::kFetch) {
    d.Attribute(r.id, /*fill=*/false);
    if (r.fetch_data_seen) {
      ProtocolViolation("second fetch stream for one FETCH");
      return std::nullopt;
    }
    r.fetch_data_seen = true;
    return r.fetch_order;
  }
  d.Attribute(r.id, /*fill=*/true);
  r.fills_arrived.insert(request_id);
  r.fills_owed.erase(request_id);
  if (!r.CountDataStream()) {
    ProtocolViolation("more data streams than PUBLISH_DONE counted");
    return std::nullopt;
  }
  // Fill group order: inner GROUP_ORDER, else the subscription's, else Ascending.
  return r.sub_options.fill_group_order.value_or(
      r.sub_options.group_order.value_or(GroupOrder::kAscending));
}

bool MoqtSessionImpl::ReserveReassemblyBytes(uint64_t bytes) {
  if (reassembly_bytes_ + bytes > kMaxReassemblyBytesPerSession) return false;
  reassembly_bytes_ += bytes;
  return true;
}

void MoqtSessionImpl::ReleaseReassemblyBytes(uint64_t bytes) {
  reassembly_bytes_ -= std::min(bytes, reassembly_bytes_);
}

void MoqtSessionImpl::RefuseDataStream(IncomingDataStream& d, StreamResetCode code) {
  if (d.refused()) return;
  d.MarkRefused();
  StopReading(d.id(), static_cast<uint64_t>(code));
  if (d.attributed() && !d.ended()) DataStreamEnded(d, false);
}

void MoqtSessionImpl::DataStreamMalformed(const Status& error) {
  ErrorDisposition d = DispositionOf(error);
  Close(d.session_code, "data stream: " + error.message());
}

void MoqtSessionImpl::DeliverObject(IncomingDataStream& d, ByteSpan payload,
                                    std::shared_ptr<Bytes> buffer) {
  if (closing_ || d.refused()) return;
  auto it = out_requests_.find(d.owner());
  if (it == out_requests_.end()) return;
  OutgoingRequest& r = it->second;
  stats_.objects_received++;
  ReceivedObject o = d.CurrentObject(payload);
  o.payload_buffer = std::move(buffer);
  if (r.kind == RequestKind::kFetch) {
    if (!r.InLocalObjectRanges(o.location.object)) return;
    auto v = r.fetch_visitor;
    if (v) v->OnObject(o);
    return;
  }
  if (o.via == DeliveryKind::kSubscription) {
    if (o.status == ObjectStatus::kEndOfTrack) r.eot_seen = true;
    if (r.live_range && !r.live_range->Contains(o.location)) return;
  }
  if (o.status == ObjectStatus::kNormal && !r.InLocalObjectRanges(o.location.object)) return;
  auto v = r.sub_visitor;
  if (v) v->OnObject(o);
}

void MoqtSessionImpl::DeliverEndOfRange(IncomingDataStream& d, const EndOfRange& m) {
  auto it = out_requests_.find(d.owner());
  if (it == out_requests_.end()) return;
  auto v = it->second.fetch_visitor;
  if (v) v->OnEndOfRange(m);
}

void MoqtSessionImpl::DataStreamEnded(IncomingDataStream& d, bool clean) {
  d.MarkEnded();
  if (!d.attributed() || closing_) return;
  auto it = out_requests_.find(d.owner());
  if (it == out_requests_.end()) return;
  OutgoingRequest& r = it->second;
  if (r.kind == RequestKind::kFetch) {
    if (clean) {
      r.fetch_data_fin = true;
    } else {
      r.fetch_data_reset = true;
    }
    MaybeCompleteFetch(r.id);
    return;
  }
  if (r.streams_open) r.streams_open--;
  if (!clean) r.stream_trouble = true;
  if (d.is_fill() && r.sub_visitor) {
    std::shared_ptr<SubscribeVisitor> v = r.sub_visitor;
    const uint64_t rid = r.id;
    v->OnFillComplete(clean);
    if (closing_ || !out_requests_.count(rid)) return;
  }
  MaybeCompleteSubscription(r.id);
}

void MoqtSessionImpl::MaybeCompleteSubscription(uint64_t id) {
  auto it = out_requests_.find(id);
  if (it == out_requests_.end()) return;
  OutgoingRequest& r = it->second;
  if (!r.done || r.streams_open > 0) return;
  const bool unknown_count = r.done->stream_count == kStreamCountUnknown;
  const bool counted = unknown_count || r.streams_seen >= r.done->stream_count;
  // A fill we asked for whose stream has not arrived may still come only when the count is
  // unknown: a count reached says the publisher opened nothing more. An update with a fill still
  // unanswered at PUBLISH_DONE was ignored (answers come in order, before PUBLISH_DONE): its
  // fill never comes. Either way the subscription is not whole without it.
  // (A subscription with a stream reset is not whole anyway: no wait.)
  const bool fill_may_come = unknown_count && !r.fills_owed.empty() && !r.stream_trouble;
  const bool fill_missing = !r.fills_owed.empty() || !r.fill_updates.empty();
  const bool waiting = !counted || fill_may_come;
  const bool timed_out = Now() >= r.done_at_ms + config_.done_stream_wait_ms;
  // A subscriber cut off (TOO_FAR_BEHIND) had every stream reset: those reset before their
  // header reached us can never be counted, and waiting for them gains nothing. It ends once
  // the streams we know have ended, reported as not whole.
  const bool cut_off = r.done->status_code == static_cast<uint64_t>(PublishDoneCode::kTooFarBehind);
  if (waiting && !timed_out && !cut_off) return;
  if (cut_off) r.stream_trouble = true;
  SubscriptionDone d = r.Completion(!waiting && !fill_missing && !r.stream_trouble);
  auto v = r.sub_visitor;
  StreamId sid = r.stream;
  FinishOutgoingRequest(id);
  FinStream(sid);
  if (v) v->OnComplete(d);
}

void MoqtSessionImpl::MaybeCompleteFetch(uint64_t id) {
  auto it = out_requests_.find(id);
  if (it == out_requests_.end()) return;
  OutgoingRequest& r = it->second;
  bool failed = r.fetch_data_reset || (r.fin_received && !r.fetch_ok);
  if (!failed && !(r.fetch_ok && r.fetch_data_fin)) return;
  FetchDone d;
  d.ok = !failed;
  if (r.fetch_ok) {
    d.end_of_track = r.fetch_ok->end_of_track;
    d.end_location = r.fetch_ok->end_location;
  }
  auto v = r.fetch_visitor;
  FinishOutgoingRequest(id);
  if (v) v->OnComplete(d);
}

void MoqtSessionImpl::FinishOutgoingRequest(uint64_t id) {
  auto it = out_requests_.find(id);
  if (it == out_requests_.end()) return;
  OutgoingRequest& r = it->second;
  if (r.alias) RetireAlias(*r.alias);
  for (auto f = fetch_id_owner_.begin(); f != fetch_id_owner_.end();) {
    if (f->second == id) {
      f = fetch_id_owner_.erase(f);
    } else {
      ++f;
    }
  }
  out_requests_.erase(it);
}

void MoqtSessionImpl::RetireAlias(uint64_t alias) {
  auto a = alias_to_sub_.find(alias);
  if (a != alias_to_sub_.end()) alias_to_sub_.erase(a);
  retired_aliases_.push_back(alias);
  if (retired_aliases_.size() > kMaxRetiredAliases) retired_aliases_.pop_front();
}

void MoqtSessionImpl::OnDatagramReceived(ByteSpan datagram) {
  if (closing_ || !setup_received_) return;
  Result<ParsedDatagram> p = ParseDatagram(datagram, config_.wire);
  if (!p.ok()) {
    Close(DispositionOf(p.status()).session_code, "datagram: " + p.status().message());
    return;
  }
  if (p->padding) return;
  stats_.datagrams_received++;
  auto a = alias_to_sub_.find(p->object.track_alias);
  if (a == alias_to_sub_.end()) return;  // unknown or ended: dropped
  auto it = out_requests_.find(a->second);
  if (it == out_requests_.end()) return;
  OutgoingRequest& r = it->second;
  ReceivedObject o;
  o.location = p->object.location;
  o.publisher_priority = p->object.publisher_priority.value_or(128);
  o.status = p->object.status.value_or(ObjectStatus::kNormal);
  o.properties = &p->object.properties;
  o.payload = p->payload;
  o.via = DeliveryKind::kDatagram;
  if (o.status == ObjectStatus::kEndOfTrack) r.eot_seen = true;
  if (r.live_range && !r.live_range->Contains(o.location)) return;
  if (o.status == ObjectStatus::kNormal && !r.InLocalObjectRanges(o.location.object)) return;
  stats_.objects_received++;
  auto v = r.sub_visitor;
  if (v) v->OnObject(o);
}

// ------------------------------------------------------------------------------ API calls
Result<uint64_t> MoqtSessionImpl::Subscribe(const FullTrackName& track,
                                            const SubscribeOptions& options,
                                            std::shared_ptr<SubscribeVisitor> visitor) {
  Status err;
  if (!CheckReady(&err)) return err;
  moqt::Subscribe m;
  m.request_id = next_request_id_;
  m.track = track;
  MessageParameters& p = m.params;
  p.authorization_tokens = options.auth_tokens;
  p.location_filter = options.filter;
  if (options.subscriber_priority != 128) p.subscriber_priority = options.subscriber_priority;
  p.group_order = options.group_order;
  if (!options.forward) p.forward = false;
  bool send_ranges = !options.object_id_ranges.empty() &&
                     options.object_id_ranges.size() <= peer_setup_.max_filter_ranges.value_or(0);
  if (send_ranges) p.range_filters.object_id.push_back(ObjectIdFilter(options.object_id_ranges));
  if (options.fill) {
    FillParameters fp;
    if (options.fill->type != LocationFilterType::kNone) fp.location_filter = options.fill;
    fp.group_order = options.fill_group_order;
    p.fill_parameters = fp;
  }
  OutgoingRequest r;
  r.id = m.request_id;
  r.track = track;
  r.sub_visitor = std::move(visitor);
  r.sub_options = options;
  r.local_object_ranges = options.object_id_ranges;
  uint64_t id = m.request_id;
  if (options.fill) fetch_id_owner_[id] = id;
  Result<uint64_t> res = OpenRequest(RequestKind::kSubscribe, std::move(r), m, false);
  if (!res.ok()) fetch_id_owner_.erase(id);
  return res;
}

Result<uint64_t> MoqtSessionImpl::UpdateSubscription(uint64_t request_id,
                                                     const SubscriptionUpdate& update) {
  Status err;
  if (!CheckReady(&err)) return err;
  auto it = out_requests_.find(request_id);
  if (it == out_requests_.end() || it->second.kind != RequestKind::kSubscribe) {
    return ApiErr(SessionApiError::kUnknownRequest, "no such subscription", Code::kNotFound);
  }
  OutgoingRequest& r = it->second;
  // The peer's MAX_REQUEST_UPDATES (0 / absent = unlimited): exceeding it would make the peer
  // close the session with TOO_MANY_REQUEST_UPDATES.
  const uint64_t max_updates = peer_setup_.max_request_updates.value_or(0);
  if (max_updates != 0 && r.pending_updates.size() >= max_updates) {
    return ApiErr(SessionApiError::kTooManyRequests,
                  "the peer's MAX_REQUEST_UPDATES of unanswered updates is reached; wait for "
                  "OnUpdateResult",
                  Code::kResourceExhausted);
  }
  RequestUpdate m;
  m.request_id = next_request_id_;
  m.params.subscriber_priority = update.subscriber_priority;
  m.params.location_filter = update.filter;
  m.params.forward = update.forward;
  if (update.fill) {
    FillParameters fp;
    if (update.fill->type != LocationFilterType::kNone) fp.location_filter = update.fill;
    m.params.fill_parameters = fp;
  }
  Bytes probe;
  Status valid = AppendControlMessage(m, &probe, config_.wire);
  if (!valid.ok())
    return ApiErr(SessionApiError::kInvalid, valid.message(), Code::kInvalidArgument);
  uint64_t uid = next_request_id_;
  next_request_id_ += 2;
  if (update.filter) {
    // Our local view of the live range follows the new filter from the next REQUEST_OK's
    // Largest Object; until then accept the union (the publisher enforces the filter).
    r.sub_options.filter = *update.filter;
    r.live_range.reset();
  }
  r.pending_updates.push_back(uid);
  if (update.forward) r.sub_options.forward = *update.forward;
  if (update.fill) {
    fetch_id_owner_[uid] = request_id;
    // The publisher's fill range: the update's LOCATION_FILTER inside FILL_PARAMETERS, else the
    // update's new filter, else the whole track (OnLaterRequestMessage).
    LocationFilter range = *update.fill;
    if (range.type == LocationFilterType::kNone && update.filter) range = *update.filter;
    r.fill_updates[uid] = range;
  }
  KVCS_RETURN_IF_ERROR(SendControl(r.stream, m));
  return uid;
}

Status MoqtSessionImpl::Unsubscribe(uint64_t request_id) {
  return CancelOutgoingRequest(request_id, RequestKind::kSubscribe, "no such subscription");
}

// Stops reading the request's data streams (STOP_SENDING CANCELLED), ends the request without
// further visitor callbacks, and resets its request stream.
Status MoqtSessionImpl::CancelOutgoingRequest(uint64_t request_id, RequestKind kind,
                                              std::string_view unknown) {
  auto it = out_requests_.find(request_id);
  if (it == out_requests_.end() || it->second.kind != kind) {
    return ApiErr(SessionApiError::kUnknownRequest, std::string(unknown), Code::kNotFound);
  }
  StreamId sid = it->second.stream;
  for (auto& [id, e] : streams_) {
    if (e.in && e.in->owner() == request_id && e.in->attributed() && !e.in->ended()) {
      e.in->MarkEnded();
      e.in->MarkRefused();
      StopReading(id, static_cast<uint64_t>(StreamResetCode::kCancelled));
    }
  }
  FinishOutgoingRequest(request_id);
  if (transport::Stream* s = TStream(sid)) {
    s->ResetAndStop(static_cast<uint64_t>(StreamResetCode::kCancelled));
  }
  return Status::Ok();
}

Result<uint64_t> MoqtSessionImpl::Fetch(const FullTrackName& track, const FetchOptions& options,
                                        std::shared_ptr<FetchVisitor> visitor) {
  Status err;
  if (!CheckReady(&err)) return err;
  moqt::Fetch m;
  m.request_id = next_request_id_;
  m.track = track;
  m.params.authorization_tokens = options.auth_tokens;
  m.params.location_filter = options.range;
  if (options.group_order != GroupOrder::kAscending) m.params.group_order = options.group_order;
  if (options.subscriber_priority != 128) {
    m.params.subscriber_priority = options.subscriber_priority;
  }
  if (!options.object_id_ranges.empty() &&
      options.object_id_ranges.size() <= peer_setup_.max_filter_ranges.value_or(0)) {
    m.params.range_filters.object_id.push_back(ObjectIdFilter(options.object_id_ranges));
  }
  OutgoingRequest r;
  r.id = m.request_id;
  r.track = track;
  r.fetch_visitor = std::move(visitor);
  r.fetch_order = options.group_order;
  r.local_object_ranges = options.object_id_ranges;
  uint64_t id = m.request_id;
  fetch_id_owner_[id] = id;
  Result<uint64_t> res = OpenRequest(RequestKind::kFetch, std::move(r), m, true);
  if (!res.ok()) fetch_id_owner_.erase(id);
  return res;
}

Status MoqtSessionImpl::CancelFetch(uint64_t request_id) {
  return CancelOutgoingRequest(request_id, RequestKind::kFetch, "no such fetch");
}

Result<uint64_t> MoqtSessionImpl::RequestTrackStatus(const FullTrackName& track,
                                                     TrackStatusCallback cb,
                                                     std::vector<AuthToken> tokens) {
  Status err;
  if (!CheckReady(&err)) return err;
  moqt::TrackStatus m;
  m.request_id = next_request_id_;
  m.track = track;
  m.params.authorization_tokens = std::move(tokens);
  OutgoingRequest r;
  r.id = m.request_id;
  r.track = track;
  r.status_cb = std::move(cb);
  return OpenRequest(RequestKind::kTrackStatus, std::move(r), m, true);
}

Result<uint64_t> MoqtSessionImpl::SubscribeNamespace(const TrackNamespace& prefix,
                                                     std::shared_ptr<NamespaceVisitor> visitor,
                                                     std::vector<AuthToken> tokens) {
  Status err;
  if (!CheckReady(&err)) return err;
  moqt::SubscribeNamespace m;
  m.request_id = next_request_id_;
  m.prefix = prefix;
  m.params.authorization_tokens = std::move(tokens);
  OutgoingRequest r;
  r.id = m.request_id;
  r.ns_visitor = std::move(visitor);
  return OpenRequest(RequestKind::kSubscribeNamespace, std::move(r), m, false);
}

Status MoqtSessionImpl::UnsubscribeNamespace(uint64_t request_id) {
  auto it = out_requests_.find(request_id);
  if (it == out_requests_.end() || it->second.kind != RequestKind::kSubscribeNamespace) {
    return ApiErr(SessionApiError::kUnknownRequest, "no such namespace subscription",
                  Code::kNotFound);
  }
  StreamId sid = it->second.stream;
  FinishOutgoingRequest(request_id);
  if (transport::Stream* s = TStream(sid)) {
    s->ResetAndStop(static_cast<uint64_t>(StreamResetCode::kCancelled));
  }
  return Status::Ok();
}

Result<uint64_t> MoqtSessionImpl::PublishNamespace(const TrackNamespace& ns,
                                                   RequestResultCallback cb,
                                                   std::vector<AuthToken> tokens) {
  Status err;
  if (!CheckReady(&err)) return err;
  moqt::PublishNamespace m;
  m.request_id = next_request_id_;
  m.track_namespace = ns;
  m.params.authorization_tokens = std::move(tokens);
  OutgoingRequest r;
  r.id = m.request_id;
  r.result_cb = std::move(cb);
  return OpenRequest(RequestKind::kPublishNamespace, std::move(r), m, false);
}

Status MoqtSessionImpl::PublishNamespaceDone(uint64_t request_id) {
  auto it = out_requests_.find(request_id);
  if (it == out_requests_.end() || it->second.kind != RequestKind::kPublishNamespace) {
    return ApiErr(SessionApiError::kUnknownRequest, "no such namespace", Code::kNotFound);
  }
  StreamId sid = it->second.stream;
  FinishOutgoingRequest(request_id);
  if (transport::Stream* s = TStream(sid)) {
    s->ResetAndStop(static_cast<uint64_t>(StreamResetCode::kCancelled));
  }
  return Status::Ok();
}

Status MoqtSessionImpl::GoAway(std::string_view uri, uint64_t timeout_ms) {
  if (closing_ || !control_out_) return ApiErr(SessionApiError::kClosed, "session closed");
  if (goaway_sent_) return ApiErr(SessionApiError::kInvalid, "GOAWAY already sent");
  if (config_.perspective == Perspective::kClient && !uri.empty()) {
    return ApiErr(SessionApiError::kInvalid, "a client GOAWAY carries no URI",
                  Code::kInvalidArgument);
  }
  moqt::GoAway g;
  g.new_session_uri = std::string(uri);
  g.timeout_ms = timeout_ms;
  KVCS_RETURN_IF_ERROR(SendControl(*control_out_, g));
  goaway_sent_ = true;
  if (timeout_ms > 0) goaway_deadline_ms_ = Now() + timeout_ms;
  return Status::Ok();
}

void MoqtSessionImpl::OnTimer() {
  if (closing_) return;
  if (goaway_deadline_ms_ && Now() >= *goaway_deadline_ms_) {
    Close(SessionError::kGoawayTimeout, "GOAWAY timeout");
    return;
  }
  CheckStalledPeer();
  if (closing_) return;
  ExpireFillRequestWaits();
  if (closing_) return;
  std::vector<uint64_t> ids;
  for (auto& [id, r] : out_requests_) {
    if (r.kind == RequestKind::kSubscribe && r.done) ids.push_back(id);
  }
  for (uint64_t id : ids) {
    auto it = out_requests_.find(id);
    if (it == out_requests_.end()) continue;
    OutgoingRequest& r = it->second;
    if (Now() >= r.done_at_ms + config_.done_stream_wait_ms) {
      r.streams_open = 0;  // stop waiting for streams that never came or never ended
      r.stream_trouble = true;
      // Make the count check pass by timing out.
      SubscriptionDone d = r.Completion(/*all_streams_received=*/false);
      auto v = r.sub_visitor;
      StreamId sid = r.stream;
      FinishOutgoingRequest(id);
      FinStream(sid);
      if (v) v->OnComplete(d);
    }
  }
}

void MoqtSessionImpl::ExpireFillRequestWaits() {
  std::vector<uint64_t> ids;
  for (auto& [id, r] : in_requests_) {
    if (r.awaiting_fill_request && !r.awaiting_publish_ok &&
        Now() >= r.publish_ok_at_ms + config_.publish_done_wait_ms) {
      ids.push_back(id);
    }
  }
  for (uint64_t id : ids) {
    auto it = in_requests_.find(id);
    if (it == in_requests_.end()) continue;
    it->second.awaiting_fill_request = false;  // a later update is still served
    MaybePublishDone(id);
    if (closing_) return;
  }
}

MoqtSession::Stats MoqtSessionImpl::stats() const {
  MoqtSession::Stats s = stats_;
  s.reassembly_bytes = reassembly_bytes_;
  return s;
}

// ------------------------------------------------------------------------------ MoqtSession
MoqtSession::MoqtSession(transport::Session* transport, MoqtSessionConfig config,
                         MoqtSessionCallbacks* callbacks, TrackSource* source)
    : impl_(std::make_unique<MoqtSessionImpl>(transport, std::move(config), callbacks, source)) {}
MoqtSession::~MoqtSession() = default;

bool MoqtSession::setup_complete() const { return impl_->setup_complete(); }
bool MoqtSession::closed() const { return impl_->closed(); }
Perspective MoqtSession::perspective() const { return impl_->perspective(); }
const SetupOptions& MoqtSession::peer_setup() const { return impl_->peer_setup(); }
uint64_t MoqtSession::peer_max_filter_ranges() const {
  return impl_->peer_setup().max_filter_ranges.value_or(0);
}
bool MoqtSession::datagrams_enabled() const { return impl_->datagrams_enabled(); }
Result<uint64_t> MoqtSession::Subscribe(const FullTrackName& track, const SubscribeOptions& options,
                                        std::shared_ptr<SubscribeVisitor> visitor) {
  return impl_->Subscribe(track, options, std::move(visitor));
}
Result<uint64_t> MoqtSession::UpdateSubscription(uint64_t request_id,
                                                 const SubscriptionUpdate& update) {
  return impl_->UpdateSubscription(request_id, update);
}
Status MoqtSession::Unsubscribe(uint64_t request_id) { return impl_->Unsubscribe(request_id); }
Result<uint64_t> MoqtSession::Fetch(const FullTrackName& track, const FetchOptions& options,
                                    std::shared_ptr<FetchVisitor> visitor) {
  return impl_->Fetch(track, options, std::move(visitor));
}
Status MoqtSession::CancelFetch(uint64_t request_id) { return impl_->CancelFetch(request_id); }
Result<uint64_t> MoqtSession::RequestTrackStatus(const FullTrackName& track,
                                                 TrackStatusCallback callback,
                                                 std::vector<AuthToken> auth_tokens) {
  return impl_->RequestTrackStatus(track, std::move(callback), std::move(auth_tokens));
}
Result<uint64_t> MoqtSession::SubscribeNamespace(const TrackNamespace& prefix,
                                                 std::shared_ptr<NamespaceVisitor> visitor,
                                                 std::vector<AuthToken> auth_tokens) {
  return impl_->SubscribeNamespace(prefix, std::move(visitor), std::move(auth_tokens));
}
Status MoqtSession::UnsubscribeNamespace(uint64_t request_id) {
  return impl_->UnsubscribeNamespace(request_id);
}
Result<uint64_t> MoqtSession::PublishNamespace(const TrackNamespace& ns,
                                               RequestResultCallback callback,
                                               std::vector<AuthToken> auth_tokens) {
  return impl_->PublishNamespace(ns, std::move(callback), std::move(auth_tokens));
}
Status MoqtSession::PublishNamespaceDone(uint64_t request_id) {
  return impl_->PublishNamespaceDone(request_id);
}
Result<uint64_t> MoqtSession::PublishTrack(const FullTrackName& track,
                                           const PublishOptions& options,
                                           std::shared_ptr<PublishVisitor> visitor) {
  return impl_->PublishTrack(track, options, std::move(visitor));
}
Status MoqtSession::GoAway(std::string_view new_session_uri, uint64_t timeout_ms) {
  return impl_->GoAway(new_session_uri, timeout_ms);
}
void MoqtSession::Close(SessionError code, std::string_view reason) { impl_->Close(code, reason); }
void MoqtSession::OnTimer() { impl_->OnTimer(); }
MoqtSession::Stats MoqtSession::stats() const { return impl_->stats(); }

}  // namespace kvcs::moqt
