// Internals of MoqtSession (NOT a public header; applications include moqt_session.h).
//
// MoqtSessionImpl is the transport::SessionVisitor; every transport stream it touches gets a
// StreamShim (owned by the stream) that forwards events by StreamId. Per-stream state lives in
// `streams_` (erased only when the transport reports OnStreamClosed), per-request state in
// `out_requests_` (we asked) and `in_requests_` (the peer asked), always looked up by ID, so an
// application callback that cancels a request never leaves a dangling pointer behind.
// docs/protocols/moqt-session.md describes the state machines.
#ifndef KVCS_MOQT_SESSION_MOQT_SESSION_INTERNAL_H_
#define KVCS_MOQT_SESSION_MOQT_SESSION_INTERNAL_H_

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "moqt/moqt_control_parser.h"
#include "moqt/moqt_data_parser.h"
#include "moqt/moqt_framer.h"
#include "moqt_session/moqt_filters.h"
#include "moqt_session/moqt_session.h"

namespace kvcs::moqt {

using transport::StreamId;

// Send orders (transport::Stream::SetSendOrder, lower first): control streams, then request
// streams, then data streams ordered by (subscriber priority, publisher priority, group order,
// fill-before-live within a group).
inline constexpr uint64_t kControlSendOrder = 0;
inline constexpr uint64_t kRequestSendOrder = 1;
uint64_t DataSendOrder(uint8_t subscriber_priority, uint8_t publisher_priority, GroupOrder order,
                       uint64_t group, bool fill);

class MoqtSessionImpl;

class StreamShim : public transport::StreamVisitor {
 public:
  StreamShim(MoqtSessionImpl* s, StreamId id) : s_(s), id_(id) {}
  void OnCanRead() override;
  void OnCanWrite() override;
  void OnResetStreamReceived(transport::ErrorCode code) override;
  void OnStopSendingReceived(transport::ErrorCode code) override;
  void OnStreamClosed() override;

 private:
  MoqtSessionImpl* s_;
  StreamId id_;
};

enum class RequestKind {
  kSubscribe,
  kFetch,
  kTrackStatus,
  kPublishNamespace,
  kSubscribeNamespace,
  kOther
};

// A request we sent.
struct OutRequest {
  RequestKind kind = RequestKind::kOther;
  uint64_t id = 0;
  StreamId stream = 0;
  bool answered = false;  // first response received
  bool fin_received = false;
  FullTrackName track;
  // subscribe
  std::shared_ptr<SubscribeVisitor> sub_visitor;
  SubscribeOptions sub_options;
  std::optional<uint64_t> alias;
  std::optional<LocationRange> live_range;  // known after SUBSCRIBE_OK
  std::deque<uint64_t> pending_updates;     // update request IDs awaiting an answer
  uint64_t streams_seen = 0, streams_open = 0;
  bool stream_trouble = false;  // a data stream was reset or refused
  bool eot_seen = false;
  std::optional<PublishDone> done;
  uint64_t done_at_ms = 0;
  // fetch
  std::shared_ptr<FetchVisitor> fetch_visitor;
  GroupOrder fetch_order = GroupOrder::kAscending;
  std::vector<FilterRange> local_object_ranges;
  std::optional<FetchOk> fetch_ok;
  bool fetch_data_seen = false, fetch_data_fin = false, fetch_data_reset = false;
  // track status / publish namespace
  TrackStatusCallback status_cb;
  RequestResultCallback result_cb;
  // subscribe namespace
  std::shared_ptr<NamespaceVisitor> ns_visitor;
  std::set<TrackNamespace> active_ns;
};

class NamespaceRelay;

// A request the peer sent (we are the publisher/responder).
struct InRequest {
  RequestKind kind = RequestKind::kOther;
  uint64_t id = 0;
  StreamId stream = 0;
  std::shared_ptr<Track> track;
  // subscription
  uint64_t alias = 0;
  LocationRange live;
  RangeFilters filters;
  uint8_t subscriber_priority = 128;
  GroupOrder group_order = GroupOrder::kAscending;
  bool forward = true;
  std::map<uint64_t, StreamId> group_streams;  // open subgroup streams by group
  std::set<uint64_t> stopped_groups;           // STOP_SENDING received: never reopen
  std::set<StreamId> data_streams;             // every unfinished data stream (fills too)
  std::deque<std::pair<uint64_t, uint64_t>> waiting_groups;  // {group, first object}: no credit
  uint64_t streams_opened = 0;
  bool done_pending = false;
  PublishDoneCode done_code = PublishDoneCode::kTrackEnded;
  // fetch
  StreamId fetch_stream = 0;
  // namespace subscription / publish namespace
  TrackNamespace prefix;
  std::set<TrackNamespace> sent_ns;
  std::unique_ptr<NamespaceRelay> ns_listener;
};

// Pending opening of a data stream (no uni credit yet).
struct PendingFetchOpen {
  uint64_t owner = 0;      // InRequest id (fetch or subscription)
  uint64_t header_id = 0;  // FETCH_HEADER Request ID
  LocationRange range;
  GroupOrder order = GroupOrder::kAscending;
  uint8_t priority = 128;
  RangeFilters filters;
  bool fill = false;
};

struct OutData {
  bool fetch = false;
  uint64_t owner = 0;  // InRequest id
  bool finished = false;
  // subgroup
  uint64_t group = 0;
  uint64_t next_object = 0;
  std::unique_ptr<SubgroupStreamWriter> sg_writer;
  // fetch
  PendingFetchOpen f;
  std::optional<Location> cursor;
  std::unique_ptr<FetchStreamWriter> f_writer;
  // The payload of an object whose header is written but whose payload did not fit (the
  // stream's send buffer filled up): written first on the next pump. Shared with the Track, so
  // eviction cannot pull it away mid-object.
  std::shared_ptr<const Bytes> pending_payload;
};

class InData : public DataStreamVisitor {
 public:
  InData(MoqtSessionImpl* s, StreamId id, const WireOptions& w)
      : s_(s), id_(id), parser_(this, w) {}
  void OnSubgroupHeader(const SubgroupHeader& header) override;
  GroupOrder OnFetchHeader(const FetchHeader& header) override;
  void OnObjectHeader(const ObjectHeader& object) override;
  void OnObjectPayload(ByteSpan chunk, bool end_of_object) override;
  void OnEndOfRange(const EndOfRange& marker) override;
  void OnStreamEnd() override;
  void OnError(const Status& error) override;

