// MoqtSessionImpl: the session itself behind MoqtSession (NOT a public header; applications
// include moqt_session.h). It owns the lifecycle (SETUP, GOAWAY, close), the control stream, the
// request streams and the dispatch of every request (ours: OutgoingRequest; the peer's:
// IncomingRequest, moqt_request_state.h), and the per-stream state; the data streams themselves
// are IncomingDataStream / OutgoingDataStream objects that call back through
// SessionToDataStreamInterface, and SUBSCRIBE_NAMESPACE answers come from a NamespaceForwarder.
//
// It is the transport::SessionVisitor; every transport stream it touches gets a visitor (owned by
// the stream) that forwards events by StreamId. Per-stream state lives in `streams_` (erased only
// when the transport reports the stream closed), per-request state in `out_requests_` (we asked)
// and `in_requests_` (the peer asked), always looked up by ID, so an application callback that
// cancels a request never leaves a dangling pointer behind.
// docs/protocols/moqt-session.md describes the state machines.
#ifndef KVCS_MOQT_SESSION_MOQT_SESSION_IMPL_H_
#define KVCS_MOQT_SESSION_MOQT_SESSION_IMPL_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "moqt/moqt_control_parser.h"
#include "moqt/moqt_messages.h"
#include "moqt_session/moqt_incoming_data_stream.h"
#include "moqt_session/moqt_namespace_forwarder.h"
#include "moqt_session/moqt_outgoing_data_stream.h"
#include "moqt_session/moqt_request_state.h"
#include "moqt_session/moqt_session.h"
#include "moqt_session/moqt_session_interface.h"
#include "moqt_session/moqt_track.h"
#include "moqt_session/moqt_track_source.h"

