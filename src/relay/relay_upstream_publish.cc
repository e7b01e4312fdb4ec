// Relay: PUBLISHes accepted here sent on to the upstream relay (docs/protocols/relay.md
// "PUBLISH up a tree"), so that a tree's root holds what any leaf was PUBLISHed.
//
//   - AcceptPublish queues every PUBLISH it accepts into a new cached track, and one joining a
//     feed that pulls the track from a publisher of this relay (a subscriber here asked first):
//     no relay above holds that track, and nothing else would send it there. Not one joining a
//     feed pulled from the upstream relay, which holds the track already (sending it back up
//     would only join the root's own copy), nor one whose track is queued already: the root
//     gets each track once. The entry holds the track, so the cache never evicts it before the
//     upstream has it.
//   - Once the publisher's PUBLISH is answered (the track's Largest Object is known, as a
//     downstream subscriber joining the filling track would see it), the track is PUBLISHed on the
//     upstream link, served from the cache like any subscription: the upstream asks for the
//     objects up to that Largest as a fill and receives the later ones live, while they arrive.
//   - Done when the upstream received all of it (OnPublishDone delivered), or answered
//     UNINTERESTED (it holds the track whole already): counted, and the track released. Refused
//     otherwise (no publish grant, no room, a loop): counted as refused and released too, since
//     holding it would pin it in the cache for a refusal that does not go away by itself. Only a
//     link that ended first leaves it pending, re-sent on the next upstream link (SetUpstream).
//   - A track that fails here (the publisher went away before the end) is dropped: its PUBLISH
//     upstream ends with the error and the upstream drops its copy too.
//   - Loops: the PUBLISH carries the relay path (ForwardTokens), which a relay that finds itself
//     on it refuses (NOT_SUPPORTED, RelayPeer::AuthorizeRequest); a PUBLISH arriving on the
//     upstream link is refused the same way (RelayServer).
#include "moqt/moqt_error.h"
#include "relay/relay.h"

namespace kvcs::relay {

namespace {

// Our PUBLISH of one track on one upstream link.
class UpstreamPublishVisitor : public moqt::PublishVisitor {
 public:
  // held: the upstream has the track whole; refused: it answered the PUBLISH with an error
  // (other than UNINTERESTED); neither: the link ended first.
  using Ended = std::function<void(bool held, bool refused, const std::string& why)>;
  explicit UpstreamPublishVisitor(Ended ended) : ended_(std::move(ended)) {}
  void OnPublishResult(const std::optional<moqt::RequestError>& error) override {
    if (!error) return;
    uninterested_ =
        error->error_code == static_cast<uint64_t>(moqt::RequestErrorCode::kUninterested);
    refused_ = !uninterested_;
    why_ = "refused: " + error->reason;
  }
  void OnPublishDone(bool delivered) override {
    if (!ended_) return;
    Ended ended = std::move(ended_);
    ended_ = nullptr;
    const bool held = delivered || uninterested_;
    ended(held, !held && refused_, why_.empty() ? "the upstream link ended" : why_);
  }

 private:
  Ended ended_;
  bool uninterested_ = false;  // the upstream holds the track whole already
  bool refused_ = false;       // any other error answered the PUBLISH
  std::string why_;
};

}  // namespace

void Relay::QueueUpstreamPublish(const moqt::FullTrackName& name,
                                 std::shared_ptr<moqt::Track> track,
                                 std::vector<moqt::AuthToken> incoming_tokens) {
  UpstreamPublish& up = upstream_publishes_[name];
  up.track = std::move(track);
  up.incoming_tokens = std::move(incoming_tokens);
}

void Relay::PublishAnswered(const moqt::FullTrackName& name) {
  auto it = upstream_publishes_.find(name);
  if (it == upstream_publishes_.end() || it->second.answered) return;
  it->second.answered = true;
  SendUpstreamPublish(name);
}

void Relay::SendUpstreamPublish(const moqt::FullTrackName& name) {
  auto it = upstream_publishes_.find(name);
  if (it == upstream_publishes_.end() || !upstream_) return;
  UpstreamPublish& up = it->second;
  if (!up.answered || up.link == upstream_link_) return;
  if (up.track->failure()) {
    upstream_publishes_.erase(it);
    return;
  }
  moqt::PublishOptions po;
  po.auth_tokens = ForwardTokens(up.incoming_tokens, true);
  const uint64_t link = upstream_link_;
  auto visitor = std::make_shared<UpstreamPublishVisitor>(
      [this, alive = std::weak_ptr<int>(alive_), name, link](bool held, bool refused,
                                                             const std::string& why) {
        if (!alive.expired()) UpstreamPublishEnded(name, link, held, refused, why);
      });
  auto rid = upstream_->PublishTrack(name, po, std::move(visitor));
  if (!rid.ok()) {
    Log("upstream PUBLISH of " + TrackLabel(name) + " not sent: " + rid.status().message());
    return;  // pending: re-sent on the next link
  }
  up.link = link;
  metrics_.upstream_publishes.fetch_add(1, std::memory_order_relaxed);
}

void Relay::UpstreamPublishEnded(const moqt::FullTrackName& name, uint64_t link, bool held,
                                 bool refused, const std::string& why) {
  auto it = upstream_publishes_.find(name);
  if (it == upstream_publishes_.end() || it->second.link != link) return;  // dropped, or re-sent
  if (held) {
    metrics_.upstream_publishes_delivered.fetch_add(1, std::memory_order_relaxed);
    upstream_publishes_.erase(it);
    return;
  }
  if (refused) {
    metrics_.upstream_publishes_refused.fetch_add(1, std::memory_order_relaxed);
    Log("upstream PUBLISH of " + TrackLabel(name) + " " + why + ": not sent up again");
    upstream_publishes_.erase(it);  // releases the track: evictable again
    return;
  }
  Log("upstream PUBLISH of " + TrackLabel(name) + " not delivered (" + why +
      "): pending until the next upstream link");
  it->second.link = 0;
  if (link != upstream_link_) SendUpstreamPublish(name);  // a newer link is up already
}

}  // namespace kvcs::relay
