// kvcs get: retrieve a KV cache over MOQT from a publisher (`kvcs publish`) or relays: discover
// the publication of the longest prefix of the prompt (§5.1) at the first URL that answers,
// retrieve it (by default per segment by the manifest's `complete`: FETCH §5.3 when complete,
// else live §5.2; --live / --completed force one), verify every manifest and object (§5.4),
// recover what is missing or corrupt from the prefix's other publications, the same publication
// at the other URLs, then the --holder KVSP HTTP holders (kvcs_stream/recovery.h),
// print the per-layer timeline and where every block came from, and write the verified cache as
// safetensors.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <map>
#include <optional>

#include "cli/cli_util.h"
#include "cli/command.h"
#include "cli/holder_uri.h"
#include "cli/index_options.h"
#include "cli/moq_util.h"
#include "common/asio.h"
#include "common/strings.h"
#include "kvcs_stream/discovery.h"
#include "kvcs_stream/recovery.h"
#include "kvsp_http/http_holder_source.h"
#include "moqt_endpoint/moqt_endpoint.h"
#include "secure_objects/scope_keys.h"
#include "tensorio/kv_cache.h"
#include "tensorio/safetensors.h"

namespace kvcs::cli {
namespace {

namespace asio = boost::asio;
constexpr char kCmd[] = "get";
constexpr size_t kMaxPromptFileBytes = size_t{256} << 20;
constexpr auto kTick = std::chrono::milliseconds(10);
// URLs of one retrieval: a session each, held for the whole retrieval; more relays than this
// carrying one publication add nothing a consumer would wait for.
constexpr size_t kMaxUrls = 8;
// How long a found publication waits for the other URLs' sessions to come up as alternates (a
// URL that is down takes its handshake timeout to say so; the retrieval should not).
constexpr uint64_t kAlternatesWaitMs = 1000;

struct Args {
  std::vector<std::string> urls;  // publishers or relays of the publication, in preference order
  std::string tokens_file, descriptor_file, producer_key, out, layers;
  std::vector<std::string> holders;
  ScopeOptions scope;
  ClientTlsOptions tls;
  bool live = false, completed = false;
  uint64_t blocks = 0;
  uint64_t ns_per_token_layer = 1'000'000;
  bool choose_encoding = false, lossy = false;
  IndexOptions index;  // --index: ask a KVSP Index Service first (§5.1's longer prefixes)
};

Result<std::vector<uint32_t>> ParseTokens(const std::string& text) {
  std::vector<uint32_t> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (std::isspace(static_cast<unsigned char>(text[i])) ||
                               text[i] == ',' || text[i] == '[' || text[i] == ']')) {
      ++i;
    }
    size_t j = i;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
    if (j == i) {
      if (i < text.size()) return InvalidArgument("not a token id at byte " + std::to_string(i));
      break;
    }
    auto v = ParseDecimal<uint32_t>(std::string_view(text).substr(i, j - i));
    if (!v) return InvalidArgument("token id out of range at byte " + std::to_string(i));
    out.push_back(*v);
    i = j;
  }
  return out;
}

