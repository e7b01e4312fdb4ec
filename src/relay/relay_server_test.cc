// RelayServer over real QUIC on 127.0.0.1 (in process, one io_context on the test thread):
// malformed input from one peer closes only that peer's session, while a publisher and a
// subscriber on the same relay go on; PUBLISH accepted within a token's grant, refused without
// a token, with a forged or expired one (at setup), with one that expired since (the request),
// and into a full cache (EXCESSIVE_LOAD); a publisher PUBLISHing to a leaf relay whose root then
// serves the whole publication byte-identical, also when the root comes up only after the
// publisher left, and when the PUBLISH joins a track the leaf was already pulling from the
// publisher; a leaf destroyed with an announcement forwarded upstream. The in-memory relay
// tests (relay_test.cc) cover the logic; these cover the server's wiring of sessions. Every wait
// polls the io_context with a bound.
#include "relay/relay_server.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "common/asio.h"
#include "moqt_endpoint/moqt_endpoint.h"
#include "moqt_session/moqt_track_store.h"
#include "quic/client.h"
#include "quic/tls.h"
#include "relay/test_tools/test_signer.h"
#include "transport/test_tools/recording_session_visitor.h"

namespace kvcs::relay {
namespace {

namespace asio = boost::asio;

struct Sub : moqt::SubscribeVisitor {
  void OnSubscribeOk(const moqt::SubscribeOkInfo&) override {}
  void OnObject(const moqt::ReceivedObject& o) override {
    if (o.status != moqt::ObjectStatus::kNormal) return;
    got.insert(o.location);
    bytes[o.location] = Bytes(o.payload.begin(), o.payload.end());
  }
  void OnComplete(const moqt::SubscriptionDone& d) override { done = d; }
  std::set<moqt::Location> got;
  std::map<moqt::Location, Bytes> bytes;
  std::optional<moqt::SubscriptionDone> done;
};

struct Offered : moqt::PublishVisitor {
  void OnPublishResult(const std::optional<moqt::RequestError>& e) override { result = e; }
  void OnPublishDone(bool d) override { delivered = d; }
  std::optional<std::optional<moqt::RequestError>> result;
  std::optional<bool> delivered;
};

struct ClosedCb : moqt::MoqtSessionCallbacks {
  void OnSessionClosed(uint64_t code, const std::string&, bool) override { closed = code; }
  std::optional<uint64_t> closed;
};

// Object (g, o)'s payload: 3000 bytes (more than one QUIC packet) that differ per object.
Bytes ObjectBytes(uint64_t g, uint64_t o) {
  Bytes b(3000);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>((g * 31 + o * 7 + i) % 251);
  return b;
}
void Produce(moqt::Track& t, uint64_t g0, uint64_t g1, uint64_t objects) {
  for (uint64_t g = g0; g < g1; ++g) {
    ASSERT_TRUE(t.StartGroup(g).ok());
    for (uint64_t o = 0; o < objects; ++o) ASSERT_TRUE(t.AppendObject(ObjectBytes(g, o)).ok());
    ASSERT_TRUE(t.EndGroup().ok());
  }
}
std::map<moqt::Location, Bytes> Expected(uint64_t groups, uint64_t objects) {
  std::map<moqt::Location, Bytes> m;
  for (uint64_t g = 0; g < groups; ++g) {
    for (uint64_t o = 0; o < objects; ++o) m[{g, o}] = ObjectBytes(g, o);
  }
  return m;
}
uint64_t Refusals(RelayServer& r, Refusal cause) {
  return r.relay().metrics().refusals[static_cast<int>(cause)].load();
}

// A raw QUIC peer speaking the MOQT ALPN that writes garbage on its control stream.
struct BadPeer : transport::test::RecordingSessionVisitor {
  BadPeer() : RecordingSessionVisitor(nullptr) {}
  void OnSessionReady() override { ready = true; }
  bool ready = false;
};

class RelayServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto pem = quic::GenerateSelfSignedCert("localhost");
    ASSERT_TRUE(pem.ok());
    dir_ = std::filesystem::temp_directory_path() /
           ("kvcs_relay_server_test_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    cert_ = (dir_ / "cert.pem").string();
    key_ = (dir_ / "key.pem").string();
    std::ofstream(cert_) << pem->cert_pem;
    std::ofstream(key_) << pem->key_pem;
    relay_ = StartRelay({});
    ASSERT_NE(relay_, nullptr);
  }
  std::unique_ptr<RelayServer> StartRelay(RelayServerConfig rc) {
    rc.cert_file = cert_;
    rc.key_file = key_;
    auto r = RelayServer::Start(io_, rc);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(*r) : nullptr;
  }
  // A relay whose upstream relay is at `upstream_port` on 127.0.0.1.
  std::unique_ptr<RelayServer> StartLeaf(uint16_t upstream_port) {
    RelayServerConfig rc;
    rc.upstream_url = "moqt://127.0.0.1:" + std::to_string(upstream_port);
    rc.upstream_insecure = true;  // the test certificate names localhost
    return StartRelay(rc);
  }
  void TearDown() override {
    clients_.clear();
    relay_.reset();
    std::filesystem::remove_all(dir_);
  }
  bool RunUntil(const std::function<bool()>& pred) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!pred()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      io_.run_one_for(std::chrono::milliseconds(10));
      if (io_.stopped()) io_.restart();
    }
    return true;
  }
  moqt::MoqtClientConfig ClientConfig(uint16_t port) const {
    moqt::MoqtClientConfig c;
    c.quic.host = "127.0.0.1";
    c.quic.port = port;
    c.quic.server_name = "localhost";
    c.quic.ca_file = cert_;
    return c;
  }
  // A client of relay `to` (default: relay_) with `tokens` in its SETUP; nullptr unless the
  // setup completes.
  moqt::MoqtClient* Connect(moqt::TrackSource* source, RelayServer* to = nullptr,
                            std::vector<moqt::AuthToken> tokens = {},
                            moqt::MoqtSessionCallbacks* cb = nullptr) {
    moqt::MoqtClientConfig cc = ClientConfig((to ? to : relay_.get())->port());
    cc.session.setup_auth_tokens = std::move(tokens);
    auto cl = moqt::MoqtClient::Connect(io_, cc, cb, source);
    EXPECT_TRUE(cl.ok()) << cl.status().ToString();
    if (!cl.ok()) return nullptr;
    moqt::MoqtClient* raw = cl->get();
    clients_.push_back(std::move(*cl));
    EXPECT_TRUE(RunUntil([&] { return raw->setup_complete() || raw->closed(); }));
    return raw->setup_complete() ? raw : nullptr;
  }
  // The MOQT code a relay closes a session with at setup (nullopt: it was not closed).
  std::optional<uint64_t> SetupRefusal(RelayServer& to, std::vector<moqt::AuthToken> tokens) {
    auto cb = std::make_unique<ClosedCb>();
    ClosedCb* raw = cb.get();
    callbacks_.push_back(std::move(cb));
    moqt::MoqtClient* c = Connect(nullptr, &to, std::move(tokens), raw);
    if (c) EXPECT_TRUE(RunUntil([&] { return raw->closed.has_value(); }));
    return raw->closed;
  }
  // A publisher connected to `to` with one track `name` in its store (kept by the fixture).
  struct Pub {
    std::shared_ptr<moqt::Track> track;
    moqt::MoqtClient* client = nullptr;
  };
  Pub NewPublisher(RelayServer* to, const moqt::FullTrackName& name,
                   std::vector<moqt::AuthToken> tokens = {}) {
    stores_.push_back(std::make_unique<moqt::TrackStore>());
    Pub p;
    auto t = stores_.back()->CreateTrack(name);
    EXPECT_TRUE(t.ok());
    if (t.ok()) p.track = *t;
    p.client = Connect(stores_.back().get(), to, std::move(tokens));
    return p;
  }
  // Subscribes `sc` to `name` from {0,0} (Next Object + fill).
  std::shared_ptr<Sub> SubscribeFromStart(moqt::MoqtClient* sc, const moqt::FullTrackName& name) {
    auto sub = std::make_shared<Sub>();
    moqt::SubscribeOptions so;
    so.fill = moqt::LocationFilter{moqt::LocationFilterType::kAbsoluteStart, 0, 0};
    EXPECT_TRUE(sc->session().Subscribe(name, so, sub).ok());
    return sub;
  }
  // PUBLISHes `name` from `pub` and waits for the relay's answer.
  std::shared_ptr<Offered> PublishAndWait(moqt::MoqtClient* pub, const moqt::FullTrackName& name) {
    auto offered = std::make_shared<Offered>();
    EXPECT_TRUE(pub->session().PublishTrack(name, {}, offered).ok());
    EXPECT_TRUE(RunUntil([&] { return offered->result.has_value(); }));
    return offered;
  }
  asio::io_context io_;
  std::filesystem::path dir_;
  std::string cert_, key_;
  std::unique_ptr<RelayServer> relay_;
  std::vector<std::unique_ptr<moqt::TrackStore>> stores_;  // outlive clients_
  std::vector<std::unique_ptr<moqt::MoqtClient>> clients_;
  std::vector<std::unique_ptr<ClosedCb>> callbacks_;  // outlive clients_ (TearDown)
};

