// The relay's logic over the deterministic in-memory transport: fan-out with one upstream
// subscription, joins before/during/after production, the cache after the publisher left,
// FETCH through a miss, a chain of relays with discovery, loops, eviction, authorization, and a
// publisher that goes away mid-stream. No sleeps: Net::Run delivers every event.
#include "relay/relay.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <set>

#include "auth/token.h"
#include "moqt_session/moqt_track_store.h"
#include "relay/test_tools/test_signer.h"
#include "relay/track_feed.h"
#include "transport/test_tools/in_memory_session.h"
#include "transport/test_tools/recording_session_visitor.h"

namespace kvcs::relay {
namespace {

using moqt::Location;
using moqt::LocationFilter;
using moqt::MoqtSession;
using T = moqt::LocationFilterType;
using transport::test::InMemorySessionPair;

const moqt::TrackNamespace kNs = {"kvcs-1", "scope", "pub1"};
moqt::FullTrackName Name(const std::string& t, const moqt::TrackNamespace& ns = kNs) {
  return {ns, t};
}
std::string Payload(uint64_t g, uint64_t o) {
  return "g" + std::to_string(g) + "o" + std::to_string(o);
}

struct Sub : moqt::SubscribeVisitor {
  void OnSubscribeOk(const moqt::SubscribeOkInfo& i) override { ok = i; }
  void OnObject(const moqt::ReceivedObject& o) override {
    if (o.status != moqt::ObjectStatus::kNormal) return;
    std::string p(o.payload.begin(), o.payload.end());
    EXPECT_EQ(p, Payload(o.location.group, o.location.object));
    EXPECT_TRUE(got.insert(o.location).second)
        << "twice: " << o.location.group << ":" << o.location.object;
  }
  void OnComplete(const moqt::SubscriptionDone& d) override { done = d; }
  std::optional<moqt::SubscribeOkInfo> ok;
  std::set<Location> got;
  std::optional<moqt::SubscriptionDone> done;
};

struct Fet : moqt::FetchVisitor {
  void OnObject(const moqt::ReceivedObject& o) override {
    got.push_back(o.location);
    EXPECT_EQ(std::string(o.payload.begin(), o.payload.end()),
              Payload(o.location.group, o.location.object));
  }
  void OnComplete(const moqt::FetchDone& d) override { done = d; }
  std::vector<Location> got;
  std::optional<moqt::FetchDone> done;
};

struct Ns : moqt::NamespaceVisitor {
  void OnNamespace(const moqt::TrackNamespace& s) override { live.insert(s); }
  void OnNamespaceDone(const moqt::TrackNamespace& s) override { live.erase(s); }
  std::set<moqt::TrackNamespace> live;
};

struct ClientCb : moqt::MoqtSessionCallbacks {
  void OnSessionClosed(uint64_t code, const std::string&, bool) override { closed = code; }
  std::optional<uint64_t> closed;
};

// Every in-memory connection of a test; Run() until none of them moves.
struct Net {
  void Run() {
    for (;;) {
      size_t n = 0;
      for (auto& p : pairs) n += p->RunUntilIdle();
      if (n == 0) return;
    }
  }
  // Like Run, but one round of every connection at a time, so that a relay sends on one
  // connection while it still receives on another.
  void RunInterleaved() {
    for (;;) {
      size_t n = 0;
      for (auto& p : pairs) n += p->RunOneRound();
      if (n == 0) return;
    }
  }
  // Takes connection `p` out of the runs (it moves nothing until put back in `pairs`); null if
  // it is not here.
  std::unique_ptr<InMemorySessionPair> Unplug(const InMemorySessionPair* p) {
    for (auto it = pairs.begin(); it != pairs.end(); ++it) {
      if (it->get() == p) {
        std::unique_ptr<InMemorySessionPair> out = std::move(*it);
        pairs.erase(it);
        return out;
      }
    }
    return nullptr;
  }
  std::vector<std::unique_ptr<InMemorySessionPair>> pairs;
};

// A relay and the server sessions of its connections.
struct Node {
  explicit Node(RelayOptions o) : relay(std::move(o)) {}
  // Destroys the server end of connection `i` (the relay's RelayPeer goes with it).
  Relay relay;
  struct Conn {
    std::unique_ptr<MoqtSession> session;
    std::unique_ptr<moqt::MoqtSessionCallbacks> cb;
  };
  std::vector<Conn> conns;
  ~Node() {
    for (auto& c : conns) c.session.reset();  // sessions first, then their callbacks
  }
};

// A client connection into `node`: returns the client session. `source` may be null.
struct Client {
  std::unique_ptr<ClientCb> cb = std::make_unique<ClientCb>();
  std::unique_ptr<MoqtSession> session;
  InMemorySessionPair* pair = nullptr;
};

// The relay's end of a new in-memory connection (its server session).
InMemorySessionPair& ServeNewConnection(Net& net, Node& node,
                                        transport::test::InMemoryOptions client_opts = {},
                                        moqt::MoqtSessionConfig sc = {},
                                        transport::test::InMemoryOptions server_opts = {}) {
  net.pairs.push_back(std::make_unique<InMemorySessionPair>(client_opts, server_opts));
  InMemorySessionPair& p = *net.pairs.back();
  sc.perspective = moqt::Perspective::kServer;
  Node::Conn conn;
  // The server session needs its callbacks at construction; the callbacks want the session:
  // create the session with a forwarding shim.
  struct Shim : moqt::MoqtSessionCallbacks {
    moqt::MoqtSessionCallbacks* to = nullptr;
    std::unique_ptr<moqt::MoqtSessionCallbacks> owned;
    std::optional<moqt::SessionError> OnPeerSetup(const moqt::SetupOptions& p) override {
      return to->OnPeerSetup(p);
    }
    void OnSessionClosed(uint64_t c, const std::string& r, bool b) override {
      to->OnSessionClosed(c, r, b);
    }
    std::optional<moqt::RequestErrorCode> OnPublishNamespace(
        const moqt::TrackNamespace& ns) override {
      return to->OnPublishNamespace(ns);
    }
    void OnPublishNamespaceDone(const moqt::TrackNamespace& ns) override {
      to->OnPublishNamespaceDone(ns);
    }
    std::optional<moqt::RequestErrorCode> AuthorizeRequest(
        moqt::MessageType t, const moqt::FullTrackName& n,
        const std::vector<moqt::AuthToken>& k) override {
      return to->AuthorizeRequest(t, n, k);
    }
    void OnSubscriberCutOff(moqt::MessageType t, const moqt::FullTrackName& n, uint64_t id,
                            uint64_t ms) override {
      to->OnSubscriberCutOff(t, n, id, ms);
    }
    moqt::PublishAnswer OnPublish(const moqt::IncomingPublish& p) override {
      return to->OnPublish(p);
    }
  };
  auto shim = std::make_unique<Shim>();
  conn.session = std::make_unique<MoqtSession>(&p.server(), sc, shim.get(), &node.relay);
  shim->owned = node.relay.AcceptSession(conn.session.get());
  shim->to = shim->owned.get();
  conn.cb = std::move(shim);
  node.conns.push_back(std::move(conn));
  return p;
}

Client Connect(Net& net, Node& node, moqt::TrackSource* source,
               std::vector<moqt::AuthToken> tokens = {}, moqt::MoqtSessionCallbacks* cb = nullptr,
               transport::test::InMemoryOptions client_opts = {},
               moqt::MoqtSessionConfig server_config = {},
               transport::test::InMemoryOptions server_opts = {}) {
  InMemorySessionPair& p = ServeNewConnection(net, node, client_opts, server_config, server_opts);
  Client c;
  c.pair = &p;
  moqt::MoqtSessionConfig cc;
  cc.perspective = moqt::Perspective::kClient;
  cc.setup_auth_tokens = std::move(tokens);
  cc.clock_ms = server_config.clock_ms;  // a test's fake clock runs both ends
  c.session = std::make_unique<MoqtSession>(&p.client(), cc, cb ? cb : c.cb.get(), source);
  p.Connect();
  net.Run();
  return c;
}

// Links `leaf` to its upstream relay `up`: a client session of `up` whose source is the leaf's
// relay (what RelayServer's upstream link is).
Client LinkUp(Net& net, Node& leaf, Node& up) {
  Client c = Connect(net, up, &leaf.relay);
  leaf.relay.SetUpstream(c.session.get());
  return c;
}

// A publisher: a TrackStore announced to a relay.
struct Publisher {
  moqt::TrackStore store;
  Client client;
  std::shared_ptr<moqt::Track> track;
  void Start(Net& net, Node& node, const moqt::TrackNamespace& ns = kNs,
             std::vector<moqt::AuthToken> tokens = {},
             transport::test::InMemoryOptions client_opts = {}) {
    client = Connect(net, node, &store, std::move(tokens), nullptr, client_opts);
    auto t = store.CreateTrack(Name("k.raw.s0", ns));
    ASSERT_TRUE(t.ok());
    track = *t;
    ASSERT_TRUE(client.session->PublishNamespace(ns, [this](const auto& e) { refused = e; }).ok());
    net.Run();
  }
  void Produce(Net& net, uint64_t g0, uint64_t g1, uint64_t objects) {
    for (uint64_t g = g0; g < g1; ++g) {
      ASSERT_TRUE(track->StartGroup(g).ok());
      for (uint64_t o = 0; o < objects; ++o) {
        std::string p = Payload(g, o);
        ASSERT_TRUE(
            track->AppendObject(ByteSpan(reinterpret_cast<const uint8_t*>(p.data()), p.size()))
                .ok());
        net.Run();
      }
      ASSERT_TRUE(track->EndGroup().ok());
    }
    net.Run();
  }
  std::optional<moqt::RequestError> refused;
};

moqt::SubscribeOptions JoinFromStart() {
  moqt::SubscribeOptions so;
  so.fill = LocationFilter{T::kAbsoluteStart, 0, 0};
  return so;
}

// A new client of `node` subscribed to `name` from {0,0} (Next Object + fill), run until idle.
struct Subscription {
  Client client;
  std::shared_ptr<Sub> sub;
};
Subscription SubscribeFromStart(Net& net, Node& node, const moqt::FullTrackName& name) {
  Subscription s{Connect(net, node, nullptr), std::make_shared<Sub>()};
  EXPECT_TRUE(s.client.session->Subscribe(name, JoinFromStart(), s.sub).ok());
  net.Run();
  return s;
}

std::set<Location> All(uint64_t groups, uint64_t objects) {
  std::set<Location> s;
  for (uint64_t g = 0; g < groups; ++g) {
    for (uint64_t o = 0; o < objects; ++o) s.insert({g, o});
  }
  return s;
}

RelayOptions Opts(std::string id, uint64_t cache = 64 << 20) {
  RelayOptions o;
  o.relay_id = std::move(id);
  o.cache_bytes = cache;
  return o;
}

TEST(RelayTest, FanOutWithOneUpstreamSubscriptionJoiningBeforeDuringAndAfter) {
  Net net;
  Node node(Opts("r1"));
  Publisher pub;
  pub.Start(net, node);
  ASSERT_FALSE(pub.refused.has_value());
  std::vector<Client> subs_c;
  std::vector<std::shared_ptr<Sub>> subs;
  auto join = [&] {
    subs_c.push_back(Connect(net, node, nullptr));
    subs.push_back(std::make_shared<Sub>());
    ASSERT_TRUE(
        subs_c.back().session->Subscribe(Name("k.raw.s0"), JoinFromStart(), subs.back()).ok());
    net.Run();
  };
  join();  // before production
  join();
  pub.Produce(net, 0, 2, 4);
  join();  // during
  pub.Produce(net, 2, 4, 4);
  ASSERT_TRUE(pub.track->EndTrack().ok());
  net.Run();
  join();  // after the end
  for (auto& s : subs) {
    EXPECT_EQ(s->got, All(4, 4));
    ASSERT_TRUE(s->done.has_value());
    EXPECT_TRUE(s->done->track_ended);
  }
  EXPECT_EQ(node.relay.metrics().upstream_requests.load(), 1u);
  EXPECT_EQ(pub.client.session->stats().incoming_requests, 1u);  // one upstream subscription
}

TEST(RelayTest, ALateSubscriberIsServedFromTheCacheAfterThePublisherLeft) {
  Net net;
  Node node(Opts("r1"));
  auto pub = std::make_unique<Publisher>();
  pub->Start(net, node);
  Client s1 = Connect(net, node, nullptr);
  auto sub1 = std::make_shared<Sub>();
  ASSERT_TRUE(s1.session->Subscribe(Name("k.raw.s0"), JoinFromStart(), sub1).ok());
  net.Run();
  pub->Produce(net, 0, 3, 3);
  ASSERT_TRUE(pub->track->EndTrack().ok());
  net.Run();
  ASSERT_TRUE(sub1->done && sub1->done->track_ended);
  pub->client.session->Close(moqt::SessionError::kNoError, "bye");
  net.Run();
  // Discovery still finds it (complete in the cache), and it is served whole.
  Client s2 = Connect(net, node, nullptr);
  auto ns = std::make_shared<Ns>();
  ASSERT_TRUE(s2.session->SubscribeNamespace({"kvcs-1", "scope"}, ns).ok());
  auto sub2 = std::make_shared<Sub>();
  ASSERT_TRUE(s2.session->Subscribe(Name("k.raw.s0"), JoinFromStart(), sub2).ok());
  auto fet = std::make_shared<Fet>();
  moqt::FetchOptions fo;
  fo.range = LocationFilter{T::kAbsoluteStartGroupEnd, 1, 0, 1};  // groups 1..2
  ASSERT_TRUE(s2.session->Fetch(Name("k.raw.s0"), fo, fet).ok());
  net.Run();
  EXPECT_EQ(ns->live.count({"pub1"}), 1u);
  EXPECT_EQ(sub2->got, All(3, 3));
  ASSERT_TRUE(sub2->done && sub2->done->track_ended);
  ASSERT_TRUE(fet->done && fet->done->ok);
  EXPECT_EQ(fet->got, (std::vector<Location>{{1, 0}, {1, 1}, {1, 2}, {2, 0}, {2, 1}, {2, 2}}));
}

TEST(RelayTest, FetchOfATrackNotCachedGoesUpstreamOnceAndWaitsForItsRange) {
  Net net;
  Node node(Opts("r1"));
  Publisher pub;
  pub.Start(net, node);
  pub.Produce(net, 0, 3, 2);
  Client s = Connect(net, node, nullptr);
  std::vector<std::shared_ptr<Fet>> fets;
  for (int i = 0; i < 3; ++i) {
    fets.push_back(std::make_shared<Fet>());
    moqt::FetchOptions fo;
    fo.range = LocationFilter{T::kAbsoluteRange, 0, 1, 1, 1};  // {0,1}..{1,1}
    ASSERT_TRUE(s.session->Fetch(Name("k.raw.s0"), fo, fets.back()).ok());
  }
  net.Run();
  for (auto& f : fets) {
    ASSERT_TRUE(f->done && f->done->ok);
    EXPECT_EQ(f->got, (std::vector<Location>{{0, 1}, {1, 0}, {1, 1}}));
  }
  EXPECT_EQ(node.relay.metrics().upstream_requests.load(), 1u);  // merged
  EXPECT_EQ(pub.client.session->stats().incoming_requests, 1u);
}

// A FETCH of a finished track the relay does not hold (a consumer of a completed cache, §5.3 of
// the KVCS draft) is not held back until the whole range came from the upstream: the first
// groups reach the consumer while the relay still receives the later ones, so layer a can be
// computed while a+1.. arrive. The track is larger than a stream window, so the upstream's
// fill takes many rounds: the publisher's link moves 16 KiB per round.
TEST(RelayTest, AFetchThroughAMissStreamsGroupsAsTheUpstreamDeliversThem) {
  constexpr uint64_t kGroups = 8, kObjects = 4, kSize = 8 << 10;
  Net net;
  Node node(Opts("r1"));
  Publisher pub;
  transport::test::InMemoryOptions slow_link;
  slow_link.send_capacity_per_pump = 16 << 10;
  pub.Start(net, node, kNs, {}, slow_link);
  auto body = [&](uint64_t g, uint64_t o) { return Bytes(kSize, uint8_t(g * kObjects + o)); };
  for (uint64_t g = 0; g < kGroups; ++g) {
    ASSERT_TRUE(pub.track->StartGroup(g).ok());
    for (uint64_t o = 0; o < kObjects; ++o) {
      ASSERT_TRUE(pub.track->AppendObject(body(g, o)).ok());
    }
    ASSERT_TRUE(pub.track->EndGroup().ok());
  }
  ASSERT_TRUE(pub.track->EndTrack().ok());
  net.Run();
  struct Fetcher : moqt::FetchVisitor {
    void OnObject(const moqt::ReceivedObject& o) override {
      if (got.empty()) {
        auto t = relay->FindTrack(Name("k.raw.s0"));
        relay_had_everything_at_first = t && t->KnownThrough({kGroups - 1, kObjects - 1});
      }
      got.push_back(o.location);
      const Bytes want = expect(o.location);
      EXPECT_TRUE(std::equal(o.payload.begin(), o.payload.end(), want.begin(), want.end()));
    }
    void OnComplete(const moqt::FetchDone& d) override { done = d; }
    Relay* relay = nullptr;
    std::function<Bytes(Location)> expect;
    std::vector<Location> got;
    std::optional<bool> relay_had_everything_at_first;
    std::optional<moqt::FetchDone> done;
  };
  auto f = std::make_shared<Fetcher>();
  f->relay = &node.relay;
  f->expect = [&](Location l) { return body(l.group, l.object); };
  Client s = Connect(net, node, nullptr);
  moqt::FetchOptions fo;
  fo.range = LocationFilter{T::kAbsoluteStartGroupEnd, 0, 0, kGroups - 1};
  ASSERT_TRUE(s.session->Fetch(Name("k.raw.s0"), fo, f).ok());
  net.RunInterleaved();
  ASSERT_TRUE(f->done && f->done->ok);
  std::vector<Location> all;
  for (uint64_t g = 0; g < kGroups; ++g) {
    for (uint64_t o = 0; o < kObjects; ++o) all.push_back({g, o});
  }
  EXPECT_EQ(f->got, all);  // every object once, in order, nothing skipped as "missing"
  ASSERT_TRUE(f->relay_had_everything_at_first.has_value());
  EXPECT_FALSE(*f->relay_had_everything_at_first)
      << "the FETCH was held until its whole range had come from the upstream";
  EXPECT_EQ(node.relay.metrics().upstream_requests.load(), 1u);
}

// A finished publication's manifest reaches a consumer ahead of its data. The consumer of a
// closed KVCS publication subscribes the manifest with Relative Start 1, whose fill is the
// manifest track's End of Track alone (KVCS draft §5.2); the relay learned of that end from the
// upstream's PUBLISH_DONE and writes the End of Track itself. It must carry the track's
// publisher priority (the manifest's 0, from DEFAULT_PUBLISHER_PRIORITY), not the protocol
// default 128: with 128 the relay sent it after every data group (priorities up to 124), so the
// consumer learned the publication was closed, and fetched its manifest, only after all the
// data, and could verify no layer until then.
TEST(RelayTest, AClosedTracksEndOfTrackKeepsThePublishersPriority) {
  constexpr uint64_t kGroups = 8, kObjects = 4, kSize = 8 << 10;
  Net net;
  Node node(Opts("r1"));
  Publisher pub;
  pub.Start(net, node);
  moqt::TrackOptions mo;
  mo.publisher_priority = 0;
  auto manifest = pub.store.CreateTrack(Name("manifest"), mo);
  ASSERT_TRUE(manifest.ok());
  ASSERT_TRUE((*manifest)->StartGroup(0).ok());
  ASSERT_TRUE((*manifest)->AppendObject(Bytes(100, 7)).ok());
  ASSERT_TRUE((*manifest)->EndGroup().ok());
  ASSERT_TRUE((*manifest)->EndTrack().ok());
  for (uint64_t g = 0; g < kGroups; ++g) {
    ASSERT_TRUE(pub.track->StartGroup(g).ok());
    for (uint64_t o = 0; o < kObjects; ++o) {
      moqt::PublishedObject po;
      po.location = {g, o};
      po.publisher_priority = static_cast<uint8_t>(64 + g);  // below the default, above 0
      po.payload = std::make_shared<const Bytes>(kSize, uint8_t(g));
      ASSERT_TRUE(pub.track->AddObject(std::move(po)).ok());
    }
    ASSERT_TRUE(pub.track->EndGroup().ok());
  }
  ASSERT_TRUE(pub.track->EndTrack().ok());
  net.Run();
  // A first consumer brings both finished tracks into the relay's cache.
  struct Drain : moqt::FetchVisitor {
    void OnObject(const moqt::ReceivedObject&) override {}
    void OnComplete(const moqt::FetchDone& d) override { done = d; }
    std::optional<moqt::FetchDone> done;
  };
  {
    Client warm = Connect(net, node, nullptr);
    auto k = std::make_shared<Drain>();
    auto m = std::make_shared<Drain>();
    moqt::FetchOptions fo;
    fo.range = LocationFilter{T::kAbsoluteStartGroupEnd, 0, 0, kGroups - 1};
    ASSERT_TRUE(warm.session->Fetch(Name("k.raw.s0"), fo, k).ok());
    fo.range = LocationFilter{T::kAbsoluteStartGroupEnd, 0, 0, 0};
    ASSERT_TRUE(warm.session->Fetch(Name("manifest"), fo, m).ok());
    net.Run();
    ASSERT_TRUE(k->done && k->done->ok && m->done && m->done->ok);
  }
  struct Watch : moqt::SubscribeVisitor {
    void OnObject(const moqt::ReceivedObject& o) override {
      if (o.status == moqt::ObjectStatus::kNormal) ++(*objects);
    }
    void OnComplete(const moqt::SubscriptionDone& d) override {
      done = d;
      objects_at_done = *objects;
    }
    std::shared_ptr<uint64_t> objects;
    std::optional<moqt::SubscriptionDone> done;
    uint64_t objects_at_done = 0;
  };
  auto data_objects = std::make_shared<uint64_t>(0);
  auto data = std::make_shared<Watch>();
  data->objects = data_objects;
  auto man = std::make_shared<Watch>();
  man->objects = data_objects;  // counts the data objects that arrived before its end
  transport::test::InMemoryOptions slow_link;  // relay -> consumer: 16 KiB per round
  slow_link.send_capacity_per_pump = 16 << 10;
  Client c = Connect(net, node, nullptr, {}, nullptr, {}, {}, slow_link);
  ASSERT_TRUE(c.session->Subscribe(Name("k.raw.s0"), JoinFromStart(), data).ok());
  moqt::SubscribeOptions ms;
  ms.fill = LocationFilter{T::kRelativeStart, 1};
  ASSERT_TRUE(c.session->Subscribe(Name("manifest"), ms, man).ok());
  net.RunInterleaved();
  ASSERT_TRUE(data->done && data->done->track_ended);
  EXPECT_EQ(*data_objects, kGroups * kObjects);
  ASSERT_TRUE(man->done && man->done->track_ended);
  EXPECT_LE(man->objects_at_done, kObjects) << "the manifest's End of Track waited behind the data";
}

TEST(RelayTest, TheUpstreamsErrorIsPassedOn) {
  Net net;
  Node node(Opts("r1"));
  Publisher pub;
  pub.Start(net, node);
  Client s = Connect(net, node, nullptr);
  auto sub = std::make_shared<Sub>();
  ASSERT_TRUE(s.session->Subscribe(Name("no-such-track"), {}, sub).ok());
  auto other = std::make_shared<Sub>();
  ASSERT_TRUE(s.session->Subscribe(Name("x", {"kvcs-1", "nobody"}), {}, other).ok());
  net.Run();
  ASSERT_TRUE(sub->done && sub->done->error);
  EXPECT_EQ(sub->done->error->error_code,
            static_cast<uint64_t>(moqt::RequestErrorCode::kDoesNotExist));
  ASSERT_TRUE(other->done && other->done->error);         // no route
  EXPECT_EQ(node.relay.cache().publication_count(), 0u);  // nothing half-made stays
}

TEST(RelayTest, APublisherGoingAwayMidStreamEndsSubscriptionsPromptly) {
  Net net;
  Node node(Opts("r1"));
  Publisher pub;
  pub.Start(net, node);
  Client s = Connect(net, node, nullptr);
  auto sub = std::make_shared<Sub>();
  ASSERT_TRUE(s.session->Subscribe(Name("k.raw.s0"), JoinFromStart(), sub).ok());
  net.Run();
  pub.Produce(net, 0, 2, 2);
  pub.client.session->Close(moqt::SessionError::kNoError, "crash");
  net.Run();
  ASSERT_TRUE(sub->done.has_value());
  EXPECT_FALSE(sub->done->track_ended);
  EXPECT_EQ(node.relay.cache().publication_count(), 0u);  // a partial track is not kept
  EXPECT_EQ(node.relay.feeds_in_flight(), 0u);
  // The partial track's charge went only once the subscriber's session let go of it, which
  // the relay is not told: the next tick refreshes the gauges.
  ASSERT_EQ(node.relay.cache().budget()->used(), 0u);
  node.relay.OnTimer();
  EXPECT_EQ(node.relay.metrics().cached_bytes.load(), 0u);
  EXPECT_EQ(node.relay.metrics().cached_publications.load(), 0u);
}

// leaf A (publisher) -> root <- leaf B (subscriber): discovery and subscription through the root.
TEST(RelayTest, AChainOfThreeRelays) {
  Net net;
  Node root(Opts("root")), a(Opts("a")), b(Opts("b"));
  Client a_up = Connect(net, root, &a.relay);
  Client b_up = Connect(net, root, &b.relay);
  a.relay.SetUpstream(a_up.session.get());
  b.relay.SetUpstream(b_up.session.get());
  net.Run();
  Publisher pub;
  pub.Start(net, a);
  Client s = Connect(net, b, nullptr);
  auto ns = std::make_shared<Ns>();
  ASSERT_TRUE(s.session->SubscribeNamespace({"kvcs-1", "scope"}, ns).ok());
  net.Run();
  EXPECT_EQ(ns->live.count({"pub1"}), 1u);  // announced at A, seen at B through the root
  auto sub = std::make_shared<Sub>();
  ASSERT_TRUE(s.session->Subscribe(Name("k.raw.s0"), JoinFromStart(), sub).ok());
  net.Run();
  pub.Produce(net, 0, 3, 3);
  ASSERT_TRUE(pub.track->EndTrack().ok());
  net.Run();
  EXPECT_EQ(sub->got, All(3, 3));
  ASSERT_TRUE(sub->done && sub->done->track_ended);
  EXPECT_EQ(root.relay.metrics().upstream_requests.load(), 1u);
  pub.client.session->PublishNamespaceDone(0);
  net.Run();
}

TEST(RelayTest, ALoopIsRefusedNotWaitedOn) {
  Net net;
  Node a(Opts("a")), b(Opts("b"));
  Client a_up = Connect(net, b, &a.relay);  // a's upstream is b
  Client b_up = Connect(net, a, &b.relay);  // b's upstream is a: a loop
  a.relay.SetUpstream(a_up.session.get());
  b.relay.SetUpstream(b_up.session.get());
  net.Run();
  Client s = Connect(net, a, nullptr);
  auto sub = std::make_shared<Sub>();
  ASSERT_TRUE(s.session->Subscribe(Name("k.raw.s0"), {}, sub).ok());
  net.Run();
  ASSERT_TRUE(sub->done && sub->done->error);
  EXPECT_GE(a.relay.metrics().refusals[static_cast<int>(Refusal::kLoop)].load() +
                b.relay.metrics().refusals[static_cast<int>(Refusal::kLoop)].load(),
            1u);
  EXPECT_EQ(a.relay.feeds_in_flight() + b.relay.feeds_in_flight(), 0u);
}

TEST(RelayTest, EvictionUnderASmallBudgetIsWholeLruAndNeverInUse) {
  Net net;
  // Room for about two publications of 3x3 small objects.
  const uint64_t per_pub = 9 * (4 + moqt::kTrackObjectOverheadBytes) +
                           4 * (moqt::kTrackObjectOverheadBytes + moqt::kTrackGroupOverheadBytes);
  Node node(Opts("r1", 2 * per_pub + per_pub / 2));
  std::vector<std::unique_ptr<Publisher>> pubs;
  Client s = Connect(net, node, nullptr);
  auto publish = [&](const std::string& id, bool end) {
    pubs.push_back(std::make_unique<Publisher>());
    moqt::TrackNamespace ns = {"kvcs-1", "scope", id};
    pubs.back()->Start(net, node, ns);
    auto sub = std::make_shared<Sub>();
    EXPECT_TRUE(s.session->Subscribe(Name("k.raw.s0", ns), JoinFromStart(), sub).ok());
    net.Run();
    pubs.back()->Produce(net, 0, 3, 3);
    if (end) {
      EXPECT_TRUE(pubs.back()->track->EndTrack().ok());
    }
    net.Run();
    return sub;
  };
  auto s1 = publish("p1", true);  // complete, then idle
  ASSERT_TRUE(s1->done && s1->done->track_ended);
  auto s2 = publish("p2", false);  // live: in use while its subscription lasts
  EXPECT_EQ(node.relay.cache().publication_count(), 2u);
  auto s3 = publish("p3", false);  // p1 (idle, least recently used) goes to make room
  EXPECT_EQ(s3->got, All(3, 3));
  EXPECT_EQ(node.relay.metrics().evictions.load(), 1u);
  EXPECT_LE(node.relay.cache().budget()->used(), node.relay.cache().budget()->limit());
  // p2 and p3 are in use: a fourth cannot fit and is refused, never truncated silently.
  auto s4 = publish("p4", true);
  ASSERT_TRUE(s4->done.has_value());
  EXPECT_FALSE(s4->done->track_ended);
  EXPECT_GE(node.relay.metrics().refusals[static_cast<int>(Refusal::kCacheFull)].load(), 1u);
  EXPECT_EQ(node.relay.metrics().evictions.load(), 1u);
  EXPECT_EQ(s2->got, All(3, 3));
  EXPECT_FALSE(s2->done.has_value());  // untouched
  EXPECT_LE(node.relay.cache().budget()->used(), node.relay.cache().budget()->limit());
}

TEST(RelayTest, MalformedInputClosesOnlyThatSession) {
  Net net;
  Node node(Opts("r1"));
  Publisher pub;
  pub.Start(net, node);
  Client good = Connect(net, node, nullptr);
  auto sub = std::make_shared<Sub>();
  ASSERT_TRUE(good.session->Subscribe(Name("k.raw.s0"), JoinFromStart(), sub).ok());
  net.Run();
  pub.Produce(net, 0, 1, 3);
  // A peer whose control stream carries garbage.
  InMemorySessionPair& bad = ServeNewConnection(net, node);
  transport::test::RecordingSessionVisitor rec(&bad.client());
  bad.client().SetVisitor(&rec);
  bad.Connect();
  net.Run();
  transport::Stream* st = bad.client().OpenOutgoingUnidirectionalStream();
  ASSERT_NE(st, nullptr);
  const uint8_t garbage[] = {0x3f, 0xff, 0xff, 0xff, 0x01, 0x02, 0x03, 0x04};
  ASSERT_TRUE(st->Write(ByteSpan(garbage, sizeof(garbage)), false).ok());
  net.Run();
  ASSERT_TRUE(rec.closed.has_value());  // that session is closed ...
  pub.Produce(net, 1, 3, 3);            // ... and everyone else is served as before
  ASSERT_TRUE(pub.track->EndTrack().ok());
  net.Run();
  EXPECT_EQ(sub->got, All(3, 3));
  ASSERT_TRUE(sub->done && sub->done->track_ended);
}

// A FETCH whose range ends in the group being produced returns the objects up to the Largest
// Object at the time of the FETCH (draft-22 §11) without waiting for the next group to start:
// whether the relay's feed started before production, within the open group, or by the FETCH.
TEST(RelayTest, AFetchEndingInTheGroupBeingProducedDoesNotWaitForTheNextGroup) {
  for (int when = 0; when < 6; ++when) {
    SCOPED_TRACE(when);
    Net net;
    Node root(Opts("root")), node(Opts("r1"));
    Client up;
    Publisher pub;
    if (when >= 3) {  // through a chain: publisher at the root
      up = Connect(net, root, &node.relay);
      node.relay.SetUpstream(up.session.get());
      net.Run();
      pub.Start(net, root);
    } else {
      pub.Start(net, node);
    }
    Client s = Connect(net, node, nullptr);
    auto sub = std::make_shared<Sub>();
    if (when % 3 == 0) {  // the feed starts before production
      ASSERT_TRUE(s.session->Subscribe(Name("k.raw.s0"), JoinFromStart(), sub).ok());
      net.Run();
    }
    pub.Produce(net, 0, 1, 3);
    ASSERT_TRUE(pub.track->StartGroup(1).ok());
    auto append = [&](uint64_t o) {
      std::string p = Payload(1, o);
      ASSERT_TRUE(
          pub.track->AppendObject(ByteSpan(reinterpret_cast<const uint8_t*>(p.data()), p.size()))
              .ok());
      net.Run();
    };
    append(0);
    if (when % 3 == 1) {  // the feed starts within the open group, which goes on live
      ASSERT_TRUE(s.session->Subscribe(Name("k.raw.s0"), JoinFromStart(), sub).ok());
      net.Run();
    }
    append(1);
    // when == 2: the FETCH itself starts the feed.
    auto fet = std::make_shared<Fet>();
    moqt::FetchOptions fo;
    fo.range = LocationFilter{T::kAbsoluteStartGroupEnd, 0, 0, 1};  // groups 0..1
    ASSERT_TRUE(s.session->Fetch(Name("k.raw.s0"), fo, fet).ok());
    net.Run();
    ASSERT_TRUE(fet->done.has_value()) << "the FETCH waits for group 2";
    EXPECT_TRUE(fet->done->ok);
    EXPECT_EQ(fet->got, (std::vector<Location>{{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}}));
    ASSERT_TRUE(fet->done->end_location.has_value());
    EXPECT_EQ(*fet->done->end_location, (Location{1, 1}));
    append(2);  // production goes on; the subscription still gets everything
    ASSERT_TRUE(pub.track->EndTrack().ok());
    net.Run();
    if (when % 3 < 2) {
      EXPECT_EQ(sub->got.size(), 6u);
    }
  }
}

// Streams of a connection held back on the writer's side while `holding` was set when they first
// had bytes to move (InMemoryOptions::hold), released by Release(): a later group's stream
// reaches the relay before an earlier one's.
struct HeldStreams {
  transport::test::InMemoryOptions Options() {
    transport::test::InMemoryOptions o;
    o.hold = [this](transport::StreamId id) {
      if (seen.insert(id).second && holding) held.insert(id);
      return held.count(id) > 0;
    };
    return o;
  }
  void Release(Net& net) {
    holding = false;
    held.clear();
    net.Run();
  }
  bool holding = false;
  std::set<transport::StreamId> seen, held;
};

// A relay, a publisher whose streams can be held back (HeldStreams), and a subscriber's client.
struct HeldPublisherRelay {
  HeldPublisherRelay() {
    pub.Start(net, node, kNs, {}, hold.Options());
    s = Connect(net, node, nullptr);
  }
  // Produces group `g` with its stream held back at the publisher.
  void ProduceHeld(uint64_t g) {
    hold.holding = true;
    pub.Produce(net, g, g + 1, 3);
    hold.holding = false;
  }
  Net net;
  Node node{Opts("r1")};
  HeldStreams hold;
  Publisher pub;
  Client s;
};

// Live groups whose streams arrive out of order (group `late`'s after the next one's) never make
// the relay claim a range complete that is not: whether the feed started before production (no
// upstream Largest Object: the lowest group received is not where the track starts) or after
// some groups (a Largest Object, then a gap). A FETCH across the gap waits for it and then
// returns every object, in order.
TEST(RelayTest, LiveGroupsArrivingOutOfOrderAreNotClaimedComplete) {
  for (const bool before_production : {true, false}) {
    SCOPED_TRACE(before_production);
    HeldPublisherRelay h;
    Net& net = h.net;
    Node& node = h.node;
    HeldStreams& hold = h.hold;
    Publisher& pub = h.pub;
    Client& s = h.s;
    auto sub = std::make_shared<Sub>();
    uint64_t late = 0;
    if (!before_production) {
      pub.Produce(net, 0, 2, 3);
      late = 2;
    }
    ASSERT_TRUE(s.session->Subscribe(Name("k.raw.s0"), JoinFromStart(), sub).ok());
    net.Run();
    h.ProduceHeld(late);                      // its stream stays with the publisher ...
    pub.Produce(net, late + 1, late + 2, 3);  // ... and the next group's arrives
    std::shared_ptr<moqt::Track> t = node.relay.FindTrack(Name("k.raw.s0"));
    ASSERT_NE(t, nullptr);
    EXPECT_FALSE(t->KnownThrough({late, 0})) << "group " << late << " has not arrived";
    auto fet = std::make_shared<Fet>();
    moqt::FetchOptions fo;
    fo.range = LocationFilter{T::kAbsoluteStartGroupEnd, 0, 0, late + 1};
    ASSERT_TRUE(s.session->Fetch(Name("k.raw.s0"), fo, fet).ok());
    net.Run();
    EXPECT_FALSE(fet->done.has_value()) << "the FETCH claimed a range with a missing group";
    hold.Release(net);
    EXPECT_TRUE(t->KnownThrough({late + 1, 2}));
    ASSERT_TRUE(fet->done && fet->done->ok);
    std::vector<Location> want;
    for (uint64_t g = 0; g <= late + 1; ++g) {
      for (uint64_t o = 0; o < 3; ++o) want.push_back({g, o});
    }
    EXPECT_EQ(fet->got, want);
    ASSERT_TRUE(pub.track->EndTrack().ok());
    net.Run();
    EXPECT_EQ(sub->got, All(late + 2, 3));
    ASSERT_TRUE(sub->done && sub->done->track_ended);
  }
}

// A FETCH of whole groups, the last of which the relay's copy is still filling (its stream held
// back): FETCH_OK's End Location names that group's last object, so it waits until the group is
// known, while the objects before it flow; it never claims an end before the group's real one.
TEST(RelayTest, AFetchEndingInAGroupStillFillingIsAnsweredWithItsRealEnd) {
  HeldPublisherRelay h;
  Net& net = h.net;
  Client& s = h.s;
  auto sub = std::make_shared<Sub>();
  ASSERT_TRUE(s.session->Subscribe(Name("k.raw.s0"), JoinFromStart(), sub).ok());
  net.Run();
  h.pub.Produce(net, 0, 1, 3);
  h.ProduceHeld(1);  // group 1's stream stays with the publisher
  h.pub.Produce(net, 2, 3, 3);
  auto fet = std::make_shared<Fet>();
  moqt::FetchOptions fo;
  fo.range = LocationFilter{T::kAbsoluteStartGroupEnd, 0, 0, 1};  // groups 0..1
  ASSERT_TRUE(s.session->Fetch(Name("k.raw.s0"), fo, fet).ok());
  net.Run();
  EXPECT_FALSE(fet->done.has_value());
  EXPECT_EQ(fet->got, (std::vector<Location>{{0, 0}, {0, 1}, {0, 2}}));  // flowing already
  h.hold.Release(net);
  ASSERT_TRUE(fet->done && fet->done->ok);
  EXPECT_EQ(fet->done->end_location, (Location{1, 2}));
  EXPECT_EQ(fet->got, (std::vector<Location>{{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}}));
}

// The upstream's PUBLISH_DONE (counting the fill stream) arrives before the fill itself (held
// back at the publisher): the feed waits for the fill and then completes the track, whole.
TEST(RelayTest, AFillArrivingAfterTheUpstreamsPublishDoneStillCompletesTheTrack) {
  Net net;
  Node node(Opts("r1"));
  bool holding = false;
  std::set<transport::StreamId> seen, held;
  transport::test::InMemoryOptions o;
  o.hold = [&](transport::StreamId id) {
    // Only the publisher's data streams (unidirectional); its request streams go on.
    if (seen.insert(id).second && holding && (id & 2) != 0) held.insert(id);
    return held.count(id) > 0;
  };
  Publisher pub;
  pub.Start(net, node, kNs, {}, o);
  pub.Produce(net, 0, 2, 3);
  ASSERT_TRUE(pub.track->EndTrack().ok());
  net.Run();
  holding = true;  // the fill stream the relay's subscription gets
  Subscription s = SubscribeFromStart(net, node, Name("k.raw.s0"));
  holding = false;
  ASSERT_FALSE(held.empty());
  EXPECT_FALSE(s.sub->done.has_value());
  EXPECT_EQ(node.relay.feeds_in_flight(), 1u);  // PUBLISH_DONE came; the feed waits for its fill
  held.clear();
  net.Run();
  EXPECT_EQ(s.sub->got, All(2, 3));
  ASSERT_TRUE(s.sub->done && s.sub->done->track_ended);
  EXPECT_TRUE(s.sub->done->all_streams_received);
  EXPECT_EQ(node.relay.feeds_in_flight(), 0u);
  EXPECT_TRUE(node.relay.cache().Contains(kNs));  // complete: kept
}

// A feed whose upstream reports the track ended with every stream, while the fill the feed asked
// for (the objects up to the upstream's Largest) never ended: the track is not complete with its
// start missing; it fails, and nothing of it stays.
TEST(RelayTest, ATrackEndedUpstreamBeforeItsFillEndedIsNotComplete) {
  Relay relay(Opts("r1"));
  auto track = std::make_shared<moqt::Track>(Name("k.raw.s0"), moqt::TrackOptions{});
  auto feed = std::make_shared<TrackFeed>(&relay, track, nullptr, 0);
  moqt::SubscribeOkInfo ok;
  ok.largest = Location{0, 2};  // a fill of {0,0}..{0,2} owed
  feed->OnSubscribeOk(ok);
  std::optional<moqt::TrackResolution> answer;
  feed->AddWaiter([&answer](moqt::TrackResolution r) { answer = std::move(r); });
  ASSERT_TRUE(answer && answer->track);  // answered once the upstream answered
  moqt::SubscriptionDone done;
  done.track_ended = true;
  done.all_streams_received = true;
  done.status = static_cast<uint64_t>(moqt::PublishDoneCode::kTrackEnded);
  feed->OnComplete(done);
  ASSERT_TRUE(track->failure().has_value()) << "marked complete without its fill";
  EXPECT_NE(track->failure()->second.find("fill"), std::string::npos) << track->failure()->second;
  EXPECT_FALSE(track->ended());
}

// An upstream that stops delivering what it owes (the rest of a group, here held back on its
// side, while the next group arrived) ends the relay's feed after the stall deadline (a fake
// clock; Relay::OnTimer as RelayServer ticks it; twice that for the upstream relay): the downstream
// subscription ends with PUBLISH_DONE saying why, the refusal is counted, nothing partial stays
// cached. A live track between objects owes nothing and is never judged stalled. A publisher's
// session stays open (it is the publisher's to end); the upstream relay's link is closed, to be
// reconnected.
TEST(RelayTest, AnUpstreamThatStopsDeliveringEndsItsFeedsWithinTheStallDeadline) {
  for (const bool through_upstream_relay : {false, true}) {
    SCOPED_TRACE(through_upstream_relay);
    Net net;
    uint64_t now_ms = 0;
    RelayOptions o = Opts("r1");
    o.clock_ms = [&now_ms] { return now_ms; };
    o.upstream_stall_ms = 1000;
    Node root(Opts("root")), node(std::move(o));
    HeldStreams hold;
    Publisher pub;
    Client up;
    if (through_upstream_relay) {  // the held streams are the root's to this relay
      up = Connect(net, root, &node.relay, {}, nullptr, {}, {}, hold.Options());
      node.relay.SetUpstream(up.session.get());
      net.Run();
      pub.Start(net, root);
    } else {
      pub.Start(net, node, kNs, {}, hold.Options());
    }
    Client s = Connect(net, node, nullptr);
    auto sub = std::make_shared<Sub>();
    ASSERT_TRUE(s.session->Subscribe(Name("k.raw.s0"), JoinFromStart(), sub).ok());
    net.Run();
    auto tick = [&](uint64_t ms) {
      now_ms += ms;
      node.relay.OnTimer();
      net.Run();
    };
    pub.Produce(net, 0, 1, 2);
    ASSERT_TRUE(pub.track->StartGroup(1).ok());
    const std::string p10 = Payload(1, 0);
    ASSERT_TRUE(
        pub.track->AppendObject(ByteSpan(reinterpret_cast<const uint8_t*>(p10.data()), p10.size()))
            .ok());
    net.Run();
    for (int i = 0; i < 5; ++i) tick(600);  // between objects of the newest group: owes nothing
    EXPECT_EQ(node.relay.feeds_in_flight(), 1u);
    hold.holding = true;
    pub.Produce(net, 2, 3, 2);  // group 2's stream stays with the upstream ...
    hold.holding = false;
    pub.Produce(net, 3, 4, 2);  // ... while group 3's arrives: group 2 is owed
    EXPECT_EQ(sub->got.size(), 5u);
    tick(600);
    tick(600);  // nothing delivered for 600 ms: not yet
    EXPECT_EQ(node.relay.feeds_in_flight(), 1u);
    EXPECT_FALSE(sub->done.has_value());
    tick(600);  // 1200 ms: past the deadline for a publisher
    if (through_upstream_relay) {
      // The upstream relay's link gets twice the deadline: the upstream relay's own cut-off of
      // a stalled publisher behind it comes first.
      EXPECT_EQ(node.relay.feeds_in_flight(), 1u);
      tick(600);
      tick(600);  // 2400 ms
    }
    EXPECT_EQ(node.relay.feeds_in_flight(), 0u);
    EXPECT_EQ(node.relay.metrics().refusals[static_cast<int>(Refusal::kUpstreamStalled)].load(),
              1u);
    ASSERT_TRUE(sub->done.has_value()) << "the downstream subscription still waits";
    EXPECT_FALSE(sub->done->track_ended);
    EXPECT_NE(sub->done->reason.find("stalled"), std::string::npos) << sub->done->reason;
    EXPECT_EQ(node.relay.cache().publication_count(), 0u);  // nothing partial stays
    if (through_upstream_relay) {
      EXPECT_FALSE(up.pair->client().IsOpen()) << "the stalled upstream link stays open";
    } else {
      EXPECT_TRUE(pub.client.pair->client().IsOpen());
    }
    hold.Release(net);
  }
}

// A subscriber that stops reading (its connection is never pumped again: the relay's writes
// to it stay in its bounded send buffers) neither delays the others nor stops the relay.
TEST(RelayTest, ASlowSubscriberDoesNotDelayTheOthers) {
  Net net;
  Node node(Opts("r1"));
  Publisher pub;
  pub.Start(net, node);
  Client slow = Connect(net, node, nullptr);
  auto slow_sub = std::make_shared<Sub>();
  ASSERT_TRUE(slow.session->Subscribe(Name("k.raw.s0"), JoinFromStart(), slow_sub).ok());
  std::vector<Client> fast_c;
  std::vector<std::shared_ptr<Sub>> fast;
  for (int i = 0; i < 4; ++i) {
    fast_c.push_back(Connect(net, node, nullptr));
    fast.push_back(std::make_shared<Sub>());
    ASSERT_TRUE(
        fast_c.back().session->Subscribe(Name("k.raw.s0"), JoinFromStart(), fast.back()).ok());
  }
  net.Run();
  ASSERT_TRUE(slow_sub->ok.has_value());
  // From now on the slow subscriber reads nothing.
  std::unique_ptr<InMemorySessionPair> parked = net.Unplug(slow.pair);
  ASSERT_NE(parked, nullptr);
  pub.Produce(net, 0, 4, 4);
  ASSERT_TRUE(pub.track->EndTrack().ok());
  net.Run();
  for (auto& f : fast) {
    EXPECT_EQ(f->got, All(4, 4));
    ASSERT_TRUE(f->done && f->done->track_ended);
  }
  EXPECT_FALSE(slow_sub->done.has_value());
  EXPECT_TRUE(slow_sub->got.empty());
  EXPECT_EQ(node.relay.cache().publication_count(), 1u);
  EXPECT_LE(node.relay.cache().budget()->used(), node.relay.cache().budget()->limit());
  net.pairs.push_back(std::move(parked));  // let it drain at the end: it gets everything too
  net.Run();
  EXPECT_EQ(slow_sub->got, All(4, 4));
}

// What the stalled-subscriber tests share: a fake clock running the relay's sessions (and their
// peers), a stall deadline, small send buffers (what a stalled subscriber has not taken stays
// with the relay's session, which keeps serving, and pinning, the track), and the parking of a
// connection that then takes nothing.
struct StallBench {
  StallBench() {
    sc.clock_ms = [this] { return now_ms; };
    sc.subscriber_stall_ms = 1000;
    small.stream_send_buffer = 16;
  }
  Client Subscriber() { return Connect(net, node, nullptr, {}, nullptr, {}, sc, small); }
  // The sessions' timers fire `ms` later (as the endpoint ticks them).
  void Tick(uint64_t ms) {
    now_ms += ms;
    for (auto& c : node.conns) c.session->OnTimer();
    net.Run();
  }
  // From now on `c` takes nothing (its connection is not pumped) until Unpark().
  void Park(const Client& c) {
    parked = net.Unplug(c.pair);
    if (!parked) ADD_FAILURE() << "no such connection";
  }
  void Unpark() {
    net.pairs.push_back(std::move(parked));
    net.Run();
  }
  uint64_t CutOffs() {
    return node.relay.metrics().refusals[static_cast<int>(Refusal::kSlowSubscriber)].load();
  }
  Net net;
  std::unique_ptr<InMemorySessionPair> parked;  // outlives the node's sessions on it
  uint64_t now_ms = 0;
  Node node{Opts("r1")};
  moqt::MoqtSessionConfig sc;
  transport::test::InMemoryOptions small;
};

// The relay's sessions cut off a subscriber that takes none of the data waiting for it for the
// stall deadline (a fake clock; the sessions' OnTimer as the endpoint ticks it): PUBLISH_DONE
// TOO_FAR_BEHIND, counted, and the publication it pinned becomes evictable. The others
// receive everything and are never cut off, however long they are idle.
TEST(RelayTest, AStalledSubscriberIsCutOffAndReleasesItsPublication) {
  StallBench b;
  Publisher pub;
  pub.Start(b.net, b.node);
  Client slow = b.Subscriber();
  auto slow_sub = std::make_shared<Sub>();
  ASSERT_TRUE(slow.session->Subscribe(Name("k.raw.s0"), JoinFromStart(), slow_sub).ok());
  std::vector<Client> fast_c;
  std::vector<std::shared_ptr<Sub>> fast;
  for (int i = 0; i < 3; ++i) {
    fast_c.push_back(b.Subscriber());
    fast.push_back(std::make_shared<Sub>());
    ASSERT_TRUE(
        fast_c.back().session->Subscribe(Name("k.raw.s0"), JoinFromStart(), fast.back()).ok());
  }
  b.net.Run();
  b.Tick(5000);  // idle subscriptions (nothing waits for them) are never cut off
  b.Park(slow);
  pub.Produce(b.net, 0, 2, 4);
  b.Tick(600);
  pub.Produce(b.net, 2, 4, 4);
  ASSERT_TRUE(pub.track->EndTrack().ok());
  b.net.Run();
  for (auto& f : fast) {
    EXPECT_EQ(f->got, All(4, 4));
    ASSERT_TRUE(f->done && f->done->track_ended);
  }
  EXPECT_TRUE(b.node.relay.cache().InUse(kNs));  // pinned by the stalled subscription
  b.Tick(600);                                   // stalled 600 ms: not yet
  EXPECT_EQ(b.CutOffs(), 0u);
  EXPECT_TRUE(b.node.relay.cache().InUse(kNs));
  b.Tick(600);  // stalled 1200 ms: cut off
  EXPECT_EQ(b.CutOffs(), 1u);
  EXPECT_FALSE(b.node.relay.cache().InUse(kNs));  // evictable again
  EXPECT_EQ(b.node.relay.cache().publication_count(), 1u);
  EXPECT_NE(b.node.relay.metrics().Render(0, 0).find("cause=\"slow_subscriber\"} 1"),
            std::string::npos);
  b.Tick(5000);
  EXPECT_EQ(b.CutOffs(), 1u);  // nobody else
  // The slow subscriber, once it reads again, learns why (not a clean end of track) at once:
  // not after the wait for the streams PUBLISH_DONE counted (those reset before their header
  // reached it cannot be attributed, and waiting for them gains nothing).
  b.Unpark();
  ASSERT_TRUE(slow_sub->done.has_value()) << "the subscription waited publish_done_wait_ms";
  EXPECT_FALSE(slow_sub->done->all_streams_received);
  EXPECT_FALSE(slow_sub->done->track_ended);
  ASSERT_TRUE(slow_sub->done->status.has_value());
  EXPECT_EQ(*slow_sub->done->status, static_cast<uint64_t>(moqt::PublishDoneCode::kTooFarBehind));
}

// The same for a FETCH (it pins the publication like a subscription): its streams are reset
// TOO_FAR_BEHIND, and the fetch is not reported complete.
TEST(RelayTest, AStalledFetchIsCutOffToo) {
  StallBench b;
  Publisher pub;
  pub.Start(b.net, b.node);
  pub.Produce(b.net, 0, 2, 3);
  ASSERT_TRUE(pub.track->EndTrack().ok());  // only the fetch will hold the track
  b.net.Run();
  Client slow = b.Subscriber();
  auto fet = std::make_shared<Fet>();
  moqt::FetchOptions fo;
  fo.range = LocationFilter{T::kAbsoluteStartGroupEnd, 0, 0, 1};
  ASSERT_TRUE(slow.session->Fetch(Name("k.raw.s0"), fo, fet).ok());
  slow.pair->RunUntilIdle();  // the FETCH reaches the relay, which asks the publisher ...
  b.Park(slow);
  b.net.Run();  // ... and answers into a connection that takes nothing from now on
  EXPECT_TRUE(b.node.relay.cache().InUse(kNs));
  for (int i = 0; i < 3; ++i) b.Tick(600);
  EXPECT_EQ(b.CutOffs(), 1u);
  EXPECT_FALSE(b.node.relay.cache().InUse(kNs));
  b.Unpark();
  ASSERT_TRUE(fet->done.has_value());
  EXPECT_FALSE(fet->done->ok);
}

class RelayAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RelayOptions o = Opts("r1");
    o.verifier = signer_.verifier();
    o.clock_s = [this] { return now_s_; };
    node_ = std::make_unique<Node>(std::move(o));
  }
  std::vector<moqt::AuthToken> Token(std::vector<auth::Action> actions,
                                     std::vector<std::string> prefix, int64_t exp) {
    return signer_.Token(std::move(actions), std::move(prefix), exp);
  }
  // The scope field "scope" as the token names it (KVCS fields are hex).
  std::string ScopeHex() { return "73636f7065"; }
  int64_t now_s_ = 1'000'000;
  test::TestSigner signer_;
  Net net_;
  std::unique_ptr<Node> node_;
};