uint64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class Get {
 public:
  explicit Get(Args a) : a_(std::move(a)), timer_(io_) {}

  int Go() {
    if (a_.urls.empty() && !a_.index.enabled()) {
      return Fail(kCmd, "no publisher or relay URL", "pass moqt://HOST:PORT/, or --index URL");
    }
    std::optional<index::IndexClient> index_client;
    if (a_.index.enabled()) {
      auto c = a_.index.Client();
      if (!c.ok()) return Fail(kCmd, c.status().message(), "e.g. --index http://127.0.0.1:7070");
      index_client = std::move(*c);
    }
    auto scope_key = a_.scope.Resolve();
    if (!scope_key.ok()) {
      return Fail(kCmd, scope_key.status().message(), "pass the scope the publisher used");
    }
    auto ttext = ReadSmallFile(a_.tokens_file, kMaxPromptFileBytes);
    auto tokens = ttext.ok() ? ParseTokens(*ttext) : Result<std::vector<uint32_t>>(ttext.status());
    if (!tokens.ok()) {
      return Fail(kCmd, a_.tokens_file + ": " + tokens.status().message(),
                  "--tokens takes token ids separated by spaces or commas (a JSON list works)");
    }
    auto dtext = ReadSmallFile(a_.descriptor_file, 1 << 20);
    auto d = dtext.ok() ? kvsp::ParseDescriptor(*dtext) : Result<kvsp::Descriptor>(dtext.status());
    if (!d.ok()) {
      return Fail(kCmd, a_.descriptor_file + ": " + d.status().message(),
                  "--descriptor takes the cache's Compatibility Descriptor JSON "
                  "(kvcs inspect prints it)");
    }
    auto id = stream::CacheIdentity::Compute(*d, *scope_key, *tokens);
    if (!id.ok()) return Fail(kCmd, id.status().message());
    if (id->blocks() == 0) {
      return Fail(kCmd,
                  "the prompt has no full block of " + std::to_string(d->block_tokens) + " tokens");
    }
    identity_ = *id;
    scope_key_ = *scope_key;
    tokens_ = *tokens;
    if (index_client) AskIndex(*index_client);
    if (a_.urls.empty()) {
      return Fail(kCmd, "the index knows no moqt:// holder of this prompt's prefix",
                  "pass the publisher or relay URL to discover over MOQT instead");
    }
    if (a_.urls.size() > kMaxUrls) {
      return Fail(kCmd,
                  std::to_string(a_.urls.size()) + " URLs, more than " + std::to_string(kMaxUrls),
                  "name the publisher or the few relays nearest to you");
    }
    reported_down_.assign(a_.urls.size(), false);
    std::vector<moqt::MoqtUrl> urls;
    for (const std::string& u : a_.urls) {
      auto url = moqt::ParseMoqtUrl(u);
      if (!url.ok()) return Fail(kCmd, url.status().message(), "e.g. moqt://127.0.0.1:4443/");
      urls.push_back(*url);
    }
    if (a_.live && a_.completed) return Fail(kCmd, "--live and --completed exclude each other");
    if (!a_.producer_key.empty()) {
      auto kf = LoadKeyFile(a_.producer_key);
      auto k = kf.ok() ? profile::VerifyKey::FromPublicPem(kf->pem, KidBytes(kf->kid))
                       : Result<profile::VerifyKey>(kf.status());
      if (!k.ok() || !keys_.Add(*k).ok()) {
        return Fail(kCmd,
                    a_.producer_key + ": " + (k.ok() ? "duplicate kid" : k.status().message()),
                    "--producer-key takes the public key file of kvcs keygen producer");
      }
    } else {
      std::cerr << "kvcs get: warning: no --producer-key: unsigned manifests are accepted\n";
    }
    if (!a_.layers.empty()) {
      auto r = ParseRangeArg(a_.layers, "--layers");
      if (!r.ok() || !r->end || *r->end >= d->layers) {
        return Fail(
            kCmd,
            "--layers '" + a_.layers + "' is not a range of 0.." + std::to_string(d->layers - 1),
            "e.g. --layers 0-7");
      }
      first_layer_ = static_cast<uint32_t>(r->start);
      last_layer_ = static_cast<uint32_t>(*r->end);
    } else {
      last_layer_ = d->layers - 1;
    }
    for (const std::string& h : a_.holders) {
      auto hc = kvsp_http::HolderClient::Create(h, {a_.tls.ca_file, a_.tls.insecure});
      if (!hc.ok()) return Fail(kCmd, hc.status().message(), "e.g. --holder http://127.0.0.1:9000");
      holders_.push_back(std::make_unique<kvsp_http::HttpHolderSource>(
          std::move(*hc), [this](std::function<void()> f) { asio::post(io_, std::move(f)); }));
    }
    // Every URL at once: the first that answers (in the order given) is the primary, the others
    // that are up when the retrieval starts recover what it lacks (the same publication there).
    // One that cannot even be tried (a name that does not resolve) is down like one that does
    // not answer.
    size_t tried = 0;
    for (size_t i = 0; i < urls.size(); ++i) {
      auto c = moqt::MoqtClient::Connect(io_, a_.tls.ClientConfig(urls[i]), nullptr);
      if (!c.ok()) {
        std::cout << a_.urls[i] << ": cannot connect: " << c.status().message() << std::endl;
        reported_down_[i] = true;
        clients_.push_back(nullptr);
        continue;
      }
      clients_.push_back(std::move(*c));
      ++tried;
    }
    if (tried == 0) {
      return Fail(kCmd, "cannot connect to any of the URLs given",
                  "check the host names and ports (moqt://HOST:PORT/)");
    }
    start_ms_ = NowMs();
    Tick();
    io_.run();
    return rc_;
  }

 private:
  // The primary: the first URL whose session is up once every URL before it has failed.
  // Returns false when every session failed (the command has then failed).
  bool PickPrimary() {
    const moqt::MoqtClient* last = nullptr;  // the last URL's session, for the error
    for (size_t i = 0; i < clients_.size(); ++i) {
      if (!clients_[i]) continue;  // could not be tried (reported at start)
      moqt::MoqtClient& c = *clients_[i];
      last = &c;
      if (c.closed()) {
        if (!reported_down_[i]) {
          reported_down_[i] = true;
          const auto& end = c.end();
          std::cout << a_.urls[i] << ": " << (end ? end->ToString() : std::string("closed"))
                    << (i + 1 < clients_.size() ? "; trying the next URL" : "") << std::endl;
        }
        continue;
      }
      if (!c.setup_complete()) return true;  // wait for it: it comes first
      client_ = &c;
      url_ = a_.urls[i];
      primary_ms_ = NowMs();
      if (clients_.size() > 1) std::cout << "primary " << url_ << std::endl;
      return true;
    }
    const auto& end = last->end();
    rc_ = Fail(kCmd, "session ended: " + (end ? end->ToString() : std::string("closed")),
               end ? ConnectHint(*end) : "");
    Finish();
    return false;
  }

  // Whether every other URL's session is up or has failed: the alternates are known then.
  bool OthersSettled() const {
    for (const auto& c : clients_) {
      if (c && c.get() != client_ && !c->closed() && !c->setup_complete()) return false;
    }
    return true;
  }

  void Tick() {
    if (finished_) return;
    if (client_ == nullptr && !PickPrimary()) return;
    if (client_ == nullptr) {
      timer_.expires_after(kTick);
      timer_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec) Tick();
      });
      return;
    }
    if (client_->closed() && !retrieval_) {
      // Lost before the retrieval started: the next URL that is up takes over (discovery from
      // the start; a result still on its way from the lost one is ignored by its generation).
      discovery_.reset();
      pending_.reset();
      client_ = nullptr;
      ++generation_;
      return Tick();
    }
    if (pending_ && (OthersSettled() || NowMs() >= primary_ms_ + kAlternatesWaitMs)) {
      stream::DiscoveryResult r = std::move(*pending_);
      pending_.reset();
      StartRetrieval(r);
    } else if (client_->setup_complete() && !discovery_ && !retrieval_ && !pending_ &&
               !from_index_.publications.empty()) {
      // The index named the publication (possibly one longer than this prompt, which MOQT
      // discovery cannot find): no SUBSCRIBE_NAMESPACE walk.
      stream::DiscoveryResult r = std::move(from_index_);
      from_index_ = {};
      OnDiscovered(r);
    } else if (client_->setup_complete() && !discovery_ && !retrieval_ && !pending_) {
      StartDiscovery();
    }
    if (discovery_) discovery_->OnTimer();
    if (retrieval_) retrieval_->OnTimer();
    if (finished_) return;
    timer_.expires_after(kTick);
    timer_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) Tick();
    });
  }

  // Asks the index for the longest held prefix of the prompt and prints every holder; when the
  // index lists moqt:// publications (holder_uri.h) of this scope and compat, retrieval goes
  // directly to the one of the longest prefix (to its endpoint when no URL was given). An
  // unreachable index or an empty answer only means MOQT discovery as without --index.
  void AskIndex(const index::IndexClient& c) {
    auto r = c.LookupPrefix(identity_.compat_id, identity_.scope_id, identity_.block_keys);
    if (!r.ok()) {
      std::cout << "index: " << r.status().message() << " (discovering over MOQT)" << std::endl;
      return;
    }
    const kvsp::Descriptor& d = identity_.descriptor;
    std::cout << "index: " << r->matched << " of " << identity_.blocks() << " blocks held ("
              << uint64_t{r->matched} * d.block_tokens << " tokens)" << std::endl;
    // Each holder once, with the blocks it was listed for (a run from the first block).
    std::vector<std::pair<std::string, uint64_t>> holders;  // holder -> blocks listed
    std::map<std::string, std::string> info;
    for (const index::LookupEntry& e : r->entries) {
      for (const index::Replica& rep : e.replicas) {
        auto it = std::find_if(holders.begin(), holders.end(),
                               [&](const auto& h) { return h.first == rep.info.holder; });
        if (it == holders.end()) {
          holders.emplace_back(rep.info.holder, 1);
          info[rep.info.holder] = std::string(index::TierName(rep.info.tier)) + ", layers " +
                                  std::to_string(rep.info.layer_first) + "-" +
                                  std::to_string(rep.info.layer_first + rep.info.layer_count - 1) +
                                  ", " + index::CodecListText(rep.info.codecs);
        } else {
          it->second++;
        }
      }
    }
    for (const auto& [h, n] : holders) {
      std::cout << "  holder " << h << " (" << info[h] << "): " << n << " block(s)" << std::endl;
    }
    // The longest prefix a moqt:// publication holds (the replicas are in tier order).
    for (size_t i = r->entries.size(); i-- > 0;) {
      for (const index::Replica& rep : r->entries[i].replicas) {
        auto h = ParseMoqtHolderUri(rep.info.holder);
        if (!h || h->ns.scope_id != identity_.scope_id || h->ns.compat_id != identity_.compat_id) {
          continue;
        }
        if (!a_.urls.empty() &&
            std::find(a_.urls.begin(), a_.urls.end(), h->endpoint) == a_.urls.end()) {
          continue;  // another endpoint
        }
        stream::FoundPublication p;
        p.ns = h->ns;
        p.anchor_blocks = i + 1;  // a longer publication serves the whole matched prefix
        for (uint64_t b = 0; b < identity_.blocks(); ++b) {
          if (identity_.block_keys[b] == h->ns.anchor_key) p.anchor_blocks = b + 1;
        }
        if (a_.urls.empty()) a_.urls.push_back(h->endpoint);
        from_index_.publications.push_back(p);
        std::cout << "index: retrieving " << profile::ToString(p.ns) << " (" << p.anchor_blocks
                  << " blocks) from " << h->endpoint << std::endl;
        return;
      }
    }
  }

  void StartDiscovery() {
    // Every prefix of the prompt: a publication of more blocks than --blocks still serves them.
    stream::DiscoveryOptions o;
    auto d = stream::Discovery::Start(
        &client_->session(), identity_, o,
        [this](const stream::DiscoveryResult& r) {
          asio::post(io_, [this, r, g = generation_] {
            if (g == generation_) OnDiscovered(r);
          });
        },
        NowMs);
    if (!d.ok()) {
      rc_ = Fail(kCmd, "discovery: " + d.status().message());
      return Finish();
    }
    discovery_ = std::move(*d);
  }

  void OnDiscovered(const stream::DiscoveryResult& r) {
    discovery_.reset();
    if (r.best() == nullptr) {
      rc_ = Fail(kCmd,
                 "no publication of any prefix of the prompt at " + url_ + " (" +
                     std::to_string(r.prefixes_tried) + " prefixes tried" +
                     (r.timed_out ? ", timed out" : "") + ")",
                 "check the scope key, tokens and descriptor against the publisher's");
      return Finish();
    }
    std::cout << "found " << profile::ToString(r.best()->ns) << " (" << r.best()->anchor_blocks
              << " blocks; " << r.publications.size() << " publication(s), " << r.prefixes_tried
              << " prefixes tried) at +" << NowMs() - start_ms_ << " ms" << std::endl;
    // The other URLs become alternates once their sessions are up: wait for them (bounded).
    if (!OthersSettled() && NowMs() < primary_ms_ + kAlternatesWaitMs) {
      pending_ = r;
      return;
    }
    StartRetrieval(r);
  }

  void StartRetrieval(const stream::DiscoveryResult& r) {
    stream::RecoveryOptions ro;
    stream::RetrievalOptions& o = ro.retrieval;
    o.mode = a_.completed ? stream::RetrievalMode::kCompleted
             : a_.live    ? stream::RetrievalMode::kLive
                          : stream::RetrievalMode::kAuto;
    o.on_object_received = [this](const stream::ReceivedObjectInfo& i) {
      if (i.kind != profile::TrackKind::kData) return;
      ++(i.fetched ? objects_fetched_ : objects_live_);
      bytes_received_ += i.payload_bytes;
    };
    std::cout << "retrieving " << stream::RetrievalModeName(o.mode) << std::endl;
    o.verifier.identity = identity_;
    o.verifier.publication = r.best()->ns;
    o.verifier.keys = &keys_;
    o.verifier.require_signature = keys_.size() > 0;
    o.verifier.first_layer = first_layer_;
    o.verifier.last_layer = last_layer_;
    if (a_.blocks) o.verifier.max_blocks = a_.blocks;
    o.compute_ns_per_token_layer = a_.ns_per_token_layer;
    if (a_.choose_encoding) {
      o.choose_encoding = stream::EncodingChoiceOptions{};
      o.choose_encoding->allow_lossy = a_.lossy;
    }
    // Secure objects are detected: an object naming a Key ID is decrypted with the scope's keys.
    o.decryption = stream::ObjectDecryption{secure::ScopeKeyring::FromScopeKey(scope_key_), false};
    const kvsp::Descriptor& d = identity_.descriptor;
    section_ = uint64_t{d.block_tokens} * d.kv_heads * d.head_dim *
               tensorio::DtypeSize(*tensorio::SafetensorsDtypeFor(d.kv_dtype));
    // The prefix's other publications, then the holders, recover what the first one lacks.
    for (size_t i = 1; i < r.publications.size(); ++i) {
      ro.alternates.push_back({&client_->session(), r.publications[i].ns, url_});
    }
    // The same publication at every other URL whose session is up (another relay carrying it).
    for (size_t i = 0; i < clients_.size(); ++i) {
      if (!clients_[i]) continue;
      moqt::MoqtClient& c = *clients_[i];
      if (&c == client_ || c.closed() || !c.setup_complete()) continue;
      ro.alternates.push_back({&c.session(), r.best()->ns, a_.urls[i]});
      std::cout << "alternate " << a_.urls[i] << std::endl;
    }
    for (const auto& h : holders_) ro.holders.push_back(h.get());
    auto ret = stream::Recovery::Start(
        &client_->session(), ro, [this](const stream::VerifiedLayer& l) { OnLayer(l); },
        [this](const stream::RetrievalReport& rep) {
          asio::post(io_, [this, rep] { OnDone(rep); });
        },
        NowMs);
    if (!ret.ok()) {
      rc_ = Fail(kCmd, "retrieval: " + ret.status().message());
      return Finish();
    }
    retrieval_ = std::move(*ret);
  }

  void OnLayer(const stream::VerifiedLayer& l) {
    auto& k = k_[l.layer];
    auto& v = v_[l.layer];
    for (size_t i = 0; i < l.k.size(); ++i) {
      uint64_t at = (l.first_block + i) * section_;
      if (k.size() < at + section_) k.resize(at + section_);
      std::memcpy(k.data() + at, l.k[i].data(), section_);
      if (i < l.v.size()) {
        if (v.size() < at + section_) v.resize(at + section_);
        std::memcpy(v.data() + at, l.v[i].data(), section_);
      }
    }
    std::cout << "layer " << l.layer << " (segment " << l.segment << ", " << l.k.size()
              << " blocks) verified at +" << NowMs() - start_ms_ << " ms" << std::endl;
  }

  void OnDone(const stream::RetrievalReport& rep) {
    std::cout << "retrieval done at +" << NowMs() - start_ms_ << " ms: " << rep.blocks
              << " blocks x " << rep.layers << " layers, " << rep.recompute_count()
              << " (block, layer) to recompute, " << rep.refusals_total << " refusal(s)"
              << std::endl;
    std::cout << "received " << objects_fetched_ + objects_live_ << " data objects ("
              << bytes_received_ << " bytes): " << objects_fetched_ << " by FETCH, "
              << objects_live_ << " by subscription" << std::endl;
    if (a_.choose_encoding) {
      std::cout << "encoding: " << stream::EncodingName(rep.encoding) << " (chosen at "
                << static_cast<uint64_t>(rep.choice_rate_bytes_per_s / 1e6) << " MB/s against "
                << a_.ns_per_token_layer << " ns per token and layer)" << std::endl;
    }
    const auto sc = retrieval_ ? retrieval_->secure_counts() : stream::Recovery::SecureCounts{};
    if (sc.opened || sc.failed) {
      std::cout << "secure objects: " << sc.opened << " decrypted, " << sc.failed
                << " discarded (not authentic)" << std::endl;
    }
    for (uint64_t b = 0; b < rep.blocks; ++b) {
      std::cout << "  block " << b << ": " << stream::DescribeBlockSources(rep, b) << std::endl;
    }
    for (const auto& r : rep.refusals) std::cout << "  refused: " << r.status.ToString() << "\n";
    rc_ = rep.all_retrieved() ? 0 : 1;
    if (rc_ != 0) {
      std::cerr << "kvcs get: error: not every block was retrieved; recompute the rest\n";
    }
    if (!a_.out.empty()) {
      if (!rep.all_retrieved() || rep.layers != identity_.descriptor.layers) {
        Fail(kCmd, "not writing " + a_.out + ": it needs every layer of every block",
             "drop --layers, or recompute what is missing");
        rc_ = 1;
      } else {
        Status s = Write(rep.blocks);
        if (!s.ok()) {
          rc_ = Fail(kCmd, "writing " + a_.out + ": " + s.message());
        } else {
          std::cout << "wrote " << a_.out << " (" << rep.blocks * identity_.descriptor.block_tokens
                    << " tokens)" << std::endl;
        }
      }
    }
    Finish();
  }

  Status Write(uint64_t blocks) {
    const kvsp::Descriptor& d = identity_.descriptor;
    const uint64_t t = blocks * d.block_tokens;
    auto dtype = *tensorio::SafetensorsDtypeFor(d.kv_dtype);
    Bytes ids(t * 8);
    for (uint64_t i = 0; i < t; ++i) {
      for (int j = 0; j < 8; ++j) {
        ids[i * 8 + j] = static_cast<uint8_t>(uint64_t{tokens_[i]} >> (8 * j));
      }
    }
    std::vector<tensorio::TensorToWrite> tensors;
    for (uint32_t l = 0; l < d.layers; ++l) {
      tensors.push_back(
          {"layers." + std::to_string(l) + ".k", dtype, {t, d.kv_heads, d.head_dim}, k_[l]});
      if (!v_[l].empty()) {
        tensors.push_back(
            {"layers." + std::to_string(l) + ".v", dtype, {t, d.kv_heads, d.head_dim}, v_[l]});
      }
    }
    tensors.push_back({std::string(tensorio::kTokenIdsTensor), tensorio::Dtype::kI64, {t}, ids});
    std::map<std::string, std::string> meta = {
        {std::string(tensorio::kDescriptorMetadataKey), kvsp::CanonicalJson(d)}, {"format", "pt"}};
    return tensorio::WriteSafetensors(a_.out, tensors, meta);
  }

  void Finish() {
    finished_ = true;
    timer_.cancel();
    retrieval_.reset();
    discovery_.reset();
    for (auto& c : clients_) {
      if (c && !c->closed()) c->Close(moqt::SessionError::kNoError, "done");
    }
    timer_.expires_after(std::chrono::milliseconds(50));
    timer_.async_wait([this](const boost::system::error_code&) { io_.stop(); });
  }

  Args a_;
  asio::io_context io_;
  asio::steady_timer timer_;
  std::vector<std::unique_ptr<moqt::MoqtClient>> clients_;  // one per URL
  std::vector<bool> reported_down_;                         // per URL: its failure was printed
  moqt::MoqtClient* client_ = nullptr;                      // the primary, once picked
  std::string url_;                                         // its URL
  uint64_t primary_ms_ = 0;                                 // when it was picked
  uint64_t generation_ = 0;  // of the primary: a discovery result of a lost one is dropped
  std::optional<stream::DiscoveryResult> pending_;  // found; waiting for the other URLs
  stream::CacheIdentity identity_;
  kvsp::ScopeKey scope_key_{};
  std::vector<uint32_t> tokens_;
  profile::KeySet keys_;
  std::unique_ptr<stream::Discovery> discovery_;
  std::vector<std::unique_ptr<kvsp_http::HttpHolderSource>> holders_;
  std::unique_ptr<stream::Recovery> retrieval_;
  stream::DiscoveryResult from_index_;  // the publication the index named, until used
  uint32_t first_layer_ = 0, last_layer_ = 0;
  uint64_t section_ = 0, start_ms_ = 0;
  uint64_t objects_fetched_ = 0, objects_live_ = 0, bytes_received_ = 0;  // on_object_received
  std::map<uint32_t, Bytes> k_, v_;
  bool finished_ = false;
  int rc_ = 0;
};

