// TrackFeed: one upstream subscription filling one cached track (Next Object + fill from {0,0}:
// the whole track). It is the SubscribeVisitor of that subscription: it stores each object once
// (Track::InsertObject; fill and live objects interleave), tells the Track how far it is known
// complete, answers the downstream requests waiting on it once the upstream answered, and ends
// the track cleanly (complete, or failed with the reason) when the subscription ends.
//
// How far the track is known (Track::SetCompleteThrough): the fill arrives in ascending order
// up to the upstream's Largest Object L, so each fill object completes everything before it.
// After the fill, live groups arrive each on its own stream, in order within the stream, but
// the streams of different groups in any order (loss, reordering): the track is known through
// L's group's live objects (or its end, when L was its End of Group), then through each later
// group in turn whose End of Group arrived, never past a group not received yet. Without an L
// (nothing was published when we subscribed) the walk starts at group 0, not at the lowest
// group received: that one may be a later group whose stream overtook group 0's. Group ids are
// taken as consecutive (KVCS layers, Track::StartGroup); a track whose groups skip ids is known
// whole only when it ends (PUBLISH_DONE TRACK_ENDED with every stream).
// THREADING: single-threaded (the relay's executor).
#ifndef KVCS_RELAY_TRACK_FEED_H_
#define KVCS_RELAY_TRACK_FEED_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "moqt_session/moqt_session.h"
#include "moqt_session/moqt_track.h"
#include "moqt_session/moqt_track_source.h"

namespace kvcs::relay {

class Relay;

// A received object as the cache stores it (the payload buffer shared, not copied), and what
// storing it may charge the budget (payload, one object, one group: MakeRoom's request).
moqt::PublishedObject ToStoredObject(const moqt::ReceivedObject& o);
uint64_t StoredObjectCharge(const moqt::ReceivedObject& o);

class TrackFeed : public moqt::SubscribeVisitor, public std::enable_shared_from_this<TrackFeed> {
 public:
  TrackFeed(Relay* relay, std::shared_ptr<moqt::Track> track, moqt::MoqtSession* session,
            uint64_t deadline_ms);

  // A downstream request waiting for this feed: answered once the upstream answered (a FETCH
  // too: its stream then waits object by object for what is not known yet).
  void AddWaiter(moqt::TrackResolved done);
  void set_request_id(uint64_t id) { request_id_ = id; }
  // The feed's subscription is to the upstream relay (a pull routed up the tree), not to a
  // publisher here: the upstream holds the track already.
  void set_from_upstream_relay(bool v) { from_upstream_relay_ = v; }
  bool from_upstream_relay() const { return from_upstream_relay_; }
  moqt::MoqtSession* session() const { return session_; }
  const std::shared_ptr<moqt::Track>& track() const { return track_; }
  bool answered() const { return answered_; }
  uint64_t deadline_ms() const { return deadline_ms_; }
  // The upstream session is being destroyed: never call into it again.
  void Detach() { session_ = nullptr; }
  // The upstream answered and still owes data it must be sending now: the fill up to its
  // Largest Object, or the rest of a group before the newest one received (publishers finish
  // a group before they start the next). A live track between objects owes nothing.
  bool OwesData() const;
  // The upstream session is going away (or did not answer in time): end as a failure.
  void Abandon(moqt::RequestErrorCode code, const std::string& reason);
  // The whole track reached the Track through another subscription (a PUBLISH of the track this
  // feed fills, relay_publish.cc): complete, and this feed's own subscription ends.
  void CompletedElsewhere();

  // moqt::SubscribeVisitor
  void OnSubscribeOk(const moqt::SubscribeOkInfo& info) override;
  void OnObject(const moqt::ReceivedObject& object) override;
  void OnFillComplete(bool clean) override;
  void OnComplete(const moqt::SubscriptionDone& done) override;

 private:
  struct LiveGroup {
    std::optional<uint64_t> last;  // the last object received (in order on its stream)
    bool ended = false;            // End of Group (or End of Track) received
  };
  // Answers the waiters that can be answered now.
  void Wake();
  void Advance();
  // The upstream's Largest Object (known, fill done) was a status object, not a Normal one.
  bool LargestIsStatus() const;
  void Finish(bool complete, moqt::PublishDoneCode code, const std::string& reason);
  // End of Track and everything before it arrived: the track is whole even if the upstream
  // session ends before PUBLISH_DONE.
  bool EndedAndKnown() const;
  // The track ended upstream (PUBLISH_DONE TRACK_ENDED with every stream received): stores its
  // End of Track after the Largest Object unless it has one.
  void EndAtLargest();
  void RefuseAll(moqt::RequestErrorCode code, const std::string& reason);

  Relay* relay_;
  std::shared_ptr<moqt::Track> track_;
  moqt::MoqtSession* session_;
  uint64_t request_id_ = 0;
  uint64_t deadline_ms_;
  bool answered_ = false;
  bool from_upstream_relay_ = false;
  bool ended_ = false;
  std::optional<moqt::Location> upstream_largest_;
  bool fill_done_ = false;
  std::optional<moqt::Location> fill_last_;
  std::map<uint64_t, LiveGroup> live_;
  std::vector<moqt::TrackResolved> waiters_;
};

}  // namespace kvcs::relay

#endif  // KVCS_RELAY_TRACK_FEED_H_
