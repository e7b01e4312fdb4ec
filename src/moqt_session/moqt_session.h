// MoqtSession: one MOQT draft-22 session (client or server role) over a transport::Session, and
// the C++ publisher/subscriber API on top of it. This is the PUBLIC header; the state machines
// live in moqt_session_impl.h (not for applications).
//
// What it does (docs/protocols/moqt-session.md has the state machines, bounds and choices):
//   - SETUP on one unidirectional control stream per side (PATH, AUTHORITY, MAX_FILTER_RANGES,
//     MOQT_IMPLEMENTATION, AUTHORIZATION_TOKEN); GOAWAY;
//   - one bidirectional stream per request: SUBSCRIBE (every LOCATION_FILTER type, FILL_PARAMETERS,
//     OBJECTID_FILTER within the peer's MAX_FILTER_RANGES), REQUEST_UPDATE, PUBLISH_DONE with its
//     stream count, FETCH, TRACK_STATUS, PUBLISH_NAMESPACE, SUBSCRIBE_NAMESPACE (NAMESPACE,
//     NAMESPACE_DONE);
//   - publishing: tracks come from a TrackSource (moqt_track_source.h; TrackStore in
//     moqt_track_store.h is the in-memory one);
//     live objects go on one subgroup stream per group (or datagrams), fills and fetches on fetch
//     streams; stream send order follows (subscriber priority, publisher priority, group order,
//     group) via transport::Stream::SetSendOrder;
//   - subscribing: objects reach a visitor whole, in arrival order, with a final OnComplete.
// Protocol errors close the session with the matching MOQT code (PROTOCOL_VIOLATION for malformed
// control messages and data streams); request-level failures become REQUEST_ERROR.
//
// THREADING: single-threaded; every call and callback on the transport's executor.
// LIFETIME: the transport::Session, the TrackSource and the MoqtSessionCallbacks must outlive the
// MoqtSession. The MoqtSession installs itself as the transport session's visitor and detaches on
// destruction. Visitors passed to requests are shared_ptr (kept until the request ends). Do not
// destroy the MoqtSession from inside one of its callbacks.
// ERRORS: request calls return a Result; when it is an error, no visitor callback will fire.
#ifndef KVCS_MOQT_SESSION_MOQT_SESSION_H_
#define KVCS_MOQT_SESSION_MOQT_SESSION_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/bytes.h"
#include "common/status.h"
#include "moqt/moqt_error.h"
#include "moqt/moqt_messages.h"
#include "moqt/moqt_options.h"
#include "moqt_session/moqt_session_limits.h"
#include "moqt_session/moqt_track_source.h"
#include "transport/session.h"

