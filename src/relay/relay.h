// Relay: the caching MOQT relay's logic, on MoqtSession objects and nothing else (no sockets;
// relay_server.h puts it on QUIC). docs/protocols/relay.md describes the model.
//
//   - It is the TrackSource of every session it serves (downstream sessions, and the session to
//     its upstream relay, which may subscribe to what is announced here).
//   - Publishers PUBLISH_NAMESPACE to it; SUBSCRIBE_NAMESPACE subscribers see every matching
//     namespace: announced here, learnt from the upstream relay, or held complete in the cache.
//   - A SUBSCRIBE / FETCH / TRACK_STATUS for a track not cached opens ONE upstream subscription
//     for the whole track (Next Object + fill from {0,0}) on the session that announced its
//     namespace, else on the upstream relay; concurrent requests join it; the answer waits for
//     the upstream's (its Largest Object, or its error passed on). Every object received goes
//     into the cache once and is served to every subscriber from that buffer.
//   - A publisher may also PUBLISH (draft-22) each track: the relay accepts it into the cache at
//     once (relay_publish.cc), so the publication stays after the publisher left even if nobody
//     subscribed meanwhile; subscribers and FETCH are served from it as from a pulled track.
//     With an upstream relay (RelayOptions::publish_upstream), each such PUBLISH is PUBLISHed on
//     to it (relay_upstream_publish.cc), so a tree's root holds what any leaf was PUBLISHed:
//     pending until the upstream holds it, re-sent on every new upstream link.
//   - The cache (relay_cache.h) holds whole publications under one byte budget, evicted least
//     recently used, never while in use; a publication that cannot be held whole is refused.
//   - Authorization: the setup's token (auth/token.h, ES256 JWT) grants publish and/or subscribe
//     on namespace prefixes; every request is checked against the grant of the session asking.
//   - Loops: requests forwarded to another relay carry the relays they passed (a token of type
//     kRelayPathTokenType); a relay that finds itself there refuses.
// Pure logic, the clock passed in (RelayOptions::clock_ms; OnTimer for deadlines).
// THREADING: single-threaded, on the sessions' executor.
#ifndef KVCS_RELAY_RELAY_H_
#define KVCS_RELAY_RELAY_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "auth/token.h"
#include "moqt_session/moqt_session.h"
#include "moqt_session/moqt_track_source.h"
#include "relay/relay_cache.h"
#include "relay/relay_metrics.h"

namespace kvcs::relay {

// AUTHORIZATION TOKEN type of the relay path (private use): value = relay ids joined by ','.
inline constexpr uint64_t kRelayPathTokenType = 0x6b767270;  // "kvrp"
// A relay path longer than this is a loop or a misconfiguration (trees are a few levels deep).
inline constexpr size_t kMaxRelayPathHops = 16;
// Namespaces announced here, across sessions (each session also has its own bound).
inline constexpr size_t kDefaultMaxAnnouncements = 4096;
// How long a request waits for its upstream's answer before it is refused with TIMEOUT.
inline constexpr uint64_t kDefaultUpstreamTimeoutMs = 10'000;
// How long a subscriber may take none of the data waiting for it before its subscriptions and
// fetches are cut off (MoqtSessionConfig::subscriber_stall_ms; RelayServerConfig). A healthy
// peer takes data within round trips; 10 s is far beyond a consumer's pauses, and below the
// QUIC idle timeout (30 s), so a stalled subscriber releases its publication (and is counted
// as such) before its connection would be declared dead.
inline constexpr uint64_t kDefaultSubscriberStallMs = 10'000;
// How long an upstream session (a publisher, or the upstream relay) may deliver nothing while
// it owes us data (a fill not finished, a group before the newest one not ended) before the
// feeds it owes end with an error; the upstream relay's link (judged after twice this, so that
// the upstream relay's own cut-off of a stalled publisher behind it comes first) is then closed,
// and RelayServer reconnects it. The same reasoning as for subscribers: far beyond a healthy peer's
// pauses in the middle of a delivery, below the QUIC idle timeout.
inline constexpr uint64_t kDefaultUpstreamStallMs = 10'000;

struct RelayOptions {
  std::string relay_id;  // unique per relay, no ','; empty: a random one
  uint64_t cache_bytes = uint64_t{1} << 30;
  size_t max_publications = kDefaultMaxPublications;
  size_t max_announcements = kDefaultMaxAnnouncements;
  uint64_t upstream_timeout_ms = kDefaultUpstreamTimeoutMs;
  // 0: an upstream is never judged stalled (kDefaultUpstreamStallMs; needs clock_ms, OnTimer).
  uint64_t upstream_stall_ms = kDefaultUpstreamStallMs;
  // This relay has an upstream relay (RelayServer: --upstream): every PUBLISH accepted here into
  // a new cached track is PUBLISHed on to the upstream relay, and the track is held (never
  // evicted) until the upstream has all of it; re-sent on every new upstream link until then.
  bool publish_upstream = false;
  // Null: open access (only when the configuration says so). Otherwise every session needs a
  // valid token in its SETUP.
  std::shared_ptr<const auth::Verifier> verifier;
  // Sent with every request to the upstream relay (this relay's own grant there).
  std::vector<moqt::AuthToken> upstream_tokens;
  // The prefix this relay subscribes to at its upstream, to learn the namespaces of the tree
  // (empty: every namespace).
  moqt::TrackNamespace upstream_namespace_prefix;
  // Wall-clock seconds for token expiry; monotonic milliseconds for LRU and deadlines.
  std::function<int64_t()> clock_s;
  std::function<uint64_t()> clock_ms;
  // One line per notable event (a slow subscriber cut off); null: quiet.
  std::function<void(const std::string&)> log;
};

class RelayPeer;
class TrackFeed;

// A track as the relay's log lines name it: its namespace's fields and name joined by '/'.
std::string TrackLabel(const moqt::FullTrackName& track);

struct FullTrackNameLess {
  bool operator()(const moqt::FullTrackName& a, const moqt::FullTrackName& b) const {
    return std::tie(a.track_namespace, a.name) < std::tie(b.track_namespace, b.name);
  }
};

class Relay : public moqt::TrackSource {
 public:
  explicit Relay(RelayOptions options);
  ~Relay() override;
  Relay(const Relay&) = delete;
  Relay& operator=(const Relay&) = delete;