  MoqtSessionImpl* s_;
  StreamId id_;
  DataStreamParser parser_;
  bool is_fetch = false;
  bool attributed = false;  // counted in its owner's streams
  bool ended = false;       // FIN, reset or refused
  bool refused = false;     // we sent STOP_SENDING: ignore the rest
  uint64_t owner = 0;       // OutRequest id
  bool fill = false;
  SubgroupHeader header;
  ObjectHeader cur;
  // Reassembly of the current object when its payload arrives in several chunks. `held` bytes
  // (its declared length, reserved up front) count against kMaxReassemblyBytesPerSession until
  // the object is delivered or the stream ends, is reset or refused (ReleasePayload).
  Bytes payload;
  uint64_t held = 0;
  void ReleasePayload();
};

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
  std::unique_ptr<InData> in;
  std::unique_ptr<OutData> out_data;
};

class MoqtSessionImpl : public transport::SessionVisitor, public TrackListener {
 public:
  MoqtSessionImpl(transport::Session* t, MoqtSessionConfig config, MoqtSessionCallbacks* cb,
                  TrackSource* source);
  ~MoqtSessionImpl() override;

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

  // stream events (from StreamShim)
  void OnStreamReadable(StreamId id);
  void OnStreamWritable(StreamId id);
  void OnStreamReset(StreamId id, uint64_t code);
  void OnStreamStopSending(StreamId id, uint64_t code);
  void OnStreamGone(StreamId id);

  // data-stream visitor support (from InData)
  bool AttributeSubgroup(InData* d, const SubgroupHeader& h);
  std::optional<GroupOrder> AttributeFetch(InData* d, uint64_t request_id);
  void DeliverObject(InData* d, ByteSpan payload);
  void DeliverEndOfRange(InData* d, const EndOfRange& m);
  void DataStreamEnded(InData* d, bool clean);
  void RefuseDataStream(InData* d, StreamResetCode code);

  void Start();
  void Close(SessionError code, std::string_view reason);
  void OnTimer();
  uint64_t Now() const { return config_.clock_ms ? config_.clock_ms() : 0; }

  // public API
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
  Status GoAway(std::string_view uri, uint64_t timeout_ms);

  // namespace relay support
  void NamespaceChanged(uint64_t request_id, const TrackNamespace& ns, bool added);

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
  std::map<uint64_t, OutRequest> out_requests_;
  std::map<uint64_t, uint64_t> alias_to_sub_;    // Track Alias -> OutRequest id (subscription)
  std::map<uint64_t, uint64_t> fetch_id_owner_;  // FETCH_HEADER id -> OutRequest id
  std::deque<uint64_t> retired_aliases_;
  std::deque<uint64_t> retired_fetch_ids_;
  uint64_t reassembly_bytes_ = 0;
  // The data stream whose peeked bytes are being parsed (ReadDataIn), and a STOP_SENDING for it
  // requested meanwhile: applied after the parser returns, so the peeked view stays valid.
  std::optional<StreamId> parsing_data_;
  std::optional<uint64_t> deferred_stop_;