TEST_F(RelayAuthTest, RequestsOutsideTheGrantAreRefused) {
  Publisher pub;
  pub.Start(net_, *node_, kNs,
            Token({auth::Action::kPublish}, {"kvcs-1", ScopeHex()}, now_s_ + 60));
  ASSERT_FALSE(pub.refused.has_value());
  pub.Produce(net_, 0, 1, 2);
  // A subscriber granted another scope: refused, nothing served.
  Client other = Connect(net_, *node_, nullptr,
                         Token({auth::Action::kSubscribe}, {"kvcs-1", "00ff"}, now_s_ + 60));
  auto sub = std::make_shared<Sub>();
  ASSERT_TRUE(other.session->Subscribe(Name("k.raw.s0"), JoinFromStart(), sub).ok());
  // A subscriber allowed to subscribe may not publish.
  Client reader = Connect(net_, *node_, nullptr,
                          Token({auth::Action::kSubscribe}, {"kvcs-1", ScopeHex()}, now_s_ + 60));
  std::optional<moqt::RequestError> pub_refused;
  ASSERT_TRUE(
      reader.session
          ->PublishNamespace({"kvcs-1", "scope", "x"}, [&](const auto& e) { pub_refused = e; })
          .ok());
  auto ok_sub = std::make_shared<Sub>();
  ASSERT_TRUE(reader.session->Subscribe(Name("k.raw.s0"), JoinFromStart(), ok_sub).ok());
  net_.Run();
  ASSERT_TRUE(sub->done && sub->done->error);
  EXPECT_EQ(sub->done->error->error_code,
            static_cast<uint64_t>(moqt::RequestErrorCode::kUnauthorized));
  EXPECT_TRUE(sub->got.empty());
  ASSERT_TRUE(pub_refused.has_value());
  EXPECT_EQ(pub_refused->error_code, static_cast<uint64_t>(moqt::RequestErrorCode::kUnauthorized));
  EXPECT_EQ(ok_sub->got, All(1, 2));
}