  const std::string& id() const { return options_.relay_id; }

  // A session accepted from a publisher, subscriber or downstream relay: returns its callbacks
  // (the server owns them; they must be destroyed with the session, before the Relay).
  std::unique_ptr<moqt::MoqtSessionCallbacks> AcceptSession(moqt::MoqtSession* session);
  // The session to the upstream relay once SETUP is done; nullptr when it ended. Announcements
  // made here are forwarded to it, and requests nobody here can answer go to it.
  void SetUpstream(moqt::MoqtSession* upstream);
  // Lets deadlines fire (upstream answers that do not come, upstreams that stall) and refreshes
  // the cache gauges (the budget changes also when a session lets go of a dropped track).
  void OnTimer();

  // ---- TrackSource
  std::shared_ptr<moqt::Track> FindTrack(const moqt::FullTrackName& name) override;
  void ResolveTrack(const moqt::TrackQuery& query, moqt::TrackResolved done) override;
  std::vector<moqt::TrackNamespace> ListNamespaces() override;
  void AddNamespaceListener(moqt::NamespaceListener* l) override { ns_listeners_.insert(l); }
  void RemoveNamespaceListener(moqt::NamespaceListener* l) override { ns_listeners_.erase(l); }

  RelayMetrics& metrics() { return metrics_; }
  const RelayCache& cache() const { return cache_; }
  size_t feeds_in_flight() const { return feeds_.size(); }
  // PUBLISHes accepted here that the upstream relay does not hold whole yet.
  size_t upstream_publishes_pending() const { return upstream_publishes_.size(); }

 private:
  friend class RelayPeer;
  friend class TrackFeed;
  struct Route {
    moqt::MoqtSession* session = nullptr;
    bool upstream = false;
  };
  struct Announcement {
    RelayPeer* peer = nullptr;
    std::optional<uint64_t> upstream_request;      // our PUBLISH_NAMESPACE to the upstream
    std::vector<moqt::AuthToken> incoming_tokens;  // its PUBLISH_NAMESPACE's (the relay path)
  };

  uint64_t NowMs() const { return options_.clock_ms ? options_.clock_ms() : 0; }
  void Log(const std::string& line) const {
    if (options_.log) options_.log(line);
  }
  int64_t NowS() const { return options_.clock_s ? options_.clock_s() : 0; }
  std::optional<Route> RouteFor(const moqt::TrackNamespace& ns) const;
  // The relay path of a request: the ids in its path token (empty when none).
  static std::vector<std::string> PathOf(const std::vector<moqt::AuthToken>& tokens);
  bool OnPath(const std::vector<moqt::AuthToken>& tokens) const;
  // Tokens for a request forwarded on: `incoming`'s path plus this relay, and our own grant
  // when it goes to the upstream relay.
  std::vector<moqt::AuthToken> ForwardTokens(const std::vector<moqt::AuthToken>& incoming,
                                             bool upstream) const;

