// RelayServer over real QUIC on 127.0.0.1 (in process, one io_context on the test thread):
// malformed input from one peer closes only that peer's session, while a publisher and a
// subscriber on the same relay go on. The in-memory relay tests (relay_test.cc) cover the logic;
// this one covers the server's wiring of sessions. Every wait polls the io_context with a bound.
#include "relay/relay_server.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>

#include "common/asio.h"
#include "moqt_endpoint/moqt_endpoint.h"
#include "moqt_session/moqt_track_store.h"
#include "quic/client.h"
#include "quic/tls.h"
#include "transport/test_tools/recording_session_visitor.h"

namespace kvcs::relay {
namespace {

namespace asio = boost::asio;

struct Sub : moqt::SubscribeVisitor {
  void OnSubscribeOk(const moqt::SubscribeOkInfo&) override {}
  void OnObject(const moqt::ReceivedObject& o) override {
    if (o.status == moqt::ObjectStatus::kNormal) got.insert(o.location);
  }
  void OnComplete(const moqt::SubscriptionDone& d) override { done = d; }
  std::set<moqt::Location> got;
  std::optional<moqt::SubscriptionDone> done;
};

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
    RelayServerConfig rc;
    rc.cert_file = cert_;
    rc.key_file = key_;
    auto r = RelayServer::Start(io_, rc);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    relay_ = std::move(*r);
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
  moqt::MoqtClientConfig ClientConfig() const {
    moqt::MoqtClientConfig c;
    c.quic.host = "127.0.0.1";
    c.quic.port = relay_->port();
    c.quic.server_name = "localhost";
    c.quic.ca_file = cert_;
    return c;
  }
  moqt::MoqtClient* Connect(moqt::TrackSource* source) {
    auto cl = moqt::MoqtClient::Connect(io_, ClientConfig(), nullptr, source);
    EXPECT_TRUE(cl.ok()) << cl.status().ToString();
    if (!cl.ok()) return nullptr;
    moqt::MoqtClient* raw = cl->get();
    clients_.push_back(std::move(*cl));
    EXPECT_TRUE(RunUntil([&] { return raw->setup_complete() || raw->closed(); }));
    EXPECT_TRUE(raw->setup_complete());
    return raw;
  }
  asio::io_context io_;
  std::filesystem::path dir_;
  std::string cert_, key_;
  std::unique_ptr<RelayServer> relay_;
  std::vector<std::unique_ptr<moqt::MoqtClient>> clients_;
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
  auto sub = std::make_shared<Sub>();
  moqt::SubscribeOptions so;
  so.fill = moqt::LocationFilter{moqt::LocationFilterType::kAbsoluteStart, 0, 0};
  ASSERT_TRUE(sc->session().Subscribe(name, so, sub).ok());
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

}  // namespace
}  // namespace kvcs::relay
