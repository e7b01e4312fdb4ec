// MOQT end to end over real QUIC on 127.0.0.1: MoqtServer and MoqtClient (moqt_endpoint) with
// real UDP sockets, TLS and ngtcp2. Server and clients share one io_context driven by the test
// thread (the endpoints are single-threaded by design), so the producer can append objects
// between event-loop turns and a subscriber joins at a known point of production. Every wait is
// bounded (Loop::RunUntil); no sleeps, no timing assertions.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "common/asio.h"
#include "moqt/moqt_framer.h"
#include "moqt_endpoint/moqt_endpoint.h"
#include "moqt_session/moqt_track_store.h"
#include "quic/client.h"
#include "quic/server.h"
#include "quic/tls.h"

namespace kvcs::moqt {
namespace {

namespace asio = boost::asio;
using T = LocationFilterType;

struct CertFiles {
  std::string cert, key;
};

// A fresh self-signed certificate for `name`, once per name per process.
const CertFiles& TestCert(const std::string& name) {
  static std::map<std::string, CertFiles> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  auto pem = quic::GenerateSelfSignedCert(name);
  EXPECT_TRUE(pem.ok()) << pem.status().ToString();
  auto dir = std::filesystem::temp_directory_path() /
             ("kvcs_moqt_e2e_" + std::to_string(getpid()) + "_" + std::to_string(cache.size()));
  std::filesystem::create_directories(dir);
  CertFiles f{(dir / "cert.pem").string(), (dir / "key.pem").string()};
  std::ofstream(f.cert) << pem->cert_pem;
  std::ofstream(f.key) << pem->key_pem;
  return cache[name] = f;
}

// Deterministic payload of object {g, o}: its size varies with the location.
Bytes Payload(uint64_t g, uint64_t o) {
  std::string s = "g" + std::to_string(g) + "o" + std::to_string(o) + ":";
  s.append((g * 7 + o) % 97, static_cast<char>('a' + (g + o) % 26));
  return Bytes(s.begin(), s.end());
}

class Loop {
 public:
  asio::io_context io;
  bool RunUntil(const std::function<bool()>& pred, const char* what) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!pred()) {
      if (std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << "deadline exceeded waiting for " << what;
        return false;
      }
      io.run_one_for(std::chrono::milliseconds(20));
      if (io.stopped()) io.restart();
    }
    return true;
  }
  void Poll() {
    io.poll();
    if (io.stopped()) io.restart();
  }
};

struct Obj {
  Location loc;
  ObjectStatus status;
  Bytes payload;
  DeliveryKind via;
};

struct Sub : SubscribeVisitor {
  void OnSubscribeOk(const SubscribeOkInfo& i) override { ok = i; }
  void OnObject(const ReceivedObject& o) override {
    objects.push_back({o.location, o.status, Bytes(o.payload.begin(), o.payload.end()), o.via});
  }
  void OnComplete(const SubscriptionDone& d) override {
    EXPECT_FALSE(done.has_value()) << "OnComplete twice";
    done = d;
  }
  std::vector<Obj> Normal() const {
    std::vector<Obj> v;
    for (const Obj& o : objects) {
      if (o.status == ObjectStatus::kNormal) v.push_back(o);
    }
    return v;
  }
  std::optional<SubscribeOkInfo> ok;
  std::vector<Obj> objects;
  std::optional<SubscriptionDone> done;
};

struct Fet : FetchVisitor {
  void OnObject(const ReceivedObject& o) override {
    objects.push_back({o.location, o.status, Bytes(o.payload.begin(), o.payload.end()), o.via});
  }
  void OnComplete(const FetchDone& d) override { done = d; }
  std::vector<Obj> objects;
  std::optional<FetchDone> done;
};

struct Ns : NamespaceVisitor {
  void OnRequestOk() override { ok = true; }
  void OnNamespace(const TrackNamespace& s) override { events.push_back({true, s}); }
  void OnNamespaceDone(const TrackNamespace& s) override { events.push_back({false, s}); }
  bool ok = false;
  std::vector<std::pair<bool, TrackNamespace>> events;
};