namespace kvcs::moqt {

// The ALPN of this implementation.
inline constexpr std::string_view kMoqtAlpn = "moqt-22";

enum class Perspective { kClient, kServer };

// Typed details of Status values returned by MoqtSession calls.
enum class SessionApiError {
  kNone = 0,
  kNotReady = 1,         // SETUP not exchanged yet
  kClosed = 2,           // the session is closed or closing
  kGoingAway = 3,        // the peer sent GOAWAY: no new requests
  kNoStreamCredit = 4,   // the peer's bidi stream limit is reached; retry later
  kTooManyRequests = 5,  // kMaxOutgoingRequests
  kFilterRanges = 6,     // invalid ranges (overlapping, open-ended before the last)
  kUnknownRequest = 7,   // no such request (ended already?)
  kInvalid = 8,          // an argument the codec refuses (namespace limits...)
  kNoSuchTrack = 9,      // PublishTrack: the TrackSource has no such track
};

struct MoqtSessionConfig {
  Perspective perspective = Perspective::kClient;
  // Client only (SETUP PATH / AUTHORITY); a server never sends them.
  std::optional<std::string> path;
  std::optional<std::string> authority;
  std::string implementation = "kvcs-moqt/0.1";
  // MAX_FILTER_RANGES we accept: total ranges across the range filters of one request.
  uint64_t max_filter_ranges = 64;
  std::vector<AuthToken> setup_auth_tokens;
  WireOptions wire;
  // Monotonic milliseconds. Used for the PUBLISH_DONE waits and the GOAWAY timeout; the
  // owner calls MoqtSession::OnTimer() to let deadlines fire. Default: always 0.
  std::function<uint64_t()> clock_ms;
  // Subscriber: how long a subscription waits after PUBLISH_DONE for the data streams it
  // counted, and, when the count is unknown, for a fill it asked for whose stream has not
  // arrived; then it completes with all_streams_received = false.
  uint64_t done_stream_wait_ms = kDefaultDoneStreamWaitMs;
  // Publisher of a PUBLISH: how long after PUBLISH_OK its PUBLISH_DONE waits for the
  // subscriber's fill request (REQUEST_UPDATE) when objects existed; a subscriber that wants no
  // fill never sends one, and PUBLISH_DONE then goes once the live streams are done.
  uint64_t publish_done_wait_ms = kDefaultPublishDoneWaitMs;
  // Slow subscribers (publisher side): when the peer has taken none of our data-stream bytes
  // for this long while some were waiting for it (written and not acknowledged, or waiting for
  // room to be written or for its stream credit), every subscription and fetch of this session
  // with data waiting is cut off: PUBLISH_DONE TOO_FAR_BEHIND (draft-22 §16), its data streams
  // reset TOO_FAR_BEHIND (a fetch: its streams), and the track released. Measured per
  // session: QUIC flow and congestion control are per connection, and one stream starved by
  // the peer's own higher-priority streams must not count as stalled. 0: never (the default;
  // `kvcs relay` sets it). Needs clock_ms and OnTimer.
  uint64_t subscriber_stall_ms = 0;
};

// How an object reached us.
enum class DeliveryKind { kSubscription, kDatagram, kFill, kFetch };

// One whole object as delivered to a subscriber (views valid during the callback only).
struct ReceivedObject {
  // The payload as one shared immutable buffer that outlives the callback: the session's own
  // reassembly buffer when it had to gather the payload from several transport chunks (kept
  // without a copy), else a copy of `payload`. A visitor that stores objects (a relay's Track)
  // takes this instead of copying the bytes again.
  std::shared_ptr<const Bytes> SharedPayload() const {
    if (payload_buffer) return payload_buffer;
    return std::make_shared<const Bytes>(payload.begin(), payload.end());
  }
  // The payload as a buffer of the caller's own: the session's reassembly buffer moved out when
  // nothing else shares it (no copy), else a copy of `payload`. Afterwards `payload` and
  // `payload_buffer` must not be read again. For a visitor that keeps each object (a consumer's
  // verifier); one that only reads the bytes reads `payload`.
  Bytes TakePayload() const {
    if (payload_buffer && payload_buffer.use_count() == 1 &&
        payload.data() == payload_buffer->data() && payload.size() == payload_buffer->size()) {
      Bytes b = std::move(*payload_buffer);
      payload_buffer.reset();
      return b;
    }
    return Bytes(payload.begin(), payload.end());
  }