TEST_F(RelayAuthTest, NoTokenExpiredOrForgedIsRefusedAtSetup) {
  Client none = Connect(net_, *node_, nullptr);
  ASSERT_TRUE(none.cb->closed.has_value());
  EXPECT_EQ(*none.cb->closed, static_cast<uint64_t>(moqt::SessionError::kUnauthorized));
  Client expired =
      Connect(net_, *node_, nullptr, Token({auth::Action::kSubscribe}, {"kvcs-1"}, now_s_ - 1));
  ASSERT_TRUE(expired.cb->closed.has_value());
  EXPECT_EQ(*expired.cb->closed, static_cast<uint64_t>(moqt::SessionError::kExpiredAuthToken));
  auto forged = signer_.Forged({auth::Action::kSubscribe}, {"kvcs-1"}, now_s_ + 60);
  Client f = Connect(net_, *node_, nullptr, forged);
  ASSERT_TRUE(f.cb->closed.has_value());
  EXPECT_NE(*f.cb->closed, 0u);
  EXPECT_GE(node_->relay.metrics().refusals[static_cast<int>(Refusal::kBadToken)].load(), 3u);
}

// ------------------------------------------------------------------------------------ PUBLISH
struct Offered : moqt::PublishVisitor {
  void OnPublishResult(const std::optional<moqt::RequestError>& e) override { result = e; }
  void OnPublishDone(bool d) override { delivered = d; }
  std::optional<std::optional<moqt::RequestError>> result;
  std::optional<bool> delivered;
};