struct ClientCallbacks : MoqtSessionCallbacks {
  void OnSetupComplete(const SetupOptions& p) override { peer = p; }
  void OnSessionClosed(uint64_t code, const std::string& reason, bool by_peer) override {
    closed_code = code;
  }
  void OnGoAway(const std::string& uri) override { goaway = true; }
  std::optional<SetupOptions> peer;
  std::optional<uint64_t> closed_code;
  bool goaway = false;
};

// Server-side per-session callbacks: announced namespaces go into the shared store (what a relay
// does), so other sessions can discover them.
struct ServerCallbacks : MoqtSessionCallbacks {
  explicit ServerCallbacks(TrackStore* store) : store(store) {}
  std::optional<RequestErrorCode> OnPublishNamespace(const TrackNamespace& ns) override {
    if (!store->AddAnnouncedNamespace(ns).ok()) return RequestErrorCode::kInternalError;
    return {};
  }
  void OnPublishNamespaceDone(const TrackNamespace& ns) override {
    store->RemoveAnnouncedNamespace(ns);
  }
  TrackStore* store;
};

class MoqtE2ETest : public ::testing::Test {
 protected:
  void SetUp() override {
    MoqtServerConfig cfg;
    cfg.quic.host = "127.0.0.1";
    cfg.quic.cert_file = TestCert("localhost").cert;
    cfg.quic.key_file = TestCert("localhost").key;
    cfg.session.implementation = "kvcs-e2e-server";
    auto s = MoqtServer::Create(
        loop_.io, cfg, &store_,
        [this](const MoqtServerSessionInfo&) { return std::make_unique<ServerCallbacks>(&store_); },
        [this](const MoqtServerSessionInfo& info, const SessionEnd& end) { ends_[info.id] = end; });
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
  }
  void TearDown() override {
    clients_.clear();
    server_.reset();
  }

  MoqtClientConfig ClientConfig() {
    MoqtClientConfig c;
    c.quic.host = "127.0.0.1";
    c.quic.port = server_->port();
    c.quic.server_name = "localhost";
    c.quic.ca_file = TestCert("localhost").cert;
    c.session.path = "/moq";
    c.session.implementation = "kvcs-e2e-client";
    return c;
  }
  // Connects a client and waits for SETUP on both sides.
  MoqtClient* Connect(ClientCallbacks* cb = nullptr) {
    auto c = MoqtClient::Connect(loop_.io, ClientConfig(), cb);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    if (!c.ok()) return nullptr;
    MoqtClient* raw = c->get();
    clients_.push_back(std::move(*c));
    loop_.RunUntil([&] { return raw->setup_complete() || raw->closed(); }, "SETUP");
    EXPECT_TRUE(raw->setup_complete()) << (raw->end() ? raw->end()->ToString() : "");
    return raw;
  }
  std::shared_ptr<Track> MakeTrack(const FullTrackName& name) {
    auto t = store_.CreateTrack(name);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? *t : nullptr;
  }
  // Produces groups [g0, g1) of `objects` objects, letting the loop run every `poll_every`
  // objects (0: never) so that live delivery interleaves with production.
  void Produce(Track& t, uint64_t g0, uint64_t g1, uint64_t objects, uint64_t poll_every) {
    for (uint64_t g = g0; g < g1; ++g) {
      ASSERT_TRUE(t.StartGroup(g).ok());
      for (uint64_t o = 0; o < objects; ++o) {
        ASSERT_TRUE(t.AppendObject(Payload(g, o)).ok());
        if (poll_every && o % poll_every == 0) loop_.Poll();
      }
      ASSERT_TRUE(t.EndGroup().ok());
    }
  }

  Loop loop_;
  TrackStore store_;
  std::unique_ptr<MoqtServer> server_;
  std::map<uint64_t, SessionEnd> ends_;
  std::vector<std::unique_ptr<MoqtClient>> clients_;
};

