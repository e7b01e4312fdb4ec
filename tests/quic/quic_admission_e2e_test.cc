// The QUIC server's admission (quic/quic_admission.h) under a flood, over 127.0.0.1: raw UDP
// sockets, each bound to a fresh source port, send real client Initials (captured from MOQT
// clients pointed at a black hole, so every one opens a real half-open handshake on the server)
// and junk packets that parse as Initials, while a well-behaved MoqtClient connects, subscribes
// and receives every object. Server and clients share one io_context driven by the test thread;
// every wait is bounded (ClientLoop::RunUntil, one deadline per test) and the floods are bounded in
// count; no sleeps.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <random>

#include "common/asio.h"
#include "moqt_endpoint/moqt_endpoint.h"
#include "moqt_session/moqt_track_store.h"
#include "quic/server.h"
#include "quic/test_tools/initial_flood.h"
#include "tests/quic/quic_test_support.h"

namespace kvcs::moqt {
namespace {

namespace asio = boost::asio;
using quic::test::JunkInitial;
using quic::test::Packet;
using quic::test::RawSockets;

class QuicAdmissionE2ETest : public ::testing::Test {
 protected:
  void StartServer(const std::function<void(quic::ServerConfig&)>& tweak) {
    const auto& cert = quic::test::TestCert("localhost");
    MoqtServerConfig cfg;
    cfg.quic.host = "127.0.0.1";
    cfg.quic.cert_file = cert.cert;
    cfg.quic.key_file = cert.key;
    tweak(cfg.quic);
    auto s = MoqtServer::Create(loop_.io, cfg, &store_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
    auto t = store_.CreateTrack(kTrack);
    ASSERT_TRUE(t.ok());
    track_ = *t;
    for (uint64_t g = 0; g < kGroups; ++g) {
      ASSERT_TRUE(track_->StartGroup(g).ok());
      for (uint64_t o = 0; o < kObjects; ++o) {
        std::string s = "g" + std::to_string(g) + "o" + std::to_string(o);
        ASSERT_TRUE(track_->AppendObject(Bytes(s.begin(), s.end())).ok());
      }
      ASSERT_TRUE(track_->EndGroup().ok());
    }
  }

  MoqtClientConfig ClientConfig(uint16_t port) {
    MoqtClientConfig c;
    c.quic.host = "127.0.0.1";
    c.quic.port = port;
    c.quic.server_name = "localhost";
    c.quic.ca_file = quic::test::TestCert("localhost").cert;
    return c;
  }

  // `n` real client Initials with distinct DCIDs, from MOQT clients aimed at a black hole.
  std::vector<Packet> CaptureInitials(size_t n) {
    std::vector<std::unique_ptr<MoqtClient>> clients;
    auto out = quic::test::CaptureInitials(
        n,
        [&](uint16_t port) {
          for (size_t i = 0; i < n; ++i) {
            auto c = MoqtClient::Connect(loop_.io, ClientConfig(port), nullptr);
            EXPECT_TRUE(c.ok());
            if (c.ok()) clients.push_back(std::move(*c));
          }
        },
        [&](const std::function<bool()>& pred) { loop_.RunUntil(pred, "captured Initials"); });
    for (auto& c : clients) c->transport().Abandon();
    return out;
  }

  std::string StatsText() {
    quic::ServerStats s = server_->transport_stats();
    const quic::AdmissionMetrics& m = s.admission;
    return "live " + std::to_string(s.live_connections) + " handshakes " +
           std::to_string(s.handshakes_in_progress) + " admitted " + std::to_string(m.admitted) +
           " retry_load " + std::to_string(m.retry_load) + " retry_address " +
           std::to_string(m.retry_address) + " evicted " + std::to_string(m.evicted_handshakes) +
           " evicted_address " + std::to_string(m.evicted_address_handshakes) + " refused " +
           std::to_string(s.connections_refused) + " failures " +
           std::to_string(s.handshake_failures) + " dropped " + std::to_string(s.datagrams_dropped);
  }

  // Connects the well-behaved client (calling `flood` once per loop turn until it is in),
  // subscribes and checks that it receives every object.
  void WellBehavedClientReceivesEverything(const std::function<void()>& flood) {
    auto c = MoqtClient::Connect(loop_.io, ClientConfig(server_->port()), nullptr);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    MoqtClient& client = **c;
    ASSERT_TRUE(loop_.RunUntil(
        [&] {
          flood();
          return client.setup_complete() || client.closed();
        },
        "the well-behaved client's SETUP"))
        << StatsText();
    ASSERT_TRUE(client.setup_complete())
        << (client.end() ? client.end()->ToString() : "not closed") << "; " << StatsText();
    struct Sub : SubscribeVisitor {
      void OnObject(const ReceivedObject& o) override {
        if (o.status == ObjectStatus::kNormal) ++objects;
      }
      void OnComplete(const SubscriptionDone& d) override { done = true; }
      size_t objects = 0;
      bool done = false;
    };
    auto sub = std::make_shared<Sub>();
    SubscribeOptions opts;
    opts.fill = LocationFilter{LocationFilterType::kAbsoluteStart, 0, 0, 0};  // all, as fill
    ASSERT_TRUE(client.session().Subscribe(kTrack, opts, sub).ok());
    ASSERT_TRUE(loop_.RunUntil(
        [&] {
          flood();
          return sub->objects >= kGroups * kObjects || client.closed();
        },
        "every object"));
    EXPECT_EQ(sub->objects, kGroups * kObjects);
  }

  static inline const FullTrackName kTrack{{"kvcs-1", "flood"}, "layer-data"};
  static constexpr uint64_t kGroups = 4, kObjects = 16;
  quic::test::ClientLoop loop_{std::chrono::seconds(30)};  // the whole test's deadline
  TrackStore store_;
  std::shared_ptr<Track> track_;
  std::unique_ptr<MoqtServer> server_;
};

// A consumer host opening 100 sessions at once from one address, with the default limits: the
// ones past max_handshakes_per_address (32) answer a Retry and, validated, are admitted while
// the server is not under load; every one completes its SETUP.
TEST_F(QuicAdmissionE2ETest, AHundredSessionsAtOnceFromOneAddressAllConnectWithDefaults) {
  StartServer([](quic::ServerConfig&) {});
  std::vector<std::unique_ptr<MoqtClient>> clients;
  for (int i = 0; i < 100; ++i) {
    auto c = MoqtClient::Connect(loop_.io, ClientConfig(server_->port()), nullptr);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    clients.push_back(std::move(*c));
  }
  auto settled = [&] {
    size_t n = 0;
    for (auto& c : clients) n += c->setup_complete() || c->closed();
    return n;
  };
  ASSERT_TRUE(loop_.RunUntil([&] { return settled() == clients.size(); }, "100 SETUPs"))
      << settled() << " settled; " << StatsText();
  size_t complete = 0;
  for (auto& c : clients) complete += c->setup_complete();
  EXPECT_EQ(complete, 100u) << StatsText();
  EXPECT_GT(server_->transport_stats().admission.retry_address, 0u);
  EXPECT_EQ(server_->transport_stats().connections_refused, 0u) << StatsText();
}

// Half-open handshakes from three addresses (many ports each) and junk Initials: the address
// limit sends the flooders to Retry, the load switches Retry on for everyone; the well-behaved
// client answers its Retry and, validated, replaces one of its address's half-open handshakes.
TEST_F(QuicAdmissionE2ETest, RetryUnderLoadAndPerAddressLimitsLetAWellBehavedClientIn) {
  StartServer([](quic::ServerConfig& c) {
    c.max_connections = 64;
    c.admission.max_connections_per_address = 48;
    c.admission.max_handshakes_per_address = 8;
    c.admission.retry_on_handshakes = 16;
    c.admission.retry_off_handshakes = 8;
    c.admission.handshake_deadline = std::chrono::seconds(60);  // no rescue by expiry
  });
  std::vector<Packet> initials = CaptureInitials(42);
  ASSERT_EQ(initials.size(), 42u);
  RawSockets flood;
  std::mt19937 rng(19);
  const char* ips[] = {"127.0.0.1", "127.0.0.2", "127.0.0.3"};
  for (size_t i = 0; i < initials.size(); ++i) {
    int fd = flood.Open(ips[i / 14]);
    ASSERT_GE(fd, 0) << ips[i / 14];
    RawSockets::Send(fd, server_->port(), initials[i]);
  }
  ASSERT_TRUE(loop_.RunUntil([&] { return server_->transport_stats().retry_on; }, "Retry on"));
  // Junk Initials from fresh ports of 127.0.0.1 keep coming while the client connects.
  RawSockets junk_ports;
  size_t junk = 0;
  auto more_junk = [&] {
    for (int i = 0; i < 4 && junk < 2000; ++i, ++junk) {
      int fd = junk_ports.Open("127.0.0.1");
      if (fd >= 0) RawSockets::Send(fd, server_->port(), JunkInitial(rng));
      if (junk % 64 == 63) junk_ports.CloseAll();  // bounds the open descriptors
    }
  };
  WellBehavedClientReceivesEverything(more_junk);
  quic::ServerStats s = server_->transport_stats();
  EXPECT_GT(junk, 0u);
  EXPECT_GE(s.admission.retry_address, 1u);
  EXPECT_GE(s.admission.retry_load, 1u);
  EXPECT_GE(s.admission.retry_mode_on, 1u);
  EXPECT_GE(s.admission.evicted_address_handshakes, 1u);
  EXPECT_GE(s.retries_sent, s.admission.retry_load);
  EXPECT_LE(s.handshakes_in_progress, 16u + 8u);
  EXPECT_EQ(s.connections_accepted, 1u);
}

// Without Retry: half-open handshakes from many ports of 127.0.0.1 fill the table, and keep
// reopening; at the cap each newcomer replaces the oldest half-open one, so the well-behaved
// client gets in (and stays in: established connections are never evicted).
TEST_F(QuicAdmissionE2ETest, AtTheCapTheOldestHalfOpenHandshakeMakesRoom) {
  StartServer([](quic::ServerConfig& c) {
    c.max_connections = 32;
    c.admission.max_connections_per_address = 1000;
    c.admission.max_handshakes_per_address = 1000;
    c.admission.retry_on_handshakes = 1000;
    c.admission.handshake_deadline = std::chrono::seconds(60);
  });
  std::vector<Packet> initials = CaptureInitials(48);
  ASSERT_EQ(initials.size(), 48u);
  RawSockets flood;
  std::vector<int> fds;
  for (size_t i = 0; i < initials.size(); ++i) fds.push_back(flood.Open("127.0.0.1"));
  for (size_t i = 0; i < initials.size(); ++i)
    RawSockets::Send(fds[i], server_->port(), initials[i]);
  ASSERT_TRUE(
      loop_.RunUntil([&] { return server_->transport_stats().admission.evicted_handshakes >= 16; },
                     "a full table"));
  // Replaying an evicted handshake's Initial opens it again: a flood that keeps reopening, one
  // every 4 loop turns. (Eviction alone lets a newcomer in while the flood opens fewer than
  // max_connections handshakes in one handshake time; a faster flood is what Retry under load,
  // off here, is for.)
  size_t sent = initials.size(), turns = 0;
  auto reopen = [&] {
    if (sent >= 4000 || ++turns % 4 != 0) return;
    RawSockets::Send(fds[sent % fds.size()], server_->port(), initials[sent % initials.size()]);
    ++sent;
  };
  WellBehavedClientReceivesEverything(reopen);
  quic::ServerStats s = server_->transport_stats();
  EXPECT_GT(sent, initials.size());  // the flood went on while the client connected
  EXPECT_GT(s.admission.evicted_handshakes, 16u);
  EXPECT_EQ(s.admission.refused_full, 0u);
  EXPECT_EQ(s.connections_accepted, 1u);
  EXPECT_LE(s.live_connections, 32u + 16u);  // plus some in their closing period
}

}  // namespace
}  // namespace kvcs::moqt