uint64_t Refusals(Node& node, Refusal r) {
  return node.relay.metrics().refusals[static_cast<int>(r)].load();
}

TEST(RelayPublishTest, APublicationPublishedBeforeAnySubscriberStaysAfterThePublisherLeft) {
  Net net;
  Node node(Opts("r1"));
  auto pub = std::make_unique<Publisher>();
  pub->Start(net, node);
  // A second track that already has objects when it is PUBLISHed (they come as the fill).
  auto manifest = *pub->store.CreateTrack(Name("manifest"));
  ASSERT_TRUE(manifest->StartGroup(0).ok());
  ASSERT_TRUE(manifest->AppendObject(ByteSpan(reinterpret_cast<const uint8_t*>("g0o0"), 4)).ok());
  auto k = std::make_shared<Offered>();
  auto m = std::make_shared<Offered>();
  ASSERT_TRUE(pub->client.session->PublishTrack(Name("k.raw.s0"), {}, k).ok());
  ASSERT_TRUE(pub->client.session->PublishTrack(Name("manifest"), {}, m).ok());
  net.Run();
  ASSERT_TRUE(k->result && !k->result->has_value());
  pub->Produce(net, 0, 4, 3);
  ASSERT_TRUE(pub->track->EndTrack().ok());
  ASSERT_TRUE(manifest->EndTrack().ok());
  net.Run();
  ASSERT_EQ(k->delivered, true);
  ASSERT_EQ(m->delivered, true);
  pub->client.session->Close(moqt::SessionError::kNoError, "bye");
  net.Run();
  pub.reset();
  EXPECT_EQ(node.relay.metrics().publishes.load(), 2u);
  EXPECT_EQ(node.relay.metrics().upstream_requests.load(), 0u);  // nothing was pulled
  // Nobody had subscribed: the relay holds it all the same, complete.
  Client s = Connect(net, node, nullptr);
  auto ns = std::make_shared<Ns>();
  ASSERT_TRUE(s.session->SubscribeNamespace({"kvcs-1", "scope"}, ns).ok());
  auto sub = std::make_shared<Sub>();
  ASSERT_TRUE(s.session->Subscribe(Name("k.raw.s0"), JoinFromStart(), sub).ok());
  auto msub = std::make_shared<Sub>();
  ASSERT_TRUE(s.session->Subscribe(Name("manifest"), JoinFromStart(), msub).ok());
  auto fet = std::make_shared<Fet>();
  moqt::FetchOptions fo;
  fo.range = LocationFilter{T::kAbsoluteStartGroupEnd, 1, 0, 1};  // groups 1..2
  ASSERT_TRUE(s.session->Fetch(Name("k.raw.s0"), fo, fet).ok());
  net.Run();
  EXPECT_EQ(ns->live.count({"pub1"}), 1u);
  EXPECT_EQ(sub->got, All(4, 3));  // Sub checks each object once and its bytes
  ASSERT_TRUE(sub->done && sub->done->track_ended);
  EXPECT_EQ(msub->got, All(1, 1));
  ASSERT_TRUE(msub->done && msub->done->track_ended);
  ASSERT_TRUE(fet->done && fet->done->ok);
  EXPECT_EQ(fet->got, (std::vector<Location>{{1, 0}, {1, 1}, {1, 2}, {2, 0}, {2, 1}, {2, 2}}));
  EXPECT_EQ(node.relay.metrics().upstream_requests.load(), 0u);
}

