// KVCS over MOQT through the relay (src/relay) over real QUIC on 127.0.0.1: the Publisher's
// TrackStore is the TrackSource of a client session that PUBLISH_NAMESPACEs the publication to an
// in-process RelayServer (what `kvcs publish --relay` does); consumers talk only to the relay.
// Live retrieval joining before, during and after production (every layer exactly once, one
// upstream subscription per track), completed retrieval of a layer range with the first n blocks,
// discovery (SUBSCRIBE_NAMESPACE answered by the relay, with a shorter-prefix fallback), auto
// mode (a discovered publication joined live while produced, FETCHed once finished), a
// consumer after the publisher left, and recovery: the relay destroyed mid-retrieval (another
// relay carries the publication) and the publisher stopping mid-production, each within its
// bound and reporting what must be recomputed. Also through the relay: a publication of two
// segments, the codec choice between a kv.<codec> track and the raw pair, and a relay serving a
// corrupt or a missing object (relay::test::TamperingSource in front of the real relay) recovered
// from a KVSP HTTP holder (the S3 server with the ObjectCache extensions, in process) or from
// another relay. One io_context on the test thread; every wait is bounded.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "common/asio.h"
#include "kvcs_stream/discovery.h"
#include "kvcs_stream/encoding.h"
#include "kvcs_stream/publisher.h"
#include "kvcs_stream/recovery.h"
#include "kvcs_stream/retrieval.h"
#include "kvcs_stream/test_tools/test_cache.h"
#include "kvsp_http/holder_client.h"
#include "kvsp_http/http_holder_source.h"
#include "moqt_endpoint/moqt_endpoint.h"
#include "objcache/block_layout.h"
#include "objcache/client.h"
#include "objcache/served_store.h"
#include "quic/tls.h"
#include "relay/relay_server.h"
#include "relay/test_tools/tampering_source.h"
#include "store/local_store.h"

namespace kvcs::stream {
namespace {

namespace asio = boost::asio;

uint64_t NowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

struct Got {
  std::map<std::pair<uint64_t, uint32_t>, int> pairs;  // (block, layer) -> deliveries
  int mismatches = 0;
  std::optional<RetrievalReport> report;
  uint64_t start_ms = 0, done_ms = 0;
  Encoding encoding;  // what the delivered bytes are compared with (Delivered)
};

// Block `block` of `layer` as a consumer of encoding `e` gets it: the source's raw K and V, or,
// for another codec, the source encoded as the publisher does and decoded again (fp8 and int8 are
// lossy: the consumer gets exactly what the publisher's objects hold, not the source).
std::pair<Bytes, Bytes> Delivered(const kvsp::Descriptor& d, const Encoding& e, uint32_t layer,
                                  uint64_t block) {
  std::pair<Bytes, Bytes> raw{test::LayerK(d, layer, block, 1), test::LayerV(d, layer, block, 1)};
  if (e.codec == kvsp::Codec::kRaw) return raw;
  const std::vector<profile::Component> tracks =
      e.joint ? std::vector{profile::Component::kKV}
              : std::vector{profile::Component::kK, profile::Component::kV};
  std::pair<Bytes, Bytes> out;
  for (profile::Component c : tracks) {
    auto data = EncodeData(d, e.codec, c, raw.first, raw.second);
    if (!data.ok() || !DecodeData(d, e.codec, c, *data, &out.first, &out.second).ok()) return {};
  }
  return out;
}

// A KVSP §8 holder over real HTTP on 127.0.0.1: the S3 server with the ObjectCache extensions
// (what `kvcs store` serves) over a LocalStore in `root`, on its own thread, loaded by one
// aggregated PUT with the raw containers (every layer) of the first `blocks` blocks of the cache.
class HolderStore {
 public:
  ~HolderStore() {
    served_.reset();  // stops the server before its store goes
    store_.reset();
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  Status Start(const std::filesystem::path& root, const kvsp::Descriptor& d,
               const CacheIdentity& id, uint64_t blocks) {
    root_ = root;
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);  // a previous test's
    store::LocalStoreOptions so;
    so.read_threads = 2;
    so.sync = false;
    KVCS_ASSIGN_OR_RETURN(store_, store::LocalStore::Open(root_.string(), so));
    KVCS_ASSIGN_OR_RETURN(served_, objcache::ServedStore::Start(*store_, "", /*io_threads=*/1));
    std::vector<Bytes> containers;
    for (uint64_t b = 0; b < blocks; ++b) {
      KVCS_ASSIGN_OR_RETURN(
          Bytes c, test::BlockContainer(d, id.compat_id, id.block_keys[b], b, 0, d.layers - 1));
      containers.push_back(std::move(c));
    }
    return served_->PutBlocks(objcache::kDefaultKvBucket, id.scope_id, containers);
  }
  std::string url() const { return served_->url(); }