TEST_F(RelayServerTest, MalformedInputClosesOnlyThatSession) {
  const moqt::TrackNamespace ns = {"kvcs-1", "scope", "pub1"};
  const moqt::FullTrackName name{ns, "k.raw.s0"};
  moqt::TrackStore store;
  auto track = store.CreateTrack(name);
  ASSERT_TRUE(track.ok());
  moqt::MoqtClient* pub = Connect(&store);
  ASSERT_NE(pub, nullptr);
  std::optional<bool> accepted;
  ASSERT_TRUE(
      pub->session().PublishNamespace(ns, [&](const auto& e) { accepted = !e.has_value(); }).ok());
  ASSERT_TRUE(RunUntil([&] { return accepted.has_value(); }));
  ASSERT_TRUE(*accepted);
  moqt::MoqtClient* sc = Connect(nullptr);
  ASSERT_NE(sc, nullptr);
  auto sub = SubscribeFromStart(sc, name);
  auto produce = [&](uint64_t g) {
    ASSERT_TRUE((*track)->StartGroup(g).ok());
    for (uint8_t o = 0; o < 3; ++o) ASSERT_TRUE((*track)->AppendObject(Bytes(100, o)).ok());
  };
  produce(0);
  ASSERT_TRUE(RunUntil([&] { return sub->got.size() == 3; }));

  // The bad peer: a QUIC connection with the MOQT ALPN whose control stream carries garbage.
  BadPeer bad;
  quic::ClientConfig qc;
  qc.host = "127.0.0.1";
  qc.port = relay_->port();
  qc.server_name = "localhost";
  qc.ca_file = cert_;
  qc.alpns = {std::string(moqt::kMoqtAlpn)};
  auto raw = quic::QuicClientSession::Connect(io_, qc, &bad);
  ASSERT_TRUE(raw.ok()) << raw.status().ToString();
  bad.s = raw->get();
  ASSERT_TRUE(RunUntil([&] { return bad.ready || bad.closed.has_value(); }));
  ASSERT_TRUE(bad.ready);
  transport::Stream* st = (*raw)->OpenOutgoingUnidirectionalStream();
  ASSERT_NE(st, nullptr);
  const uint8_t garbage[] = {0x3f, 0xff, 0xff, 0xff, 0x01, 0x02, 0x03, 0x04};
  ASSERT_TRUE(st->Write(ByteSpan(garbage, sizeof(garbage)), false).ok());
  ASSERT_TRUE(RunUntil([&] { return bad.closed.has_value(); })) << "the bad session stays open";
  EXPECT_NE(bad.closed->code, 0u);

  // Everyone else is served as before.
  produce(1);
  ASSERT_TRUE((*track)->EndTrack().ok());
  ASSERT_TRUE(RunUntil([&] { return sub->done.has_value(); }));
  EXPECT_TRUE(sub->done->track_ended);
  EXPECT_EQ(sub->got.size(), 6u);
  EXPECT_FALSE(pub->closed());
  EXPECT_FALSE(sc->closed());
  raw->reset();
}

