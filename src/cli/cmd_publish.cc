// kvcs publish: a KV cache in safetensors, or packed as KVSP containers (kvcs pack) -> a KVCS
// publication (docs/protocols/kvcs-stream.md)
// served to subscribers directly over MOQT (raw QUIC, ALPN moqt-22), or, with --relay, announced
// to a relay (PUBLISH_NAMESPACE, then PUBLISH of every track, so the relay keeps the publication
// after this process leaves even if nobody subscribed; --on-demand: only PUBLISH_NAMESPACE, the
// relay subscribes to this session's TrackStore when asked). Prints the
// namespace (kvcs-1/<scope>/<compat>/<anchor>/<pub_id> in hex) and one line per published layer;
// the blocks go out one per event-loop turn so subscribers receive a layer while the rest of it
// and later ones are produced. Runs until interrupted, or --linger seconds after the last layer.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <optional>

#include "cli/admission_options.h"
#include "cli/cli_util.h"
#include "cli/command.h"
#include "cli/dev_cert.h"
#include "cli/holder_uri.h"
#include "cli/index_options.h"
#include "cli/moq_util.h"
#include "common/asio.h"
#include "common/hex.h"
#include "index/lease_keeper.h"
#include "kvcs_stream/encoding.h"
#include "kvcs_stream/publisher.h"
#include "moqt_endpoint/moqt_endpoint.h"
#include "moqt_session/moqt_publish_set.h"
#include "secure_objects/cipher_suite.h"
#include "tensorio/kv_cache.h"

namespace kvcs::cli {
namespace {

// How long `--relay` waits after closing the publication before it closes the session: the
// manifest's End of Track is a few bytes on an open connection; 300 ms covers a loaded host.
constexpr int kRelayLingerMs = 300;
// How long `--relay` waits at exit for the relay to have received every PUBLISHed track whole
// (a relay acknowledges that by closing its side of each PUBLISH).
constexpr int kPublishDrainMs = 30'000;

namespace asio = boost::asio;
constexpr char kCmd[] = "publish";

struct Args {
  std::string input, listen = "127.0.0.1:4443", sign_key, cert, key;
  std::string relay;       // moqt://HOST:PORT/: announce there instead of serving
  bool on_demand = false;  // with --relay: no PUBLISH, the relay pulls on demand
  ClientTlsOptions tls;
  ScopeOptions scope;
  uint32_t manifest_every = 8;
  double linger_s = -1;
  std::string encrypt;              // "": plaintext; else the secure-objects cipher suite
  std::vector<std::string> offers;  // encodings offered beside the raw k+v pair
  // Registration of the namespace with a KVSP Index Service once every layer is published.
  IndexOptions index;
  std::string public_url;  // moqt://HOST:PORT/ subscribers reach; default from --listen
  double index_ttl_s = 30;
  QuicAdmissionOptions quic;  // when serving
};

std::string OfferedText(const std::vector<stream::Encoding>& encodings) {
  std::string s;
  for (const stream::Encoding& e : encodings)
    s += (s.empty() ? "" : ", ") + stream::EncodingName(e);
  return s;
}

class Run {
 public:
  explicit Run(Args a) : a_(std::move(a)), timer_(io_), signals_(io_, SIGINT, SIGTERM) {}

