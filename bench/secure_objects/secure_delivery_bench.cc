// secure_delivery_bench: end-to-end verified delivery of a KVCS publication over real QUIC on
// 127.0.0.1 (publisher serving directly; no relay yet), plaintext against secure objects with each
// suite, in the same run. One io_context on one thread runs server and client, so the rate is
// what one core delivers with QUIC, TLS, MOQT, decryption and §5.4 verification together.
//
// Shape: 32 layers x 16 blocks x (k + v) of a Llama-3.1-8B block (16 tokens x 8 heads x
// 128 x bf16 = 32 KiB per section): 32 MiB of Data per retrieval (completed, FETCH). Publishing
// (and the publisher's encryption) happens before the clock starts.
//
// Usage: secure_delivery_bench [rounds=3]
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

// Seconds to retrieve and verify the whole publication; `suite` nullopt: plaintext.
double OneRetrieval(const Files& f, std::optional<secure::CipherSuite> suite, uint64_t* bytes) {
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
  moqt::MoqtClientConfig cc;
  cc.quic.host = "127.0.0.1";
  cc.quic.port = (*server)->port();
  cc.quic.server_name = "localhost";
  cc.quic.ca_file = f.cert;
  cc.session.path = "/kvcs";
  auto client = moqt::MoqtClient::Connect(io, cc, nullptr);
  if (!client.ok()) Die(client.status().ToString());
  auto until = [&](const std::function<bool()>& pred) {
    const uint64_t deadline = NowMs() + 60'000;
    while (!pred()) {
      if (NowMs() > deadline) Die("timed out");
      io.run_one_for(std::chrono::milliseconds(20));
      if (io.stopped()) io.restart();
    }
  };
  until([&] { return (*client)->setup_complete() || (*client)->closed(); });
  if (!(*client)->setup_complete()) Die("no SETUP");

  RetrievalOptions o;
  o.mode = RetrievalMode::kCompleted;
  auto id = CacheIdentity::Compute(d, scope, tokens);
  if (!id.ok()) Die(id.status().ToString());
  o.verifier.identity = *id;
  o.verifier.publication = (*pub)->ns();
  o.verifier.require_signature = false;
  o.compute_ns_per_token_layer = 1'000'000'000;
  o.decryption = ObjectDecryption{secure::ScopeKeyring::FromScopeKey(scope), suite.has_value()};
  uint64_t delivered = 0;
  std::optional<RetrievalReport> report;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = Retrieval::Start(
      &(*client)->session(), o,
      [&](const VerifiedLayer& l) {
        for (const ByteSpan& s : l.k) delivered += s.size();
        for (const ByteSpan& s : l.v) delivered += s.size();
      },
      [&](const RetrievalReport& rep) { report = rep; }, NowMs);
  if (!r.ok()) Die(r.status().ToString());
  until([&] { return report.has_value(); });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!report->all_from_moqt() || delivered != 2 * kBlocks * d.layers * section) {
    Die("incomplete delivery: " + std::to_string(report->recompute_count()) + " to recompute");
  }
  *bytes = delivered;
  return s;
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
  const std::optional<CipherSuite> modes[] = {std::nullopt, CipherSuite::kAes128GcmSha256,
                                              CipherSuite::kAes256GcmSha512};
  const char* names[] = {"plaintext", "aes-128-gcm", "aes-256-gcm"};
  double best[3] = {1e30, 1e30, 1e30};
  uint64_t bytes = 0;
  for (int round = 0; round < rounds; ++round) {  // interleaved: load hits every mode alike
    for (int m = 0; m < 3; ++m) {
      best[m] = std::min(best[m], kvcs::stream::OneRetrieval(f, modes[m], &bytes));
    }
  }
  for (int m = 0; m < 3; ++m) {
    std::printf("%-12s %6.1f MB/s verified delivery (%.3f s for %llu bytes), ratio %.3f\n",
                names[m], bytes / best[m] / 1e6, best[m], static_cast<unsigned long long>(bytes),
                best[0] / best[m]);
  }
  std::filesystem::remove_all(dir);
  return 0;
}