// ------------------------------------------------------------------ PUBLISH over real QUIC
const moqt::TrackNamespace kScopeNs = {"kvcs-1", "scope", "pub1"};
// The scope field "scope" as the token names it (KVCS fields are hex).
const std::vector<std::string> kScopeGrant = {"kvcs-1", "73636f7065"};

class RelayServerAuthTest : public RelayServerTest {
 protected:
  void SetUp() override {
    RelayServerTest::SetUp();
    RelayServerConfig rc;
    rc.relay.verifier = signer_.verifier();
    rc.relay.clock_s = [this] { return now_s_; };
    auth_relay_ = StartRelay(rc);
    ASSERT_NE(auth_relay_, nullptr);
  }
  void TearDown() override {
    clients_.clear();
    auth_relay_.reset();
    RelayServerTest::TearDown();
  }
  std::vector<moqt::AuthToken> PublishToken(int64_t exp) {
    return signer_.Token({auth::Action::kPublish}, kScopeGrant, exp);
  }
  int64_t now_s_ = 1'000'000;
  test::TestSigner signer_;
  std::unique_ptr<RelayServer> auth_relay_;
};

TEST_F(RelayServerAuthTest, APublishWithinTheGrantIsAccepted) {
  Pub pub = NewPublisher(auth_relay_.get(), {kScopeNs, "k.raw.s0"}, PublishToken(now_s_ + 60));
  ASSERT_NE(pub.client, nullptr);
  Produce(*pub.track, 0, 2, 2);
  ASSERT_TRUE(pub.track->EndTrack().ok());
  auto offered = PublishAndWait(pub.client, pub.track->name());
  ASSERT_FALSE(offered->result->has_value()) << (*offered->result)->reason;
  ASSERT_TRUE(RunUntil([&] { return offered->delivered.has_value(); }));
  EXPECT_EQ(offered->delivered, true);
  EXPECT_EQ(auth_relay_->relay().metrics().publishes.load(), 1u);
  EXPECT_TRUE(auth_relay_->relay().cache().Contains(kScopeNs));
}