  int Go() {
    auto scope_key = a_.scope.Resolve();
    if (!scope_key.ok()) {
      return Fail(kCmd, scope_key.status().message(),
                  "create a key with: kvcs keygen scope --out tenant.key");
    }
    std::optional<profile::SigningKey> signer;
    if (!a_.sign_key.empty()) {
      auto kf = LoadKeyFile(a_.sign_key);
      auto k = kf.ok() ? profile::SigningKey::FromPrivatePem(kf->pem, KidBytes(kf->kid))
                       : Result<profile::SigningKey>(kf.status());
      if (!k.ok()) {
        return Fail(kCmd, a_.sign_key + ": " + k.status().message(),
                    "--sign-key takes the private key file of kvcs keygen producer");
      }
      signer = *k;
    }
    if (a_.index.enabled()) {
      auto c = a_.index.Client();
      if (!c.ok()) return Fail(kCmd, c.status().message(), "e.g. --index http://127.0.0.1:7070");
      index_client_ = std::move(*c);
    } else if (!a_.public_url.empty()) {
      return Fail(kCmd, "--public-url needs --index", "it names this publisher in the index");
    }
    scope_key_ = *scope_key;
    // The cache: a safetensors file (mapped), or a directory of KVSP containers (kvcs pack),
    // every container verified and read into memory before anything is published.
    std::optional<tensorio::SafetensorsFile> file;
    std::optional<tensorio::KvCacheView> view;
    std::optional<tensorio::PackedKvCache> packed;
    std::error_code ec;
    if (std::filesystem::is_directory(a_.input, ec)) {
      auto p = tensorio::PackedKvCache::Load(a_.input, *scope_key);
      if (!p.ok()) {
        return Fail(kCmd, a_.input + ": " + p.status().message(),
                    p.status().code() == Code::kInvalidArgument &&
                            p.status().Is(tensorio::KvCacheError::kKeyChainMismatch)
                        ? "publish with the scope key the directory was packed with"
                        : "a directory must be what kvcs pack writes (index.json and one .kvsp "
                          "container per block; docs/formats/safetensors-kv.md)");
      }
      if (p->index().scope_id != kvsp::ScopeId(*scope_key)) {
        return Fail(kCmd,
                    a_.input + " was packed in the " +
                        (p->index().public_scope ? std::string("public scope")
                                                 : "scope " + ToHex(p->index().scope_id)) +
                        ", not in the scope given",
                    p->index().public_scope ? "publish it with --public"
                                            : "publish with the scope key it was packed with");
      }
      std::cout << "read " << p->index().block_keys.size() << " verified containers ("
                << p->container_bytes() << " bytes) from " << a_.input << std::endl;
      packed.emplace(std::move(*p));
      cache_ = &packed->view();
    } else {
      auto f = tensorio::SafetensorsFile::Open(a_.input);
      if (!f.ok()) {
        return Fail(kCmd, a_.input + ": " + f.status().message(),
                    "the input must be a safetensors file (kvcs inspect " + a_.input +
                        " says more) or a directory of kvcs pack");
      }
      file.emplace(std::move(*f));
      auto c = tensorio::ReadKvCache(file->view());
      if (!c.ok()) {
        return Fail(kCmd, a_.input + ": " + c.status().message(),
                    "see docs/formats/safetensors-kv.md for the tensor names, shapes and metadata");
      }
      view.emplace(std::move(*c));
      cache_ = &*view;
    }
    const tensorio::KvCacheView* cache = cache_;
    const kvsp::Descriptor& d = cache->descriptor;
    blocks_ = cache->full_blocks();
    if (blocks_ == 0) {
      return Fail(
          kCmd,
          "the cache has fewer tokens than one block (" + std::to_string(d.block_tokens) + ")",
          "publish a cache of at least one full block");
    }
    stream::PublisherConfig pc;
    pc.descriptor = d;
    pc.scope_key = *scope_key;
    pc.producer_key = signer;
    pc.manifest_every_layers = a_.manifest_every;
    for (const std::string& o : a_.offers) {
      auto e = stream::ParseEncoding(o);
      Status st = e.ok() ? stream::CheckEncoding(*e) : e.status();
      if (!st.ok()) {
        return Fail(kCmd, "--offer " + o + ": " + st.message(),
                    "e.g. --offer kv.int8, --offer kv.fp8-e4m3 or --offer k+v.zstd");
      }
      if (std::find(pc.encodings.begin(), pc.encodings.end(), *e) == pc.encodings.end()) {
        pc.encodings.push_back(*e);
      }
    }
    if (!a_.encrypt.empty()) {
      if (a_.scope.is_public) {
        return Fail(kCmd, "--encrypt with --public: anyone can compute the public scope's keys",
                    "encrypt with a secret scope: --scope-key-file (kvcs keygen scope)");
      }
      stream::ObjectEncryption e;
      if (a_.encrypt == "aes-256-gcm") {
        e.suite = secure::CipherSuite::kAes256GcmSha512;
      } else if (a_.encrypt != "aes-128-gcm") {
        return Fail(kCmd, "--encrypt '" + a_.encrypt + "' is not a cipher suite",
                    "--encrypt (AES-128-GCM) or --encrypt=aes-256-gcm");
      }
      pc.encryption = e;
    }
    std::vector<uint32_t> tokens(cache->token_ids.begin(),
                                 cache->token_ids.begin() + blocks_ * d.block_tokens);
    auto pub = stream::Publisher::Create(&store_, pc, tokens);
    if (!pub.ok()) return Fail(kCmd, pub.status().message(), "check --manifest-every (1..8)");
    pub_ = std::move(*pub);
    tokens_ = std::move(tokens);
    int rc = a_.relay.empty() ? Serve() : ConnectRelay();
    if (rc != 0) return rc;
    std::cout << "namespace " << profile::ToString(pub_->ns()) << "\n"
              << "  " << d.model << ": " << d.layers << " layers x " << blocks_ << " blocks of "
              << d.block_tokens << " tokens"
              << (cache->tail_tokens() ? " (tail of " + std::to_string(cache->tail_tokens()) +
                                             " tokens not published)"
                                       : "")
              << (signer ? ", manifest.cose signed" : ", unsigned manifest") << ", offered as "
              << OfferedText(pc.encodings)
              << (pc.encryption ? ", every object encrypted (" + a_.encrypt + ", Key ID " +
                                      std::to_string(*pub_->key_id()) + ")"
                                : "")
              << std::endl;
    signals_.async_wait([this](const boost::system::error_code& ec, int) {
      if (!ec) Stop("interrupted");
    });
    start_ = std::chrono::steady_clock::now();
    // Serving: layers go out at once; announcing: once the relay accepted the namespace.
    if (a_.relay.empty()) asio::post(io_, [this] { NextLayer(); });
    io_.run();
    return rc_;
  }