 private:
  std::filesystem::path root_;
  std::unique_ptr<store::LocalStore> store_;
  std::unique_ptr<objcache::ServedStore> served_;
};

// The publisher's side of one relay: a client session whose TrackSource is the publisher's store.
struct Announcer : moqt::MoqtSessionCallbacks {
  std::unique_ptr<moqt::MoqtClient> client;
  std::optional<bool> accepted;
};

class KvcsRelayE2E : public ::testing::Test {
 protected:
  kvsp::Descriptor d_ = test::SmallDescriptor(/*layers=*/32, /*block_tokens=*/16);
  kvsp::ScopeKey scope_{};
  std::vector<uint32_t> tokens_ = test::Tokens(16 * 12);  // 12 blocks
  moqt::TrackStore store_;
  std::unique_ptr<Publisher> pub_;
  asio::io_context io_;
  std::vector<std::unique_ptr<relay::RelayServer>> relays_;
  std::vector<std::unique_ptr<Announcer>> announcers_;
  std::vector<std::unique_ptr<moqt::MoqtClient>> clients_;
  // Tampering relays in front of relays_ and the servers that serve them.
  std::vector<std::unique_ptr<relay::test::TamperingSource>> tamperers_;
  std::vector<std::unique_ptr<moqt::MoqtServer>> servers_;
  std::unique_ptr<HolderStore> holder_store_;
  std::unique_ptr<kvsp_http::HttpHolderSource> holder_;
  std::filesystem::path dir_;
  std::string cert_, key_;
  profile::KeySet keys_;