TEST_F(RelayServerAuthTest, NoForgedOrExpiredTokenIsRefusedAtSetup) {
  EXPECT_EQ(SetupRefusal(*auth_relay_, {}),
            static_cast<uint64_t>(moqt::SessionError::kUnauthorized));
  EXPECT_EQ(SetupRefusal(*auth_relay_,
                         signer_.Forged({auth::Action::kPublish}, kScopeGrant, now_s_ + 60)),
            static_cast<uint64_t>(moqt::SessionError::kUnauthorized));
  EXPECT_EQ(SetupRefusal(*auth_relay_, PublishToken(now_s_ - 1)),
            static_cast<uint64_t>(moqt::SessionError::kExpiredAuthToken));
  EXPECT_EQ(Refusals(*auth_relay_, Refusal::kBadToken), 3u);
  EXPECT_EQ(auth_relay_->relay().metrics().publishes.load(), 0u);
}

TEST_F(RelayServerAuthTest, ATokenThatExpiresMidSessionRefusesALaterPublish) {
  Pub pub = NewPublisher(auth_relay_.get(), {kScopeNs, "k.raw.s0"}, PublishToken(now_s_ + 60));
  ASSERT_NE(pub.client, nullptr);
  Produce(*pub.track, 0, 1, 2);
  now_s_ += 61;
  auto offered = PublishAndWait(pub.client, pub.track->name());
  ASSERT_TRUE(offered->result->has_value());
  EXPECT_EQ((*offered->result)->error_code,
            static_cast<uint64_t>(moqt::RequestErrorCode::kExpiredAuthToken));
  ASSERT_TRUE(RunUntil([&] { return offered->delivered.has_value(); }));
  EXPECT_EQ(offered->delivered, false);
  EXPECT_EQ(Refusals(*auth_relay_, Refusal::kBadToken), 1u);
  EXPECT_FALSE(auth_relay_->relay().cache().Contains(kScopeNs));
  EXPECT_FALSE(pub.client->closed());  // a refused request, not a closed session
}