 private:
  int Serve() {
    auto colon = a_.listen.rfind(':');
    auto port = colon == std::string::npos ? Result<uint64_t>(InvalidArgument("no port"))
                                           : ParseU64(a_.listen.substr(colon + 1), "port");
    if (!port.ok() || *port > 65535) {
      return Fail(kCmd, "--listen '" + a_.listen + "' is not HOST:PORT", "e.g. 127.0.0.1:4443");
    }
    moqt::MoqtServerConfig cfg;
    cfg.quic.host = a_.listen.substr(0, colon);
    listen_host_ = cfg.quic.host;
    cfg.quic.port = static_cast<uint16_t>(*port);
    cfg.session.implementation = "kvcs-publish/0.1";
    if (Status st = a_.quic.Validate(); !st.ok()) return Fail(kCmd, st.message());
    a_.quic.ApplyTo(&cfg.quic);
    if (a_.cert.empty() != a_.key.empty()) {
      return Fail(kCmd, "--cert and --key go together", "pass both, or neither for a dev cert");
    }
    if (a_.cert.empty()) {
      auto dev = WriteDevCertificate("kvcs-publish");
      if (!dev.ok()) return Fail(kCmd, dev.status().message());
      a_.cert = dev->cert;
      a_.key = dev->key;
      std::cout << "dev certificate " << a_.cert << " (clients: --ca this file, or --insecure)\n";
    }
    cfg.quic.cert_file = a_.cert;
    cfg.quic.key_file = a_.key;
    auto server = moqt::MoqtServer::Create(io_, cfg, &store_);
    if (!server.ok()) {
      return Fail(kCmd, "cannot serve on " + a_.listen + ": " + server.status().message(),
                  "is the UDP port in use? is the certificate/key pair readable?");
    }
    server_ = std::move(*server);
    std::cout << "listening on moqt://" << cfg.quic.host << ":" << server_->port() << "/"
              << std::endl;
    return 0;
  }