const FullTrackName kTrack{{"kvcs-1", "e2e"}, "layer-data"};
constexpr uint64_t kGroups = 32, kObjects = 64;

TEST_F(MoqtE2ETest, HandshakeSetupAndCleanClose) {
  ClientCallbacks cb;
  MoqtClient* c = Connect(&cb);
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(cb.peer.has_value());
  EXPECT_EQ(cb.peer->implementation, "kvcs-e2e-server");
  EXPECT_EQ(c->transport().GetNegotiatedAlpn(), "moqt-22");
  EXPECT_EQ(server_->session_count(), 1u);
  std::string server_saw_path;
  server_->ForEachSession([&](const MoqtServerSessionInfo& i) {
    server_saw_path = i.session->peer_setup().path.value_or("");
  });
  EXPECT_EQ(server_saw_path, "/moq");
  c->Close(SessionError::kNoError, "bye");
  ASSERT_TRUE(loop_.RunUntil([&] { return c->closed() && ends_.size() == 1; }, "close"));
  const SessionEnd& end = ends_.begin()->second;
  EXPECT_TRUE(end.handshake_completed);
  EXPECT_TRUE(end.setup_completed);
  EXPECT_TRUE(end.transport.by_peer);
  EXPECT_EQ(end.transport.code, 0u);
  ASSERT_TRUE(loop_.RunUntil([&] { return server_->session_count() == 0; }, "session reaped"));
}

TEST_F(MoqtE2ETest, UntrustedServerCertificateIsAClearHandshakeFailure) {
  MoqtClientConfig cfg = ClientConfig();
  cfg.quic.ca_file = TestCert("someone-else.example").cert;
  ClientCallbacks cb;
  auto c = MoqtClient::Connect(loop_.io, cfg, &cb);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(loop_.RunUntil([&] { return (*c)->closed(); }, "handshake failure"));
  const SessionEnd& end = *(*c)->end();
  EXPECT_FALSE(end.handshake_completed);
  EXPECT_EQ(end.transport.kind, transport::CloseInfo::Kind::kTls);
  EXPECT_NE(end.ToString().find("TLS handshake failed"), std::string::npos) << end.ToString();
  EXPECT_TRUE(cb.closed_code.has_value());
  EXPECT_FALSE((*c)->setup_complete());
}