  std::map<uint64_t, InRequest> in_requests_;
  uint64_t next_alias_ = 0;
  // Tracks we serve: listener registrations, and the subscriptions per track.
  std::map<Track*, std::pair<std::shared_ptr<Track>, std::set<uint64_t>>> served_;
  std::deque<PendingFetchOpen> pending_fetch_opens_;
  std::deque<std::pair<uint64_t, std::pair<uint64_t, uint64_t>>> pending_group_opens_;

 private:
  // ---- helpers
  StreamEntry* Entry(StreamId id);
  transport::Stream* TStream(StreamId id) { return t_->GetStreamById(id); }
  void Adopt(transport::Stream* s, StreamEntry::Role role);
  Status SendControl(StreamId id, const ControlMessage& m, bool fin = false);
  void FlushControl(StreamId id);
  void FinStream(StreamId id);
  bool CheckReady(Status* err);
  Result<uint64_t> OpenRequest(RequestKind kind, OutRequest req, const ControlMessage& first,
                               bool fin);
  bool CheckPeerRequestId(uint64_t id);
  bool CheckTokens(const std::vector<AuthToken>& tokens, bool in_setup);
  void ProtocolViolation(std::string_view why) { Close(SessionError::kProtocolViolation, why); }

  // ---- control / request streams
  void ReadControlIn(StreamId id);
  void OnControlMessage(StreamId id, ControlMessage m);
  void OnSetup(const Setup& s);
  void ReadRequestStream(StreamId id);
  void OnRequestStreamFin(StreamId id, StreamEntry& e);
  void OnFirstRequestMessage(StreamId id, ControlMessage m);
  void OnLaterRequestMessage(StreamId id, InRequest& r, ControlMessage m);
  void OnResponseMessage(StreamId id, OutRequest& r, ControlMessage m);
  void SendRequestError(StreamId id, RequestErrorCode code, std::string reason, bool fin = true);

  // ---- publisher side
  void HandleSubscribe(StreamId id, const moqt::Subscribe& m);
  void HandleFetch(StreamId id, const moqt::Fetch& m);
  void HandleTrackStatus(StreamId id, const moqt::TrackStatus& m);
  void HandlePublishNamespace(StreamId id, const moqt::PublishNamespace& m);
  void HandleSubscribeNamespace(StreamId id, const moqt::SubscribeNamespace& m);
  void HandleSubscriptionUpdate(InRequest& r, const RequestUpdate& m);
  std::optional<RequestErrorCode> CheckRangeFilters(const RangeFilters& f);
  void ServeTrack(const std::shared_ptr<Track>& t, uint64_t sub);
  void UnserveTrack(Track* t, uint64_t sub);
  void StartFill(InRequest& sub, uint64_t header_id, const FillParameters& fp,
                 const LocationFilter& sub_filter);
  void OpenFetchStream(PendingFetchOpen p);
  void OpenGroupStream(InRequest& sub, uint64_t group, uint64_t first_object);
  void PumpData(StreamId id);
  void PumpSubgroup(StreamId id, StreamEntry& e);
  void PumpFetch(StreamId id, StreamEntry& e);
  // Writes an object's payload after its header; false (and kept in d.pending_payload) when the
  // stream cannot take it now.
  bool WritePayload(transport::Stream* s, OutData& d, const std::shared_ptr<const Bytes>& payload);
  bool FlushPendingPayload(transport::Stream* s, OutData& d);
  const PublishedObject* NextFetchObject(const Track& t, const OutData& d) const;
  void DataOutFinished(StreamId id, StreamEntry& e);
  void MaybePublishDone(uint64_t sub_id);
  void EndInRequest(uint64_t id, bool reset_streams);
  // Resets one of our data streams (CANCELLED); the pump treats it as finished.
  void CancelDataOut(StreamId sid);
  // Forgets the request's data streams still waiting for uni-stream credit: its subgroup
  // streams only (DropPendingGroupOpens), or those and its fetch/fill streams (DropPendingOpens).
  void DropPendingGroupOpens(InRequest& r);
  void DropPendingOpens(InRequest& r);
  void SendDatagram(InRequest& sub, const PublishedObject& o, bool* sent);

  // ---- subscriber side
  void UnparkData(uint64_t alias);
  void ProbeUniStream(StreamId id);
  void ReadDataIn(StreamId id);
  // STOP_SENDING on an incoming data stream (deferred while that stream is being parsed).
  void StopReading(StreamId id, uint64_t code);
  void MaybeCompleteSubscription(uint64_t id);
  void MaybeCompleteFetch(uint64_t id);
  void FinishOutRequest(uint64_t id);
  Status CancelOutRequest(uint64_t request_id, RequestKind kind, std::string_view unknown);
  void RetireAlias(uint64_t alias);
};

}  // namespace kvcs::moqt

#endif  // KVCS_MOQT_SESSION_MOQT_SESSION_INTERNAL_H_
