// secure_delivery_bench: end-to-end verified delivery of a KVCS publication over real QUIC on
// 127.0.0.1, plaintext against secure objects with each suite, in the same run, on three paths:
//   direct      the consumer fetches from the publisher's own MoqtServer;
//   relay cold  through a relay (RelayServer) the publisher announced to (PUBLISH_NAMESPACE):
//               the consumer's request makes the relay subscribe to the publisher, cache the
//               ciphertext and serve the fetch as it fills;
//   relay warm  a second consumer through the same relay, served from its cache.
// One io_context on one thread runs publisher, relay and client, so the rate is what one core
// delivers with QUIC, TLS, MOQT, the relay, decryption and §5.4 verification together.
//
// Shape: 32 layers x 16 blocks x (k + v) of a Llama-3.1-8B block (16 tokens x 8 heads x
// 128 x bf16 = 32 KiB per section): 32 MiB of Data per retrieval (completed, FETCH). Publishing
// (and the publisher's encryption) happens before the clock starts.
//
// Usage: secure_delivery_bench [rounds=3] [paths=direct,cold,warm]
#include <time.h>
#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "common/asio.h"
#include "kvcs_stream/publisher.h"
#include "kvcs_stream/retrieval.h"
#include "moqt_endpoint/moqt_endpoint.h"
#include "quic/tls.h"
#include "relay/relay_server.h"
#include "tensorio/synthetic.h"

namespace kvcs::stream {
namespace {

namespace asio = boost::asio;

void Die(const std::string& what) {
  std::fprintf(stderr, "secure_delivery_bench: %s\n", what.c_str());
  std::exit(1);
}

uint64_t NowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

struct Files {
  std::string cert, key;
};

enum class Path { kDirect, kRelayCold, kRelayWarm };

// CPU seconds of this thread (publisher, relay and consumer all run on it): the cost per core,
// which the load of a shared machine does not inflate as it does the wall clock.
double ThreadCpuS() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

struct Timing {
  double wall_s = 0, cpu_s = 0;
};

// Time to retrieve and verify the whole publication on `path`; `suite` nullopt: plaintext.
Timing OneRetrieval(const Files& f, Path path, std::optional<secure::CipherSuite> suite,
                    uint64_t* bytes) {
  const kvsp::Descriptor d = tensorio::Llama31_8BDescriptor();
  constexpr uint64_t kBlocks = 16;
  kvsp::ScopeKey scope{};
  scope[0] = 9;
  std::vector<uint32_t> tokens(kBlocks * d.block_tokens);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<uint32_t>(i * 7919 % 128000);

  moqt::TrackStore store;
  PublisherConfig pc;
  pc.descriptor = d;
  pc.scope_key = scope;
  if (suite) pc.encryption = ObjectEncryption{*suite, {}, std::nullopt};
  auto pub = Publisher::Create(&store, pc, tokens);
  if (!pub.ok()) Die(pub.status().ToString());
  const uint64_t section = uint64_t{d.block_tokens} * d.kv_heads * d.head_dim * 2;
  Bytes k(kBlocks * section), v(kBlocks * section);
  for (size_t i = 0; i < k.size(); ++i) {
    k[i] = static_cast<uint8_t>(i * 131 + 1);
    v[i] = static_cast<uint8_t>(i * 197 + 3);
  }
  for (uint32_t l = 0; l < d.layers; ++l) {
    Status s = (*pub)->PublishLayer(l, k, v);
    if (!s.ok()) Die(s.ToString());
  }

  asio::io_context io;
  moqt::MoqtServerConfig sc;
  sc.quic.host = "127.0.0.1";
  sc.quic.cert_file = f.cert;
  sc.quic.key_file = f.key;
  auto server = moqt::MoqtServer::Create(io, sc, &store);
  if (!server.ok()) Die(server.status().ToString());
  auto until = [&](const std::function<bool()>& pred) {
    const uint64_t deadline = NowMs() + 60'000;
    while (!pred()) {
      if (NowMs() > deadline) Die("timed out");
      io.run_one_for(std::chrono::milliseconds(20));
      if (io.stopped()) io.restart();
    }
  };
  std::vector<std::unique_ptr<moqt::MoqtClient>> clients;
  auto connect = [&](uint16_t port, moqt::TrackSource* source) -> moqt::MoqtSession& {
    moqt::MoqtClientConfig cc;
    cc.quic.host = "127.0.0.1";
    cc.quic.port = port;
    cc.quic.server_name = "localhost";
    cc.quic.ca_file = f.cert;
    cc.session.path = "/kvcs";
    auto client = moqt::MoqtClient::Connect(io, cc, nullptr, source);
    if (!client.ok()) Die(client.status().ToString());
    moqt::MoqtClient* c = client->get();
    clients.push_back(std::move(*client));
    until([&] { return c->setup_complete() || c->closed(); });
    if (!c->setup_complete()) Die("no SETUP");
    return c->session();
  };
  std::unique_ptr<relay::RelayServer> relay;
  if (path != Path::kDirect) {
    relay::RelayServerConfig rc;
    rc.cert_file = f.cert;
    rc.key_file = f.key;
    auto r = relay::RelayServer::Start(io, rc);
    if (!r.ok()) Die(r.status().ToString());
    relay = std::move(*r);
    bool accepted = false;
    auto id = connect(relay->port(), &store)
                  .PublishNamespace((*pub)->track_namespace(),
                                    [&](const std::optional<moqt::RequestError>& e) {
                                      if (e)
                                        Die("the relay refused PUBLISH_NAMESPACE: " + e->reason);
                                      accepted = true;
                                    });
    if (!id.ok()) Die(id.status().ToString());
    until([&] { return accepted; });
  }

  RetrievalOptions o;
  o.mode = RetrievalMode::kCompleted;
  auto id = CacheIdentity::Compute(d, scope, tokens);
  if (!id.ok()) Die(id.status().ToString());
  o.verifier.identity = *id;
  o.verifier.publication = (*pub)->ns();
  o.verifier.require_signature = false;
  o.compute_ns_per_token_layer = 1'000'000'000;
  o.decryption = ObjectDecryption{secure::ScopeKeyring::FromScopeKey(scope), suite.has_value()};
  const uint16_t port = relay ? relay->port() : (*server)->port();
  auto retrieve = [&]() -> Timing {
    moqt::MoqtSession& session = connect(port, nullptr);
    uint64_t delivered = 0;
    std::optional<RetrievalReport> report;
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = ThreadCpuS();
    auto r = Retrieval::Start(
        &session, o,
        [&](const VerifiedLayer& l) {
          for (const ByteSpan& s : l.k) delivered += s.size();
          for (const ByteSpan& s : l.v) delivered += s.size();
        },
        [&](const RetrievalReport& rep) { report = rep; }, NowMs);
    if (!r.ok()) Die(r.status().ToString());
    until([&] { return report.has_value(); });
    const Timing t{std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                   ThreadCpuS() - c0};
    if (!report->all_from_moqt() || delivered != 2 * kBlocks * d.layers * section) {
      Die("incomplete delivery: " + std::to_string(report->recompute_count()) + " to recompute");
    }
    *bytes = delivered;
    return t;
  };
  if (path == Path::kRelayWarm) retrieve();  // fills the relay's cache
  const Timing t = retrieve();
  clients.clear();  // sessions before the relay and the server
  relay.reset();
  return t;
}

}  // namespace
}  // namespace kvcs::stream