  // The session to the relay: PUBLISH_NAMESPACE at SETUP, the layers once it is accepted; the
  // session's end (relay gone, refused) ends the command with an error.
  struct RelayCallbacks : moqt::MoqtSessionCallbacks {
    explicit RelayCallbacks(Run* r) : r(r) {}
    void OnSetupComplete(const moqt::SetupOptions& peer) override {
      std::cout << "connected to relay '" << peer.implementation.value_or("?")
                << "'; PUBLISH_NAMESPACE" << std::endl;
      auto id = r->client_->session().PublishNamespace(
          r->pub_->track_namespace(), [r = r](const std::optional<moqt::RequestError>& e) {
            if (e) {
              r->rc_ =
                  Fail(kCmd,
                       "the relay refused PUBLISH_NAMESPACE: " +
                           std::string(moqt::RequestErrorCodeName(
                               static_cast<moqt::RequestErrorCode>(e->error_code))) +
                           ": " + e->reason,
                       e->error_code == static_cast<uint64_t>(moqt::RequestErrorCode::kUnauthorized)
                           ? "the --auth-token does not grant publish on this namespace"
                           : "");
              r->Stop("");
              return;
            }
            std::cout << "namespace accepted by the relay" << std::endl;
            if (!r->a_.on_demand) {
              r->publish_set_ = std::make_unique<moqt::PublishSet>(&r->client_->session());
              auto names = r->pub_->track_names();
              Status st = r->publish_set_->Publish(names);
              if (!st.ok()) {
                r->rc_ = Fail(kCmd, "PUBLISH: " + st.message());
                r->Stop("");
                return;
              }
              std::cout << "PUBLISH " << names.size() << " tracks" << std::endl;
            }
            r->start_ = std::chrono::steady_clock::now();
            r->NextLayer();
          });
      if (!id.ok()) {
        r->rc_ = Fail(kCmd, "PUBLISH_NAMESPACE: " + id.status().message());
        r->Stop("");
      }
    }
    void OnSessionClosed(uint64_t, const std::string&, bool) override {
      asio::post(r->io_, [r = r] {  // the endpoint's view of the end is known by then
        if (r->stopping_) return;
        const auto& end = r->client_->end();
        r->rc_ = Fail(kCmd, "relay session ended: " + (end ? end->ToString() : "closed"),
                      end ? ConnectHint(*end) : "");
        r->Stop("");
      });
    }
    Run* r;
  };

  int ConnectRelay() {
    auto url = moqt::ParseMoqtUrl(a_.relay);
    if (!url.ok()) {
      return Fail(kCmd, "--relay: " + url.status().message(), "e.g. --relay moqt://relay:4443/");
    }
    moqt::MoqtClientConfig cfg = a_.tls.ClientConfig(*url);
    cfg.session.implementation = "kvcs-publish/0.1";
    relay_cb_ = std::make_unique<RelayCallbacks>(this);
    auto c = moqt::MoqtClient::Connect(io_, cfg, relay_cb_.get(), &store_);
    if (!c.ok()) return Fail(kCmd, "cannot connect to " + a_.relay + ": " + c.status().message());
    client_ = std::move(*c);
    std::cout << "connecting to relay " << a_.relay << std::endl;
    return 0;
  }