// Seed §5.2: Next Object + FILL_PARAMETERS Absolute Start {0,0}, joined mid-production; and a
// late subscriber that joins after End of Track gets everything from the fill.
TEST_F(MoqtE2ETest, ExactlyOnceJoinDuringProductionAndAfterTheEnd) {
  MoqtClient* early = Connect();
  ASSERT_NE(early, nullptr);
  auto track = MakeTrack(kTrack);
  constexpr uint64_t kJoinGroup = 11;
  Produce(*track, 0, kJoinGroup, kObjects, 16);
  ASSERT_TRUE(track->StartGroup(kJoinGroup).ok());
  for (uint64_t o = 0; o < 20; ++o) ASSERT_TRUE(track->AppendObject(Payload(kJoinGroup, o)).ok());
  // Join in the middle of group 11.
  auto sub = std::make_shared<Sub>();
  SubscribeOptions opts;
  opts.filter = {T::kNextObject};
  opts.fill = LocationFilter{T::kAbsoluteStart, 0, 0};
  ASSERT_TRUE(early->session().Subscribe(kTrack, opts, sub).ok());
  ASSERT_TRUE(loop_.RunUntil([&] { return sub->ok.has_value() || sub->done; }, "SUBSCRIBE_OK"));
  for (uint64_t o = 20; o < kObjects; ++o) {
    ASSERT_TRUE(track->AppendObject(Payload(kJoinGroup, o)).ok());
    if (o % 8 == 0) loop_.Poll();
  }
  ASSERT_TRUE(track->EndGroup().ok());
  Produce(*track, kJoinGroup + 1, kGroups, kObjects, 8);
  ASSERT_TRUE(track->EndTrack().ok());
  ASSERT_TRUE(loop_.RunUntil([&] { return sub->done.has_value(); }, "subscription complete"));

  std::map<Location, int> seen;
  size_t fill = 0, live = 0;
  for (const Obj& o : sub->Normal()) {
    seen[o.loc]++;
    EXPECT_EQ(o.payload, Payload(o.loc.group, o.loc.object)) << o.loc.group << "," << o.loc.object;
    (o.via == DeliveryKind::kFill ? fill : live)++;
  }
  for (uint64_t g = 0; g < kGroups; ++g) {
    for (uint64_t o = 0; o < kObjects; ++o) {
      EXPECT_EQ(seen[(Location{g, o})], 1) << g << "," << o;
    }
  }
  EXPECT_EQ(seen.size(), kGroups * kObjects);
  EXPECT_GT(fill, 0u);
  EXPECT_GT(live, 0u);
  EXPECT_TRUE(sub->done->track_ended);
  EXPECT_TRUE(sub->done->all_streams_received);
  EXPECT_FALSE(sub->done->session_closed);

  // A second client joins after the end: everything arrives on the fill, in order, complete.
  MoqtClient* late = Connect();
  ASSERT_NE(late, nullptr);
  auto late_sub = std::make_shared<Sub>();
  ASSERT_TRUE(late->session().Subscribe(kTrack, opts, late_sub).ok());
  ASSERT_TRUE(loop_.RunUntil([&] { return late_sub->done.has_value(); }, "late complete"));
  std::vector<Obj> got = late_sub->Normal();
  ASSERT_EQ(got.size(), kGroups * kObjects);
  size_t i = 0;
  for (uint64_t g = 0; g < kGroups; ++g) {
    for (uint64_t o = 0; o < kObjects; ++o, ++i) {
      EXPECT_EQ(got[i].loc, (Location{g, o}));
      EXPECT_EQ(got[i].via, DeliveryKind::kFill);
      EXPECT_EQ(got[i].payload, Payload(g, o));
    }
  }
  EXPECT_TRUE(late_sub->done->track_ended);
  EXPECT_TRUE(late_sub->done->all_streams_received);
}

// More groups than the subscriber's unidirectional stream limit: each group's subgroup stream
// must wait for stream credit, which returns as the subscriber finishes earlier streams.
// More groups in flight than the subscriber's max_incoming_uni_streams (4: control + 3 groups):
// the publisher's group streams queue for stream credit, which the subscriber's QUIC client
// returns as it finishes each group stream (this stalled until the idle timeout before src/quic
// handled ngtcp2 0.12.1 never closing a peer's unidirectional stream).
TEST_F(MoqtE2ETest, MoreGroupsThanTheSubscribersStreamLimitAllArrive) {
  MoqtClientConfig cfg = ClientConfig();
  cfg.quic.limits.max_incoming_uni_streams = 4;
  auto c = MoqtClient::Connect(loop_.io, cfg, nullptr);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(loop_.RunUntil([&] { return (*c)->setup_complete() || (*c)->closed(); }, "SETUP"));
  auto track = MakeTrack(kTrack);
  auto sub = std::make_shared<Sub>();
  ASSERT_TRUE((*c)->session().Subscribe(kTrack, {}, sub).ok());
  ASSERT_TRUE(loop_.RunUntil([&] { return sub->ok.has_value(); }, "SUBSCRIBE_OK"));
  constexpr uint64_t kManyGroups = 12;
  Produce(*track, 0, kManyGroups, 2, 0);  // all groups at once: streams queue for credit
  ASSERT_TRUE(track->EndTrack().ok());
  ASSERT_TRUE(loop_.RunUntil([&] { return sub->done.has_value(); }, "all groups"));
  EXPECT_EQ(sub->Normal().size(), kManyGroups * 2);
  EXPECT_TRUE(sub->done->track_ended);
}