// A publication still being published holds the whole budget (in use: never evicted); a second
// PUBLISH is refused with EXCESSIVE_LOAD and counted cache_full.
TEST_F(RelayServerTest, APublishIntoAFullCacheIsRefusedWithExcessiveLoad) {
  // Publisher A's 2 objects of 3000 bytes in one open group fit; one more object does not.
  const uint64_t per_object = 3000 + moqt::kTrackObjectOverheadBytes;
  const uint64_t a_bytes = 2 * per_object + moqt::kTrackGroupOverheadBytes;
  RelayServerConfig rc;
  rc.relay.cache_bytes = a_bytes + moqt::kTrackGroupOverheadBytes;
  auto small = StartRelay(rc);
  ASSERT_NE(small, nullptr);
  Pub a = NewPublisher(small.get(), {{"kvcs-1", "scope", "a"}, "k.raw.s0"});
  ASSERT_NE(a.client, nullptr);
  auto offered_a = PublishAndWait(a.client, a.track->name());
  ASSERT_FALSE(offered_a->result->has_value());
  ASSERT_TRUE(a.track->StartGroup(0).ok());
  for (uint64_t o = 0; o < 2; ++o) ASSERT_TRUE(a.track->AppendObject(ObjectBytes(0, o)).ok());
  ASSERT_TRUE(RunUntil([&] { return small->relay().cache().budget()->used() == a_bytes; }));

  Pub b = NewPublisher(small.get(), {{"kvcs-1", "scope", "b"}, "k.raw.s0"});
  ASSERT_NE(b.client, nullptr);
  auto offered_b = PublishAndWait(b.client, b.track->name());
  ASSERT_TRUE(offered_b->result->has_value());
  EXPECT_EQ((*offered_b->result)->error_code,
            static_cast<uint64_t>(moqt::RequestErrorCode::kExcessiveLoad));
  EXPECT_EQ(Refusals(*small, Refusal::kCacheFull), 1u);
  EXPECT_FALSE(small->relay().cache().Contains({"kvcs-1", "scope", "b"}));
  EXPECT_TRUE(small->relay().cache().Contains({"kvcs-1", "scope", "a"}));
  EXPECT_LE(small->relay().cache().budget()->used(), rc.relay.cache_bytes);
  clients_.clear();
  small.reset();
}

// ------------------------------------------------------------------------ PUBLISH up a tree
// A publisher PUBLISHes to a leaf relay and exits; a subscriber of the root, which never saw the
// publisher, receives the whole publication byte for byte.
TEST_F(RelayServerTest, APublishToALeafReachesTheRootByteIdentical) {
  auto leaf = StartLeaf(relay_->port());
  ASSERT_NE(leaf, nullptr);
  const moqt::FullTrackName name{{"kvcs-1", "scope", "pub1"}, "k.raw.s0"};
  Pub pub = NewPublisher(leaf.get(), name);
  ASSERT_NE(pub.client, nullptr);
  Produce(*pub.track, 0, 2, 3);  // before the PUBLISH
  auto offered = PublishAndWait(pub.client, name);
  ASSERT_FALSE(offered->result->has_value());
  Produce(*pub.track, 2, 4, 3);  // live
  ASSERT_TRUE(pub.track->EndTrack().ok());
  ASSERT_TRUE(RunUntil([&] { return offered->delivered.has_value(); }));
  ASSERT_EQ(offered->delivered, true);
  pub.client->Close(moqt::SessionError::kNoError, "done");
  ASSERT_TRUE(RunUntil([&] {
    return leaf->relay().metrics().upstream_publishes_delivered.load() == 1;
  })) << "the root never held the leaf's PUBLISH";
  EXPECT_EQ(leaf->relay().metrics().upstream_publishes.load(), 1u);
  EXPECT_EQ(leaf->relay().upstream_publishes_pending(), 0u);

  moqt::MoqtClient* sc = Connect(nullptr);
  ASSERT_NE(sc, nullptr);
  auto sub = SubscribeFromStart(sc, name);
  ASSERT_TRUE(RunUntil([&] { return sub->done.has_value(); }));
  EXPECT_TRUE(sub->done->track_ended);
  EXPECT_TRUE(sub->bytes == Expected(4, 3)) << sub->bytes.size() << " objects";
  EXPECT_EQ(relay_->relay().metrics().upstream_requests.load(), 0u);  // the root's own copy
  clients_.clear();
  leaf.reset();
}

