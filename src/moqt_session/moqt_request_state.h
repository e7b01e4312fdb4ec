// The records a session keeps per request, one per Request ID, always looked up by ID (so an
// application callback that ends a request never leaves a dangling pointer behind):
//   - OutgoingRequest: a request we sent (SUBSCRIBE, FETCH, TRACK_STATUS, PUBLISH_NAMESPACE,
//     SUBSCRIBE_NAMESPACE, PUBLISH), or a subscription the peer initiated with PUBLISH (we
//     receive it as if we had subscribed), with the application's visitor or callback and what we
//     learned from the answers and the data streams attributed to it;
//   - IncomingRequest: a request the peer sent (we publish / respond), or the subscription of a
//     PUBLISH we sent, with the served track,
//     the subscription's ranges and its data streams, or the namespace forwarder.
// docs/protocols/moqt-session.md describes the state machines. Internal to moqt_session.
#ifndef KVCS_MOQT_SESSION_MOQT_REQUEST_STATE_H_
#define KVCS_MOQT_SESSION_MOQT_REQUEST_STATE_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "moqt/moqt_messages.h"
#include "moqt_session/moqt_filters.h"
#include "moqt_session/moqt_namespace_forwarder.h"
#include "moqt_session/moqt_session.h"
#include "moqt_session/moqt_track.h"
#include "transport/session.h"

namespace kvcs::moqt {

enum class RequestKind {
  kSubscribe,
  kFetch,
  kTrackStatus,
  kPublishNamespace,
  kSubscribeNamespace,
  kPublish,  // a PUBLISH we sent (its served subscription is an IncomingRequest of the same ID)
  kOther
};

// A request we sent.
struct OutgoingRequest {
  // Counts a data stream attributed to this subscription (subgroup or fill); false when that is
  // more streams than PUBLISH_DONE announced (a protocol violation).
  bool CountDataStream();
  // The request stream ended (FIN or reset) without PUBLISH_DONE: as if PUBLISH_DONE
  // INTERNAL_ERROR with an unknown stream count had arrived at `now_ms` (nothing if one did).
  void AssumePublishDone(std::string reason, uint64_t now_ms);
  // The subscription's final report from its PUBLISH_DONE (REQUIRES done).
  SubscriptionDone Completion(bool all_streams_received) const;
  // The publisher answered the fill asked for under `fill_id` with `largest` as its Largest
  // Object: owed unless its range `f` is empty (no stream) or its stream arrived already.
  void FillAnswered(uint64_t fill_id, const LocationFilter& f, std::optional<Location> largest);
  // Whether Object `object_id` passes the application's OBJECTID ranges (applied locally).
  bool InLocalObjectRanges(uint64_t object_id) const;

  RequestKind kind = RequestKind::kOther;
  uint64_t id = 0;
  transport::StreamId stream = 0;
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
  // Fills asked for, by the Request ID their stream's header names (the SUBSCRIBE's, or an
  // update's): updates with a fill not answered yet (their fill range, resolved against the
  // Largest Object the answer carries); fills answered with a non-empty range whose stream has
  // not arrived (owed); fills whose stream arrived (counted in streams_open until it ends).
  // Completion waits for what is owed (docs/protocols/moqt-session.md, Subscription completion).
  std::map<uint64_t, LocationFilter> fill_updates;
  std::set<uint64_t> fills_owed, fills_arrived;
  // fetch
  std::shared_ptr<FetchVisitor> fetch_visitor;
  GroupOrder fetch_order = GroupOrder::kAscending;
  std::vector<FilterRange> local_object_ranges;
  std::optional<FetchOk> fetch_ok;
  bool fetch_data_seen = false, fetch_data_fin = false, fetch_data_reset = false;
  // track status / publish namespace
  TrackStatusCallback status_cb;
  RequestResultCallback result_cb;
  // publish
  std::shared_ptr<PublishVisitor> publish_visitor;
  // subscribe namespace
  std::shared_ptr<NamespaceVisitor> ns_visitor;
  std::set<TrackNamespace> active_ns;
};

// A request the peer sent (we are the publisher/responder).
struct IncomingRequest {
  RequestKind kind = RequestKind::kOther;
  uint64_t id = 0;
  transport::StreamId stream = 0;
  std::shared_ptr<Track> track;
  // subscription
  uint64_t alias = 0;
  LocationRange live;
  RangeFilters filters;
  uint8_t subscriber_priority = 128;
  GroupOrder group_order = GroupOrder::kAscending;
  bool forward = true;
  std::map<uint64_t, transport::StreamId> group_streams;  // open subgroup streams by group
  std::set<uint64_t> stopped_groups;                      // STOP_SENDING received: never reopen
  std::set<transport::StreamId> data_streams;  // every unfinished data stream (fills too)
  std::deque<std::pair<uint64_t, uint64_t>> waiting_groups;  // {group, first object}: no credit
  uint64_t streams_opened = 0;
  bool done_pending = false;
  PublishDoneCode done_code = PublishDoneCode::kTrackEnded;
  std::string done_reason;  // PUBLISH_DONE's reason when not the default one
  // A subscription we initiated with PUBLISH: PUBLISH_DONE waits for PUBLISH_OK, and, when the
  // PUBLISH announced existing objects, for the subscriber's first REQUEST_UPDATE (its fill).
  // A subscriber that wants no fill never sends that update: the wait for it lasts
  // publish_done_wait_ms from PUBLISH_OK (MoqtSessionImpl::OnTimer), and then PUBLISH_DONE goes
  // once the live data streams are done.
  bool awaiting_publish_ok = false;
  bool awaiting_fill_request = false;
  uint64_t publish_ok_at_ms = 0;
  // fetch
  transport::StreamId fetch_stream = 0;
  // A fetch ending at the end of a group of a relay's track still filling: its last object is
  // not known yet, so FETCH_OK (whose End Location names it) waits until it is, while the
  // objects already flow (draft-22 §11: "only once the end is known").
  std::optional<FetchOk> fetch_ok_pending;
  bool fetch_ok_with_properties = true;
  // namespace subscription / publish namespace
  TrackNamespace prefix;
  std::unique_ptr<NamespaceForwarder> ns_forwarder;  // namespace subscription
};

}  // namespace kvcs::moqt

#endif  // KVCS_MOQT_SESSION_MOQT_REQUEST_STATE_H_