RunFn Setup(CLI::App& app) {
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      kCmd, "Retrieve a KV cache over MOQT: discover, retrieve, verify, write safetensors");
  cmd->add_option("url", a->urls,
                  "the publisher or relays, moqt://HOST:PORT/, in preference order: the first "
                  "that answers is retrieved from, the others recover what it lacks (optional "
                  "with --index: the index's moqt:// holder)");
  cmd->add_option("--tokens", a->tokens_file, "file of the prompt's token ids")->required();
  cmd->add_option("--descriptor", a->descriptor_file, "Compatibility Descriptor JSON file")
      ->required();
  a->scope.Add(cmd);
  cmd->add_option("--producer-key", a->producer_key,
                  "producer public key (kvcs keygen producer): require a signed manifest");
  cmd->add_flag("--live", a->live,
                "subscribe to every segment (Next Object + fill from 0:0), even a completed one");
  cmd->add_flag("--completed", a->completed,
                "FETCH every segment, even one still produced (what is not there yet is missing)");
  cmd->add_option("--layers", a->layers, "only layers A-B (inclusive)");
  cmd->add_option("--blocks", a->blocks, "only the first N blocks of the prompt");
  cmd->add_option("--ns-per-token-layer", a->ns_per_token_layer,
                  "your recompute cost; the retrieval gives up after what recomputing would take")
      ->capture_default_str();
  cmd->add_flag("--choose-encoding", a->choose_encoding,
                "with several encodings offered, pick by the measured rate against "
                "--ns-per-token-layer (the raw pair when the compute hides the transfer, else the "
                "fewest bytes); lossless only unless --lossy");
  cmd->add_flag("--lossy", a->lossy,
                "--choose-encoding may pick fp8-e4m3 / int8 (decoded to the cache's dtype: not "
                "bit-exact)");
  cmd->add_option("--holder", a->holders,
                  "a KVSP HTTP holder (kvcs store: http://HOST:PORT) to recover missing or corrupt "
                  "blocks from; repeatable, tried in order")
      ->allow_extra_args(false);
  cmd->add_option("--out", a->out, "write the verified cache here (safetensors)");
  a->tls.Add(cmd);
  a->index.Add(
      cmd,
      "first ask this KVSP Index Service (http[s]://HOST:PORT) for the longest held prefix "
      "and its holders (printed); a moqt:// holder is retrieved directly");
  cmd->footer(
      "Example:\n"
      "  kvcs get moqt://127.0.0.1:4443/ --insecure --tokens prompt.txt --descriptor d.json \\\n"
      "      --scope-key-file tenant.key --producer-key producer.pub --out got.safetensors\n"
      "  kvcs get moqt://relay-a:4443/ moqt://relay-b:4443/ --ca relays.pem --tokens prompt.txt "
      "\\\n"
      "      --descriptor d.json --scope-key-file tenant.key   # relay-b if relay-a is down\n"
      "  kvcs get --index http://127.0.0.1:7070 --index-token-file lookup.jwt --insecure \\\n"
      "      --tokens prompt.txt --descriptor d.json --scope-key-file tenant.key\n"
      "Without --live or --completed each segment is retrieved by what the manifest says: FETCHed\n"
      "when complete, joined live while produced (a FETCH that comes back short, e.g. from a "
      "relay\n"
      "still filling, is continued live).\n"
      "Exit status: 0 when every block was retrieved (over MOQT or from a holder) and verified,\n"
      "1 otherwise.");
  return [a] { return Get(*a).Go(); };
}

}  // namespace
KVCS_REGISTER_COMMAND(get, 76, Setup);
}  // namespace kvcs::cli