// A subscriber of the leaf asks for the track first, so the leaf pulls it from the publisher
// (which announced its namespace there); the publisher's PUBLISH then joins that track at the
// leaf, and still reaches the root, which serves the whole publication from its own copy.
TEST_F(RelayServerTest, APublishJoiningATrackTheLeafIsPullingReachesTheRoot) {
  auto leaf = StartLeaf(relay_->port());
  ASSERT_NE(leaf, nullptr);
  const moqt::FullTrackName name{{"kvcs-1", "scope", "pub1"}, "k.raw.s0"};
  Pub pub = NewPublisher(leaf.get(), name);
  ASSERT_NE(pub.client, nullptr);
  std::optional<bool> announced;
  ASSERT_TRUE(pub.client->session()
                  .PublishNamespace(name.track_namespace,
                                    [&](const auto& e) { announced = !e.has_value(); })
                  .ok());
  ASSERT_TRUE(RunUntil([&] { return announced.has_value(); }));
  ASSERT_EQ(announced, true);
  Produce(*pub.track, 0, 1, 3);
  moqt::MoqtClient* early = Connect(nullptr, leaf.get());
  ASSERT_NE(early, nullptr);
  auto early_sub = SubscribeFromStart(early, name);
  ASSERT_TRUE(RunUntil([&] { return early_sub->got.size() == 3; }));
  EXPECT_EQ(leaf->relay().metrics().upstream_requests.load(), 1u);  // pulled from the publisher
  auto offered = PublishAndWait(pub.client, name);
  ASSERT_FALSE(offered->result->has_value());
  EXPECT_EQ(leaf->relay().metrics().publish_joins.load(), 1u);
  Produce(*pub.track, 1, 3, 3);
  ASSERT_TRUE(pub.track->EndTrack().ok());
  ASSERT_TRUE(RunUntil([&] { return offered->delivered.has_value(); }));
  ASSERT_EQ(offered->delivered, true);
  pub.client->Close(moqt::SessionError::kNoError, "done");
  ASSERT_TRUE(RunUntil([&] {
    return leaf->relay().metrics().upstream_publishes_delivered.load() == 1;
  })) << "the root never held the leaf's PUBLISH";
  EXPECT_EQ(leaf->relay().metrics().upstream_publishes.load(), 1u);
  ASSERT_TRUE(RunUntil([&] { return early_sub->done.has_value(); }));
  EXPECT_TRUE(early_sub->bytes == Expected(3, 3)) << early_sub->bytes.size() << " objects";

  moqt::MoqtClient* sc = Connect(nullptr);
  ASSERT_NE(sc, nullptr);
  auto sub = SubscribeFromStart(sc, name);
  ASSERT_TRUE(RunUntil([&] { return sub->done.has_value(); }));
  EXPECT_TRUE(sub->done->track_ended);
  EXPECT_TRUE(sub->bytes == Expected(3, 3)) << sub->bytes.size() << " objects";
  EXPECT_EQ(relay_->relay().metrics().upstream_requests.load(), 0u);  // the root's own copy
  clients_.clear();
  leaf.reset();
}

