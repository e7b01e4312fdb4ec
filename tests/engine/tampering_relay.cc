// kvcs_engine_tampering_relay: a relay that corrupts, for the engine tests. A real Relay
// (src/relay) takes PUBLISH_NAMESPACE from publishers and subscribes to them as usual, but every
// SUBSCRIBE and FETCH is answered through relay::test::TamperingSource: in every track named
// --track, the object at --group/--object (layer/block of a KVCS data track) has one bit flipped.
// Usage: kvcs_engine_tampering_relay [--track k.raw.s0] [--group 1] [--object 1]
//            --listen 127.0.0.1:0
// Prints "listening on moqt://HOST:PORT/" once it serves; runs until SIGTERM/SIGINT.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "common/asio.h"
#include "moqt_endpoint/moqt_endpoint.h"
#include "quic/tls.h"
#include "relay/relay.h"
#include "relay/test_tools/tampering_source.h"

namespace {

uint64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t WallS() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace kvcs;  // NOLINT: a small test program
  std::string track = "k.raw.s0", listen = "127.0.0.1:0";
  uint64_t group = 1, object = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i], v = argv[i + 1];
    if (a == "--track") {
      track = v;
    } else if (a == "--group") {
      group = std::strtoull(v.c_str(), nullptr, 10);
    } else if (a == "--object") {
      object = std::strtoull(v.c_str(), nullptr, 10);
    } else if (a == "--listen") {
      listen = v;
    } else {
      std::cerr << "unknown argument " << a << "\n";
      return 2;
    }
  }
  const size_t colon = listen.rfind(':');
  auto pem = quic::GenerateSelfSignedCert("localhost");
  if (!pem.ok()) {
    std::cerr << pem.status().ToString() << "\n";
    return 1;
  }
  const auto dir =
      std::filesystem::temp_directory_path() / ("kvcs-tamper-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string cert = (dir / "cert.pem").string(), key = (dir / "key.pem").string();
  std::ofstream(cert) << pem->cert_pem;
  std::ofstream(key) << pem->key_pem;

  boost::asio::io_context io;
  relay::RelayOptions ro;
  ro.clock_ms = SteadyMs;
  ro.clock_s = WallS;
  relay::Relay relay(ro);
  size_t flipped = 0;
  relay::test::TamperingSource tamperer(
      &relay, [&](const moqt::Track& t, moqt::PublishedObject& o) {
        if (t.name().name != track || o.location != moqt::Location{group, object}) return;
        Bytes b = *o.payload;
        b[b.size() / 2] ^= 0x10;
        o.payload = std::make_shared<const Bytes>(std::move(b));
        ++flipped;
      });
  moqt::MoqtServerConfig sc;
  sc.quic.host = listen.substr(0, colon);
  sc.quic.port = static_cast<uint16_t>(std::strtoul(listen.c_str() + colon + 1, nullptr, 10));
  sc.quic.cert_file = cert;
  sc.quic.key_file = key;
  auto server = moqt::MoqtServer::Create(
      io, sc, &tamperer,
      [&](const moqt::MoqtServerSessionInfo& i) { return relay.AcceptSession(i.session); });
  if (!server.ok()) {
    std::cerr << server.status().ToString() << "\n";
    return 1;
  }
  boost::asio::steady_timer timer(io);
  std::function<void()> tick = [&] {
    relay.OnTimer();
    timer.expires_after(std::chrono::milliseconds(50));
    timer.async_wait([&](const boost::system::error_code& ec) {
      if (!ec) tick();
    });
  };
  tick();
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code&, int) {
    std::cout << "flipped " << flipped << " object(s)" << std::endl;
    timer.cancel();
    (*server)->Shutdown(std::chrono::milliseconds(200), [&] { io.stop(); });
  });
  std::cout << "tampering relay listening on moqt://" << sc.quic.host << ":" << (*server)->port()
            << "/" << std::endl;
  io.run();
  std::filesystem::remove_all(dir);
  return 0;
}