  // Namespace visibility, refcounted by reason (announcement, upstream, complete in cache).
  void NamespaceRef(const moqt::TrackNamespace& ns);
  void NamespaceUnref(const moqt::TrackNamespace& ns);
  void Evicted(const std::vector<moqt::TrackNamespace>& namespaces);
  void UpdateCacheGauges();

  // From RelayPeer.
  std::optional<moqt::RequestErrorCode> Announce(RelayPeer* peer, const moqt::TrackNamespace& ns,
                                                 const std::vector<moqt::AuthToken>& tokens);
  void Withdraw(RelayPeer* peer, const moqt::TrackNamespace& ns);
  void PeerGone(RelayPeer* peer);
  // A PUBLISH from `peer` (already authorized for publish on its namespace): accepted into the
  // cache as a feed, joined to the feed already filling the track, or refused (relay_publish.cc).
  moqt::PublishAnswer AcceptPublish(RelayPeer* peer, const moqt::IncomingPublish& publish);
  void ForwardAnnouncement(const moqt::TrackNamespace& ns, Announcement& a);

  // A PUBLISH accepted here, to be PUBLISHed on to the upstream relay (relay_upstream_publish.cc).
  struct UpstreamPublish {
    std::shared_ptr<moqt::Track> track;            // held: in use, so never evicted meanwhile
    std::vector<moqt::AuthToken> incoming_tokens;  // the publisher's PUBLISH's (its relay path)
    bool answered = false;  // the publisher's PUBLISH is answered: the track's Largest is known
    uint64_t link = 0;      // the upstream link it is in flight on (0: not sent on this one)
  };
  // From AcceptPublish: `track` goes upstream once its feed is answered (PublishAnswered).
  void QueueUpstreamPublish(const moqt::FullTrackName& name, std::shared_ptr<moqt::Track> track,
                            std::vector<moqt::AuthToken> incoming_tokens);
  // From TrackFeed::OnSubscribeOk: the track's Largest is known, its PUBLISH can go upstream.
  void PublishAnswered(const moqt::FullTrackName& name);
  // PUBLISHes `name` on the current upstream link unless it is in flight there already.
  void SendUpstreamPublish(const moqt::FullTrackName& name);
  // Our PUBLISH on link `link` ended: the upstream holds the track (`held`), or not.
  void UpstreamPublishEnded(const moqt::FullTrackName& name, uint64_t link, bool held, bool refused,
                            const std::string& why);

  // Ends the feeds of upstream sessions that owe data and delivered nothing for
  // upstream_stall_ms (one watch per session: QUIC flow control is per connection, and one
  // feed starved by the upstream's other streams is not a stall); the upstream relay's link is
  // closed too.
  void CheckStalledUpstreams(uint64_t now);

  // From TrackFeed.
  void FeedEnded(TrackFeed* feed);
  // Room for `bytes` more in the cache (evicting idle publications); false: refused.
  bool MakeRoom(uint64_t bytes);
  void PublicationComplete(const moqt::TrackNamespace& ns);

  RelayOptions options_;
  RelayCache cache_;
  RelayMetrics metrics_;
  std::set<RelayPeer*> peers_;
  std::map<moqt::TrackNamespace, Announcement> announcements_;
  moqt::MoqtSession* upstream_ = nullptr;
  std::optional<uint64_t> upstream_ns_request_;
  std::set<moqt::TrackNamespace> upstream_namespaces_;
  std::set<moqt::TrackNamespace> listed_cached_;  // publications complete in the cache
  std::map<moqt::TrackNamespace, int> ns_refs_;
  std::set<moqt::NamespaceListener*> ns_listeners_;
  std::map<moqt::FullTrackName, std::shared_ptr<TrackFeed>, FullTrackNameLess> feeds_;
  // Upstream sessions owing data: what they had delivered (objects received, bytes of objects
  // being reassembled) when it last changed, and since when.
  struct UpstreamWatch {
    std::pair<uint64_t, uint64_t> delivered;
    uint64_t since_ms = 0;
  };
  std::map<moqt::MoqtSession*, UpstreamWatch> upstream_watch_;
  std::map<moqt::FullTrackName, UpstreamPublish, FullTrackNameLess> upstream_publishes_;
  uint64_t upstream_link_ = 0;  // counts the upstream links (SetUpstream with a session)
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace kvcs::relay

#endif  // KVCS_RELAY_RELAY_H_