TEST_F(MoqtE2ETest, FetchGroupsAToBWithObjectIdRangeReturnsExactlyThoseAscending) {
  MoqtClient* c = Connect();
  ASSERT_NE(c, nullptr);
  auto track = MakeTrack(kTrack);
  Produce(*track, 0, kGroups, kObjects, 0);
  auto f = std::make_shared<Fet>();
  FetchOptions o;
  o.range = LocationFilter{T::kAbsoluteStartGroupEnd, 5, 0, 3};  // groups 5..8
  o.object_id_ranges = {{2, 9}};                                 // objects 2..9
  ASSERT_TRUE(c->session().Fetch(kTrack, o, f).ok());
  ASSERT_TRUE(loop_.RunUntil([&] { return f->done.has_value(); }, "fetch"));
  EXPECT_TRUE(f->done->ok);
  std::vector<Location> want, got;
  for (uint64_t g = 5; g <= 8; ++g) {
    for (uint64_t i = 2; i <= 9; ++i) want.push_back({g, i});
  }
  for (const Obj& x : f->objects) {
    got.push_back(x.loc);
    EXPECT_EQ(x.payload, Payload(x.loc.group, x.loc.object));
    EXPECT_EQ(x.via, DeliveryKind::kFetch);
  }
  EXPECT_EQ(got, want);
}

TEST_F(MoqtE2ETest, NamespaceAnnouncedByOneClientIsDiscoveredByAnother) {
  MoqtClient* a = Connect();
  MoqtClient* b = Connect();
  ASSERT_TRUE(a && b);
  std::optional<std::optional<RequestError>> announced;
  auto id =
      a->session().PublishNamespace({"kvcs-1", "scopeX", "compat", "anchor"},
                                    [&](const std::optional<RequestError>& e) { announced = e; });
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(loop_.RunUntil([&] { return announced.has_value(); }, "PUBLISH_NAMESPACE answer"));
  EXPECT_FALSE(announced->has_value());
  auto ns = std::make_shared<Ns>();
  ASSERT_TRUE(b->session().SubscribeNamespace({"kvcs-1", "scopeX"}, ns).ok());
  ASSERT_TRUE(loop_.RunUntil([&] { return ns->events.size() >= 1; }, "NAMESPACE"));
  EXPECT_TRUE(ns->ok);
  EXPECT_EQ(ns->events[0], std::make_pair(true, TrackNamespace{"compat", "anchor"}));
  // A local track under the prefix appears; another elsewhere does not.
  ASSERT_NE(MakeTrack({{"kvcs-1", "elsewhere"}, "t"}), nullptr);
  ASSERT_NE(MakeTrack({{"kvcs-1", "scopeX", "local"}, "t"}), nullptr);
  ASSERT_TRUE(loop_.RunUntil([&] { return ns->events.size() >= 2; }, "second NAMESPACE"));
  EXPECT_EQ(ns->events[1], std::make_pair(true, TrackNamespace{"local"}));
  // Withdrawn by its publisher: NAMESPACE_DONE.
  ASSERT_TRUE(a->session().PublishNamespaceDone(*id).ok());
  ASSERT_TRUE(loop_.RunUntil([&] { return ns->events.size() >= 3; }, "NAMESPACE_DONE"));
  EXPECT_EQ(ns->events[2], std::make_pair(false, TrackNamespace{"compat", "anchor"}));
}

// A raw QUIC client (ALPN moqt-22) that writes hand-made MOQT bytes.
struct RawClient : transport::SessionVisitor {
  void OnSessionReady() override { ready = true; }
  void OnSessionClosed(const transport::CloseInfo& i) override { closed = i; }
  void OnIncomingBidirectionalStreamAvailable() override {
    while (s->AcceptIncomingBidirectionalStream()) {
    }
  }
  void OnIncomingUnidirectionalStreamAvailable() override {
    while (transport::Stream* st = s->AcceptIncomingUnidirectionalStream()) {
      st->SendStopSending(0);
    }
  }
  void OnDatagramReceived(ByteSpan) override {}
  void OnCanCreateNewOutgoingBidirectionalStream() override {}
  void OnCanCreateNewOutgoingUnidirectionalStream() override {}
  std::unique_ptr<quic::QuicClientSession> s;
  bool ready = false;
  std::optional<transport::CloseInfo> closed;
};