int main(int argc, char** argv) {
  using kvcs::secure::CipherSuite;
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 3;
  auto pem = kvcs::quic::GenerateSelfSignedCert("localhost");
  if (!pem.ok()) kvcs::stream::Die(pem.status().ToString());
  auto dir = std::filesystem::temp_directory_path() /
             ("kvcs_secure_delivery_bench_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  kvcs::stream::Files f{(dir / "cert.pem").string(), (dir / "key.pem").string()};
  std::ofstream(f.cert) << pem->cert_pem;
  std::ofstream(f.key) << pem->key_pem;
  const std::string wanted = argc > 2 ? argv[2] : "direct,cold,warm";
  using kvcs::stream::Path;
  const std::pair<Path, const char*> all_paths[] = {
      {Path::kDirect, "direct"}, {Path::kRelayCold, "cold"}, {Path::kRelayWarm, "warm"}};
  const std::optional<CipherSuite> modes[] = {std::nullopt, CipherSuite::kAes128GcmSha256,
                                              CipherSuite::kAes256GcmSha512};
  const char* names[] = {"plaintext", "aes-128-gcm", "aes-256-gcm"};
  for (const auto& [path, path_name] : all_paths) {
    if (wanted.find(path_name) == std::string::npos) continue;
    double wall[3] = {1e30, 1e30, 1e30}, cpu[3] = {1e30, 1e30, 1e30};
    uint64_t bytes = 0;
    for (int round = 0; round < rounds; ++round) {  // interleaved: load hits every mode alike
      for (int m = 0; m < 3; ++m) {
        const auto t = kvcs::stream::OneRetrieval(f, path, modes[m], &bytes);
        wall[m] = std::min(wall[m], t.wall_s);
        cpu[m] = std::min(cpu[m], t.cpu_s);
      }
    }
    for (int m = 0; m < 3; ++m) {
      std::printf(
          "%-6s %-12s wall %6.1f MB/s (ratio %.3f)  per core %6.1f MB/s (ratio %.3f)  "
          "[%llu bytes verified]\n",
          path_name, names[m], bytes / wall[m] / 1e6, wall[0] / wall[m], bytes / cpu[m] / 1e6,
          cpu[0] / cpu[m], static_cast<unsigned long long>(bytes));
    }
  }
  std::filesystem::remove_all(dir);
  return 0;
}