  Location location;
  uint64_t subgroup_id = 0;
  uint8_t publisher_priority = 128;
  ObjectStatus status = ObjectStatus::kNormal;
  const Properties* properties = nullptr;
  ByteSpan payload;
  // The buffer `payload` spans, when the session reassembled it (never written to again, except
  // moved out by TakePayload); null when `payload` points into the transport's bytes. Mutable so
  // that TakePayload can move it out of the const object a visitor receives.
  mutable std::shared_ptr<Bytes> payload_buffer;
  DeliveryKind via = DeliveryKind::kSubscription;
};

struct SubscribeOkInfo {
  uint64_t track_alias = 0;
  std::optional<Location> largest;  // LARGEST_OBJECT at the time the publisher processed us
  std::optional<uint64_t> expires_ms;
  Properties track_properties;
};

// The end of a subscription.
struct SubscriptionDone {
  bool track_ended = false;        // End of Track received, or PUBLISH_DONE TRACK_ENDED
  std::optional<uint64_t> status;  // PUBLISH_DONE status code (raw); nullopt if none arrived
  std::string reason;
  // false: the stream wait timed out, a stream was reset, or a fill this subscription asked for
  // did not arrive (its update was still unanswered at PUBLISH_DONE: the publisher ignored it;
  // or PUBLISH_DONE's stream count left no room for it; or the wait for it timed out).
  bool all_streams_received = true;
  std::optional<RequestError> error;  // the subscription was refused (REQUEST_ERROR)
  bool session_closed = false;        // the session ended first
};

class SubscribeVisitor {
 public:
  virtual ~SubscribeVisitor() = default;
  virtual void OnSubscribeOk(const SubscribeOkInfo& info) {}
  // Called in arrival order; objects outside the subscription's filters are not delivered.
  virtual void OnObject(const ReceivedObject& object) = 0;
  // The fill stream (FILL_PARAMETERS) ended: with FIN (`clean`; every object of the fill range
  // was delivered) or reset. Not called when the fill range was empty (no stream).
  virtual void OnFillComplete(bool clean) {}
  // The answer to UpdateSubscription(`update_id`): nullopt = REQUEST_OK.
  virtual void OnUpdateResult(uint64_t update_id, const std::optional<RequestError>& error) {}
  // Last callback: PUBLISH_DONE arrived and every counted data stream (fill included) ended, or
  // the subscription was refused / the session closed. A fill asked for (FILL_PARAMETERS, or an
  // update with a fill) whose stream has not arrived holds completion back while it may still
  // come (PUBLISH_DONE with an unknown stream count, at most done_stream_wait_ms).
  virtual void OnComplete(const SubscriptionDone& done) = 0;
};

struct FetchDone {
  bool ok = false;  // FETCH_OK received and the fetch stream ended with FIN
  std::optional<RequestError> error;
  bool end_of_track = false;  // from FETCH_OK
  std::optional<Location> end_location;
  bool session_closed = false;
};

class FetchVisitor {
 public:
  virtual ~FetchVisitor() = default;
  virtual void OnObject(const ReceivedObject& object) = 0;
  virtual void OnEndOfRange(const EndOfRange& marker) {}
  virtual void OnComplete(const FetchDone& done) = 0;  // last callback
};

class NamespaceVisitor {
 public:
  virtual ~NamespaceVisitor() = default;
  virtual void OnRequestOk() {}
  // Suffixes relative to the subscribed prefix.
  virtual void OnNamespace(const TrackNamespace& suffix) = 0;
  virtual void OnNamespaceDone(const TrackNamespace& suffix) = 0;
  // Last callback: refused (error set), the publisher ended the request, or the session closed.
  virtual void OnClosed(const std::optional<RequestError>& error) {}
};

// ---- PUBLISH (draft-22 §10: a subscription the publisher initiates)
// The publisher's view of one PublishTrack.
class PublishVisitor {
 public:
  virtual ~PublishVisitor() = default;
  // The subscriber's answer: PUBLISH_OK (nullopt) or its REQUEST_ERROR (OnPublishDone follows).
  virtual void OnPublishResult(const std::optional<RequestError>& error) {}
  // Last callback. `delivered`: PUBLISH_DONE was sent and the subscriber then closed its side
  // of the request stream, which it does once every data stream PUBLISH_DONE counted has
  // arrived, so the whole subscription reached it. False: refused, cancelled (the subscriber
  // reset the request), or the session ended first.
  virtual void OnPublishDone(bool delivered) {}
};

struct PublishOptions {
  // FORWARD: objects flow at once (the default) or only once the subscriber enables them.
  bool forward = true;
  std::vector<AuthToken> auth_tokens;
};

// A PUBLISH the peer sent, as handed to MoqtSessionCallbacks::OnPublish.
struct IncomingPublish {
  uint64_t request_id = 0;
  FullTrackName track;
  uint64_t track_alias = 0;
  std::optional<Location> largest;  // LARGEST_OBJECT: objects published before the PUBLISH
  bool forward = true;
  Properties track_properties;
  std::vector<AuthToken> tokens;
};

// How OnPublish answers. A visitor accepts: PUBLISH_OK, then the visitor gets OnSubscribeOk (the
// PUBLISH's alias, Largest Object and properties), the objects, OnFillComplete and OnComplete
// exactly as for a Subscribe (the request ID is the PUBLISH's; Unsubscribe/UpdateSubscription
// take it). No visitor refuses with REQUEST_ERROR `error`.
struct PublishAnswer {
  std::shared_ptr<SubscribeVisitor> visitor;
  RequestErrorCode error = RequestErrorCode::kNotSupported;
  std::string reason = "PUBLISH not accepted here";
  // When the PUBLISH carries a LARGEST_OBJECT L (objects existed before it): right after
  // PUBLISH_OK, a REQUEST_UPDATE with FILL_PARAMETERS {0,0}..L (Absolute Range). The live part
  // starts after L, so the subscriber gets the whole track exactly once.
  bool fill_existing = true;
};

struct TrackStatusReply {
  std::optional<RequestError> error;  // set: refused
  std::optional<Location> largest;
  Properties track_properties;
};
using TrackStatusCallback = std::function<void(const TrackStatusReply&)>;
// nullopt = REQUEST_OK.
using RequestResultCallback = std::function<void(const std::optional<RequestError>&)>;

// Session-level events for the application (all optional).
class MoqtSessionCallbacks {
 public:
  virtual ~MoqtSessionCallbacks() = default;
  // Both SETUPs exchanged: requests may be sent.
  virtual void OnSetupComplete(const SetupOptions& peer) {}
  // The session ended (`code` is the MOQT session error code, raw; `by_peer` who closed).
  virtual void OnSessionClosed(uint64_t code, const std::string& reason, bool by_peer) {}
  virtual void OnGoAway(const std::string& new_session_uri) {}
  // A server receiving a client's SETUP may refuse PATH/AUTHORITY/tokens: return an error code
  // to close the session with it (e.g. kInvalidPath, kUnauthorized).
  virtual std::optional<SessionError> OnPeerSetup(const SetupOptions& peer) { return {}; }
  // The peer announced / withdrew a namespace (PUBLISH_NAMESPACE). Return an error code to
  // refuse. A relay adds it to its TrackSource (TrackStore::AddAnnouncedNamespace).
  virtual std::optional<RequestErrorCode> OnPublishNamespace(const TrackNamespace& ns) {
    return {};
  }
  virtual void OnPublishNamespaceDone(const TrackNamespace& ns) {}
  // Authorization hook for incoming SUBSCRIBE/FETCH/TRACK_STATUS/SUBSCRIBE_NAMESPACE and
  // PUBLISH_NAMESPACE (before OnPublishNamespace). For namespace-scoped requests `track.name` is
  // empty.
  virtual std::optional<RequestErrorCode> AuthorizeRequest(MessageType type,
                                                           const FullTrackName& track,
                                                           const std::vector<AuthToken>& tokens) {
    return {};
  }
  // The peer PUBLISHes a track (after AuthorizeRequest(kPublish, ...) passed). Default: refused
  // NOT_SUPPORTED.
  virtual PublishAnswer OnPublish(const IncomingPublish& publish) { return {}; }
  // A subscription (`type` kSubscribe) or fetch (kFetch) we served was cut off because the
  // peer took nothing for `stalled_ms` (MoqtSessionConfig::subscriber_stall_ms).
  virtual void OnSubscriberCutOff(MessageType type, const FullTrackName& track, uint64_t request_id,
                                  uint64_t stalled_ms) {}
};

struct SubscribeOptions {
  // Subscription LOCATION_FILTER. Default: Next Object (only what is published from now on).
  LocationFilter filter{LocationFilterType::kNextObject};
  // Present: FILL_PARAMETERS with this LOCATION_FILTER (type kNone = inherit the subscription's
  // filter, i.e. an empty FILL_PARAMETERS). The exactly-once join: filter Next Object + fill
  // Absolute Start {0,0} (or Relative Start N).
  std::optional<LocationFilter> fill;
  std::optional<GroupOrder> fill_group_order;
  uint8_t subscriber_priority = 128;
  std::optional<GroupOrder> group_order;
  // OBJECTID_FILTER ranges (one set, SetID 0), applied to the subscription and its fill. Sent
  // as OBJECTID_FILTER only when they fit the peer's MAX_FILTER_RANGES; always applied locally
  // (objects outside are discarded before OnObject), so the result is the same either way.
  std::vector<FilterRange> object_id_ranges;
  bool forward = true;
  std::vector<AuthToken> auth_tokens;
};

// A REQUEST_UPDATE of a subscription: only the set fields change.
struct SubscriptionUpdate {
  std::optional<uint8_t> subscriber_priority;
  std::optional<LocationFilter> filter;
  std::optional<bool> forward;
  std::optional<LocationFilter> fill;  // requests a new fill stream (named by the update's ID)
};

struct FetchOptions {
  // Range; nullopt = the whole track up to the Largest Object. Any LocationFilter type.
  std::optional<LocationFilter> range;
  GroupOrder group_order = GroupOrder::kAscending;
  uint8_t subscriber_priority = 128;
  std::vector<FilterRange> object_id_ranges;  // as in SubscribeOptions
  std::vector<AuthToken> auth_tokens;
};

class MoqtSessionImpl;

class MoqtSession {
 public:
  // `source` may be null (nothing to publish: every SUBSCRIBE/FETCH gets DOES_NOT_EXIST).
  // `callbacks` may be null. The session starts (opens its control stream and sends SETUP) when
  // the transport reports OnSessionReady, or at once if the transport is already open.
  MoqtSession(transport::Session* transport, MoqtSessionConfig config,
              MoqtSessionCallbacks* callbacks, TrackSource* source);
  ~MoqtSession();
  MoqtSession(const MoqtSession&) = delete;
  MoqtSession& operator=(const MoqtSession&) = delete;