TEST_F(MoqtE2ETest, MalformedInputClosesThatSessionWithProtocolViolationOnly) {
  // A valid SETUP (built by the codec), then hand-written bad bytes.
  moqt::Setup setup;
  setup.options.path = "/raw";
  Bytes setup_bytes = *SerializeControlMessage(setup);
  struct Case {
    const char* name;
    Bytes control_tail;  // appended to SETUP on the control stream
    Bytes data_stream;   // if not empty: a separate unidirectional stream
  };
  std::vector<Case> cases = {
      {"unknown control message type", {0x3F, 0x00, 0x00}, {}},
      {"control message length beyond its body", {0x03, 0x00, 0x40, 0x01}, {}},
      {"invalid subgroup stream type", {}, {0x06, 0x00, 0x00}},
  };
  // A well-behaved subscriber on the same server, kept across the cases.
  MoqtClient* good = Connect();
  ASSERT_NE(good, nullptr);
  auto track = MakeTrack(kTrack);
  auto sub = std::make_shared<Sub>();
  ASSERT_TRUE(good->session().Subscribe(kTrack, {}, sub).ok());
  ASSERT_TRUE(loop_.RunUntil([&] { return sub->ok.has_value(); }, "good SUBSCRIBE_OK"));
  uint64_t group = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    size_t ends_before = ends_.size();
    RawClient raw;
    quic::ClientConfig qc = ClientConfig().quic;
    qc.alpns = {"moqt-22"};
    auto s = quic::QuicClientSession::Connect(loop_.io, qc, &raw);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    raw.s = std::move(*s);
    ASSERT_TRUE(loop_.RunUntil([&] { return raw.ready || raw.closed; }, "raw handshake"));
    ASSERT_TRUE(raw.ready);
    Bytes control = setup_bytes;
    control.insert(control.end(), c.control_tail.begin(), c.control_tail.end());
    transport::Stream* cs = raw.s->OpenOutgoingUnidirectionalStream();
    ASSERT_NE(cs, nullptr);
    ASSERT_TRUE(cs->Write(control, false).ok());
    if (!c.data_stream.empty()) {
      transport::Stream* ds = raw.s->OpenOutgoingUnidirectionalStream();
      ASSERT_NE(ds, nullptr);
      ASSERT_TRUE(ds->Write(c.data_stream, false).ok());
    }
    ASSERT_TRUE(loop_.RunUntil([&] { return raw.closed.has_value(); }, "session closed"));
    EXPECT_EQ(raw.closed->kind, transport::CloseInfo::Kind::kApplication) << raw.closed->ToString();
    EXPECT_EQ(raw.closed->code, static_cast<uint64_t>(SessionError::kProtocolViolation))
        << raw.closed->ToString();
    EXPECT_TRUE(raw.closed->by_peer);
    ASSERT_TRUE(loop_.RunUntil([&] { return ends_.size() == ends_before + 1; }, "server end"));
    const SessionEnd& end = ends_.rbegin()->second;
    EXPECT_FALSE(end.transport.by_peer);
    EXPECT_NE(end.ToString().find("PROTOCOL_VIOLATION"), std::string::npos) << end.ToString();

    // The other session keeps working.
    ASSERT_TRUE(track->StartGroup(group).ok());
    ASSERT_TRUE(track->AppendObject(Payload(group, 0)).ok());
    ++group;
    ASSERT_TRUE(loop_.RunUntil([&] { return sub->Normal().size() == group; }, "good object"));
    EXPECT_EQ(sub->Normal().back().payload, Payload(group - 1, 0));
    EXPECT_FALSE(good->closed());
  }
}