  // One block per event-loop turn, so a layer's objects leave (and ACKs are read) while the
  // rest of it is published.
  void NextLayer() {
    if (stopping_) return;
    const kvsp::Descriptor& d = cache_->descriptor;
    const uint32_t l = pub_->next_layer();
    const uint64_t b = next_block_;
    Status s = pub_->PublishBlock(l, b, cache_->KSection(l, b + 1), cache_->VSection(l, b + 1));
    if (!s.ok()) {
      rc_ = Fail(kCmd,
                 "layer " + std::to_string(l) + " block " + std::to_string(b) + ": " + s.message());
      Stop("");
      return;
    }
    if (++next_block_ < blocks_) {
      asio::post(io_, [this] { NextLayer(); });
      return;
    }
    next_block_ = 0;
    std::cout << "layer " << l << " published (" << blocks_ << " blocks) at +" << ElapsedMs()
              << " ms" << std::endl;
    if (l + 1 < d.layers) {
      asio::post(io_, [this] { NextLayer(); });
      return;
    }
    if (index_client_) StartLease();
    std::cout << "all " << d.layers << " layers published; serving "
              << (a_.linger_s >= 0 ? "for " + std::to_string(a_.linger_s) + " s"
                                   : "until interrupted")
              << std::endl;
    if (a_.linger_s >= 0) {
      timer_.expires_after(std::chrono::milliseconds(static_cast<int64_t>(a_.linger_s * 1000)));
      timer_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec) Stop("linger time over");
      });
    }
  }

  // Registers the whole publication (every block, the anchor, every layer) with the index and
  // keeps the lease while serving: complete replicas only, so only once the last layer is out.
  void StartLease() {
    const kvsp::Descriptor& d = cache_->descriptor;
    auto id = stream::CacheIdentity::Compute(d, scope_key_, tokens_);
    if (!id.ok()) {
      std::cerr << "kvcs publish: warning: not registered: " << id.status().message() << "\n";
      return;
    }
    std::string endpoint = !a_.public_url.empty() ? a_.public_url
                           : !a_.relay.empty()    ? a_.relay
                                                  : "moqt://" + listen_host_ + ":" +
                                                     std::to_string(server_->port()) + "/";
    index::RegisterRequest r;
    r.compat_id = pub_->ns().compat_id;
    r.scope_id = pub_->ns().scope_id;
    r.replica.holder = MoqtHolderUri(endpoint, pub_->ns());
    r.replica.tier = index::Tier::kCpu;  // served from this process's memory
    for (const stream::Encoding& e : pub_->config().encodings) {
      if (std::find(r.replica.codecs.begin(), r.replica.codecs.end(), e.codec) ==
          r.replica.codecs.end()) {
        r.replica.codecs.push_back(e.codec);
      }
    }
    r.replica.layer_first = 0;
    r.replica.layer_count = d.layers;
    r.block_keys = id->block_keys;
    r.anchor_key = pub_->ns().anchor_key;
    index::LeasePolicy policy;
    policy.ttl_ms = static_cast<uint64_t>(a_.index_ttl_s * 1000);
    policy.retry_max_ms = std::max<uint64_t>(1, std::min<uint64_t>(5000, policy.ttl_ms / 4));
    policy.retry_min_ms = std::min<uint64_t>(100, policy.retry_max_ms);
    keeper_ =
        std::make_unique<index::LeaseKeeper>(*index_client_, index::ChunkRegistration(r), policy);
    keeper_->Start();
    std::cout << "registering " << r.replica.holder << " with index " << index_client_->url()
              << " (lease " << a_.index_ttl_s << " s, renewed while serving)" << std::endl;
  }

  uint64_t ElapsedMs() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 start_)
        .count();
  }

  void Stop(const std::string& why) {
    if (stopping_) return;
    stopping_ = true;
    if (!why.empty()) std::cout << "stopping: " << why << std::endl;
    timer_.cancel();
    signals_.cancel();
    if (keeper_) {
      Status w = keeper_->Stop();  // withdraws; each request bounded by --index-timeout
      std::cout << (w.ok() ? "withdrawn from the index" : "withdrawal failed: " + w.message())
                << std::endl;
    }
    if (server_) {
      server_->Shutdown(std::chrono::milliseconds(1000), [this] { io_.stop(); });
    } else if (client_) {
      // The publication is final: End of Track on the manifest, so the relay keeps it whole
      // for consumers that come after we leave. Give that a moment to reach the relay, then
      // close, then give the CONNECTION_CLOSE a moment to leave.
      if (pub_ && !pub_->closed() && pub_->segment_complete()) (void)pub_->Close();
      auto close = [this] {
        if (!client_->closed()) client_->Close(moqt::SessionError::kNoError, "done");
        timer_.expires_after(std::chrono::milliseconds(50));
        timer_.async_wait([this](const boost::system::error_code&) { io_.stop(); });
      };
      if (publish_set_ && !client_->closed() && pub_ && pub_->closed()) {
        // Every track ended: close once the relay holds each whole (bounded).
        timer_.expires_after(std::chrono::milliseconds(kPublishDrainMs));
        timer_.async_wait([this, close](const boost::system::error_code& ec) {
          if (ec) return;
          std::cout << "the relay did not confirm every track in time (" << publish_set_->pending()
                    << " pending)" << std::endl;
          close();
        });
        publish_set_->WhenDone([this, close] {
          asio::post(io_, [this, close] {
            std::cout << "the relay holds " << publish_set_->delivered() << " tracks"
                      << (publish_set_->failed().empty()
                              ? ""
                              : "; " + std::to_string(publish_set_->failed().size()) +
                                    " PUBLISH refused or cut off")
                      << std::endl;
            timer_.cancel();
            close();
          });
        });
        return;
      }
      timer_.expires_after(std::chrono::milliseconds(kRelayLingerMs));
      timer_.async_wait([this, close](const boost::system::error_code&) { close(); });
    } else {
      io_.stop();
    }
  }

  Args a_;
  asio::io_context io_;
  asio::steady_timer timer_;
  asio::signal_set signals_;
  moqt::TrackStore store_;
  std::unique_ptr<stream::Publisher> pub_;
  std::unique_ptr<moqt::MoqtServer> server_;
  std::unique_ptr<RelayCallbacks> relay_cb_;
  std::unique_ptr<moqt::MoqtClient> client_;
  std::unique_ptr<moqt::PublishSet> publish_set_;
  const tensorio::KvCacheView* cache_ = nullptr;
  kvsp::ScopeKey scope_key_{};
  std::vector<uint32_t> tokens_;
  std::string listen_host_;
  std::optional<index::IndexClient> index_client_;
  std::unique_ptr<index::LeaseKeeper> keeper_;
  uint64_t blocks_ = 0;
  uint64_t next_block_ = 0;  // of the layer being published
  std::chrono::steady_clock::time_point start_;
  bool stopping_ = false;
  int rc_ = 0;
};