  void SetUp() override {
    scope_[0] = 3;
    auto pem = quic::GenerateSelfSignedCert("localhost");
    ASSERT_TRUE(pem.ok());
    dir_ = std::filesystem::temp_directory_path() /
           ("kvcs_stream_relay_e2e_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    cert_ = (dir_ / "cert.pem").string();
    key_ = (dir_ / "key.pem").string();
    std::ofstream(cert_) << pem->cert_pem;
    std::ofstream(key_) << pem->key_pem;
    auto producer = *profile::SigningKey::Generate(profile::CoseAlg::kES256, Bytes{'r'});
    ASSERT_TRUE(keys_.Add(producer.Public()).ok());
    PublisherConfig c;
    c.descriptor = d_;
    c.scope_key = scope_;
    c.producer_key = producer;
    auto p = Publisher::Create(&store_, c, tokens_);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    pub_ = std::move(*p);
  }
  void TearDown() override {
    holder_.reset();
    holder_store_.reset();
    clients_.clear();
    servers_.clear();
    tamperers_.clear();
    announcers_.clear();
    relays_.clear();
  }
  // Replaces the publication by one offering `encodings` (another Publication ID); before
  // Announce.
  void Republish(std::vector<Encoding> encodings) {
    PublisherConfig c = pub_->config();
    c.encodings = std::move(encodings);
    auto p = Publisher::Create(&store_, c, tokens_);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    pub_ = std::move(*p);
  }
  bool RunUntil(const std::function<bool()>& pred, const std::function<void()>& tick = {}) {
    const uint64_t deadline = NowMs() + 30000;
    while (!pred()) {
      if (NowMs() > deadline) return false;
      io_.run_one_for(std::chrono::milliseconds(10));
      if (io_.stopped()) io_.restart();
      if (tick) tick();
    }
    return true;
  }
  void Poll() {
    io_.poll();
    if (io_.stopped()) io_.restart();
  }
  // An open relay on 127.0.0.1 (any port); returns its index in relays_.
  size_t StartRelay() {
    relay::RelayServerConfig rc;
    rc.cert_file = cert_;
    rc.key_file = key_;
    auto r = relay::RelayServer::Start(io_, rc);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    relays_.push_back(std::move(*r));
    return relays_.size() - 1;
  }
  uint16_t RelayPort(size_t i) const { return relays_[i]->port(); }
  // A tampering relay in front of relay `i` (its cache and upstream feeds are real), served by a
  // MoqtServer on 127.0.0.1; returns its port.
  uint16_t ServeTampered(size_t i, relay::test::TamperingSource::Tamper tamper,
                         relay::test::TamperingSource::Drop drop = {}) {
    tamperers_.push_back(std::make_unique<relay::test::TamperingSource>(
        &relays_[i]->relay(), std::move(tamper), std::move(drop)));
    moqt::MoqtServerConfig sc;
    sc.quic.host = "127.0.0.1";
    sc.quic.cert_file = cert_;
    sc.quic.key_file = key_;
    auto s = moqt::MoqtServer::Create(io_, sc, tamperers_.back().get());
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    if (!s.ok()) return 0;
    servers_.push_back(std::move(*s));
    return servers_.back()->port();
  }
  // A KVSP HTTP holder of blocks 0..blocks-1 (every layer) as a recovery source.
  HolderSource* StartHolder(uint64_t blocks) {
    holder_store_ = std::make_unique<HolderStore>();
    Status st = holder_store_->Start(dir_ / "holder", d_,
                                     *CacheIdentity::Compute(d_, scope_, tokens_), blocks);
    EXPECT_TRUE(st.ok()) << st.ToString();
    auto hc = kvsp_http::HolderClient::Create(holder_store_->url(), {});
    EXPECT_TRUE(hc.ok()) << hc.status().ToString();
    if (!st.ok() || !hc.ok()) return nullptr;
    holder_ = std::make_unique<kvsp_http::HttpHolderSource>(
        std::move(*hc), [this](std::function<void()> f) { asio::post(io_, std::move(f)); });
    return holder_.get();
  }
  moqt::MoqtClientConfig ClientConfig(uint16_t port) const {
    moqt::MoqtClientConfig c;
    c.quic.host = "127.0.0.1";
    c.quic.port = port;
    c.quic.server_name = "localhost";
    c.quic.ca_file = cert_;
    return c;
  }
  // The publisher connects to relay `i` and announces its publication there.
  Announcer* Announce(size_t i) {
    auto a = std::make_unique<Announcer>();
    auto cl = moqt::MoqtClient::Connect(io_, ClientConfig(RelayPort(i)), a.get(), &store_);
    EXPECT_TRUE(cl.ok()) << cl.status().ToString();
    a->client = std::move(*cl);
    Announcer* raw = a.get();
    announcers_.push_back(std::move(a));
    EXPECT_TRUE(RunUntil([&] { return raw->client->setup_complete() || raw->client->closed(); }));
    auto id = raw->client->session().PublishNamespace(
        pub_->track_namespace(),
        [raw](const std::optional<moqt::RequestError>& e) { raw->accepted = !e.has_value(); });
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    EXPECT_TRUE(RunUntil([&] { return raw->accepted.has_value(); }));
    EXPECT_EQ(raw->accepted, std::optional<bool>(true));
    return raw;
  }
  moqt::MoqtSession* Connect(uint16_t port) {
    auto cl = moqt::MoqtClient::Connect(io_, ClientConfig(port), nullptr);
    EXPECT_TRUE(cl.ok()) << cl.status().ToString();
    moqt::MoqtClient* raw = cl->get();
    clients_.push_back(std::move(*cl));
    EXPECT_TRUE(RunUntil([&] { return raw->setup_complete() || raw->closed(); }));
    EXPECT_TRUE(raw->setup_complete());
    return &raw->session();
  }
  RecoveryOptions Options(RetrievalMode mode, std::span<const uint32_t> tokens) {
    RecoveryOptions o;
    o.retrieval.mode = mode;
    o.retrieval.verifier.identity = *CacheIdentity::Compute(d_, scope_, tokens);
    o.retrieval.verifier.publication = pub_->ns();
    o.retrieval.verifier.keys = &keys_;
    // 12 blocks · 16 tokens · 32 layers · 0.5 ms = 3.07 s.
    o.retrieval.compute_ns_per_token_layer = 500'000;
    return o;
  }
  // A Recovery (without recovery sources: a plain Retrieval with the same report) on `session`.
  std::unique_ptr<Recovery> Start(moqt::MoqtSession* session, RecoveryOptions o, Got* got) {
    const kvsp::Descriptor d = d_;
    got->start_ms = NowMs();
    auto r = Recovery::Start(
        session, std::move(o),
        [got, d](const VerifiedLayer& l) {
          for (size_t i = 0; i < l.k.size(); ++i) {
            got->pairs[{l.first_block + i, l.layer}]++;
            auto [k, v] = Delivered(d, got->encoding, l.layer, l.first_block + i);
            if (Bytes(l.k[i].begin(), l.k[i].end()) != k ||
                Bytes(l.v[i].begin(), l.v[i].end()) != v) {
              got->mismatches++;
            }
          }
        },
        [got](const RetrievalReport& rep) {
          got->report = rep;
          got->done_ms = NowMs();
        },
        NowMs);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(*r) : nullptr;
  }
  // A Recovery on `session` run to its end: *got holds its report.
  void Retrieve(moqt::MoqtSession* session, RecoveryOptions o, Got* got) {
    auto rec = Start(session, std::move(o), got);
    ASSERT_NE(rec, nullptr);
    ASSERT_TRUE(RunUntil([&] { return got->report.has_value(); }, [&] { rec->OnTimer(); }));
  }
  // Layers up to `to` of the current segment, whose first block is `first_block`.
  void Produce(uint32_t to, uint64_t first_block = 0) {
    const uint64_t n = pub_->segment_blocks();
    for (uint32_t l = pub_->next_layer(); l < to; ++l) {
      ASSERT_TRUE(pub_->PublishLayer(l, test::LayerK(d_, l, first_block, n),
                                     test::LayerV(d_, l, first_block, n))
                      .ok());
      Poll();
    }
  }
  // A retrieval ends at its deadline on the owner's next OnTimer (every loop turn, ~10 ms).
  static constexpr uint64_t kTickSlackMs = 50;
  void ExpectEverythingOnce(const Got& g, uint64_t blocks = 12, uint32_t layers = 32) {
    ASSERT_TRUE(g.report.has_value());
    EXPECT_TRUE(g.report->all_retrieved()) << g.report->recompute_count();
    EXPECT_EQ(g.report->duplicates, 0u);
    EXPECT_EQ(g.mismatches, 0);
    EXPECT_EQ(g.pairs.size(), blocks * layers);
    for (const auto& [k, n] : g.pairs) EXPECT_EQ(n, 1) << k.first << "/" << k.second;
    EXPECT_LE(g.done_ms, g.report->deadline_ms + kTickSlackMs);
  }
  // Everything once (ExpectEverythingOnce) within the 3.07 s bound: `layer` whole from
  // `recovered`, every other layer from the primary as `primary`.
  void ExpectOneLayerRecovered(const Got& g, uint32_t layer, BlockSource recovered,
                               BlockSource primary) {
    ExpectEverythingOnce(g);
    if (!g.report) return;
    const RetrievalReport& rep = *g.report;
    EXPECT_LE(rep.deadline_ms, g.start_ms + 3072 + 100);
    EXPECT_FALSE(rep.timed_out);  // the primary's requests ended: it did not wait for its share
    for (uint64_t b = 0; b < 12; ++b) EXPECT_EQ(rep.at(b, layer).source, recovered) << b;
    EXPECT_EQ(rep.count(recovered), 12u);
    EXPECT_EQ(rep.count(primary), 12u * (d_.layers - 1));
  }
  const relay::RelayMetrics& Metrics(size_t i) { return relays_[i]->relay().metrics(); }
  // §5.1 on `s` for `tokens`, to its end.
  std::optional<DiscoveryResult> Discover(moqt::MoqtSession* s, std::span<const uint32_t> tokens,
                                          const kvsp::ScopeKey& scope, DiscoveryOptions o = {}) {
    std::optional<DiscoveryResult> found;
    auto d = Discovery::Start(
        s, *CacheIdentity::Compute(d_, scope, tokens), o,
        [&](const DiscoveryResult& res) { found = res; }, NowMs);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    if (!d.ok()) return std::nullopt;
    EXPECT_TRUE(RunUntil([&] { return found.has_value(); }, [&] { (*d)->OnTimer(); }));
    return found;
  }
};

TEST_F(KvcsRelayE2E, LiveJoinsBeforeDuringAndAfterProductionExactlyOnce) {
  const size_t r = StartRelay();
  Announce(r);
  Got before, during, after;
  auto r1 = Start(Connect(RelayPort(r)), Options(RetrievalMode::kLive, tokens_), &before);
  Produce(13);
  auto r2 = Start(Connect(RelayPort(r)), Options(RetrievalMode::kLive, tokens_), &during);
  Produce(d_.layers);
  ASSERT_TRUE(RunUntil([&] { return before.report && during.report; }));
  auto r3 = Start(Connect(RelayPort(r)), Options(RetrievalMode::kLive, tokens_), &after);
  ASSERT_TRUE(RunUntil([&] { return after.report.has_value(); }));
  for (const Got* g : {&before, &during, &after}) {
    ExpectEverythingOnce(*g);
    EXPECT_EQ(g->report->count(BlockSource::kMoqt), 12u * d_.layers);
  }
  // One upstream subscription per track (manifest.cose, k, v), whoever joined when.
  EXPECT_EQ(Metrics(r).upstream_requests.load(), 3u);
}

TEST_F(KvcsRelayE2E, CompletedLayerRangeWithTheFirstBlocks) {
  const size_t r = StartRelay();
  Announce(r);
  Produce(d_.layers);
  RecoveryOptions o = Options(RetrievalMode::kCompleted, tokens_);
  o.retrieval.verifier.first_layer = 4;
  o.retrieval.verifier.last_layer = 9;
  o.retrieval.verifier.max_blocks = 5;
  Got got;
  auto rec = Start(Connect(RelayPort(r)), o, &got);
  ASSERT_TRUE(RunUntil([&] { return got.report.has_value(); }));
  ExpectEverythingOnce(got, 5, 6);
  EXPECT_EQ(got.report->blocks, 5u);
  EXPECT_EQ(got.report->first_layer, 4u);
  EXPECT_EQ(got.report->count(BlockSource::kMoqtFetch), 5u * 6);
  EXPECT_EQ(got.pairs.begin()->first, (std::pair<uint64_t, uint32_t>{0, 4}));
}

// A publisher that closes its publication (Publisher::Close: End of Track on the manifest) and
// leaves: the relay keeps every track whole, and a consumer after it is served everything.
TEST_F(KvcsRelayE2E, AClosedPublicationIsServedWholeAfterThePublisherLeft) {
  const size_t r = StartRelay();
  Announcer* a = Announce(r);
  Produce(d_.layers);
  Got first, late;
  auto r1 = Start(Connect(RelayPort(r)), Options(RetrievalMode::kCompleted, tokens_), &first);
  ASSERT_TRUE(RunUntil([&] { return first.report.has_value(); }));
  ExpectEverythingOnce(first);
  ASSERT_TRUE(pub_->Close().ok());
  EXPECT_FALSE(pub_->Close().ok());
  const moqt::FullTrackName manifest{pub_->track_namespace(),
                                     std::string(profile::kManifestCoseTrack)};
  ASSERT_TRUE(RunUntil([&] {
    auto t = relays_[r]->relay().FindTrack(manifest);
    return t && t->ended() && !t->filling();
  }));
  a->client->Close(moqt::SessionError::kNoError, "publisher gone");
  ASSERT_TRUE(RunUntil([&] { return a->client->closed(); }));
  auto r2 = Start(Connect(RelayPort(r)), Options(RetrievalMode::kCompleted, tokens_), &late);
  ASSERT_TRUE(RunUntil([&] { return late.report.has_value(); }, [&] { r2->OnTimer(); }));
  for (const auto& f : late.report->refusals) ADD_FAILURE() << f.status.ToString();
  ExpectEverythingOnce(late);
}

// A publisher that leaves without closing (a crash, a lost link): the manifest never ended, so
// the relay cannot know it is final and drops it (relay.md: a failed upstream fails the track).
// A consumer after it is refused at once (no manifest) and told to recompute everything; it
// does not wait for its bound.
TEST_F(KvcsRelayE2E, AfterThePublisherLeftTheRelayHasNoManifestAndSaysSoAtOnce) {
  const size_t r = StartRelay();
  Announcer* a = Announce(r);
  Produce(d_.layers);
  Got first, late;
  auto r1 = Start(Connect(RelayPort(r)), Options(RetrievalMode::kCompleted, tokens_), &first);
  ASSERT_TRUE(RunUntil([&] { return first.report.has_value(); }));
  ExpectEverythingOnce(first);
  a->client->Close(moqt::SessionError::kNoError, "publisher gone");
  ASSERT_TRUE(RunUntil([&] { return a->client->closed(); }));
  const uint64_t t0 = NowMs();
  auto r2 = Start(Connect(RelayPort(r)), Options(RetrievalMode::kCompleted, tokens_), &late);
  ASSERT_TRUE(RunUntil([&] { return late.report.has_value(); }, [&] { r2->OnTimer(); }));
  EXPECT_TRUE(late.pairs.empty());
  EXPECT_EQ(late.report->recompute_count(), 12u * d_.layers);
  EXPECT_LT(late.done_ms - t0, 2000u);  // well before its 3.07 s bound
  ASSERT_FALSE(late.report->refusals.empty());
  EXPECT_TRUE(late.report->refusals[0].status.Is(StreamError::kUnsignedManifest))
      << late.report->refusals[0].status.ToString();
}

TEST_F(KvcsRelayE2E, DiscoveryThroughTheRelayWithAShorterPrefixFallback) {
  const size_t r = StartRelay();
  Announce(r);
  Produce(d_.layers);
  // The exact prompt, then one 4 blocks longer: prefixes 16..13 have none, 12 has it.
  std::vector<uint32_t> longer = test::Tokens(16 * 16);
  for (auto [tokens, want_tried] : {std::pair{std::span<const uint32_t>(tokens_), 2u},
                                    std::pair{std::span<const uint32_t>(longer), 6u}}) {
    moqt::MoqtSession* s = Connect(RelayPort(r));
    DiscoveryOptions o;
    o.window = 2;
    std::optional<DiscoveryResult> found = Discover(s, tokens, scope_, o);
    ASSERT_TRUE(found.has_value());
    ASSERT_NE(found->best(), nullptr);
    EXPECT_EQ(found->publications.size(), 1u);
    EXPECT_EQ(found->best()->ns, pub_->ns());
    EXPECT_EQ(found->best()->anchor_blocks, 12u);
    EXPECT_EQ(found->prefixes_tried, want_tried);
    Got got;
    RecoveryOptions ro = Options(RetrievalMode::kCompleted, tokens);
    ro.retrieval.verifier.publication = found->best()->ns;
    auto rec = Start(s, ro, &got);
    ASSERT_TRUE(RunUntil([&] { return got.report.has_value(); }));
    EXPECT_EQ(got.mismatches, 0);
    EXPECT_EQ(got.pairs.size(), 12u * d_.layers);
    EXPECT_EQ(got.report->at(11, d_.layers - 1).source, BlockSource::kMoqtFetch);
    if (tokens.size() > tokens_.size()) {
      EXPECT_EQ(got.report->at(12, 0).reason, StreamError::kNotCovered);
      EXPECT_EQ(got.report->recompute_count(), 4u * d_.layers);
    } else {
      EXPECT_TRUE(got.report->all_retrieved());
    }
  }
  // Another scope's prompt finds nothing through the relay.
  kvsp::ScopeKey other{};
  other[0] = 4;
  std::optional<DiscoveryResult> none = Discover(Connect(RelayPort(r)), tokens_, other);
  ASSERT_TRUE(none.has_value());
  EXPECT_EQ(none->best(), nullptr);
}

// kAuto, the default of `kvcs get`: a publication discovered while it is produced is joined live
// (its manifest says segment 0 is not complete); discovered again after the end, it is FETCHed
// (§5.3) from the relay. Each object reaches the consumer once either way.
TEST_F(KvcsRelayE2E, ADiscoveredPublicationIsFetchedWhenFinishedAndJoinedLiveWhileProduced) {
  const size_t r = StartRelay();
  Announce(r);
  Produce(13);
  struct Counts {
    uint64_t fetched = 0, live = 0;
    std::set<std::pair<std::string, moqt::Location>> seen;
    uint64_t again = 0;
  };
  auto retrieve = [&](Got* got, Counts* c) {
    moqt::MoqtSession* s = Connect(RelayPort(r));
    std::optional<DiscoveryResult> found = Discover(s, tokens_, scope_);
    EXPECT_TRUE(found && found->best() != nullptr);
    if (!found || found->best() == nullptr) return std::unique_ptr<Recovery>();
    EXPECT_EQ(found->best()->ns, pub_->ns());
    RecoveryOptions o = Options(RetrievalMode::kAuto, tokens_);
    o.retrieval.verifier.publication = found->best()->ns;
    o.retrieval.on_object_received = [c](const ReceivedObjectInfo& i) {
      if (i.kind != profile::TrackKind::kData) return;
      ++(i.fetched ? c->fetched : c->live);
      if (!c->seen.insert({std::string(i.track), i.location}).second) ++c->again;
    };
    return Start(s, o, got);
  };
  Got live, fetched;
  Counts lc, fc;
  auto r1 = retrieve(&live, &lc);
  ASSERT_NE(r1, nullptr);
  // Joined: the manifest said "not complete", so it subscribed, and the fill brought layers 0..12.
  ASSERT_TRUE(RunUntil([&] { return lc.live == 2u * 12 * 13; }, [&] { r1->OnTimer(); }));
  EXPECT_EQ(lc.fetched, 0u);
  Produce(d_.layers);
  ASSERT_TRUE(RunUntil([&] { return live.report.has_value(); }, [&] { r1->OnTimer(); }));
  ExpectEverythingOnce(live);
  EXPECT_EQ(live.report->count(BlockSource::kMoqt), 12u * d_.layers);
  EXPECT_EQ(lc.fetched, 0u);
  EXPECT_EQ(lc.live, 2u * 12 * d_.layers);
  EXPECT_EQ(lc.again, 0u);
  auto r2 = retrieve(&fetched, &fc);
  ASSERT_NE(r2, nullptr);
  ASSERT_TRUE(RunUntil([&] { return fetched.report.has_value(); }, [&] { r2->OnTimer(); }));
  ExpectEverythingOnce(fetched);
  EXPECT_EQ(fetched.report->count(BlockSource::kMoqtFetch), 12u * d_.layers);
  EXPECT_EQ(fc.fetched, 2u * 12 * d_.layers);
  EXPECT_EQ(fc.live, 0u);
  EXPECT_EQ(fc.again, 0u);
}

TEST_F(KvcsRelayE2E, KilledRelayMidRetrievalRecoveredFromAnotherRelay) {
  // The publisher announces to two relays; the consumer's primary relay is destroyed after 12
  // layers while production goes on.
  const size_t r1 = StartRelay(), r2 = StartRelay();
  Announce(r1);
  Announce(r2);
  moqt::MoqtSession* primary = Connect(RelayPort(r1));
  moqt::MoqtSession* second = Connect(RelayPort(r2));
  RecoveryOptions o = Options(RetrievalMode::kLive, tokens_);
  o.alternates = {{second, pub_->ns(), "relay-2"}};
  Got got;
  const uint64_t start = NowMs();
  auto rec = Start(primary, o, &got);
  Produce(12);
  ASSERT_TRUE(RunUntil([&] { return got.pairs.size() >= 12u * 8; }, [&] { rec->OnTimer(); }));
  relays_[r1].reset();  // killed: its sessions and cached tracks go with it
  Produce(d_.layers);
  ASSERT_TRUE(RunUntil([&] { return got.report.has_value(); }, [&] { rec->OnTimer(); }));
  ExpectEverythingOnce(got);
  EXPECT_LE(got.report->deadline_ms, start + 3072 + 100);
  EXPECT_EQ(got.report->count(BlockSource::kMoqt), 12u * 8);  // layers 0..7 from relay 1
  EXPECT_EQ(got.report->count(BlockSource::kAltMoqt), 12u * 24);
  EXPECT_EQ(got.report->recompute_count(), 0u);
  EXPECT_EQ(
      got.report->sources[got.report->at(0, 31).source_index].find("relay-2") != std::string::npos,
      true);
}

TEST_F(KvcsRelayE2E, KilledRelayWithoutAnotherSourceReportsTheRestForRecompute) {
  const size_t r = StartRelay();
  Announce(r);
  Got got;
  const uint64_t start = NowMs();
  auto rec = Start(Connect(RelayPort(r)), Options(RetrievalMode::kLive, tokens_), &got);
  Produce(12);
  ASSERT_TRUE(RunUntil([&] { return got.pairs.size() >= 12u * 8; }, [&] { rec->OnTimer(); }));
  relays_[r].reset();
  Produce(d_.layers);
  ASSERT_TRUE(RunUntil([&] { return got.report.has_value(); }, [&] { rec->OnTimer(); }));
  const RetrievalReport& rep = *got.report;
  EXPECT_EQ(got.mismatches, 0);
  EXPECT_LE(got.done_ms, rep.deadline_ms + kTickSlackMs);
  EXPECT_LE(rep.deadline_ms, start + 3072 + 100);
  EXPECT_EQ(rep.count(BlockSource::kMoqt), 12u * 8);
  EXPECT_EQ(rep.recompute_count(), 12u * 24);
  EXPECT_NE(rep.at(5, 8).reason, StreamError::kNone);
}

TEST_F(KvcsRelayE2E, PublisherThatStopsMidProductionReportsTheRestForRecompute) {
  const size_t r = StartRelay();
  Announcer* a = Announce(r);
  Got live, gone;
  const uint64_t start = NowMs();
  auto rec = Start(Connect(RelayPort(r)), Options(RetrievalMode::kLive, tokens_), &live);
  Produce(10);  // then the publisher stops producing (its session stays)
  ASSERT_TRUE(RunUntil([&] { return live.report.has_value(); }, [&] { rec->OnTimer(); }));
  const RetrievalReport& rep = *live.report;
  EXPECT_EQ(live.mismatches, 0);
  EXPECT_LE(live.done_ms, rep.deadline_ms + kTickSlackMs);
  EXPECT_LE(rep.deadline_ms, start + 3072 + 100);
  // Layers 0..7 (listed by the manifest after layer 8) came live; the rest must be recomputed.
  EXPECT_EQ(rep.count(BlockSource::kMoqt), 12u * 8);
  EXPECT_EQ(rep.recompute_count(), 12u * 24);
  EXPECT_EQ(rep.at(9, 8).reason, StreamError::kDeadline);
  EXPECT_TRUE(rep.timed_out);
  // Then the publisher leaves (its session closes): a consumer through the relay ends promptly,
  // well before its bound, with the same layers and the rest for recompute.
  a->client->Close(moqt::SessionError::kNoError, "publisher gone");
  ASSERT_TRUE(RunUntil([&] { return a->client->closed(); }));
  const uint64_t t2 = NowMs();
  auto rec2 = Start(Connect(RelayPort(r)), Options(RetrievalMode::kLive, tokens_), &gone);
  ASSERT_TRUE(RunUntil([&] { return gone.report.has_value(); }, [&] { rec2->OnTimer(); }));
  EXPECT_EQ(gone.mismatches, 0);
  EXPECT_LE(gone.done_ms, gone.report->deadline_ms + kTickSlackMs);
  EXPECT_LE(gone.report->deadline_ms, t2 + 3072 + 100);
  EXPECT_EQ(gone.report->recompute_count() + gone.report->count(BlockSource::kMoqt), 12u * 32);
  EXPECT_GE(gone.report->recompute_count(), 12u * 24);
}

// Two segments (Publisher::AddSegment: 2 blocks appended once segment 0 completed) through the
// relay: a consumer joined live before segment 1 is produced, and one that FETCHes both once
// finished, each get all 14 blocks of every layer exactly once, verified, and the relay carries
// both segments' tracks.
TEST_F(KvcsRelayE2E, TwoSegmentsThroughTheRelayEveryBlockAndLayerOnce) {
  const size_t r = StartRelay();
  Announce(r);
  Produce(d_.layers);
  const std::vector<uint32_t> more = test::Tokens(32, 9);  // 2 blocks appended
  ASSERT_TRUE(pub_->AddSegment(more).ok());
  std::vector<uint32_t> all = tokens_;
  all.insert(all.end(), more.begin(), more.end());
  Got live, fetched;
  auto r1 = Start(Connect(RelayPort(r)), Options(RetrievalMode::kLive, all), &live);
  Produce(d_.layers, 12);
  ASSERT_TRUE(RunUntil([&] { return live.report.has_value(); }, [&] { r1->OnTimer(); }));
  ASSERT_NO_FATAL_FAILURE(
      Retrieve(Connect(RelayPort(r)), Options(RetrievalMode::kCompleted, all), &fetched));
  for (const Got* g : {&live, &fetched}) {
    ExpectEverythingOnce(*g, 14, d_.layers);
    EXPECT_EQ(g->report->blocks, 14u);
    EXPECT_EQ(g->report->layers_delivered, 2u * d_.layers);  // one per segment and layer
  }
  EXPECT_EQ(live.report->count(BlockSource::kMoqt), 14u * d_.layers);
  EXPECT_EQ(fetched.report->count(BlockSource::kMoqtFetch), 14u * d_.layers);
  for (const char* name : {"k.raw.s0", "v.raw.s0", "k.raw.s1", "v.raw.s1"}) {
    EXPECT_NE(relays_[r]->relay().FindTrack({pub_->track_namespace(), name}), nullptr) << name;
  }
}

// A publication offering kv.fp8-e4m3 and the raw k+v pair (in that order), through the relay; the
// consumer says only its compute time (choose_encoding, at the rate measured on the manifest). A
// slow model (1 s per token and layer) hides any transfer: the raw pair, bit-exact. A fast one
// (1 ns) is limited by the link: kv.fp8-e4m3, every block exactly what the publisher's objects
// hold (the source through fp8 and back). Lossless only: the raw pair again, from the relay's
// cache. The relay fetched upstream only the tracks chosen.
TEST_F(KvcsRelayE2E, CodecChoiceThroughTheRelayBothWays) {
  const Encoding fp8{kvsp::Codec::kFp8E4m3, true};
  Republish({fp8, Encoding{}});
  const size_t r = StartRelay();
  Announce(r);
  Produce(d_.layers);
  auto options = [&](RetrievalMode mode, uint64_t ns_per_token_layer, bool allow_lossy) {
    RecoveryOptions o = Options(mode, tokens_);
    o.retrieval.compute_ns_per_token_layer = ns_per_token_layer;
    o.retrieval.min_deadline_ms = 20'000;  // the bound of a 1 ns model is the floor
    o.retrieval.choose_encoding = EncodingChoiceOptions{};
    o.retrieval.choose_encoding->allow_lossy = allow_lossy;
    return o;
  };
  Got slow;
  ASSERT_NO_FATAL_FAILURE(
      Retrieve(Connect(RelayPort(r)), options(RetrievalMode::kLive, 1'000'000'000, true), &slow));
  ExpectEverythingOnce(slow);
  EXPECT_GT(slow.report->choice_rate_bytes_per_s, 0);  // measured on the manifest
  EXPECT_EQ(slow.report->encoding, Encoding{});
  EXPECT_EQ(slow.report->count(BlockSource::kMoqt), 12u * d_.layers);
  EXPECT_EQ(Metrics(r).upstream_requests.load(), 3u);  // manifest.cose, k.raw.s0, v.raw.s0
  EXPECT_EQ(relays_[r]->relay().FindTrack({pub_->track_namespace(), "kv.fp8-e4m3.s0"}), nullptr);
  Got fast;
  fast.encoding = fp8;
  ASSERT_NO_FATAL_FAILURE(
      Retrieve(Connect(RelayPort(r)), options(RetrievalMode::kCompleted, 1, true), &fast));
  ExpectEverythingOnce(fast);  // against the source through fp8 and back
  EXPECT_EQ(fast.report->encoding, fp8);
  EXPECT_EQ(fast.report->count(BlockSource::kMoqtFetch), 12u * d_.layers);
  EXPECT_EQ(Metrics(r).upstream_requests.load(), 4u);  // and kv.fp8-e4m3.s0
  Got exact;
  ASSERT_NO_FATAL_FAILURE(
      Retrieve(Connect(RelayPort(r)), options(RetrievalMode::kCompleted, 1, false), &exact));
  ExpectEverythingOnce(exact);
  EXPECT_EQ(exact.report->encoding, Encoding{});
  EXPECT_EQ(Metrics(r).upstream_requests.load(), 4u);  // from the cache
}

// The relay's copy of one object is corrupt (a TamperingSource in front of the real relay flips
// a bit of v.raw.s0's object of layer 5, block 3) and a KVSP HTTP holder has the whole cache: the
// corrupt object is refused (kObjectInvalid) and nothing of it is handed over; layer 5 comes from
// the holder, every other layer by FETCH through the relay, everything exactly once within the
// bound.
TEST_F(KvcsRelayE2E, ACorruptObjectAtTheRelayIsRecoveredFromAnHttpHolder) {
  const size_t r = StartRelay();
  Announce(r);
  Produce(d_.layers);
  const uint16_t corrupt = ServeTampered(r, [](const moqt::Track& t, moqt::PublishedObject& o) {
    if (t.name().name != "v.raw.s0" || o.location != moqt::Location{5, 3}) return;
    Bytes b = *o.payload;
    b[b.size() / 2] ^= 0x10;
    o.payload = std::make_shared<const Bytes>(std::move(b));
  });
  RecoveryOptions o = Options(RetrievalMode::kCompleted, tokens_);
  HolderSource* holder = StartHolder(12);
  ASSERT_NE(holder, nullptr);
  o.holders = {holder};
  Got got;
  ASSERT_NO_FATAL_FAILURE(Retrieve(Connect(corrupt), o, &got));
  ExpectOneLayerRecovered(got, 5, BlockSource::kHttpHolder, BlockSource::kMoqtFetch);
  const RetrievalReport& rep = *got.report;
  EXPECT_EQ(tamperers_[0]->altered(), 1u);
  bool refused = false;
  for (const Refusal& f : rep.refusals) {
    refused |= f.status.Is(StreamError::kObjectInvalid) && f.track == "v.raw.s0" &&
               f.location == moqt::Location{5, 3};
  }
  EXPECT_TRUE(refused);
  EXPECT_EQ(rep.sources[rep.at(3, 5).source_index], "http holder " + holder_store_->url());
}

// The relay does not deliver one object (a TamperingSource in front of relay 1 leaves k.raw.s0's
// object of layer 7, block 10 out); the publication is also announced to relay 2. A live consumer
// of relay 1 with relay 2 as its alternative gets layer 7 from relay 2 (kAltMoqt, named), every
// other layer live through relay 1, everything exactly once within the bound.
TEST_F(KvcsRelayE2E, AMissingObjectAtTheRelayIsRecoveredFromAnotherRelay) {
  const size_t r1 = StartRelay(), r2 = StartRelay();
  Announce(r1);
  Announce(r2);
  Produce(d_.layers);
  const uint16_t lossy =
      ServeTampered(r1, {}, [](const moqt::Track& t, const moqt::PublishedObject& o) {
        return t.name().name == "k.raw.s0" && o.location == moqt::Location{7, 10};
      });
  RecoveryOptions o = Options(RetrievalMode::kLive, tokens_);
  o.alternates = {{Connect(RelayPort(r2)), pub_->ns(), "relay-2"}};
  Got got;
  ASSERT_NO_FATAL_FAILURE(Retrieve(Connect(lossy), o, &got));
  ExpectOneLayerRecovered(got, 7, BlockSource::kAltMoqt, BlockSource::kMoqt);
  EXPECT_EQ(tamperers_[0]->dropped(), 1u);
  const RetrievalReport& rep = *got.report;
  EXPECT_NE(rep.sources[rep.at(10, 7).source_index].find("relay-2"), std::string::npos);
}

}  // namespace
}  // namespace kvcs::stream