TEST(RelayPublishTest, APublishOfATrackBeingPulledJoinsTheSameTrack) {
  Net net;
  Node node(Opts("r1"));
  auto pub = std::make_unique<Publisher>();
  pub->Start(net, node);
  Client s1 = Connect(net, node, nullptr);
  auto early = std::make_shared<Sub>();
  ASSERT_TRUE(s1.session->Subscribe(Name("k.raw.s0"), JoinFromStart(), early).ok());
  net.Run();
  pub->Produce(net, 0, 1, 3);
  auto k = std::make_shared<Offered>();
  ASSERT_TRUE(pub->client.session->PublishTrack(Name("k.raw.s0"), {}, k).ok());
  net.Run();
  ASSERT_TRUE(k->result && !k->result->has_value());  // accepted: written into the same Track
  pub->Produce(net, 1, 3, 3);
  ASSERT_TRUE(pub->track->EndTrack().ok());
  net.Run();
  ASSERT_EQ(k->delivered, true);
  pub->client.session->Close(moqt::SessionError::kNoError, "bye");
  net.Run();
  pub.reset();
  EXPECT_EQ(node.relay.metrics().publish_joins.load(), 1u);
  EXPECT_EQ(early->got, All(3, 3));
  ASSERT_TRUE(early->done && early->done->track_ended);
  Subscription late = SubscribeFromStart(net, node, Name("k.raw.s0"));
  EXPECT_EQ(late.sub->got, All(3, 3));
  ASSERT_TRUE(late.sub->done && late.sub->done->track_ended);
}