RunFn Setup(CLI::App& app) {
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      kCmd,
      "Publish a KV cache (safetensors or KVSP containers) over MOQT, layer by layer, serving "
      "subscribers");
  cmd->add_option("cache", a->input,
                  "the KV cache: a safetensors file, or a directory of KVSP containers written by "
                  "kvcs pack (docs/formats/safetensors-kv.md)")
      ->required();
  a->scope.Add(cmd);
  cmd->add_option("--sign-key", a->sign_key,
                  "producer private key (kvcs keygen producer): publish a signed manifest.cose");
  auto* listen = cmd->add_option("--listen", a->listen, "serve on HOST:PORT (UDP; port 0: any)")
                     ->capture_default_str();
  a->quic.Add(cmd);  // serving: the QUIC admission limits
  cmd->add_option("--relay", a->relay,
                  "instead of serving: connect to this relay (moqt://HOST:PORT/) and "
                  "PUBLISH_NAMESPACE the publication there")
      ->excludes(listen);
  cmd->add_flag("--on-demand", a->on_demand,
                "with --relay: only PUBLISH_NAMESPACE; the relay pulls each track when a consumer "
                "asks (by default every track is PUBLISHed, so the relay keeps the publication "
                "after this publisher leaves)");
  cmd->add_option("--manifest-every", a->manifest_every,
                  "publish a manifest version after every N layers (1..8)")
      ->capture_default_str();
  cmd->add_flag("--encrypt{aes-128-gcm}", a->encrypt,
                "secure objects: encrypt every object and manifest version with keys derived from "
                "the scope key (relays carry ciphertext); --encrypt=aes-256-gcm for AES-256");
  cmd->add_option("--offer", a->offers,
                  "also offer the cache in this encoding, beside the raw k+v pair (repeatable): "
                  "kv.<codec> (one joint track; raw, fp8-e4m3, int8) or k+v.<codec> (zstd); "
                  "consumers pick by their link and compute (kvcs get --choose-encoding)")
      ->allow_extra_args(false);
  cmd->add_option("--linger", a->linger_s,
                  "exit this many seconds after the last layer (default: until interrupted)");
  cmd->add_option("--cert", a->cert, "server certificate (PEM); default: a dev certificate");
  cmd->add_option("--key", a->key, "server private key (PEM)");
  a->tls.Add(cmd);  // with --relay: --ca/--insecure, --auth-token, ...
  a->index.Add(
      cmd,
      "once every layer is published, register the namespace with this KVSP Index "
      "Service (http[s]://HOST:PORT) and renew the lease while serving; withdrawn at exit");
  cmd->add_option("--public-url", a->public_url,
                  "the moqt:// URL subscribers reach (default: moqt://LISTEN/)");
  cmd->add_option("--index-ttl", a->index_ttl_s, "lease of the registration, seconds")
      ->check(CLI::Range(0.05, 86400.0))
      ->capture_default_str();
  cmd->footer(
      "Example:\n"
      "  kvcs publish cache.safetensors --scope-key-file tenant.key --sign-key producer.key \\\n"
      "      --listen 127.0.0.1:4443\n"
      "  kvcs get moqt://127.0.0.1:4443/ --insecure --tokens prompt.txt --descriptor d.json \\\n"
      "      --scope-key-file tenant.key --producer-key producer.pub --out got.safetensors\n"
      "  kvcs publish cache.safetensors --scope-key-file tenant.key \\\n"
      "      --relay moqt://relay:4443/ --ca relay.pem --auth-token publish.jwt\n"
      "  kvcs publish cache.safetensors --scope-key-file tenant.key --index http://index:7070 \\\n"
      "      --index-token-file reg.jwt   # consumers find it with kvcs lookup / get --index\n"
      "  kvcs pack cache.safetensors --out packed/ --scope-key-file tenant.key\n"
      "  kvcs publish packed/ --scope-key-file tenant.key --relay moqt://relay:4443/ --insecure");
  return [a] { return Run(*a).Go(); };
}

}  // namespace
KVCS_REGISTER_COMMAND(publish, 75, Setup);
}  // namespace kvcs::cli
