// Relay: routing, the cache, announcements and the relay path (relay.h).
#include "relay/relay.h"

#include <random>

#include "common/hex.h"
#include "relay/relay_peer.h"
#include "relay/track_feed.h"

namespace kvcs::relay {

namespace {

std::string RandomRelayId() {
  std::random_device rd;
  uint8_t b[8];
  for (uint8_t& x : b) x = static_cast<uint8_t>(rd());
  return ToHex(ByteSpan(b, sizeof(b)));
}

}  // namespace

std::string TrackLabel(const moqt::FullTrackName& track) {
  std::string name;
  for (const std::string& f : track.track_namespace) name += f + "/";
  return name + track.name;
}

Relay::Relay(RelayOptions options)
    : options_(std::move(options)), cache_(options_.cache_bytes, options_.max_publications) {
  if (options_.relay_id.empty()) options_.relay_id = RandomRelayId();
  metrics_.cache_budget_bytes = options_.cache_bytes;
}

Relay::~Relay() {
  alive_.reset();
  for (auto& [name, feed] : feeds_)
    feed->Abandon(moqt::RequestErrorCode::kGoingAway, "relay stopping");
  feeds_.clear();
}

std::unique_ptr<moqt::MoqtSessionCallbacks> Relay::AcceptSession(moqt::MoqtSession* session) {
  return std::make_unique<RelayPeer>(this, session);
}

// ------------------------------------------------------------------------------ relay path
std::vector<std::string> Relay::PathOf(const std::vector<moqt::AuthToken>& tokens) {
  std::vector<std::string> path;
  for (const moqt::AuthToken& t : tokens) {
    if (t.token_type != kRelayPathTokenType) continue;
    size_t start = 0;
    while (start <= t.value.size() && path.size() <= kMaxRelayPathHops) {
      size_t comma = t.value.find(',', start);
      if (comma == std::string::npos) comma = t.value.size();
      if (comma > start) path.push_back(t.value.substr(start, comma - start));
      start = comma + 1;
    }
  }
  return path;
}

bool Relay::OnPath(const std::vector<moqt::AuthToken>& tokens) const {
  std::vector<std::string> path = PathOf(tokens);
  if (path.size() > kMaxRelayPathHops) return true;
  for (const std::string& id : path) {
    if (id == options_.relay_id) return true;
  }
  return false;
}

std::vector<moqt::AuthToken> Relay::ForwardTokens(const std::vector<moqt::AuthToken>& incoming,
                                                  bool upstream) const {
  std::vector<moqt::AuthToken> out;
  if (upstream) out = options_.upstream_tokens;
  std::string path;
  for (const std::string& id : PathOf(incoming)) path += id + ",";
  path += options_.relay_id;
  moqt::AuthToken t;
  t.token_type = kRelayPathTokenType;
  t.value = std::move(path);
  out.push_back(std::move(t));
  return out;
}

// --------------------------------------------------------------------------------- routing
std::optional<Relay::Route> Relay::RouteFor(const moqt::TrackNamespace& ns) const {
  // The longest announced prefix wins; then the upstream relay.
  const Announcement* best = nullptr;
  size_t best_len = 0;
  for (const auto& [prefix, a] : announcements_) {
    if (moqt::NamespaceHasPrefix(ns, prefix) && (!best || prefix.size() > best_len)) {
      best = &a;
      best_len = prefix.size();
    }
  }
  if (best && best->peer) return Route{best->peer->session(), false};
  if (upstream_) return Route{upstream_, true};
  return std::nullopt;
}

std::shared_ptr<moqt::Track> Relay::FindTrack(const moqt::FullTrackName& name) {
  return cache_.Find(name, NowMs());
}

void Relay::ResolveTrack(const moqt::TrackQuery& q, moqt::TrackResolved done) {
  metrics_.subscriptions.fetch_add(1, std::memory_order_relaxed);
  auto refuse = [&done](moqt::RequestErrorCode code, std::string reason) {
    moqt::TrackResolution r;
    r.error = code;
    r.reason = std::move(reason);
    done(std::move(r));
  };
  if (OnPath(q.tokens)) {
    metrics_.Refuse(Refusal::kLoop);
    refuse(moqt::RequestErrorCode::kNotSupported, "relay loop: this request passed here already");
    return;
  }
  const uint64_t now = NowMs();
  if (auto f = feeds_.find(q.name); f != feeds_.end()) {
    // Filling now (or waiting for the upstream's answer): join it.
    metrics_.merged_requests.fetch_add(1, std::memory_order_relaxed);
    (void)cache_.Find(q.name, now);  // a use of the publication
    std::shared_ptr<TrackFeed> feed = f->second;
    feed->AddWaiter(std::move(done));
    return;
  }
  if (std::shared_ptr<moqt::Track> t = cache_.Find(q.name, now)) {
    metrics_.cache_hits.fetch_add(1, std::memory_order_relaxed);
    moqt::TrackResolution r;
    r.track = std::move(t);
    done(std::move(r));
    return;
  }
  std::optional<Route> route = RouteFor(q.name.track_namespace);
  if (!route) {
    metrics_.Refuse(Refusal::kNoRoute);
    refuse(moqt::RequestErrorCode::kDoesNotExist,
           "no publisher announced this namespace here and the relay has no upstream");
    return;
  }
  std::vector<moqt::TrackNamespace> evicted;
  auto track = cache_.Create(q.name, moqt::TrackOptions{}, now, &evicted);
  Evicted(evicted);
  if (!track.ok()) {
    metrics_.Refuse(Refusal::kCacheFull);
    refuse(moqt::RequestErrorCode::kExcessiveLoad, "relay: " + track.status().message());
    return;
  }
  auto feed =
      std::make_shared<TrackFeed>(this, *track, route->session, now + options_.upstream_timeout_ms);
  moqt::SubscribeOptions so;
  so.filter = moqt::LocationFilter{moqt::LocationFilterType::kNextObject};
  so.fill = moqt::LocationFilter{moqt::LocationFilterType::kAbsoluteStart, 0, 0};
  so.auth_tokens = ForwardTokens(q.tokens, route->upstream);
  auto rid = route->session->Subscribe(q.name, so, feed);
  if (!rid.ok()) {
    cache_.Remove(q.name);
    refuse(moqt::RequestErrorCode::kInternalError,
           "relay: cannot subscribe upstream: " + rid.status().message());
    return;
  }
  metrics_.upstream_requests.fetch_add(1, std::memory_order_relaxed);
  feed->set_request_id(*rid);
  feed->set_from_upstream_relay(route->upstream);
  feeds_[q.name] = feed;
  feed->AddWaiter(std::move(done));
  UpdateCacheGauges();
}

void Relay::OnTimer() {
  const uint64_t now = NowMs();
  std::vector<std::shared_ptr<TrackFeed>> late;
  for (auto& [name, feed] : feeds_) {
    if (!feed->answered() && now >= feed->deadline_ms()) late.push_back(feed);
  }
  for (auto& feed : late) {
    metrics_.Refuse(Refusal::kTimeout);
    feed->Abandon(moqt::RequestErrorCode::kTimeout, "the upstream did not answer in time");
  }
  if (options_.upstream_stall_ms > 0) CheckStalledUpstreams(now);
  // The budget also changes with nothing here being told: a track dropped from the cache (a
  // failed feed) releases its charge only when the last session serving it lets go of it.
  UpdateCacheGauges();
}

void Relay::CheckStalledUpstreams(uint64_t now) {
  std::map<moqt::MoqtSession*, std::vector<std::shared_ptr<TrackFeed>>> owing;
  for (auto& [name, feed] : feeds_) {
    if (feed->session() && feed->OwesData()) owing[feed->session()].push_back(feed);
  }
  for (auto it = upstream_watch_.begin(); it != upstream_watch_.end();) {
    it = owing.count(it->first) ? std::next(it) : upstream_watch_.erase(it);
  }
  std::vector<std::pair<moqt::MoqtSession*, uint64_t>> stalled;
  for (auto& [session, feeds] : owing) {
    const moqt::MoqtSession::Stats st = session->stats();
    const std::pair<uint64_t, uint64_t> delivered{st.objects_received, st.reassembly_bytes};
    auto [w, fresh] = upstream_watch_.try_emplace(session, UpstreamWatch{delivered, now});
    if (fresh || w->second.delivered != delivered) {
      w->second = UpstreamWatch{delivered, now};
      continue;
    }
    // The upstream relay's link gets twice the deadline: when a publisher behind it stalls, the
    // upstream relay's own cut-off (PUBLISH_DONE) reaches us first, and the link, which serves
    // other feeds too, stays.
    const uint64_t deadline = options_.upstream_stall_ms * (session == upstream_ ? 2 : 1);
    if (now - w->second.since_ms >= deadline) {
      stalled.emplace_back(session, now - w->second.since_ms);
    }
  }
  for (auto& [session, ms] : stalled) {
    upstream_watch_.erase(session);
    const bool is_upstream_relay = session == upstream_;
    const std::string why =
        std::string(is_upstream_relay ? "the upstream relay" : "the publisher") +
        " stalled: it delivered nothing it owed for " + std::to_string(ms) + " ms";
    for (auto& feed : owing[session]) {
      metrics_.Refuse(Refusal::kUpstreamStalled);
      Log("upstream stalled: " + TrackLabel(feed->track()->name()) + ": " + why);
      feed->Abandon(moqt::RequestErrorCode::kTimeout, why);
    }
    if (is_upstream_relay) {
      // A link that stopped delivering is likely dead: close it (its other feeds end with it)
      // and let its owner reconnect (RelayServer: when the session has closed).
      SetUpstream(nullptr);
      session->Close(moqt::SessionError::kDataStreamTimeout, why);
    }
  }
}

void Relay::FeedEnded(TrackFeed* feed) {
  const moqt::FullTrackName name = feed->track()->name();
  if (feed->track()->failure()) {
    cache_.Remove(name);              // never keep part of a track
    upstream_publishes_.erase(name);  // nor send it upstream
  }
  auto it = feeds_.find(name);
  if (it != feeds_.end() && it->second.get() == feed) feeds_.erase(it);  // caller holds `self`
  if (!feed->track()->failure()) PublicationComplete(name.track_namespace);
  UpdateCacheGauges();
}

bool Relay::MakeRoom(uint64_t bytes) {
  std::vector<moqt::TrackNamespace> evicted;
  bool ok = cache_.MakeRoom(bytes, &evicted);
  Evicted(evicted);
  return ok;
}

void Relay::Evicted(const std::vector<moqt::TrackNamespace>& namespaces) {
  for (const moqt::TrackNamespace& ns : namespaces) {
    if (listed_cached_.erase(ns)) NamespaceUnref(ns);
  }
  if (!namespaces.empty()) UpdateCacheGauges();
}

void Relay::PublicationComplete(const moqt::TrackNamespace& ns) {
  if (cache_.Contains(ns) && listed_cached_.insert(ns).second) NamespaceRef(ns);
}

void Relay::UpdateCacheGauges() {
  metrics_.cached_publications = cache_.publication_count();
  metrics_.cached_bytes = cache_.budget()->used();
  metrics_.evictions = cache_.evictions();
  metrics_.evicted_bytes = cache_.evicted_bytes();
}

// ------------------------------------------------------------------------------ namespaces
std::vector<moqt::TrackNamespace> Relay::ListNamespaces() {
  std::vector<moqt::TrackNamespace> out;
  out.reserve(ns_refs_.size());
  for (const auto& [ns, n] : ns_refs_) out.push_back(ns);
  return out;
}

void Relay::NamespaceRef(const moqt::TrackNamespace& ns) {
  if (ns_refs_[ns]++ > 0) return;
  std::vector<moqt::NamespaceListener*> ls(ns_listeners_.begin(), ns_listeners_.end());
  for (auto* l : ls) {
    if (ns_listeners_.count(l)) l->OnNamespaceAdded(ns);
  }
}

void Relay::NamespaceUnref(const moqt::TrackNamespace& ns) {
  auto it = ns_refs_.find(ns);
  if (it == ns_refs_.end() || --it->second > 0) return;
  ns_refs_.erase(it);
  std::vector<moqt::NamespaceListener*> ls(ns_listeners_.begin(), ns_listeners_.end());
  for (auto* l : ls) {
    if (ns_listeners_.count(l)) l->OnNamespaceRemoved(ns);
  }
}

std::optional<moqt::RequestErrorCode> Relay::Announce(RelayPeer* peer,
                                                      const moqt::TrackNamespace& ns,
                                                      const std::vector<moqt::AuthToken>& tokens) {
  if (announcements_.count(ns)) {
    // Another publisher holds it; the newer one takes over the route.
    Announcement& a = announcements_[ns];
    a.peer = peer;
    return std::nullopt;
  }
  if (announcements_.size() >= options_.max_announcements) {
    metrics_.Refuse(Refusal::kTooMany);
    return moqt::RequestErrorCode::kExcessiveLoad;
  }
  Announcement& a = announcements_[ns];
  a.peer = peer;
  metrics_.announcements = announcements_.size();
  a.incoming_tokens = tokens;
  NamespaceRef(ns);
  ForwardAnnouncement(ns, a);
  return std::nullopt;
}

void Relay::ForwardAnnouncement(const moqt::TrackNamespace& ns, Announcement& a) {
  if (!upstream_ || a.upstream_request) return;
  // The announcement's own relay path goes along, also when re-sent after a reconnect.
  auto rid = upstream_->PublishNamespace(
      ns, [](const std::optional<moqt::RequestError>&) {}, ForwardTokens(a.incoming_tokens, true));
  if (rid.ok()) a.upstream_request = *rid;
}

void Relay::Withdraw(RelayPeer* peer, const moqt::TrackNamespace& ns) {
  auto it = announcements_.find(ns);
  if (it == announcements_.end() || it->second.peer != peer) return;
  if (upstream_ && it->second.upstream_request) {
    (void)upstream_->PublishNamespaceDone(*it->second.upstream_request);
  }
  announcements_.erase(it);
  metrics_.announcements = announcements_.size();
  NamespaceUnref(ns);
}

void Relay::PeerGone(RelayPeer* peer) {
  std::set<moqt::TrackNamespace> mine = peer->announced();
  for (const moqt::TrackNamespace& ns : mine) Withdraw(peer, ns);
  // Feeds on this session end now (the session is going away).
  std::vector<std::shared_ptr<TrackFeed>> orphans;
  for (auto& [name, feed] : feeds_) {
    if (feed->session() == peer->session()) orphans.push_back(feed);
  }
  for (auto& feed : orphans) {
    feed->Detach();  // the session may be gone already (servers destroy it before its callbacks)
    feed->Abandon(moqt::RequestErrorCode::kInternalError, "the publisher's session ended");
  }
  peers_.erase(peer);
}

void Relay::SetUpstream(moqt::MoqtSession* upstream) {
  if (upstream == upstream_) return;
  if (upstream_) {
    // The old upstream is gone: its feeds end, what we learnt from it is forgotten.
    std::vector<std::shared_ptr<TrackFeed>> orphans;
    for (auto& [name, feed] : feeds_) {
      if (feed->session() == upstream_) orphans.push_back(feed);
    }
    upstream_ = nullptr;
    for (auto& feed : orphans) {
      feed->Detach();
      feed->Abandon(moqt::RequestErrorCode::kInternalError, "the upstream relay's session ended");
    }
    std::set<moqt::TrackNamespace> learnt = std::move(upstream_namespaces_);
    upstream_namespaces_.clear();
    for (const moqt::TrackNamespace& ns : learnt) NamespaceUnref(ns);
    for (auto& [ns, a] : announcements_) a.upstream_request.reset();
    upstream_ns_request_.reset();
  }
  upstream_ = upstream;
  if (!upstream_) return;
  ++upstream_link_;
  for (auto& [ns, a] : announcements_) ForwardAnnouncement(ns, a);
  // PUBLISHes the upstream does not hold yet go (again) on this link.
  std::vector<moqt::FullTrackName> pending;
  for (const auto& [name, up] : upstream_publishes_) pending.push_back(name);
  for (const moqt::FullTrackName& name : pending) SendUpstreamPublish(name);
  // Learn the tree's namespaces.
  struct Visitor : moqt::NamespaceVisitor {
    Visitor(Relay* r, std::weak_ptr<int> alive, moqt::TrackNamespace prefix)
        : relay(r), alive(std::move(alive)), prefix(std::move(prefix)) {}
    moqt::TrackNamespace Full(const moqt::TrackNamespace& suffix) const {
      moqt::TrackNamespace ns = prefix;
      ns.insert(ns.end(), suffix.begin(), suffix.end());
      return ns;
    }
    void OnNamespace(const moqt::TrackNamespace& suffix) override {
      if (alive.expired()) return;
      if (relay->upstream_namespaces_.insert(Full(suffix)).second)
        relay->NamespaceRef(Full(suffix));
    }
    void OnNamespaceDone(const moqt::TrackNamespace& suffix) override {
      if (alive.expired()) return;
      if (relay->upstream_namespaces_.erase(Full(suffix))) relay->NamespaceUnref(Full(suffix));
    }
    Relay* relay;
    std::weak_ptr<int> alive;
    moqt::TrackNamespace prefix;
  };
  auto v = std::make_shared<Visitor>(this, alive_, options_.upstream_namespace_prefix);
  auto rid =
      upstream_->SubscribeNamespace(options_.upstream_namespace_prefix, v, ForwardTokens({}, true));
  if (rid.ok()) upstream_ns_request_ = *rid;
}

}  // namespace kvcs::relay