TEST(RelayPublishTest, APublishIntoAFullBudgetIsRefusedAndCounted) {
  // Publication a, live (so in use), fills the budget: measured in a first run.
  auto fill_with_a = [](Net& net, Node& node, Publisher& a) {
    a.Start(net, node, {"kvcs-1", "scope", "a"});
    auto ka = std::make_shared<Offered>();
    EXPECT_TRUE(
        a.client.session->PublishTrack(Name("k.raw.s0", {"kvcs-1", "scope", "a"}), {}, ka).ok());
    net.Run();
    a.Produce(net, 0, 3, 3);
    return ka;
  };
  uint64_t used = 0;
  {
    Net net;
    Node node(Opts("r0"));
    Publisher a;
    fill_with_a(net, node, a);
    used = node.relay.cache().budget()->used();
  }
  Net net;
  // The feed asks room for one object and one group at each write: that much slack, less than
  // a PUBLISH needs to start.
  Node node(Opts("r1", used + moqt::kTrackGroupOverheadBytes));
  Publisher a;
  auto ka = fill_with_a(net, node, a);
  ASSERT_TRUE(ka->result.has_value());
  ASSERT_FALSE(ka->result->has_value()) << (*ka->result)->reason;
  ASSERT_EQ(node.relay.cache().budget()->used(), used);
  Publisher b;
  b.Start(net, node, {"kvcs-1", "scope", "b"});
  const uint64_t full_before = Refusals(node, Refusal::kCacheFull);
  auto kb = std::make_shared<Offered>();
  ASSERT_TRUE(
      b.client.session->PublishTrack(Name("k.raw.s0", {"kvcs-1", "scope", "b"}), {}, kb).ok());
  net.Run();
  ASSERT_TRUE(kb->result && kb->result->has_value());
  EXPECT_EQ((*kb->result)->error_code,
            static_cast<uint64_t>(moqt::RequestErrorCode::kExcessiveLoad));
  EXPECT_EQ(kb->delivered, false);
  EXPECT_EQ(Refusals(node, Refusal::kCacheFull), full_before + 1);
  EXPECT_FALSE(node.relay.cache().Contains({"kvcs-1", "scope", "b"}));
  EXPECT_LE(node.relay.cache().budget()->used(), node.relay.cache().budget()->limit());
  EXPECT_FALSE(ka->delivered.has_value());  // the first is untouched
}

