// KVCS over MOQT over real QUIC (127.0.0.1, TLS, ngtcp2): the publisher serves subscribers itself
// (MoqtServer over its TrackStore); consumers retrieve live (joining before, during and after
// production: every layer exactly once, verified against a signed manifest), completed (a layer
// range with the first n blocks), and across segments; discovery (§5.1) finds the publication by
// its prefix, a shorter one when the consumer's prompt is longer. One io_context driven by the test
// thread, so production interleaves with delivery at known points; every wait is bounded.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "common/asio.h"
#include "kvcs_stream/discovery.h"
#include "kvcs_stream/encoding_choice.h"
#include "kvcs_stream/publisher.h"
#include "kvcs_stream/recovery.h"
#include "kvcs_stream/retrieval.h"
#include "kvcs_stream/test_tools/test_cache.h"
#include "moqt_endpoint/moqt_endpoint.h"
#include "quic/tls.h"
#include "relay/relay_server.h"
#include "relay/test_tools/tampering_source.h"
#include "secure_objects/secure_object.h"
#include "secure_objects/track_crypto.h"

namespace kvcs::stream {
namespace {

namespace asio = boost::asio;

struct Got {
  std::map<std::pair<uint32_t, uint32_t>, int> layers;  // (segment, layer) callbacks
  std::map<std::pair<uint64_t, uint32_t>, int> pairs;   // (block, layer) delivered
  int mismatches = 0;
  std::optional<RetrievalReport> report;
};

class KvcsStreamE2E : public ::testing::Test {
 protected:
  kvsp::Descriptor d_ = test::SmallDescriptor(/*layers=*/32, /*block_tokens=*/16);
  kvsp::ScopeKey scope_{};
  std::vector<uint32_t> tokens_ = test::Tokens(16 * 12);  // 12 blocks
  moqt::TrackStore store_;
  std::unique_ptr<Publisher> pub_;
  asio::io_context io_;
  std::unique_ptr<moqt::MoqtServer> server_;
  std::vector<std::unique_ptr<moqt::MoqtClient>> clients_;
  std::string cert_, key_;
  profile::KeySet keys_;
  std::optional<profile::SigningKey> producer_;

  void SetUp() override {
    scope_[0] = 1;
    auto pem = quic::GenerateSelfSignedCert("localhost");
    ASSERT_TRUE(pem.ok());
    auto dir =
        std::filesystem::temp_directory_path() / ("kvcs_stream_e2e_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    cert_ = (dir / "cert.pem").string();
    key_ = (dir / "key.pem").string();
    std::ofstream(cert_) << pem->cert_pem;
    std::ofstream(key_) << pem->key_pem;
    producer_ = *profile::SigningKey::Generate(profile::CoseAlg::kES256, Bytes{'p'});
    ASSERT_TRUE(keys_.Add(producer_->Public()).ok());
    PublisherConfig c;
    c.descriptor = d_;
    c.scope_key = scope_;
    c.producer_key = producer_;
    Configure(c);
    auto p = Publisher::Create(&store_, c, tokens_);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    pub_ = std::move(*p);
    server_ = Serve(&store_);
    ASSERT_NE(server_, nullptr);
  }
  // A MoqtServer on 127.0.0.1 (any port) serving `store`.
  std::unique_ptr<moqt::MoqtServer> Serve(moqt::TrackSource* store) {
    moqt::MoqtServerConfig sc;
    sc.quic.host = "127.0.0.1";
    sc.quic.cert_file = cert_;
    sc.quic.key_file = key_;
    auto s = moqt::MoqtServer::Create(io_, sc, store);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }
  void TearDown() override {
    clients_.clear();
    server_.reset();
  }
  // Subclasses adjust the publisher (encryption).
  virtual void Configure(PublisherConfig&) {}
  bool RunUntil(const std::function<bool()>& pred) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!pred()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      io_.run_one_for(std::chrono::milliseconds(20));
      if (io_.stopped()) io_.restart();
    }
    return true;
  }
  void Poll() {
    io_.poll();
    if (io_.stopped()) io_.restart();
  }
  // `port` 0: the publisher's server. `source`: what this side publishes on the session.
  moqt::MoqtClient* Connect(uint16_t port = 0, moqt::TrackSource* source = nullptr) {
    moqt::MoqtClientConfig c;
    c.quic.host = "127.0.0.1";
    c.quic.port = port != 0 ? port : server_->port();
    c.quic.server_name = "localhost";
    c.quic.ca_file = cert_;
    c.session.path = "/kvcs";
    auto cl = moqt::MoqtClient::Connect(io_, c, nullptr, source);
    EXPECT_TRUE(cl.ok()) << cl.status().ToString();
    moqt::MoqtClient* raw = cl->get();
    clients_.push_back(std::move(*cl));
    EXPECT_TRUE(RunUntil([&] { return raw->setup_complete() || raw->closed(); }));
    EXPECT_TRUE(raw->setup_complete());
    return raw;
  }
  RetrievalOptions Options(RetrievalMode mode, std::span<const uint32_t> tokens,
                           const std::function<void(RetrievalOptions&)>& tweak) {
    RetrievalOptions o;
    o.mode = mode;
    o.verifier.identity = *CacheIdentity::Compute(d_, scope_, tokens);
    o.verifier.publication = pub_->ns();
    o.verifier.keys = &keys_;
    o.compute_ns_per_token_layer = 20'000'000;  // a generous bound for a loaded machine
    if (tweak) tweak(o);
    return o;
  }
  // Counts what is delivered into `got` and compares it with the published cache.
  LayerCallback Record(Got* got) const {
    const kvsp::Descriptor d = d_;
    return [got, d](const VerifiedLayer& l) {
      got->layers[{l.segment, l.layer}]++;
      for (size_t i = 0; i < l.k.size(); ++i) {
        got->pairs[{l.first_block + i, l.layer}]++;
        if (Bytes(l.k[i].begin(), l.k[i].end()) != test::LayerK(d, l.layer, l.first_block + i, 1) ||
            Bytes(l.v[i].begin(), l.v[i].end()) != test::LayerV(d, l.layer, l.first_block + i, 1)) {
          got->mismatches++;
        }
      }
    };
  }
  std::unique_ptr<Retrieval> Start(RetrievalMode mode, Got* got, std::span<const uint32_t> tokens,
                                   std::function<void(RetrievalOptions&)> tweak = {},
                                   uint16_t port = 0) {
    moqt::MoqtClient* c = Connect(port);
    auto r = Retrieval::Start(
        &c->session(), Options(mode, tokens, tweak), Record(got),
        [got](const RetrievalReport& rep) { got->report = rep; },
        [] {
          return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                           std::chrono::steady_clock::now().time_since_epoch())
                                           .count());
        });
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return std::move(*r);
  }
  void Produce(uint32_t to, uint64_t first_block = 0) {
    for (uint32_t l = pub_->next_layer(); l < to; ++l) {
      ASSERT_TRUE(pub_->PublishLayer(l, test::LayerK(d_, l, first_block, pub_->segment_blocks()),
                                     test::LayerV(d_, l, first_block, pub_->segment_blocks()))
                      .ok());
      Poll();
    }
  }
  void ExpectAllOnce(const Got& g, size_t layers) {
    ASSERT_TRUE(g.report.has_value());
    EXPECT_TRUE(g.report->all_from_moqt()) << g.report->recompute_count();
    EXPECT_EQ(g.report->duplicates, 0u);
    EXPECT_EQ(g.mismatches, 0);
    EXPECT_EQ(g.layers.size(), layers);
    for (const auto& [k, n] : g.layers) EXPECT_EQ(n, 1);
  }
};

