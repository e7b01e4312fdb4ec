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
#include "tests/quic/quic_test_support.h"

namespace kvcs::moqt {
namespace {

namespace asio = boost::asio;
using Packet = std::vector<uint8_t>;

// Non-blocking UDP sockets on 127.0.0.x, each on its own ephemeral port; closed at the end.
class RawSockets {
 public:
  ~RawSockets() { CloseAll(); }
  void CloseAll() {
    for (int fd : fds_) close(fd);
    fds_.clear();
  }
  // A socket bound to `ip`:0; -1 on failure.
  int Open(const char* ip) {
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    if (fd < 0) return -1;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    inet_pton(AF_INET, ip, &a.sin_addr);
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      close(fd);
      return -1;
    }
    fds_.push_back(fd);
    return fd;
  }
  static uint16_t Port(int fd) {
    sockaddr_in a{};
    socklen_t len = sizeof(a);
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    return ntohs(a.sin_port);
  }
  static void Send(int fd, uint16_t port, const Packet& p) {
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    sendto(fd, p.data(), p.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof(to));
  }

 private:
  std::vector<int> fds_;
};

// 1200 bytes that parse as a QUIC v1 Initial (random CIDs, no token) but decrypt to nothing.
Packet JunkInitial(std::mt19937& rng) {
  Packet p(1200);
  for (auto& b : p) b = static_cast<uint8_t>(rng());
  p[0] = 0xc3;  // long header, fixed bit, Initial, 4-byte packet number
  p[1] = p[2] = p[3] = 0;
  p[4] = 1;   // version 1
  p[5] = 8;   // DCID length (8 random bytes follow)
  p[14] = 8;  // SCID length
  p[23] = 0;  // token length
  constexpr size_t kRest = 1200 - 26;
  p[24] = static_cast<uint8_t>(0x40 | (kRest >> 8));
  p[25] = static_cast<uint8_t>(kRest & 0xff);
  return p;
}

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
    RawSockets hole;
    int fd = hole.Open("127.0.0.1");
    EXPECT_GE(fd, 0);
    std::vector<std::unique_ptr<MoqtClient>> clients;
    for (size_t i = 0; i < n; ++i) {
      auto c = MoqtClient::Connect(loop_.io, ClientConfig(RawSockets::Port(fd)), nullptr);
      EXPECT_TRUE(c.ok());
      if (c.ok()) clients.push_back(std::move(*c));
    }
    std::map<Packet, Packet> by_dcid;
    loop_.RunUntil(
        [&] {
          uint8_t buf[2048];
          ssize_t r;
          while ((r = recv(fd, buf, sizeof(buf), 0)) > 0) {
            if (r < 1200 || (buf[0] & 0xf0) != 0xc0 || buf[5] > 20) continue;  // Initial only
            Packet dcid(buf + 6, buf + 6 + buf[5]);
            by_dcid.emplace(dcid, Packet(buf, buf + r));
          }
          return by_dcid.size() >= n;
        },
        "captured Initials");
    for (auto& c : clients) c->transport().Abandon();
    clients.clear();
    std::vector<Packet> out;
    for (auto& [dcid, p] : by_dcid) out.push_back(p);
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