TEST(RelayPublishTest, APublishOfATrackCachedWholeIsUninterested) {
  Net net;
  Node node(Opts("r1"));
  Publisher pub;
  pub.Start(net, node);
  auto k = std::make_shared<Offered>();
  ASSERT_TRUE(pub.client.session->PublishTrack(Name("k.raw.s0"), {}, k).ok());
  pub.Produce(net, 0, 1, 2);
  ASSERT_TRUE(pub.track->EndTrack().ok());
  net.Run();
  ASSERT_EQ(k->delivered, true);
  auto again = std::make_shared<Offered>();
  ASSERT_TRUE(pub.client.session->PublishTrack(Name("k.raw.s0"), {}, again).ok());
  net.Run();
  ASSERT_TRUE(again->result && again->result->has_value());
  EXPECT_EQ((*again->result)->error_code,
            static_cast<uint64_t>(moqt::RequestErrorCode::kUninterested));
  EXPECT_EQ(Refusals(node, Refusal::kAlreadyCached), 1u);
}

TEST_F(RelayAuthTest, APublishOutsideTheGrantIsRefusedAndNothingIsCached) {
  Publisher pub;
  // Granted publish on another scope; subscribe on this one is not publish either.
  pub.Start(net_, *node_, kNs, Token({auth::Action::kPublish}, {"kvcs-1", "00ff"}, now_s_ + 60));
  auto k = std::make_shared<Offered>();
  ASSERT_TRUE(pub.client.session->PublishTrack(Name("k.raw.s0"), {}, k).ok());
  pub.Produce(net_, 0, 2, 2);
  net_.Run();
  ASSERT_TRUE(k->result && k->result->has_value());
  EXPECT_EQ((*k->result)->error_code, static_cast<uint64_t>(moqt::RequestErrorCode::kUnauthorized));
  EXPECT_EQ(k->delivered, false);
  EXPECT_EQ(node_->relay.cache().publication_count(), 0u);
  EXPECT_EQ(node_->relay.metrics().publishes.load(), 0u);
  Publisher reader;
  reader.Start(net_, *node_, {"kvcs-1", "scope", "r"},
               Token({auth::Action::kSubscribe}, {"kvcs-1", ScopeHex()}, now_s_ + 60));
  auto r = std::make_shared<Offered>();
  ASSERT_TRUE(
      reader.client.session->PublishTrack(Name("k.raw.s0", {"kvcs-1", "scope", "r"}), {}, r).ok());
  net_.Run();
  ASSERT_TRUE(r->result && r->result->has_value());
  EXPECT_EQ((*r->result)->error_code, static_cast<uint64_t>(moqt::RequestErrorCode::kUnauthorized));
  EXPECT_EQ(node_->relay.cache().publication_count(), 0u);
}

// --------------------------------------------------------------------- PUBLISH up a tree
RelayOptions LeafOpts(std::string id) {
  RelayOptions o = Opts(std::move(id));
  o.publish_upstream = true;
  return o;
}

// Leaf relay A (PUBLISHing up) linked to a root, and a publisher at A.
struct LeafUnderRoot {
  LeafUnderRoot() {
    Link();
    pub.Start(net, a);
  }
  // The link's session goes before the relays: A must not keep pointing at it.
  ~LeafUnderRoot() { a.relay.SetUpstream(nullptr); }
  // A new upstream link from A to the root (RelayServer: on every reconnect).
  void Link() {
    link = LinkUp(net, a, root);
    net.Run();
  }
  Net net;
  Node root{Opts("root")}, a{LeafOpts("a")};
  Client link;
  Publisher pub;
};

