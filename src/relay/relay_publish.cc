// Relay::AcceptPublish: a publisher's PUBLISH (draft-22 §10) written into the cache
// (docs/protocols/relay.md "PUBLISH").
//
// The session has already checked the grant (RelayPeer::AuthorizeRequest: publish on the track's
// namespace, the relay path). Then, for the track:
//   - nothing cached, nothing filling: a new cached Track and a TrackFeed whose subscription is
//     the PUBLISH (the session asks for the objects that existed before as a fill {0,0}..L, and
//     the live ones follow), exactly as a pulled feed; subscribers and FETCH join it;
//   - a feed already filling it (pulled on demand, or an earlier PUBLISH): the PUBLISH is
//     accepted too and its objects go into the same Track (an object stored already is kept, the
//     copy dropped: one Track, every object once); when the PUBLISH delivers the whole track
//     first, the feed completes from it and its own subscription ends;
//   - cached whole already: UNINTERESTED (refusals_total{cause="already_cached"}): the relay
//     holds it;
//   - with an upstream relay, a PUBLISH accepted into a new track is PUBLISHed on to it
//     (relay_upstream_publish.cc), and so is one joining a feed that pulls the track from a
//     publisher here (a feed pulling from the upstream relay needs none: the upstream has it);
//   - no room (nothing evictable for even one object): EXCESSIVE_LOAD and
//     refusals_total{cause="cache_full"}, nothing cached. Room running out later ends the feed
//     the same way as a pulled one (the track is dropped whole, counted cache_full).
#include "moqt/moqt_error.h"
#include "moqt_session/moqt_byte_budget.h"
#include "relay/relay.h"
#include "relay/relay_peer.h"
#include "relay/track_feed.h"

namespace kvcs::relay {

namespace {

// A PUBLISH of a track a feed is filling already: stores what the feed lacks into the same Track.
class PublishJoin : public moqt::SubscribeVisitor {
 public:
  PublishJoin(std::weak_ptr<TrackFeed> feed, std::shared_ptr<moqt::Track> track,
              std::function<bool(uint64_t)> make_room)
      : feed_(std::move(feed)), track_(std::move(track)), make_room_(std::move(make_room)) {}

  void OnObject(const moqt::ReceivedObject& o) override {
    if (track_->failure() || !track_->filling() || track_->Find(o.location)) {
      return;  // held already (or the track is over): the copy is dropped
    }
    Status st = make_room_(StoredObjectCharge(o))
                    ? track_->InsertObject(ToStoredObject(o))
                    : moqt::TrackErrorStatus(moqt::TrackError::kBudgetExhausted, "cache full");
    if (!st.ok() && !st.Is(moqt::TrackError::kExists)) lost_ = true;
  }

  void OnComplete(const moqt::SubscriptionDone& done) override {
    // Whole only if every object it brought was stored (else the feed's own subscription goes
    // on, and decides).
    if (done.error || !done.track_ended || !done.all_streams_received || lost_) return;
    if (auto feed = feed_.lock()) feed->CompletedElsewhere();
  }

 private:
  std::weak_ptr<TrackFeed> feed_;
  std::shared_ptr<moqt::Track> track_;
  std::function<bool(uint64_t)> make_room_;
  bool lost_ = false;  // an object this PUBLISH delivered could not be stored
};

}  // namespace

moqt::PublishAnswer Relay::AcceptPublish(RelayPeer* peer, const moqt::IncomingPublish& p) {
  moqt::PublishAnswer answer;
  const uint64_t now = NowMs();
  auto refuse = [&answer](moqt::RequestErrorCode code, std::string reason) {
    answer.error = code;
    answer.reason = std::move(reason);
    return answer;
  };
  if (auto f = feeds_.find(p.track); f != feeds_.end()) {
    (void)cache_.Find(p.track, now);  // a use of the publication
    metrics_.publishes.fetch_add(1, std::memory_order_relaxed);
    metrics_.publish_joins.fetch_add(1, std::memory_order_relaxed);
    answer.visitor = std::make_shared<PublishJoin>(f->second, f->second->track(),
                                                   [this](uint64_t n) { return MakeRoom(n); });
    // A track pulled here from a publisher of this relay (not from the upstream relay, which
    // holds it already) has reached no relay above: this PUBLISH goes on up as one into a new
    // track would, once (an earlier PUBLISH of it may be on its way already).
    std::shared_ptr<TrackFeed> feed = f->second;
    if (options_.publish_upstream && !feed->from_upstream_relay() &&
        !upstream_publishes_.count(p.track)) {
      QueueUpstreamPublish(p.track, feed->track(), p.tokens);
      if (feed->answered()) PublishAnswered(p.track);  // else from the feed's OnSubscribeOk
    }
    return answer;
  }
  if (cache_.Find(p.track, now)) {
    metrics_.Refuse(Refusal::kAlreadyCached);
    return refuse(moqt::RequestErrorCode::kUninterested, "relay: this track is cached already");
  }
  std::vector<moqt::TrackNamespace> evicted;
  auto track = cache_.Create(p.track, moqt::TrackOptions{}, now, &evicted);
  Evicted(evicted);
  if (!track.ok()) {
    metrics_.Refuse(track.status().code() == Code::kResourceExhausted ? Refusal::kCacheFull
                                                                      : Refusal::kTooMany);
    return refuse(moqt::RequestErrorCode::kExcessiveLoad, "relay: " + track.status().message());
  }
  if (!MakeRoom(moqt::kTrackObjectOverheadBytes + moqt::kTrackGroupOverheadBytes)) {
    cache_.Remove(p.track);
    metrics_.Refuse(Refusal::kCacheFull);
    UpdateCacheGauges();
    return refuse(moqt::RequestErrorCode::kExcessiveLoad,
                  "relay cache full: every cached publication is in use");
  }
  auto feed = std::make_shared<TrackFeed>(this, *track, peer->session(),
                                          now + options_.upstream_timeout_ms);
  feed->set_request_id(p.request_id);
  feeds_[p.track] = feed;
  metrics_.publishes.fetch_add(1, std::memory_order_relaxed);
  if (options_.publish_upstream) QueueUpstreamPublish(p.track, *track, p.tokens);
  UpdateCacheGauges();
  answer.visitor = feed;  // OnSubscribeOk follows at once: the feed is answered
  return answer;
}

}  // namespace kvcs::relay
