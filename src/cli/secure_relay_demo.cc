// `kvcs demo --encrypt`: a relay holding only ciphertext (secure_relay_demo.h).
#include "cli/secure_relay_demo.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
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

namespace kvcs::cli {
namespace {

namespace asio = boost::asio;

uint64_t SteadyMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// Everything the demo runs on one io_context: clients and their waits.
class Loop {
 public:
  Loop(asio::io_context& io, std::string ca) : io_(io), ca_(std::move(ca)) {}
  Status Until(const std::function<bool()>& pred, const char* what) {
    const uint64_t deadline = SteadyMs() + 60'000;
    while (!pred()) {
      if (SteadyMs() > deadline) return Status{Code::kUnavailable, what, 0};
      io_.run_one_for(std::chrono::milliseconds(20));
      if (io_.stopped()) io_.restart();
    }
    return Status::Ok();
  }
  Result<moqt::MoqtSession*> Connect(uint16_t port, moqt::TrackSource* source) {
    moqt::MoqtClientConfig cc;
    cc.quic.host = "127.0.0.1";
    cc.quic.port = port;
    cc.quic.server_name = "localhost";
    cc.quic.ca_file = ca_;
    cc.session.path = "/kvcs";
    KVCS_ASSIGN_OR_RETURN(auto client, moqt::MoqtClient::Connect(io_, cc, nullptr, source));
    moqt::MoqtClient* c = client.get();
    clients_.push_back(std::move(client));
    KVCS_RETURN_IF_ERROR(
        Until([&] { return c->setup_complete() || c->closed(); }, "MOQT SETUP timed out"));
    if (!c->setup_complete()) return Status{Code::kUnavailable, "MOQT SETUP failed", 0};
    return &c->session();
  }
  void CloseAll() { clients_.clear(); }

 private:
  asio::io_context& io_;
  std::string ca_;
  std::vector<std::unique_ptr<moqt::MoqtClient>> clients_;
};

}  // namespace

Status RunSecureRelayDemo(const SecureRelayDemoOptions& options, std::ostream& out) {
  const kvsp::Descriptor d = tensorio::Llama31_8BDescriptor();
  const uint64_t blocks = std::max<uint32_t>(options.blocks, 1);
  kvsp::ScopeKey scope{};
  for (size_t i = 0; i < scope.size(); ++i) scope[i] = static_cast<uint8_t>(0xA5 ^ (i * 29));
  std::vector<uint32_t> tokens(blocks * d.block_tokens);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<uint32_t>(i * 7919 % 128000);

  // The KV (one buffer reused for every layer, pseudo-random so samples are unique).
  const uint64_t section = uint64_t{d.block_tokens} * d.kv_heads * d.head_dim * 2;
  Bytes k(blocks * section), v(blocks * section);
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (Bytes* b : {&k, &v}) {
    for (uint8_t& byte : *b) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      byte = static_cast<uint8_t>(x);
    }
  }