  bool setup_complete() const;
  bool closed() const;
  Perspective perspective() const;
  // The peer's SETUP options (valid once setup_complete()).
  const SetupOptions& peer_setup() const;
  uint64_t peer_max_filter_ranges() const;
  bool datagrams_enabled() const;

  // ---- subscriber API. Results are the request IDs.
  Result<uint64_t> Subscribe(const FullTrackName& track, const SubscribeOptions& options,
                             std::shared_ptr<SubscribeVisitor> visitor);
  Result<uint64_t> UpdateSubscription(uint64_t request_id, const SubscriptionUpdate& update);
  // Cancels (RESET_STREAM + STOP_SENDING on the request and its data streams). The visitor gets
  // no further callbacks.
  Status Unsubscribe(uint64_t request_id);
  Result<uint64_t> Fetch(const FullTrackName& track, const FetchOptions& options,
                         std::shared_ptr<FetchVisitor> visitor);
  Status CancelFetch(uint64_t request_id);
  Result<uint64_t> RequestTrackStatus(const FullTrackName& track, TrackStatusCallback callback,
                                      std::vector<AuthToken> auth_tokens = {});
  Result<uint64_t> SubscribeNamespace(const TrackNamespace& prefix,
                                      std::shared_ptr<NamespaceVisitor> visitor,
                                      std::vector<AuthToken> auth_tokens = {});
  Status UnsubscribeNamespace(uint64_t request_id);