TEST_F(KvcsStreamE2E, LiveJoinBeforeDuringAndAfterProductionExactlyOnce) {
  Got before, during, after;
  auto r1 = Start(RetrievalMode::kLive, &before, tokens_);
  Produce(13);
  auto r2 = Start(RetrievalMode::kLive, &during, tokens_);
  Produce(d_.layers);
  ASSERT_TRUE(RunUntil([&] { return before.report && during.report; }));
  auto r3 = Start(RetrievalMode::kLive, &after, tokens_);
  ASSERT_TRUE(RunUntil([&] { return after.report.has_value(); }));
  ExpectAllOnce(before, d_.layers);
  ExpectAllOnce(during, d_.layers);
  ExpectAllOnce(after, d_.layers);
}

TEST_F(KvcsStreamE2E, CompletedLayerRangeWithTheFirstBlocks) {
  Produce(d_.layers);
  Got got;
  auto r = Start(RetrievalMode::kCompleted, &got, tokens_, [](RetrievalOptions& o) {
    o.verifier.first_layer = 4;
    o.verifier.last_layer = 9;
    o.verifier.max_blocks = 5;
  });
  ASSERT_TRUE(RunUntil([&] { return got.report.has_value(); }));
  ExpectAllOnce(got, 6);
  EXPECT_EQ(got.report->blocks, 5u);
  EXPECT_EQ(got.layers.begin()->first.second, 4u);
}

TEST_F(KvcsStreamE2E, SegmentsAndAnUnknownKidOverQuic) {
  Produce(d_.layers);
  std::vector<uint32_t> more = test::Tokens(32, 9);  // 2 blocks appended
  ASSERT_TRUE(pub_->AddSegment(more).ok());
  std::vector<uint32_t> all = tokens_;
  all.insert(all.end(), more.begin(), more.end());
  Got got, refused;
  auto r = Start(RetrievalMode::kLive, &got, all);
  Produce(d_.layers, 12);
  ASSERT_TRUE(RunUntil([&] { return got.report.has_value(); }));
  ExpectAllOnce(got, 2 * d_.layers);
  EXPECT_EQ(got.report->blocks, 14u);
  profile::KeySet stranger;
  ASSERT_TRUE(
      stranger.Add(profile::SigningKey::Generate(profile::CoseAlg::kEdDSA, Bytes{'p'})->Public())
          .ok());
  auto r2 = Start(RetrievalMode::kCompleted, &refused, all,
                  [&](RetrievalOptions& o) { o.verifier.keys = &stranger; });
  ASSERT_TRUE(RunUntil([&] { return refused.report.has_value(); }));
  EXPECT_TRUE(refused.layers.empty());
  ASSERT_FALSE(refused.report->refusals.empty());
  // Same kid, another key: the signature does not verify.
  EXPECT_TRUE(refused.report->refusals[0].status.Is(StreamError::kBadSignature) ||
              refused.report->refusals[0].status.Is(StreamError::kUnknownKid))
      << refused.report->refusals[0].status.ToString();
  EXPECT_EQ(refused.report->recompute_count(), 14u * d_.layers);
}