// A publisher PUBLISHes to leaf A and leaves; the root holds the whole track and serves it.
TEST(RelayPublishTest, APublishToALeafGoesOnToTheRootAndStaysAfterThePublisherLeft) {
  LeafUnderRoot t;
  Net& net = t.net;
  Node &root = t.root, &a = t.a;
  Publisher& pub = t.pub;
  pub.Produce(net, 0, 1, 3);  // before the PUBLISH: comes as the fill, at A and at the root
  auto k = std::make_shared<Offered>();
  ASSERT_TRUE(pub.client.session->PublishTrack(Name("k.raw.s0"), {}, k).ok());
  net.Run();
  pub.Produce(net, 1, 3, 3);  // live
  ASSERT_TRUE(pub.track->EndTrack().ok());
  net.Run();
  ASSERT_EQ(k->delivered, true);
  pub.client.session->Close(moqt::SessionError::kNoError, "done");
  net.Run();
  EXPECT_EQ(a.relay.metrics().upstream_publishes.load(), 1u);
  EXPECT_EQ(a.relay.metrics().upstream_publishes_delivered.load(), 1u);
  EXPECT_EQ(a.relay.upstream_publishes_pending(), 0u);
  EXPECT_EQ(root.relay.metrics().publishes.load(), 1u);
  Subscription s = SubscribeFromStart(net, root, Name("k.raw.s0"));
  EXPECT_EQ(s.sub->got, All(3, 3));  // Sub checks each object's bytes and that it came once
  ASSERT_TRUE(s.sub->done && s.sub->done->track_ended);
  EXPECT_EQ(root.relay.metrics().upstream_requests.load(), 0u);  // from the root's own cache
}

// The upstream link ends while the PUBLISH is on its way: the leaf keeps the track (in use, so
// never evicted) and PUBLISHes it again on the next link, and the root gets all of it.
TEST(RelayPublishTest, AnUpstreamPublishIsPendingUntilTheUpstreamHoldsItAndReSentOnReconnect) {
  LeafUnderRoot t;
  Net& net = t.net;
  Node &root = t.root, &a = t.a;
  Publisher& pub = t.pub;
  auto k = std::make_shared<Offered>();
  ASSERT_TRUE(pub.client.session->PublishTrack(Name("k.raw.s0"), {}, k).ok());
  net.Run();
  pub.Produce(net, 0, 1, 3);
  EXPECT_EQ(a.relay.metrics().upstream_publishes.load(), 1u);
  t.link.session->Close(moqt::SessionError::kNoError, "link down");  // RelayServer: reconnects
  net.Run();
  a.relay.SetUpstream(nullptr);
  EXPECT_FALSE(root.relay.cache().Contains(kNs));  // the root never keeps part of a track
  pub.Produce(net, 1, 3, 3);
  ASSERT_TRUE(pub.track->EndTrack().ok());
  net.Run();
  ASSERT_EQ(k->delivered, true);
  pub.client.session->Close(moqt::SessionError::kNoError, "done");
  net.Run();
  EXPECT_EQ(a.relay.upstream_publishes_pending(), 1u);
  EXPECT_TRUE(a.relay.cache().InUse(kNs));  // held for the upstream
  EXPECT_EQ(a.relay.metrics().upstream_publishes_delivered.load(), 0u);
  t.Link();
  EXPECT_EQ(a.relay.metrics().upstream_publishes.load(), 2u);
  EXPECT_EQ(a.relay.metrics().upstream_publishes_delivered.load(), 1u);
  EXPECT_EQ(a.relay.upstream_publishes_pending(), 0u);
  EXPECT_FALSE(a.relay.cache().InUse(kNs));  // released: evictable again
  Subscription s = SubscribeFromStart(net, root, Name("k.raw.s0"));
  EXPECT_EQ(s.sub->got, All(3, 3));
  ASSERT_TRUE(s.sub->done && s.sub->done->track_ended);
}

// Two relays each other's upstream: a PUBLISH that comes back to a relay it passed is refused
// (NOT_SUPPORTED, counted as a loop) instead of going round; the first relay keeps the track.
TEST(RelayPublishTest, AnUpstreamPublishThatWouldLoopIsRefused) {
  Net net;
  Node a(LeafOpts("a")), b(LeafOpts("b"));
  Client a_up = LinkUp(net, a, b);
  Client b_up = LinkUp(net, b, a);  // b's upstream is a: a loop
  net.Run();
  Publisher pub;
  pub.Start(net, a);  // its PUBLISH_NAMESPACE comes back to a too, and is refused as a loop
  const uint64_t loops = Refusals(a, Refusal::kLoop);
  auto k = std::make_shared<Offered>();
  ASSERT_TRUE(pub.client.session->PublishTrack(Name("k.raw.s0"), {}, k).ok());
  pub.Produce(net, 0, 2, 2);
  ASSERT_TRUE(pub.track->EndTrack().ok());
  net.Run();
  ASSERT_EQ(k->delivered, true);
  EXPECT_EQ(Refusals(a, Refusal::kLoop), loops + 1);  // b's PUBLISH of it back to a
  EXPECT_EQ(a.relay.metrics().upstream_publishes.load(), 1u);
  EXPECT_EQ(b.relay.metrics().upstream_publishes.load(), 1u);
  EXPECT_EQ(b.relay.metrics().upstream_publishes_delivered.load(), 0u);
  // b's refused PUBLISH is released, not pinned in b's cache for good.
  EXPECT_EQ(b.relay.metrics().upstream_publishes_refused.load(), 1u);
  EXPECT_EQ(b.relay.upstream_publishes_pending(), 0u);
  EXPECT_FALSE(b.relay.cache().InUse(kNs));
  EXPECT_TRUE(a.relay.cache().Contains(kNs));
  // The links' sessions go before the relays (declared after them): unlink first, as
  // RelayServer does, or the publisher's announcement would be withdrawn on a freed session.
  a.relay.SetUpstream(nullptr);
  b.relay.SetUpstream(nullptr);
}

// A subscriber at leaf A asks for a track before its publisher PUBLISHes it: A pulls it from
// the publisher (which announced its namespace at A), and the PUBLISH then joins that feed. The
// PUBLISH goes on up all the same, once: the root holds the whole track after the publisher left,
// in its own cache.
TEST(RelayPublishTest, APublishJoiningATrackALeafIsPullingGoesOnToTheRoot) {
  LeafUnderRoot t;
  Net& net = t.net;
  Node &root = t.root, &a = t.a;
  Publisher& pub = t.pub;
  Subscription early = SubscribeFromStart(net, a, Name("k.raw.s0"));
  EXPECT_EQ(a.relay.metrics().upstream_requests.load(), 1u);  // pulled from the publisher
  pub.Produce(net, 0, 1, 3);
  auto k = std::make_shared<Offered>();
  ASSERT_TRUE(pub.client.session->PublishTrack(Name("k.raw.s0"), {}, k).ok());
  net.Run();
  ASSERT_TRUE(k->result && !k->result->has_value());
  EXPECT_EQ(a.relay.metrics().publish_joins.load(), 1u);
  pub.Produce(net, 1, 3, 3);
  ASSERT_TRUE(pub.track->EndTrack().ok());
  net.Run();
  ASSERT_EQ(k->delivered, true);
  pub.client.session->Close(moqt::SessionError::kNoError, "done");
  net.Run();
  EXPECT_EQ(early.sub->got, All(3, 3));
  ASSERT_TRUE(early.sub->done && early.sub->done->track_ended);
  EXPECT_EQ(a.relay.metrics().upstream_publishes.load(), 1u);
  EXPECT_EQ(a.relay.metrics().upstream_publishes_delivered.load(), 1u);
  EXPECT_EQ(a.relay.upstream_publishes_pending(), 0u);
  EXPECT_EQ(root.relay.metrics().publishes.load(), 1u);
  EXPECT_TRUE(root.relay.cache().Contains(kNs)) << "the root never got the leaf's PUBLISH";
  Subscription s = SubscribeFromStart(net, root, Name("k.raw.s0"));
  EXPECT_EQ(s.sub->got, All(3, 3));  // each object once, its bytes checked
  ASSERT_TRUE(s.sub->done && s.sub->done->track_ended);
  EXPECT_EQ(root.relay.metrics().upstream_requests.load(), 0u);  // from the root's own copy
}

// The same join at a leaf whose feed pulls the track from its upstream relay (the track's
// publisher is at the root): the root holds the track already, so the leaf sends nothing back up.
TEST(RelayPublishTest, APublishJoiningATrackPulledFromTheUpstreamIsNotSentBackUp) {
  Net net;
  Node root(Opts("root")), a(LeafOpts("a"));
  Client link = LinkUp(net, a, root);
  net.Run();
  Publisher origin;
  origin.Start(net, root);
  origin.Produce(net, 0, 1, 3);
  Subscription early = SubscribeFromStart(net, a, Name("k.raw.s0"));
  EXPECT_EQ(root.relay.metrics().upstream_requests.load(), 1u);  // A's pull reached the origin
  Publisher second;  // a second publisher of the same track, at A
  second.Start(net, a);
  second.Produce(net, 0, 1, 3);
  auto k = std::make_shared<Offered>();
  ASSERT_TRUE(second.client.session->PublishTrack(Name("k.raw.s0"), {}, k).ok());
  net.Run();
  ASSERT_TRUE(k->result && !k->result->has_value());
  EXPECT_EQ(a.relay.metrics().publish_joins.load(), 1u);
  EXPECT_EQ(a.relay.metrics().upstream_publishes.load(), 0u);
  EXPECT_EQ(a.relay.upstream_publishes_pending(), 0u);
  for (Publisher* p : {&origin, &second}) {
    p->Produce(net, 1, 2, 3);
    ASSERT_TRUE(p->track->EndTrack().ok());
  }
  net.Run();
  EXPECT_EQ(early.sub->got, All(2, 3));
  ASSERT_TRUE(early.sub->done && early.sub->done->track_ended);
  EXPECT_EQ(root.relay.metrics().publishes.load(), 0u);
  EXPECT_EQ(a.relay.metrics().upstream_publishes.load(), 0u);
  a.relay.SetUpstream(nullptr);  // the link's session goes before the relays
}

}  // namespace
}  // namespace kvcs::relay