  // ---- publisher API (tracks themselves come from the TrackSource).
  Result<uint64_t> PublishNamespace(const TrackNamespace& ns, RequestResultCallback callback,
                                    std::vector<AuthToken> auth_tokens = {});
  Status PublishNamespaceDone(uint64_t request_id);
  // PUBLISH: offers the TrackSource's track `track` to the peer as a subscription. With FORWARD
  // its live objects (those added after this call) are sent at once, as for a SUBSCRIBE with
  // Next Object; the objects that existed before are sent as a fill when the subscriber asks
  // (PUBLISH carries their LARGEST_OBJECT). PUBLISH_DONE (End of Track) waits for PUBLISH_OK
  // and, when objects existed, for the subscriber's first REQUEST_UPDATE (its fill request).
  // Errors: kNoSuchTrack, and those of the other requests.
  Result<uint64_t> PublishTrack(const FullTrackName& track, const PublishOptions& options,
                                std::shared_ptr<PublishVisitor> visitor);

  // ---- session
  // Sends GOAWAY on the control stream (a client must pass an empty URI). With timeout_ms > 0
  // the session closes with GOAWAY_TIMEOUT if the peer has not closed by then (OnTimer).
  Status GoAway(std::string_view new_session_uri, uint64_t timeout_ms);
  void Close(SessionError code, std::string_view reason);
  // Lets clock-driven deadlines fire (PUBLISH_DONE stream wait, GOAWAY timeout).
  void OnTimer();

  // Counters for tests and diagnostics.
  struct Stats {
    uint64_t data_streams_opened = 0;
    uint64_t data_streams_accepted = 0;
    uint64_t objects_sent = 0;
    uint64_t payload_bytes_sent = 0;  // object payload on streams (headers not counted)
    uint64_t objects_received = 0;
    uint64_t datagrams_sent = 0;
    uint64_t datagrams_received = 0;
    uint64_t incoming_requests = 0;
    // Payload bytes held for objects being reassembled now (bounded by
    // kMaxReassemblyBytesPerSession; 0 when no object is partly received).
    uint64_t reassembly_bytes = 0;
  };
  Stats stats() const;

 private:
  std::unique_ptr<MoqtSessionImpl> impl_;
};

}  // namespace kvcs::moqt

#endif  // KVCS_MOQT_SESSION_MOQT_SESSION_H_