namespace kvcs::moqt {

using transport::StreamId;

// Helpers shared by the session's source files (moqt_session.cc, moqt_session_publish.cc).
inline Status ApiErr(SessionApiError e, std::string msg, Code c = Code::kFailedPrecondition) {
  return {c, "moqt session: " + std::move(msg), static_cast<int>(e)};
}
inline RequestError MakeRequestError(RequestErrorCode code, std::string reason) {
  RequestError e;
  e.error_code = static_cast<uint64_t>(code);
  e.reason = std::move(reason);
  return e;
}

class MoqtSessionImpl : public transport::SessionVisitor,
                        public TrackListener,
                        public SessionToDataStreamInterface,
                        public NamespaceForwarder::Sink {
 public:
  MoqtSessionImpl(transport::Session* t, MoqtSessionConfig config, MoqtSessionCallbacks* cb,
                  TrackSource* source);
  ~MoqtSessionImpl() override;
  MoqtSessionImpl(const MoqtSessionImpl&) = delete;
  MoqtSessionImpl& operator=(const MoqtSessionImpl&) = delete;

  // transport::SessionVisitor
  void OnSessionReady() override;
  void OnSessionClosed(const transport::CloseInfo& info) override;
  void OnIncomingBidirectionalStreamAvailable() override;
  void OnIncomingUnidirectionalStreamAvailable() override;
  void OnDatagramReceived(ByteSpan datagram) override;
  void OnCanCreateNewOutgoingBidirectionalStream() override {}
  void OnCanCreateNewOutgoingUnidirectionalStream() override;
  // TrackListener
  void OnObjectAdded(Track& track, const PublishedObject& object) override;
  void OnTrackProgress(Track& track) override;

  // Transport events of one of our streams (from the visitor installed on it).
  void OnStreamReadable(StreamId id);
  void OnStreamWritable(StreamId id);
  void OnStreamReset(StreamId id, uint64_t code);
  void OnStreamStopSending(StreamId id, uint64_t code);
  void OnStreamGone(StreamId id);

  // ---- the MoqtSession API (moqt_session.h documents each call)
  bool setup_complete() const { return setup_received_ && !closing_; }
  bool closed() const { return closing_; }
  Perspective perspective() const { return config_.perspective; }
  const SetupOptions& peer_setup() const { return peer_setup_; }
  bool datagrams_enabled() const { return !closing_ && t_->GetMaxDatagramSize() > 0; }
  MoqtSession::Stats stats() const;

  Result<uint64_t> Subscribe(const FullTrackName& track, const SubscribeOptions& options,
                             std::shared_ptr<SubscribeVisitor> visitor);
  Result<uint64_t> UpdateSubscription(uint64_t request_id, const SubscriptionUpdate& update);
  Status Unsubscribe(uint64_t request_id);
  Result<uint64_t> Fetch(const FullTrackName& track, const FetchOptions& options,
                         std::shared_ptr<FetchVisitor> visitor);
  Status CancelFetch(uint64_t request_id);
  Result<uint64_t> RequestTrackStatus(const FullTrackName& track, TrackStatusCallback cb,
                                      std::vector<AuthToken> tokens);
  Result<uint64_t> SubscribeNamespace(const TrackNamespace& prefix,
                                      std::shared_ptr<NamespaceVisitor> visitor,
                                      std::vector<AuthToken> tokens);
  Status UnsubscribeNamespace(uint64_t request_id);
  Result<uint64_t> PublishNamespace(const TrackNamespace& ns, RequestResultCallback cb,
                                    std::vector<AuthToken> tokens);
  Status PublishNamespaceDone(uint64_t request_id);
  Result<uint64_t> PublishTrack(const FullTrackName& track, const PublishOptions& options,
                                std::shared_ptr<PublishVisitor> visitor);
  Status GoAway(std::string_view uri, uint64_t timeout_ms);
  void Close(SessionError code, std::string_view reason);
  void OnTimer();

 private:
  // What the session keeps per transport stream.
  struct StreamEntry {
    enum class Role {
      kUnknownUni,
      kControlIn,
      kControlOut,
      kRequestIn,
      kRequestOut,
      kDataIn,
      kDataOut
    };
    Role role = Role::kUnknownUni;
    std::unique_ptr<ControlStreamParser> parser;
    std::deque<Bytes> out;     // control/request bytes waiting for CanWrite
    size_t out_bytes = 0;      // total of `out` (kMaxRequestStreamBacklogBytes)
    bool fin_pending = false;  // the peer's FIN was consumed; handled once the parser drains
    bool fin_after_out = false;
    bool fin_sent = false;
    bool read_fin = false;
    bool has_request = false;
    uint64_t request_id = 0;
    bool parked = false;  // data stream waiting for its Track Alias / our setup
    std::unique_ptr<IncomingDataStream> in;
    std::unique_ptr<OutgoingDataStream> out_data;
  };

  // SessionToDataStreamInterface (called by the data stream objects only)
  bool AttributeSubgroup(IncomingDataStream& d, const SubgroupHeader& h) override;
  std::optional<GroupOrder> AttributeFetch(IncomingDataStream& d, uint64_t request_id) override;
  bool ReserveReassemblyBytes(uint64_t bytes) override;
  void ReleaseReassemblyBytes(uint64_t bytes) override;
  void RefuseDataStream(IncomingDataStream& d, StreamResetCode code) override;
  void DeliverObject(IncomingDataStream& d, ByteSpan payload,
                     std::shared_ptr<Bytes> buffer) override;
  void DeliverEndOfRange(IncomingDataStream& d, const EndOfRange& m) override;
  void DataStreamEnded(IncomingDataStream& d, bool clean) override;
  void DataStreamMalformed(const Status& error) override;
  void ObjectSent(uint64_t payload_bytes) override {
    stats_.objects_sent++;
    stats_.payload_bytes_sent += payload_bytes;
  }
  void OutgoingDataStreamFinished(OutgoingDataStream& d) override { DataOutFinished(d); }
  // NamespaceForwarder::Sink
  void SendNamespaceMessage(uint64_t request_id, const ControlMessage& message) override;

  // ---- helpers
  uint64_t Now() const { return config_.clock_ms ? config_.clock_ms() : 0; }
  void Start();
  StreamEntry* Entry(StreamId id);
  transport::Stream* TStream(StreamId id) { return t_->GetStreamById(id); }
  void Adopt(transport::Stream* s, StreamEntry::Role role);
  Status SendControl(StreamId id, const ControlMessage& m, bool fin = false);
  void FlushControl(StreamId id);
  void FinStream(StreamId id);
  bool CheckReady(Status* err);
  Result<uint64_t> OpenRequest(RequestKind kind, OutgoingRequest req, const ControlMessage& first,
                               bool fin);
  bool CheckPeerRequestId(uint64_t id);
  bool CheckTokens(const std::vector<AuthToken>& tokens, bool in_setup);
  void ProtocolViolation(std::string_view why) { Close(SessionError::kProtocolViolation, why); }
  // Stops listening to tracks and namespaces (the session is closing).
  void DetachFromSource();

  // ---- control / request streams
  void ReadControlIn(StreamId id);
  void OnControlMessage(StreamId id, ControlMessage m);
  void OnSetup(const Setup& s);
  void ReadRequestStream(StreamId id);
  void OnRequestStreamFin(StreamId id, StreamEntry& e);
  void OnFirstRequestMessage(StreamId id, ControlMessage m);
  void OnLaterRequestMessage(StreamId id, IncomingRequest& r, ControlMessage m);
  void OnResponseMessage(StreamId id, OutgoingRequest& r, ControlMessage m);
  void SendRequestError(StreamId id, RequestErrorCode code, std::string reason, bool fin = true);

  // ---- publisher side
  void HandleSubscribe(StreamId id, const moqt::Subscribe& m);
  void HandleFetch(StreamId id, const moqt::Fetch& m);
  void HandleTrackStatus(StreamId id, const moqt::TrackStatus& m);
  // Asks the TrackSource for the track of the request on stream `id`; `next` runs with it once
  // answered, unless the requester left meanwhile; a refusal becomes REQUEST_ERROR.
  void ResolveThen(StreamId id, TrackQuery query, std::function<void(std::shared_ptr<Track>)> next);
  void AnswerSubscribe(StreamId id, const moqt::Subscribe& m, std::shared_ptr<Track> track);
  void AnswerFetch(StreamId id, const moqt::Fetch& m, std::shared_ptr<Track> track);
  void AnswerTrackStatus(StreamId id, const moqt::TrackStatus& m, std::shared_ptr<Track> track);
  // The track failed (Track::Fail): end everything served from it.
  void EndRequestsOnFailedTrack(Track& track);
  void HandlePublishNamespace(StreamId id, const moqt::PublishNamespace& m);
  void HandleSubscribeNamespace(StreamId id, const moqt::SubscribeNamespace& m);
  void HandleSubscriptionUpdate(IncomingRequest& r, const RequestUpdate& m);
  std::optional<RequestErrorCode> CheckRangeFilters(const RangeFilters& f);
  void ServeTrack(const std::shared_ptr<Track>& t, uint64_t sub);
  void UnserveTrack(Track* t, uint64_t sub);
  void StartFill(IncomingRequest& sub, uint64_t header_id, const FillParameters& fp,
                 const LocationFilter& sub_filter);
  void OpenFetchStream(FetchStreamParams p);
  void OpenGroupStream(IncomingRequest& sub, uint64_t group, uint64_t first_object);
  void PumpData(StreamId id);
  // Request-wide bookkeeping when one of our data streams ends (once; repeats are ignored).
  void DataOutFinished(OutgoingDataStream& d);
  void MaybePublishDone(uint64_t sub_id);
  // Sends fetch `id`'s FETCH_OK once its End Location is known (IncomingRequest::fetch_ok_pending).
  void MaybeSendFetchOk(uint64_t id);
  // Ends fetch `id` we serve (its data stream ended, or its track failed): a FETCH_OK still
  // waiting for its End Location can never be sent now, so the requester gets REQUEST_ERROR
  // `code` (`reason`) instead of waiting for an answer forever; then the request is forgotten.
  // (A requester that reset or stopped the request stream cancelled it: nothing to answer, and
  // those paths just end the request.)
  void EndFetch(uint64_t id, RequestErrorCode code, const std::string& reason);
  // Our PUBLISHes whose subscriber sent no fill request within publish_done_wait_ms of its
  // PUBLISH_OK: PUBLISH_DONE waits for it no longer.
  void ExpireFillRequestWaits();
  void EndIncomingRequest(uint64_t id, bool reset_streams);
  // Resets one of our data streams (CANCELLED, or `code`); the pump treats it as finished.
  void CancelDataOut(StreamId sid, StreamResetCode code = StreamResetCode::kCancelled);
  // Ends a subscription or fetch we serve: its data streams reset with `reset`, a subscription
  // then gets PUBLISH_DONE `code` (`reason`), a fetch ends (EndFetch).
  void EndServedRequest(uint64_t id, StreamResetCode reset, PublishDoneCode code,
                        std::string reason);
  // ---- slow subscribers (MoqtSessionConfig::subscriber_stall_ms), from OnTimer
  void CheckStalledPeer();
  // Cuts off one request of a stalled peer: TOO_FAR_BEHIND (streams, PUBLISH_DONE; a fetch's
  // request stream too), then OnSubscriberCutOff.
  void CutOffSlowRequest(uint64_t id, uint64_t stalled_ms);
  // Forgets the request's data streams still waiting for uni-stream credit: its subgroup
  // streams only (DropPendingGroupOpens), or those and its fetch/fill streams (DropPendingOpens).
  void DropPendingGroupOpens(IncomingRequest& r);
  void DropPendingOpens(IncomingRequest& r);
  void SendDatagram(IncomingRequest& sub, const PublishedObject& o, bool* sent);

  // ---- PUBLISH (moqt_session_publish.cc)
  // The peer's PUBLISH: authorized, offered to OnPublish, then received like a subscription of
  // ours (an OutgoingRequest under the PUBLISH's Request ID on the peer's request stream).
  void HandlePublish(StreamId id, const Publish& m);
  // Whether request `request_id` on the peer's request stream `id` is a subscription the peer
  // PUBLISHed to us.
  bool PublishedToUs(StreamId id, uint64_t request_id) const;
  // Our PUBLISH's answer (PUBLISH_OK / REQUEST_ERROR), then the subscriber's REQUEST_UPDATEs.
  void OnPublishResponse(StreamId id, OutgoingRequest& r, ControlMessage m);
  // Our PUBLISH ended without delivery (`error`: refused, cancelled): stops serving it (data
  // streams reset) and reports it.
  void EndPublish(uint64_t id, const RequestError& error);
  // Our PUBLISH's PUBLISH_DONE went out and the subscriber FIN-ed: OnPublishDone(true).
  void MaybeFinishPublish(uint64_t id);

  // ---- subscriber side
  void UnparkData(uint64_t alias);
  void ProbeUniStream(StreamId id);
  void ReadDataIn(StreamId id);
  // STOP_SENDING on an incoming data stream (deferred while that stream is being parsed).
  void StopReading(StreamId id, uint64_t code);
  void MaybeCompleteSubscription(uint64_t id);
  void MaybeCompleteFetch(uint64_t id);
  void FinishOutgoingRequest(uint64_t id);
  Status CancelOutgoingRequest(uint64_t request_id, RequestKind kind, std::string_view unknown);
  void RetireAlias(uint64_t alias);

  // ---- state
  MoqtSessionConfig config_;
  transport::Session* t_;
  MoqtSessionCallbacks* cb_;
  TrackSource* source_;
  bool started_ = false;
  bool closing_ = false;
  bool closed_ = false;
  bool setup_received_ = false;
  bool peer_goaway_ = false;
  bool goaway_sent_ = false;
  std::optional<uint64_t> goaway_deadline_ms_;
  SetupOptions peer_setup_;
  std::optional<StreamId> control_out_, control_in_;
  MoqtSession::Stats stats_;

  std::map<StreamId, StreamEntry> streams_;
  std::vector<StreamId> parked_requests_;  // peer request streams read after SETUP
  size_t parked_data_ = 0;

  uint64_t next_request_id_ = 0;
  // Peer request IDs: all below `peer_next_` and those in `peer_seen_` were used.
  uint64_t peer_next_ = 0;
  std::set<uint64_t> peer_seen_;
  std::map<uint64_t, OutgoingRequest> out_requests_;
  std::map<uint64_t, uint64_t> alias_to_sub_;    // Track Alias -> OutgoingRequest id
  std::map<uint64_t, uint64_t> fetch_id_owner_;  // FETCH_HEADER id -> OutgoingRequest id
  std::deque<uint64_t> retired_aliases_;
  uint64_t reassembly_bytes_ = 0;
  // The data stream whose peeked bytes are being parsed (ReadDataIn), and a STOP_SENDING for it
  // requested meanwhile: applied after the parser returns, so the peeked view stays valid.
  std::optional<StreamId> parsing_data_;
  std::optional<uint64_t> deferred_stop_;

  std::map<uint64_t, IncomingRequest> in_requests_;
  // Peer request streams whose track the TrackSource is still resolving (ResolveTrack); a stream
  // leaves the set when answered or when the peer cancels, and a late answer is then dropped.
  std::set<StreamId> resolving_;
  // Expires with the session: answers arriving after it are dropped.
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
  uint64_t next_alias_ = 0;
  // Tracks we serve: listener registrations, and the subscriptions per track.
  std::map<Track*, std::pair<std::shared_ptr<Track>, std::set<uint64_t>>> served_;
  std::deque<FetchStreamParams> pending_fetch_opens_;
  std::deque<std::pair<uint64_t, std::pair<uint64_t, uint64_t>>> pending_group_opens_;
  // The slow-subscriber watch: data-stream bytes written by streams already gone (counted as
  // taken), what the peer had taken at the last check, and since when it has taken nothing
  // while bytes were waiting for it.
  uint64_t retired_written_ = 0;
  uint64_t last_taken_ = 0;
  std::optional<uint64_t> stalled_since_ms_;
};

}  // namespace kvcs::moqt

#endif  // KVCS_MOQT_SESSION_MOQT_SESSION_IMPL_H_