// The leaf's root is not up yet when the publisher PUBLISHes and leaves: the leaf holds the
// track, pending, and PUBLISHes it on once its upstream link reaches the root (RelayServer
// reconnects), whose subscriber then gets all of it.
TEST_F(RelayServerTest, ALeafHoldsAPublishUntilItsRootIsUpThenDeliversIt) {
  uint16_t root_port = 0;
  {
    auto probe = StartRelay({});  // a free port for the root, closed again
    ASSERT_NE(probe, nullptr);
    root_port = probe->port();
  }
  auto leaf = StartLeaf(root_port);
  ASSERT_NE(leaf, nullptr);
  const moqt::FullTrackName name{{"kvcs-1", "scope", "pub1"}, "k.raw.s0"};
  Pub pub = NewPublisher(leaf.get(), name);
  ASSERT_NE(pub.client, nullptr);
  Produce(*pub.track, 0, 2, 3);
  ASSERT_TRUE(pub.track->EndTrack().ok());
  auto offered = PublishAndWait(pub.client, name);
  ASSERT_TRUE(RunUntil([&] { return offered->delivered.has_value(); }));
  ASSERT_EQ(offered->delivered, true);
  pub.client->Close(moqt::SessionError::kNoError, "done");
  EXPECT_EQ(leaf->relay().upstream_publishes_pending(), 1u);
  EXPECT_EQ(leaf->relay().metrics().upstream_publishes_delivered.load(), 0u);

  RelayServerConfig rc;
  rc.port = root_port;
  auto root = StartRelay(rc);
  ASSERT_NE(root, nullptr);
  ASSERT_TRUE(RunUntil([&] {
    return leaf->relay().metrics().upstream_publishes_delivered.load() == 1;
  })) << "the leaf never delivered its pending PUBLISH";
  EXPECT_EQ(leaf->relay().upstream_publishes_pending(), 0u);
  moqt::MoqtClient* sc = Connect(nullptr, root.get());
  ASSERT_NE(sc, nullptr);
  auto sub = SubscribeFromStart(sc, name);
  ASSERT_TRUE(RunUntil([&] { return sub->done.has_value(); }));
  EXPECT_TRUE(sub->done->track_ended);
  EXPECT_TRUE(sub->bytes == Expected(2, 3)) << sub->bytes.size() << " objects";
  clients_.clear();
  leaf.reset();
  root.reset();
}

// ~RelayServer of a leaf with a publisher's announcement forwarded upstream: the upstream
// session goes first, and the Relay must not use it afterwards (the publisher's RelayPeer
// withdraws its announcement as the sessions go). Under valgrind or ASan the old teardown read
// the freed upstream session here.
TEST_F(RelayServerTest, ALeafIsDestroyedWithAnAnnouncementForwardedUpstream) {
  auto leaf = StartLeaf(relay_->port());
  ASSERT_NE(leaf, nullptr);
  moqt::TrackStore store;
  moqt::MoqtClient* pub = Connect(&store, leaf.get());
  ASSERT_NE(pub, nullptr);
  const moqt::TrackNamespace ns = {"kvcs-1", "scope", "pub1"};
  std::optional<bool> accepted;
  ASSERT_TRUE(
      pub->session().PublishNamespace(ns, [&](const auto& e) { accepted = !e.has_value(); }).ok());
  ASSERT_TRUE(RunUntil(
      [&] { return accepted.has_value() && relay_->relay().metrics().announcements.load() == 1; }));
  ASSERT_EQ(accepted, true);
  leaf.reset();  // the publisher is still connected
  // The leaf's link told the root as it went: the root withdrew what came through it.
  ASSERT_TRUE(RunUntil([&] { return relay_->relay().metrics().announcements.load() == 0; }));
}

}  // namespace
}  // namespace kvcs::relay