  const auto dir = std::filesystem::temp_directory_path() /
                   ("kvcs_demo_secure_relay_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  struct Cleanup {
    std::filesystem::path p;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(p, ec);
    }
  } cleanup{dir};
  KVCS_ASSIGN_OR_RETURN(auto pem, quic::GenerateSelfSignedCert("localhost"));
  const std::string cert = (dir / "cert.pem").string(), key = (dir / "key.pem").string();
  std::ofstream(cert) << pem.cert_pem;
  std::ofstream(key) << pem.key_pem;

  moqt::TrackStore store;
  stream::PublisherConfig pc;
  pc.descriptor = d;
  pc.scope_key = scope;
  pc.encryption = stream::ObjectEncryption{options.suite, {}, std::nullopt};
  KVCS_ASSIGN_OR_RETURN(auto pub, stream::Publisher::Create(&store, pc, tokens));
  for (uint32_t l = 0; l < d.layers; ++l) KVCS_RETURN_IF_ERROR(pub->PublishLayer(l, k, v));

  asio::io_context io;
  Loop loop(io, cert);
  relay::RelayServerConfig rc;  // open access, in process
  rc.cert_file = cert;
  rc.key_file = key;
  KVCS_ASSIGN_OR_RETURN(auto relay, relay::RelayServer::Start(io, rc));
  KVCS_ASSIGN_OR_RETURN(moqt::MoqtSession * link, loop.Connect(relay->port(), &store));
  std::optional<Status> announced;
  KVCS_RETURN_IF_ERROR(
      link->PublishNamespace(
              pub->track_namespace(),
              [&](const std::optional<moqt::RequestError>& e) {
                announced = e ? Status{Code::kPermissionDenied, e->reason, 0} : Status::Ok();
              })
          .status());
  KVCS_RETURN_IF_ERROR(loop.Until([&] { return announced.has_value(); }, "PUBLISH_NAMESPACE"));
  KVCS_RETURN_IF_ERROR(*announced);

  // One retrieval through the relay with `keyring`: the bytes verified and its report. Another
  // scope's consumer subscribes (live) so that it sees the data objects too, and stops at a
  // short deadline since nothing verifies.
  struct Got {
    uint64_t bytes = 0;
    std::optional<stream::RetrievalReport> report;
    uint64_t opened = 0, failed = 0;
  };
  auto retrieve = [&](secure::ScopeKeyring keyring, bool stranger) -> Result<Got> {
    KVCS_ASSIGN_OR_RETURN(moqt::MoqtSession * session, loop.Connect(relay->port(), nullptr));
    stream::RetrievalOptions o;
    o.mode = stranger ? stream::RetrievalMode::kLive : stream::RetrievalMode::kCompleted;
    KVCS_ASSIGN_OR_RETURN(o.verifier.identity, stream::CacheIdentity::Compute(d, scope, tokens));
    o.verifier.publication = pub->ns();
    o.verifier.require_signature = false;
    o.compute_ns_per_token_layer = stranger ? 0 : 1'000'000'000;
    if (stranger) o.min_deadline_ms = 1500;
    o.decryption = stream::ObjectDecryption{std::move(keyring), true};
    Got got;
    KVCS_ASSIGN_OR_RETURN(
        auto r, stream::Retrieval::Start(
                    session, o,
                    [&](const stream::VerifiedLayer& l) {
                      for (const ByteSpan& s : l.k) got.bytes += s.size();
                      for (const ByteSpan& s : l.v) got.bytes += s.size();
                    },
                    [&](const stream::RetrievalReport& rep) { got.report = rep; }, SteadyMs));
    KVCS_RETURN_IF_ERROR(loop.Until(
        [&] {
          r->OnTimer();
          return got.report.has_value();
        },
        "retrieval through the relay timed out"));
    got.opened = r->decryptor()->opened();
    got.failed = r->decryptor()->failed();
    return got;
  };

  const auto t0 = std::chrono::steady_clock::now();
  KVCS_ASSIGN_OR_RETURN(Got member, retrieve(secure::ScopeKeyring::FromScopeKey(scope), false));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const uint64_t want = 2 * blocks * d.layers * section;
  if (!member.report->all_retrieved() || member.bytes != want) {
    return Status{Code::kInternal,
                  "the scope's consumer got " + std::to_string(member.bytes) + " of " +
                      std::to_string(want) + " bytes through the relay",
                  0};
  }

  // The relay's cache: every payload searched for plaintext samples (16 bytes every 4 KiB of
  // the K and V of one layer, which every layer repeats, and the "KVO1" object header).
  std::vector<ByteSpan> samples;
  for (const Bytes* b : {&k, &v}) {
    for (size_t off = 0; off + 16 <= b->size(); off += 4096) {
      samples.push_back(ByteSpan(*b).subspan(off, 16));
    }
  }
  const Bytes kvo1 = {'K', 'V', 'O', '1'};
  samples.push_back(kvo1);
  uint64_t objects = 0, payload_bytes = 0, found = 0, tracks = 0;
  relay->relay().cache().ForEachTrack([&](const moqt::Track& t) {
    ++tracks;
    for (auto g = t.NextGroup(std::nullopt, moqt::GroupOrder::kAscending); g;
         g = t.NextGroup(*g, moqt::GroupOrder::kAscending)) {
      for (const moqt::PublishedObject* o = t.NextInGroup(*g, 0); o != nullptr;
           o = t.NextInGroup(*g, o->location.object + 1)) {
        if (o->status != moqt::ObjectStatus::kNormal) continue;
        ++objects;
        payload_bytes += o->payload->size();
        for (ByteSpan n : samples) {
          found += std::search(o->payload->begin(), o->payload->end(), n.begin(), n.end()) !=
                   o->payload->end();
        }
      }
    }
  });

  secure::ScopeKeyring other;
  KVCS_RETURN_IF_ERROR(other.Add(0, Bytes(32, 0xEE)));
  KVCS_ASSIGN_OR_RETURN(Got stranger, retrieve(std::move(other), true));
  loop.CloseAll();

  char line[256];
  out << "secure relay (MOQT secure objects, "
      << (options.suite == secure::CipherSuite::kAes128GcmSha256 ? "aes-128-gcm" : "aes-256-gcm")
      << ", a relay on 127.0.0.1 in process)\n";
  std::snprintf(line, sizeof line,
                "  consumer    %llu of %llu objects decrypted, every block and layer verified "
                "(%.1f MiB in %.2f s through the relay)\n",
                (unsigned long long)member.opened,
                (unsigned long long)(member.opened + member.failed), want / 1048576.0, s);
  out << line;
  std::snprintf(line, sizeof line,
                "  relay cache %llu tracks, %llu objects, %.1f MiB: each payload searched for %zu "
                "plaintext samples, %llu found%s\n",
                (unsigned long long)tracks, (unsigned long long)objects, payload_bytes / 1048576.0,
                samples.size(), (unsigned long long)found, found == 0 ? " (ciphertext only)" : "");
  out << line;
  std::snprintf(
      line, sizeof line,
      "  other scope %llu blocks x layers delivered, %llu objects discarded (not "
      "authentic to its key)\n",
      (unsigned long long)(stranger.report->outcomes.size() - stranger.report->recompute_count()),
      (unsigned long long)stranger.report->refusals_total);
  out << line;
  if (found != 0) return Status{Code::kInternal, "plaintext found in the relay's cache", 0};
  return Status::Ok();
}

}  // namespace kvcs::cli