uint64_t NowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

TEST_F(KvcsStreamE2E, DiscoveryFindsTheLongestPrefixThenRetrievesIt) {
  Produce(d_.layers);
  // A prompt 4 blocks longer than the publication: prefixes 16..13 have none, 12 has it.
  std::vector<uint32_t> longer = test::Tokens(16 * 16);
  for (auto [tokens, want_tried] : {std::pair{std::span<const uint32_t>(tokens_), 2u},
                                    std::pair{std::span<const uint32_t>(longer), 6u}}) {
    moqt::MoqtClient* c = Connect();
    std::optional<DiscoveryResult> found;
    DiscoveryOptions o;
    o.window = 2;
    auto d = Discovery::Start(
        &c->session(), *CacheIdentity::Compute(d_, scope_, tokens), o,
        [&](const DiscoveryResult& r) { found = r; }, NowMs);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    ASSERT_TRUE(RunUntil([&] {
      (*d)->OnTimer();
      return found.has_value();
    }));
    ASSERT_NE(found->best(), nullptr);
    EXPECT_EQ(found->publications.size(), 1u);
    EXPECT_EQ(found->best()->ns, pub_->ns());
    EXPECT_EQ(found->best()->anchor_blocks, 12u);
    EXPECT_EQ(found->prefixes_tried, want_tried);
    Got got;
    profile::Namespace ns = found->best()->ns;
    auto r = Start(RetrievalMode::kCompleted, &got, tokens,
                   [&](RetrievalOptions& ro) { ro.verifier.publication = ns; });
    ASSERT_TRUE(RunUntil([&] { return got.report.has_value(); }));
    EXPECT_EQ(got.mismatches, 0);
    EXPECT_EQ(got.layers.size(), size_t{d_.layers});
    EXPECT_EQ(got.report->at(11, d_.layers - 1).source, BlockSource::kMoqtFetch);
    if (tokens.size() > tokens_.size()) {
      EXPECT_EQ(got.report->at(12, 0).reason, StreamError::kNotCovered);
    } else {
      EXPECT_TRUE(got.report->all_from_moqt());
    }
  }
}