TEST_F(MoqtE2ETest, GracefulShutdownSendsGoAwayAndClosesSessions) {
  ClientCallbacks cb;
  MoqtClient* c = Connect(&cb);
  ASSERT_NE(c, nullptr);
  bool done = false;
  server_->Shutdown(std::chrono::milliseconds(300), [&] { done = true; });
  ASSERT_TRUE(loop_.RunUntil([&] { return cb.goaway; }, "GOAWAY"));
  // New requests are refused locally after GOAWAY.
  EXPECT_FALSE(c->session().Subscribe(kTrack, {}, std::make_shared<Sub>()).ok());
  ASSERT_TRUE(loop_.RunUntil([&] { return c->closed() && done; }, "shutdown done"));
  EXPECT_TRUE(c->end()->handshake_completed);
}

// Minimal transport-only regression test for the stall above (no MOQT): a server opens 12
// unidirectional streams ("x" + FIN) to a client whose max_incoming_uni_streams is 4, opening
// more on OnCanCreateNewOutgoingUnidirectionalStream. The client reads each stream to its FIN at
// once. Expected: 12 streams arrive. (Before the fix: 4 arrived, and the server never got
// OnCanCreateNewOutgoingUnidirectionalStream again.) tests/quic covers the reset and
// STOP_SENDING endings too (QuicE2E.PeerUniStreamCreditReturnedForEveryEnding).
struct UniOpener : transport::SessionVisitor {
  void Open() {
    while (s && opened < 12) {
      transport::Stream* st = s->OpenOutgoingUnidirectionalStream();
      if (!st) return;
      static const uint8_t kX[1] = {'x'};
      (void)st->Write(ByteSpan(kX, 1), true);
      ++opened;
    }
  }
  void OnSessionReady() override {}
  void OnSessionClosed(const transport::CloseInfo&) override { s = nullptr; }
  void OnIncomingBidirectionalStreamAvailable() override {}
  void OnIncomingUnidirectionalStreamAvailable() override {}
  void OnDatagramReceived(ByteSpan) override {}
  void OnCanCreateNewOutgoingBidirectionalStream() override {}
  void OnCanCreateNewOutgoingUnidirectionalStream() override { Open(); }
  transport::Session* s = nullptr;
  int opened = 0;
};
struct UniReader : transport::SessionVisitor {
  void OnSessionReady() override { ready = true; }
  void OnSessionClosed(const transport::CloseInfo&) override { closed = true; }
  void OnIncomingBidirectionalStreamAvailable() override {}
  void OnIncomingUnidirectionalStreamAvailable() override {
    while (transport::Stream* st = s->AcceptIncomingUnidirectionalStream()) {
      uint8_t b[8];
      if (st->Read({b, sizeof(b)}).fin) ++fins;
    }
  }
  void OnDatagramReceived(ByteSpan) override {}
  void OnCanCreateNewOutgoingBidirectionalStream() override {}
  void OnCanCreateNewOutgoingUnidirectionalStream() override {}
  transport::Session* s = nullptr;
  bool ready = false, closed = false;
  int fins = 0;
};

TEST(QuicTransportBug, ServerUniStreamCreditReturns) {
  Loop loop;
  UniOpener opener;
  quic::ServerConfig sc;
  sc.alpns = {"kvcs-uni-credit"};
  sc.cert_file = TestCert("localhost").cert;
  sc.key_file = TestCert("localhost").key;
  sc.on_session = [&](transport::Session& s) {
    opener.s = &s;
    s.SetVisitor(&opener);
    opener.Open();
  };
  auto server = quic::QuicServer::Create(loop.io, sc);
  ASSERT_TRUE(server.ok());
  UniReader reader;
  quic::ClientConfig cc;
  cc.port = (*server)->port();
  cc.alpns = {"kvcs-uni-credit"};
  cc.insecure = true;
  cc.limits.max_incoming_uni_streams = 4;
  cc.limits.idle_timeout = std::chrono::milliseconds(3000);
  auto c = quic::QuicClientSession::Connect(loop.io, cc, &reader);
  ASSERT_TRUE(c.ok());
  reader.s = c->get();
  loop.RunUntil([&] { return reader.fins == 12 || reader.closed; }, "12 unidirectional streams");
  EXPECT_EQ(reader.fins, 12);
  EXPECT_EQ(opener.opened, 12);
  c->reset();
}

}  // namespace
}  // namespace kvcs::moqt