TEST_F(KvcsStreamE2E, CodecChoiceByTheMeasuredRateAgainstTheCompute) {
  // A publication offering the raw pair and kv.fp8-e4m3.
  PublisherConfig c;
  c.descriptor = d_;
  c.scope_key = scope_;
  c.producer_key = producer_;
  const Encoding fp8{kvsp::Codec::kFp8E4m3, true};
  c.encodings = {Encoding{}, fp8};
  auto p = Publisher::Create(&store_, c, tokens_);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  for (uint32_t l = 0; l < d_.layers; ++l) {
    ASSERT_TRUE((*p)->PublishLayer(l, test::LayerK(d_, l, 0, 12), test::LayerV(d_, l, 0, 12)).ok());
  }
  const profile::Namespace ns = (*p)->ns();
  // The link rate, measured on layer 0 in the raw pair.
  Got probe;
  const uint64_t t0 = NowMs();
  auto r0 = Start(RetrievalMode::kCompleted, &probe, tokens_, [&](RetrievalOptions& o) {
    o.verifier.publication = ns;
    o.verifier.last_layer = 0;
  });
  ASSERT_TRUE(RunUntil([&] { return probe.report.has_value(); }));
  ASSERT_TRUE(probe.report->all_retrieved());
  const double bytes = 12.0 * 16 * *BytesPerTokenLayer(d_, Encoding{});
  const double rate = bytes / (std::max<uint64_t>(NowMs() - t0, 1) / 1e3);
  const std::vector<Encoding> offered = OfferedEncodings((*p)->manifest().segments[0]);
  ASSERT_EQ(offered.size(), 2u);
  // A slow model (1 s per token and layer) hides any transfer: the raw pair. A fast one is
  // limited by the link: the fewest bytes.
  EXPECT_EQ(ChooseEncoding(d_, offered, {rate, 1'000'000'000}), Encoding{});
  const Encoding chosen = ChooseEncoding(d_, offered, {rate, 1});
  EXPECT_EQ(chosen, fp8);
  Got rest;
  auto r1 = Start(RetrievalMode::kCompleted, &rest, tokens_, [&](RetrievalOptions& o) {
    o.verifier.publication = ns;
    o.verifier.first_layer = 1;
    o.verifier.encoding = chosen;
  });
  ASSERT_TRUE(RunUntil([&] { return rest.report.has_value(); }));
  EXPECT_TRUE(rest.report->all_retrieved()) << rest.report->recompute_count();
  EXPECT_EQ(rest.layers.size(), d_.layers - 1u);  // decoded to bf16 (lossy: not bit-exact)
}

TEST_F(KvcsStreamE2E, CodecChoiceInsideTheRetrievalBothWays) {
  // A publication offering the raw pair and kv.fp8-e4m3; the consumer only says its compute time.
  PublisherConfig c;
  c.descriptor = d_;
  c.scope_key = scope_;
  c.producer_key = producer_;
  const Encoding fp8{kvsp::Codec::kFp8E4m3, true};
  c.encodings = {fp8, Encoding{}};  // the raw pair offered second: the choice, not the order
  auto p = Publisher::Create(&store_, c, tokens_);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  for (uint32_t l = 0; l < d_.layers; ++l) {
    ASSERT_TRUE((*p)->PublishLayer(l, test::LayerK(d_, l, 0, 12), test::LayerV(d_, l, 0, 12)).ok());
  }
  const profile::Namespace ns = (*p)->ns();
  // A slow model (1 s per token and layer) hides any transfer on this link: the raw pair, exact.
  Got slow;
  auto r0 = Start(RetrievalMode::kLive, &slow, tokens_, [&](RetrievalOptions& o) {
    o.verifier.publication = ns;
    o.compute_ns_per_token_layer = 1'000'000'000;
    o.choose_encoding = EncodingChoiceOptions{};
  });
  ASSERT_TRUE(RunUntil([&] { return slow.report.has_value(); }));
  ExpectAllOnce(slow, d_.layers);
  EXPECT_EQ(slow.report->encoding, Encoding{});
  EXPECT_GT(slow.report->choice_rate_bytes_per_s, 0);  // measured on the manifest
  EXPECT_GT(slow.report->data_rate_bytes_per_s, 0);
  // A fast one (1 ns) is limited by the link, at the rate just measured or at the manifest's:
  // the fewest bytes, fp8, decoded to bf16 (lossy, so not compared bit for bit).
  for (double rate : {slow.report->data_rate_bytes_per_s, 0.0}) {
    Got fast;
    auto r1 = Start(RetrievalMode::kCompleted, &fast, tokens_, [&](RetrievalOptions& o) {
      o.verifier.publication = ns;
      o.compute_ns_per_token_layer = 1;
      o.min_deadline_ms = 20'000;  // the bound of a 1 ns model is the floor: generous under load
      o.choose_encoding = EncodingChoiceOptions{};
      o.choose_encoding->rate_bytes_per_s = rate;
    });
    ASSERT_TRUE(RunUntil([&] { return fast.report.has_value(); }));
    EXPECT_TRUE(fast.report->all_retrieved()) << fast.report->recompute_count();
    EXPECT_EQ(fast.report->encoding, fp8);
    EXPECT_EQ(fast.layers.size(), d_.layers);
    if (rate > 0) {
      EXPECT_EQ(fast.report->choice_rate_bytes_per_s, rate);
    }
    // Lossless only: the raw pair even for the fast model.
    Got exact;
    auto r2 = Start(RetrievalMode::kCompleted, &exact, tokens_, [&](RetrievalOptions& o) {
      o.verifier.publication = ns;
      o.compute_ns_per_token_layer = 1;
      o.min_deadline_ms = 20'000;
      o.choose_encoding = EncodingChoiceOptions{};
      o.choose_encoding->allow_lossy = false;
      o.choose_encoding->rate_bytes_per_s = rate;
    });
    ASSERT_TRUE(RunUntil([&] { return exact.report.has_value(); }));
    EXPECT_TRUE(exact.report->all_retrieved());
    EXPECT_EQ(exact.report->encoding, Encoding{});
    EXPECT_EQ(exact.mismatches, 0);
  }
}

TEST_F(KvcsStreamE2E, HashingOnWorkerThreadsDeliversEveryLayerOnceJoiningMidProduction) {
  Produce(11);
  Got got;
  auto r = Start(RetrievalMode::kLive, &got, tokens_, [&](RetrievalOptions& o) {
    o.verify_threads = 2;
    o.post = [this](std::function<void()> fn) { asio::post(io_, std::move(fn)); };
  });
  for (uint32_t l = pub_->next_layer(); l < d_.layers; ++l) {
    Produce(l + 1);
    ASSERT_TRUE(RunUntil([&] { return true; }));
  }
  ASSERT_TRUE(RunUntil([&] { return got.report.has_value(); }));
  ExpectAllOnce(got, d_.layers);
  EXPECT_EQ(got.report->objects_received, 2u * 12 * d_.layers);
}

// ---------------------------------------------------------------- secure objects (issue 17)

// The publisher encrypts every object (suite = the parameter); consumers decrypt with keyrings
// derived from the scope key. A "tampering relay" is a second TrackStore holding an altered copy
// of the publication, served by its own MoqtServer.
class KvcsSecureE2E : public KvcsStreamE2E,
                      public ::testing::WithParamInterface<secure::CipherSuite> {
 protected:
  moqt::TrackStore relay_store_;
  std::unique_ptr<moqt::MoqtServer> relay_server_;

  void Configure(PublisherConfig& c) override {
    ObjectEncryption e;
    e.suite = GetParam();
    c.encryption = e;
  }
  void TearDown() override {
    relay_server_.reset();
    KvcsStreamE2E::TearDown();
  }
  static std::function<void(RetrievalOptions&)> Keys(secure::ScopeKeyring k,
                                                     uint64_t deadline_ms = 0) {
    return [k, deadline_ms](RetrievalOptions& o) {
      o.decryption = ObjectDecryption{k, false};
      if (deadline_ms) {  // nothing verifies: the retrieval ends at this deadline
        o.compute_ns_per_token_layer = 0;
        o.min_deadline_ms = deadline_ms;
      }
    };
  }
  secure::ScopeKeyring ScopeKeys() const { return secure::ScopeKeyring::FromScopeKey(scope_); }
  std::vector<std::string> TrackNames() const { return {"manifest.cose", "k.raw.s0", "v.raw.s0"}; }
  template <typename F>
  static void ForEachObject(const moqt::Track& t, F f) {
    for (auto g = t.NextGroup(std::nullopt, moqt::GroupOrder::kAscending); g;
         g = t.NextGroup(g, moqt::GroupOrder::kAscending)) {
      for (const moqt::PublishedObject* o = t.NextInGroup(*g, 0); o != nullptr;
           o = t.NextInGroup(*g, o->location.object + 1)) {
        f(*o);
      }
    }
  }
  std::shared_ptr<moqt::Track> PubTrack(const std::string& name) {
    return store_.FindTrack({pub_->track_namespace(), name});
  }
  // Copies the publication into the relay store through `tamper` and serves it; returns its port.
  uint16_t ServeTampered(
      const std::function<void(const std::string&, moqt::PublishedObject&)>& tamper) {
    for (const std::string& name : TrackNames()) {
      auto src = PubTrack(name);
      EXPECT_NE(src, nullptr) << name;
      auto dst = relay_store_.CreateTrack(src->name(), src->options());
      EXPECT_TRUE(dst.ok());
      ForEachObject(*src, [&](const moqt::PublishedObject& o) {
        moqt::PublishedObject copy = o;
        if (o.status == moqt::ObjectStatus::kNormal) tamper(name, copy);
        EXPECT_TRUE((*dst)->AddObject(std::move(copy)).ok());
      });
    }
    relay_server_ = Serve(&relay_store_);
    return relay_server_ ? relay_server_->port() : 0;
  }
  // Searches every Normal object of `t` (a KVCS track of this publication) for plaintext: no
  // "KVO1" header, no manifest JSON keys, no 16-byte chunk of the object's KV Data (counted in
  // *chunks). Returns the Normal objects searched.
  size_t ExpectNoPlaintext(const moqt::Track& t, size_t* chunks) {
    const std::string& name = t.name().name;
    size_t objects = 0;
    ForEachObject(t, [&](const moqt::PublishedObject& o) {
      if (o.status != moqt::ObjectStatus::kNormal) return;
      ++objects;
      ASSERT_EQ(o.properties.size(), 1u);  // the Immutable Properties with the Key ID
      const Bytes& ct = *o.payload;
      auto has = [&](ByteSpan needle) {
        return std::search(ct.begin(), ct.end(), needle.begin(), needle.end()) != ct.end();
      };
      EXPECT_FALSE(has(AsBytes(std::string_view("KVO1"))));
      if (name.starts_with("manifest")) {
        for (std::string_view s : {"\"compat\"", "\"segments\"", "\"kvcs\""}) {
          EXPECT_FALSE(has(AsBytes(s))) << s;
        }
        return;
      }
      const Bytes data = name[0] == 'k' ? test::LayerK(d_, o.location.group, o.location.object, 1)
                                        : test::LayerV(d_, o.location.group, o.location.object, 1);
      for (size_t off = 0; off + 16 <= data.size(); off += 16, ++*chunks) {
        ASSERT_FALSE(has(ByteSpan(data).subspan(off, 16))) << name << " " << off;
      }
    });
    return objects;
  }
  // A live consumer (it subscribes to the data tracks too; a completed one stops at the manifest)
  // holding another scope's key, on `port` (0: the publisher), opens nothing.
  void ExpectAnotherScopeOpensNothing(uint16_t port) {
    secure::ScopeKeyring other;
    ASSERT_TRUE(other.Add(0, Bytes(32, 0xEE)).ok());
    Got got;
    auto r = Start(RetrievalMode::kLive, &got, tokens_, Keys(other, 2500), port);
    ASSERT_TRUE(RunUntil([&] {
      r->OnTimer();
      return got.report.has_value();
    }));
    EXPECT_TRUE(got.layers.empty());
    EXPECT_EQ(got.report->recompute_count(), 12u * d_.layers);
    ASSERT_FALSE(got.report->refusals.empty());
    for (const Refusal& f : got.report->refusals) {
      EXPECT_TRUE(f.status.Is(StreamError::kUndecryptable)) << f.status.ToString();
    }
    // Every data object and the manifest version, each once (only the first 64 kept in full).
    EXPECT_GE(got.report->refusals_total, 2u * 12 * d_.layers + 1);
  }
  static bool Refused(const RetrievalReport& r, StreamError e, const std::string& track,
                      moqt::Location loc) {
    for (const Refusal& f : r.refusals) {
      if (f.status.Is(e) && f.track == track && f.location == loc) return true;
    }
    return false;
  }
};

TEST_P(KvcsSecureE2E, RoundTripLiveAndCompleted) {
  Got live, completed;
  auto r1 = Start(RetrievalMode::kLive, &live, tokens_, Keys(ScopeKeys()));
  Produce(d_.layers);
  auto r2 = Start(RetrievalMode::kCompleted, &completed, tokens_, Keys(ScopeKeys()));
  ASSERT_TRUE(RunUntil([&] { return live.report && completed.report; }));
  ExpectAllOnce(live, d_.layers);
  ExpectAllOnce(completed, d_.layers);
  EXPECT_EQ(live.report->refusals_total, 0u);
}

TEST_P(KvcsSecureE2E, StoredPayloadsHoldNoPlaintext) {
  Produce(d_.layers);
  size_t objects = 0, chunks = 0;
  for (const std::string& name : TrackNames())
    objects += ExpectNoPlaintext(*PubTrack(name), &chunks);
  EXPECT_EQ(objects, 2u * d_.layers * 12 + pub_->manifest_versions());
  EXPECT_GT(chunks, 1000u);
  // The search itself finds plaintext: the decrypted object holds its Data.
  secure::ObjectOpener opener(ScopeKeys());
  const moqt::PublishedObject* o = PubTrack("k.raw.s0")->Find({3, 1});
  ASSERT_NE(o, nullptr);
  auto pt = opener.Open(PubTrack("k.raw.s0")->name(), {3, 1, o->publisher_priority}, &o->properties,
                        *o->payload);
  ASSERT_TRUE(pt.ok()) << pt.status().ToString();
  const Bytes data = test::LayerK(d_, 3, 1, 1);
  EXPECT_NE(std::search(pt->payload().begin(), pt->payload().end(), data.begin(), data.end()),
            pt->payload().end());
}

TEST_P(KvcsSecureE2E, AnotherScopeCannotDecrypt) {
  Produce(d_.layers);
  ExpectAnotherScopeOpensNothing(/*port=*/0);
}

TEST_P(KvcsSecureE2E, ATamperingRelayIsCaughtEveryTimeAndAnotherSourceRecovers) {
  Produce(d_.layers);
  auto k = PubTrack("k.raw.s0");
  auto v = PubTrack("v.raw.s0");
  const uint16_t port = ServeTampered([&](const std::string& name, moqt::PublishedObject& o) {
    if (name != "k.raw.s0") return;
    const moqt::Location l = o.location;
    if (l == moqt::Location{1, 2}) {  // a flipped bit
      Bytes b = *o.payload;
      b[b.size() / 2] ^= 0x10;
      o.payload = std::make_shared<const Bytes>(std::move(b));
    } else if (l == moqt::Location{2, 0} || l == moqt::Location{3, 0}) {  // swapped groups
      const moqt::PublishedObject* other = k->Find({l.group == 2 ? 3u : 2u, 0});
      o.payload = other->payload;
      o.properties = other->properties;
    } else if (l == moqt::Location{5, 1}) {  // replayed from another track
      const moqt::PublishedObject* other = v->Find(l);
      o.payload = other->payload;
      o.properties = other->properties;
    }
  });
  Got got;
  auto r = Start(RetrievalMode::kCompleted, &got, tokens_, Keys(ScopeKeys()), port);
  ASSERT_TRUE(RunUntil([&] { return got.report.has_value(); }));
  EXPECT_EQ(got.mismatches, 0);
  EXPECT_EQ(got.layers.size(), size_t{d_.layers} - 4);  // layers 1, 2, 3, 5 incomplete
  for (moqt::Location l : {moqt::Location{1, 2}, {2, 0}, {3, 0}, {5, 1}}) {
    EXPECT_TRUE(Refused(*got.report, StreamError::kUndecryptable, "k.raw.s0", l))
        << l.group << "/" << l.object;
    EXPECT_EQ(got.report->at(l.object, static_cast<uint32_t>(l.group)).source,
              BlockSource::kRecompute);
  }
  EXPECT_EQ(got.report->refusals_total, 4u);
  EXPECT_EQ(got.report->at(0, 4).source,
            BlockSource::kMoqtFetch);  // an untouched layer (completed: FETCH)
  // Another source (the publisher itself) delivers everything.
  Got again;
  auto r2 = Start(RetrievalMode::kCompleted, &again, tokens_, Keys(ScopeKeys()));
  ASSERT_TRUE(RunUntil([&] { return again.report.has_value(); }));
  ExpectAllOnce(again, d_.layers);
}

TEST_P(KvcsSecureE2E, RotationMidProductionAndAnUnknownKeyId) {
  const Bytes epoch1(32, 0x42);
  secure::ScopeKeyring both = ScopeKeys();
  ASSERT_TRUE(both.Add(1, epoch1).ok());
  Got live, completed, old_only;
  auto r1 = Start(RetrievalMode::kLive, &live, tokens_, Keys(both));
  Produce(10);
  ASSERT_TRUE(pub_->RotateKey(1, epoch1).ok());
  EXPECT_EQ(pub_->key_id(), std::optional<uint64_t>(1));
  Produce(d_.layers);
  auto r2 = Start(RetrievalMode::kCompleted, &completed, tokens_, Keys(both));
  ASSERT_TRUE(RunUntil([&] { return live.report && completed.report; }));
  ExpectAllOnce(live, d_.layers);
  ExpectAllOnce(completed, d_.layers);
  // Layer 10 onwards and the later manifest versions use Key ID 1: a consumer without it is told.
  EXPECT_EQ(PubTrack("k.raw.s0")->Find({10, 0})->properties,
            secure::ProtectedProperties(GetParam(), 1));
  EXPECT_EQ(PubTrack("k.raw.s0")->Find({9, 0})->properties,
            secure::ProtectedProperties(GetParam(), 0));
  auto r3 = Start(RetrievalMode::kLive, &old_only, tokens_, Keys(ScopeKeys(), 2500));
  ASSERT_TRUE(RunUntil([&] {
    r3->OnTimer();
    return old_only.report.has_value();
  }));
  EXPECT_TRUE(old_only.layers.empty());
  // Layers 10.. of both tracks and the newest manifest version (the first 64 kept in full).
  EXPECT_GE(old_only.report->refusals_total, 2u * 12 * (d_.layers - 10) + 1);
  bool named = false;
  for (const Refusal& f : old_only.report->refusals) {
    EXPECT_TRUE(f.status.Is(StreamError::kUnknownKeyId)) << f.status.ToString();
    if (f.track != "manifest.cose") {
      EXPECT_GE(f.location.group, 10u) << f.track;
    }
    named |= f.status.message().find("Key ID 1 is not in the keyring") != std::string::npos;
  }
  EXPECT_TRUE(named);
}

const auto kAllSuites =
    ::testing::Values(secure::CipherSuite::kAes128GcmSha256, secure::CipherSuite::kAes256GcmSha512);
std::string SuiteName(const ::testing::TestParamInfo<secure::CipherSuite>& info) {
  return info.param == secure::CipherSuite::kAes128GcmSha256 ? "Aes128Gcm" : "Aes256Gcm";
}

INSTANTIATE_TEST_SUITE_P(Suites, KvcsSecureE2E, kAllSuites, SuiteName);

// ------------------------------------------------- secure objects through a real relay

// A real relay (RelayServer, QUIC on 127.0.0.1) in front of the encrypting publisher: the
// publisher connects to it, sends PUBLISH_NAMESPACE and serves its TrackStore on that link; the
// relay subscribes there when consumers ask, caches, fans out and serves fetches (relay.md).
class KvcsSecureRelayE2E : public KvcsSecureE2E {
 protected:
  std::unique_ptr<relay::RelayServer> relay_;

  void SetUp() override {
    KvcsSecureE2E::SetUp();
    if (HasFatalFailure()) return;
    relay::RelayServerConfig rc;  // no verifier: open access
    rc.cert_file = cert_;
    rc.key_file = key_;
    auto r = relay::RelayServer::Start(io_, rc);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    relay_ = std::move(*r);
    moqt::MoqtClient* link = Connect(relay_->port(), &store_);
    bool accepted = false;
    ASSERT_TRUE(link->session()
                    .PublishNamespace(pub_->track_namespace(),
                                      [&](const std::optional<moqt::RequestError>& e) {
                                        EXPECT_FALSE(e.has_value()) << e->reason;
                                        accepted = true;
                                      })
                    .ok());
    ASSERT_TRUE(RunUntil([&] { return accepted; }));
  }
  void TearDown() override {
    clients_.clear();
    relay_.reset();
    KvcsSecureE2E::TearDown();
  }
  uint16_t relay_port() const { return relay_->port(); }
  relay::Relay& relay() { return relay_->relay(); }
  std::shared_ptr<moqt::Track> Cached(const std::string& name) {
    return relay().FindTrack({pub_->track_namespace(), name});
  }
};

TEST_P(KvcsSecureRelayE2E, TheRelayCachesFansOutAndServesOnlyCiphertext) {
  Got before, during, completed;
  auto r1 = Start(RetrievalMode::kLive, &before, tokens_, Keys(ScopeKeys()), relay_port());
  Produce(13);
  auto r2 = Start(RetrievalMode::kLive, &during, tokens_, Keys(ScopeKeys()), relay_port());
  Produce(d_.layers);
  ASSERT_TRUE(RunUntil([&] { return before.report && during.report; }));
  auto r3 = Start(RetrievalMode::kCompleted, &completed, tokens_, Keys(ScopeKeys()), relay_port());
  ASSERT_TRUE(RunUntil([&] { return completed.report.has_value(); }));
  ExpectAllOnce(before, d_.layers);
  ExpectAllOnce(during, d_.layers);
  ExpectAllOnce(completed, d_.layers);
  // One upstream subscription per track, however many consumers.
  EXPECT_EQ(relay().metrics().upstream_requests.load(), TrackNames().size());
  // The cache: every object byte-identical to the publisher's (payload, properties, priority),
  // and no plaintext in any of them.
  size_t tracks = 0, objects = 0, chunks = 0;
  relay().cache().ForEachTrack([&](const moqt::Track& t) {
    ++tracks;
    auto original = PubTrack(t.name().name);
    ASSERT_NE(original, nullptr) << t.name().name;
    ForEachObject(t, [&](const moqt::PublishedObject& o) {
      const moqt::PublishedObject* p = original->Find(o.location);
      ASSERT_NE(p, nullptr);
      EXPECT_EQ(*o.payload, *p->payload);
      EXPECT_EQ(o.properties, p->properties);
      EXPECT_EQ(o.publisher_priority, p->publisher_priority);
    });
    objects += ExpectNoPlaintext(t, &chunks);
  });
  EXPECT_EQ(tracks, TrackNames().size());
  EXPECT_EQ(objects, 2u * d_.layers * 12 + pub_->manifest_versions());
  EXPECT_GT(chunks, 1000u);
  // A consumer of another scope, through the same relay and its cache: nothing opens.
  ExpectAnotherScopeOpensNothing(relay_port());
  EXPECT_EQ(relay().metrics().upstream_requests.load(), TrackNames().size());  // from the cache
}

TEST_P(KvcsSecureRelayE2E, RotationMidProductionThroughTheRelay) {
  const Bytes epoch1(32, 0x42);
  secure::ScopeKeyring both = ScopeKeys();
  ASSERT_TRUE(both.Add(1, epoch1).ok());
  Got live, completed;
  auto r1 = Start(RetrievalMode::kLive, &live, tokens_, Keys(both), relay_port());
  Produce(10);
  ASSERT_TRUE(pub_->RotateKey(1, epoch1).ok());
  Produce(d_.layers);
  ASSERT_TRUE(RunUntil([&] { return live.report.has_value(); }));
  auto r2 = Start(RetrievalMode::kCompleted, &completed, tokens_, Keys(both), relay_port());
  ASSERT_TRUE(RunUntil([&] { return completed.report.has_value(); }));
  ExpectAllOnce(live, d_.layers);
  ExpectAllOnce(completed, d_.layers);
  // The relay holds both epochs' objects as the publisher sealed them.
  auto k = Cached("k.raw.s0");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->Find({9, 0})->properties, secure::ProtectedProperties(GetParam(), 0));
  EXPECT_EQ(k->Find({10, 0})->properties, secure::ProtectedProperties(GetParam(), 1));
}

TEST_P(KvcsSecureRelayE2E, ATamperingRelayIsCaughtEveryTimeAndThePublisherRecovers) {
  Produce(d_.layers);
  // Fill the relay's cache (a clean retrieval through it), so the tamperer can take objects
  // from any cached track.
  Got clean;
  auto r0 = Start(RetrievalMode::kCompleted, &clean, tokens_, Keys(ScopeKeys()), relay_port());
  ASSERT_TRUE(RunUntil([&] { return clean.report.has_value(); }));
  ExpectAllOnce(clean, d_.layers);
  // The tampering relay: the real relay's cache, altered on the way out.
  const std::vector<moqt::Location> altered = {{1, 2}, {2, 0}, {3, 0}, {5, 1}};
  relay::test::TamperingSource tamperer(
      &relay(), [&](const moqt::Track& t, moqt::PublishedObject& o) {
        if (t.name().name != "k.raw.s0") return;
        const moqt::Location l = o.location;
        const moqt::PublishedObject* from = nullptr;
        if (l == altered[0]) {  // a flipped bit
          Bytes b = *o.payload;
          b[b.size() / 2] ^= 0x10;
          o.payload = std::make_shared<const Bytes>(std::move(b));
        } else if (l == altered[1] || l == altered[2]) {  // swapped between groups
          from = t.Find({l.group == 2 ? 3u : 2u, 0});
        } else if (l == altered[3]) {  // replayed from another track
          auto v = Cached("v.raw.s0");
          ASSERT_NE(v, nullptr);
          from = v->Find(l);
        }
        if (from != nullptr) {
          o.payload = from->payload;
          o.properties = from->properties;
        }
      });
  auto front = Serve(&tamperer);
  ASSERT_NE(front, nullptr);
  // Caught every time: two consumers in turn, each recovering from the publisher directly.
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round);
    RecoveryOptions ro;
    ro.retrieval = Options(RetrievalMode::kCompleted, tokens_, Keys(ScopeKeys()));
    ro.alternates = {{&Connect()->session(), pub_->ns(), "the publisher"}};
    Got got;
    auto r = Recovery::Start(
        &Connect(front->port())->session(), ro, Record(&got),
        [&got](const RetrievalReport& rep) { got.report = rep; }, NowMs);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_TRUE(RunUntil([&] {
      (*r)->OnTimer();
      return got.report.has_value();
    }));
    EXPECT_TRUE(got.report->all_retrieved()) << got.report->recompute_count();
    EXPECT_EQ(got.mismatches, 0);
    EXPECT_EQ(got.pairs.size(), 12u * d_.layers);
    for (const auto& [pair, n] : got.pairs) EXPECT_EQ(n, 1);
    for (moqt::Location l : altered) {
      EXPECT_TRUE(Refused(*got.report, StreamError::kUndecryptable, "k.raw.s0", l))
          << l.group << "/" << l.object;
      EXPECT_EQ(got.report->at(l.object, static_cast<uint32_t>(l.group)).source,
                BlockSource::kAltMoqt);
    }
    // A layer is delivered whole: each altered object's layer comes from the publisher.
    EXPECT_EQ(got.report->count(BlockSource::kAltMoqt), 12u * altered.size());
    EXPECT_EQ((*r)->secure_counts().failed, altered.size());
  }
  EXPECT_EQ(tamperer.altered(), altered.size());  // one copy, served twice
}

INSTANTIATE_TEST_SUITE_P(Suites, KvcsSecureRelayE2E, kAllSuites, SuiteName);

}  // namespace
}  // namespace kvcs::stream
