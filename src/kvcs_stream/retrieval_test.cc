// The consumer over the in-memory transport: a Publisher's TrackStore served by a server
// MoqtSession, a Retrieval on the client session. Live retrieval joining before, during and after
// production (exactly once), completed retrieval of a layer range with the first n blocks,
// segments, signatures, auto mode (a completed publication FETCHed, one in production subscribed,
// a short FETCH continued by a subscription, each object once), and hostile input (LayerVerifier
// fed directly, and a served store with a corrupted object) refused with typed reasons and never
// handed to the caller.
#include "kvcs_stream/retrieval.h"

#include <gtest/gtest.h>

#include <map>

#include "kvcs_stream/layer_verifier.h"
#include "kvcs_stream/publisher.h"
#include "kvcs_stream/stream_error.h"
#include "kvcs_stream/test_tools/test_cache.h"
#include "kvcs_stream/test_tools/track_copy.h"
#include "profile/object.h"
#include "transport/test_tools/in_memory_session.h"

namespace kvcs::stream {
namespace {

// The recompute cost is the product, saturating; its bound in ms has a floor and saturates at
// UINT64_MAX / 2 (a huge cost is "no useful bound", not an overflow into a tiny one).
TEST(RecomputeCost, IsTheProductWithAFloorAndSaturates) {
  EXPECT_EQ(RecomputeNs(256, 16, 32, 10'000), 1'310'720'000u);
  EXPECT_EQ(RecomputeNs(UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT64_MAX), UINT64_MAX);
  EXPECT_EQ(RecomputeBoundMs(256, 16, 32, 10'000, 0), 1310u);
  EXPECT_EQ(RecomputeBoundMs(256, 16, 32, 10'000, 2000), 2000u);
  EXPECT_EQ(RecomputeBoundMs(UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT64_MAX, 0), UINT64_MAX / 2);
}

using profile::Component;

struct Got {
  std::map<std::pair<uint32_t, uint32_t>, int> layers;  // (segment, layer) -> deliveries
  std::vector<std::string> mismatches;
  std::optional<RetrievalReport> report;
};

// Every object reported by on_object_received, by (track, location): how often, and by FETCH.
struct Arrivals {
  std::map<std::pair<std::string, moqt::Location>, int> count;
  uint64_t fetched = 0, live = 0, manifests = 0;
};
void CountArrivals(RetrievalOptions& o, Arrivals* a) {
  o.on_object_received = [a](const ReceivedObjectInfo& i) {
    if (i.kind != profile::TrackKind::kData) {
      ++a->manifests;
      return;
    }
    a->count[{std::string(i.track), i.location}]++;
    ++(i.fetched ? a->fetched : a->live);
  };
}
void ExpectEachObjectOnce(const Arrivals& a, uint64_t objects) {
  EXPECT_EQ(a.count.size(), objects);
  for (const auto& [k, n] : a.count) {
    EXPECT_EQ(n, 1) << k.first << " " << k.second.group << ":" << k.second.object;
  }
}

LayerCallback Checker(const kvsp::Descriptor& d, Got* got) {
  return [d, got](const VerifiedLayer& l) {
    got->layers[{l.segment, l.layer}]++;
    for (size_t i = 0; i < l.k.size(); ++i) {
      Bytes k(l.k[i].begin(), l.k[i].end()), v(l.v[i].begin(), l.v[i].end());
      if (k != test::LayerK(d, l.layer, l.first_block + i, 1) ||
          v != test::LayerV(d, l.layer, l.first_block + i, 1)) {
        got->mismatches.push_back(std::to_string(l.layer) + "/" + std::to_string(i) + " k" +
                                  std::to_string(k.size()) + " v" + std::to_string(v.size()));
      }
    }
  };
}

class RetrievalTest : public ::testing::Test {
 protected:
  kvsp::Descriptor d_ = test::SmallDescriptor(10, 4);
  kvsp::ScopeKey scope_{};
  std::vector<uint32_t> tokens_ = test::Tokens(12);  // 3 blocks
  moqt::TrackStore store_;
  std::unique_ptr<Publisher> pub_;
  transport::test::InMemorySessionPair pair_;
  std::unique_ptr<moqt::MoqtSession> server_, client_;
  uint64_t now_ = 0;
  profile::KeySet keys_;

  void SetUp() override { scope_[3] = 42; }

  PublisherConfig PubConfig() {
    PublisherConfig c;
    c.descriptor = d_;
    c.scope_key = scope_;
    return c;
  }
  void Serve(moqt::TrackSource* source) {
    moqt::MoqtSessionConfig sc;
    sc.perspective = moqt::Perspective::kServer;
    server_ = std::make_unique<moqt::MoqtSession>(&pair_.server(), sc, nullptr, source);
    moqt::MoqtSessionConfig cc;
    cc.perspective = moqt::Perspective::kClient;
    cc.path = "/moq";
    cc.clock_ms = [this] { return now_; };
    client_ = std::make_unique<moqt::MoqtSession>(&pair_.client(), cc, nullptr, nullptr);
    pair_.Connect();
    pair_.RunUntilIdle();
    ASSERT_TRUE(client_->setup_complete());
  }
  void Create(PublisherConfig c) {
    auto p = Publisher::Create(&store_, std::move(c), tokens_);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    pub_ = std::move(*p);
  }
  void PublishLayers(uint32_t to, uint64_t first_block = 0) {
    for (uint32_t l = pub_->next_layer(); l < to; ++l) {
      for (uint64_t b = 0; b < pub_->segment_blocks(); ++b) {
        ASSERT_TRUE(pub_->PublishBlock(l, b, test::LayerK(d_, l, first_block + b, 1),
                                       test::LayerV(d_, l, first_block + b, 1))
                        .ok());
        pair_.RunUntilIdle();
      }
    }
  }
  RetrievalOptions Options(RetrievalMode mode, std::span<const uint32_t> tokens) {
    RetrievalOptions o;
    o.mode = mode;
    o.verifier.identity = *CacheIdentity::Compute(d_, scope_, tokens);
    o.verifier.publication = pub_->ns();
    o.verifier.require_signature = false;
    o.verifier.keys = &keys_;
    o.compute_ns_per_token_layer = 1'000'000;  // 1 ms per token and layer
    return o;
  }
  std::unique_ptr<Retrieval> Start(RetrievalOptions o, Got* got) {
    auto r = Retrieval::Start(
        client_.get(), std::move(o), Checker(d_, got),
        [got](const RetrievalReport& rep) { got->report = rep; }, [this] { return now_; });
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    pair_.RunUntilIdle();
    return r.ok() ? std::move(*r) : nullptr;
  }
  // Start, with every object's arrival counted in `a`.
  std::unique_ptr<Retrieval> StartCounted(RetrievalOptions o, Arrivals* a, Got* got) {
    CountArrivals(o, a);
    return Start(std::move(o), got);
  }
  // Publishes every layer, then serves a copy of the publication from `hostile` whose v object
  // of layer 4, block 1 has one bit flipped (its Data no longer matches its Data Digest).
  void ServeWithBlock1OfLayer4Corrupted(moqt::TrackStore* hostile) {
    Create(PubConfig());
    PublishLayers(d_.layers);
    auto genuine = store_.FindTrack({pub_->track_namespace(), "v.raw.s0"})->Find({4, 1});
    Bytes bad = *genuine->payload;
    bad.back() ^= 1;
    ASSERT_TRUE(test::CopyTracks(store_, pub_->track_namespace(),
                                 {"manifest", "k.raw.s0", "v.raw.s0"}, *hostile,
                                 {"v.raw.s0", {4, 1}, bad})
                    .ok());
    Serve(hostile);
  }
  void ExpectAllOnce(const Got& got, uint32_t segments = 1) {
    ASSERT_TRUE(got.report.has_value());
    EXPECT_TRUE(got.report->all_from_moqt()) << got.report->recompute_count();
    EXPECT_EQ(got.report->duplicates, 0u);
    EXPECT_TRUE(got.mismatches.empty()) << got.mismatches.size() << " first " << got.mismatches[0];
    EXPECT_EQ(got.layers.size(), size_t{d_.layers} * segments);
    for (const auto& [k, n] : got.layers) EXPECT_EQ(n, 1) << k.first << "/" << k.second;
  }
};

TEST_F(RetrievalTest, LiveJoinBeforeDuringAndAfterProductionExactlyOnce) {
  Create(PubConfig());
  Serve(&store_);
  Got before, during, after;
  auto r1 = Start(Options(RetrievalMode::kLive, tokens_), &before);
  PublishLayers(5);
  EXPECT_EQ(before.layers.size(), 0u);  // layers wait for the manifest at layer 8
  // Mid-layer join: half of layer 5's blocks are out.
  ASSERT_TRUE(pub_->PublishBlock(5, 0, test::LayerK(d_, 5, 0, 1), test::LayerV(d_, 5, 0, 1)).ok());
  pair_.RunUntilIdle();
  auto r2 = Start(Options(RetrievalMode::kLive, tokens_), &during);
  ASSERT_TRUE(pub_->PublishBlock(5, 1, test::LayerK(d_, 5, 1, 1), test::LayerV(d_, 5, 1, 1)).ok());
  ASSERT_TRUE(pub_->PublishBlock(5, 2, test::LayerK(d_, 5, 2, 1), test::LayerV(d_, 5, 2, 1)).ok());
  PublishLayers(8);
  EXPECT_EQ(before.layers.size(), 8u);  // the manifest after 8 layers verifies 0..7
  EXPECT_EQ(during.layers.size(), 8u);
  PublishLayers(d_.layers);
  auto r3 = Start(Options(RetrievalMode::kLive, tokens_), &after);
  pair_.RunUntilIdle();
  ExpectAllOnce(before);
  ExpectAllOnce(during);
  ExpectAllOnce(after);
  EXPECT_GE(before.report->deadline_ms, 12u * 10);  // 12 tokens x 10 layers x 1 ms
}

TEST_F(RetrievalTest, ManifestEveryLayerHandsEachLayerOverAsSoonAsItIsPublished) {
  PublisherConfig c = PubConfig();
  c.manifest_every_layers = 1;
  Create(c);
  Serve(&store_);
  Got got;
  auto r = Start(Options(RetrievalMode::kLive, tokens_), &got);
  for (uint32_t l = 0; l < d_.layers; ++l) {
    PublishLayers(l + 1);
    EXPECT_EQ(got.layers.size(), size_t{l} + 1) << "layer " << l << " waited";
  }
  ExpectAllOnce(got);
}

TEST_F(RetrievalTest, CompletedLayerRangeFirstBlocks) {
  Create(PubConfig());
  PublishLayers(d_.layers);
  Serve(&store_);
  RetrievalOptions o = Options(RetrievalMode::kCompleted, tokens_);
  o.verifier.first_layer = 2;
  o.verifier.last_layer = 5;
  o.verifier.max_blocks = 2;
  Got got;
  auto r = Start(std::move(o), &got);
  ASSERT_TRUE(got.report.has_value());
  EXPECT_TRUE(got.report->all_from_moqt());
  EXPECT_EQ(got.report->count(BlockSource::kMoqtFetch), 2u * 4);  // completed: by FETCH
  EXPECT_EQ(got.report->blocks, 2u);
  EXPECT_EQ(got.report->layers, 4u);
  EXPECT_EQ(got.layers.size(), 4u);
  EXPECT_EQ(got.layers.begin()->first.second, 2u);
  EXPECT_TRUE(got.mismatches.empty());
  EXPECT_EQ(got.report->discarded, 0u);  // OBJECTID_FILTER kept block 2 on the publisher
}

TEST_F(RetrievalTest, SegmentsAreRetrievedTogether) {
  Create(PubConfig());
  Serve(&store_);
  PublishLayers(d_.layers);
  std::vector<uint32_t> all = tokens_;
  std::vector<uint32_t> more = test::Tokens(8, 77);
  all.insert(all.end(), more.begin(), more.end());
  // Before segment 1 exists, the complete publication covers blocks 0..2 only.
  Got early;
  auto r0 = Start(Options(RetrievalMode::kLive, all), &early);
  ASSERT_TRUE(early.report.has_value());
  EXPECT_EQ(early.report->at(2, 9).source, BlockSource::kMoqt);
  EXPECT_EQ(early.report->at(3, 0).reason, StreamError::kNotCovered);
  EXPECT_EQ(early.report->recompute_count(), 2u * d_.layers);
  ASSERT_TRUE(pub_->AddSegment(more).ok());
  pair_.RunUntilIdle();
  Got got;
  auto r = Start(Options(RetrievalMode::kLive, all), &got);
  PublishLayers(4, 3);
  EXPECT_FALSE(got.report.has_value());
  PublishLayers(d_.layers, 3);
  pair_.RunUntilIdle();
  ExpectAllOnce(got, 2);
  EXPECT_EQ(got.report->blocks, 5u);
}

TEST_F(RetrievalTest, SignedManifestAcceptedAndRefusals) {
  auto key = *profile::SigningKey::Generate(profile::CoseAlg::kES256, Bytes{'k', '1'});
  auto other = *profile::SigningKey::Generate(profile::CoseAlg::kEdDSA, Bytes{'k', '2'});
  PublisherConfig c = PubConfig();
  c.producer_key = key;
  Create(c);
  PublishLayers(d_.layers);
  Serve(&store_);
  {
    ASSERT_TRUE(keys_.Add(key.Public()).ok());
    RetrievalOptions o = Options(RetrievalMode::kLive, tokens_);
    o.verifier.require_signature = true;
    Got got;
    auto r = Start(o, &got);
    ExpectAllOnce(got);
  }
  {
    profile::KeySet wrong;
    ASSERT_TRUE(wrong.Add(other.Public()).ok());
    RetrievalOptions o = Options(RetrievalMode::kLive, tokens_);
    o.verifier.require_signature = true;
    o.verifier.keys = &wrong;
    Got got;
    auto r = Start(o, &got);
    ASSERT_TRUE(got.report.has_value());
    EXPECT_TRUE(got.layers.empty());
    ASSERT_FALSE(got.report->refusals.empty());
    EXPECT_TRUE(got.report->refusals[0].status.Is(StreamError::kUnknownKid));
    EXPECT_EQ(got.report->at(0, 0).reason, StreamError::kPublicationRefused);
    EXPECT_EQ(got.report->recompute_count(), 3u * d_.layers);
  }
}

TEST_F(RetrievalTest, UnsignedManifestRefusedWhenSignaturesRequired) {
  Create(PubConfig());
  PublishLayers(d_.layers);
  Serve(&store_);
  RetrievalOptions o = Options(RetrievalMode::kCompleted, tokens_);
  o.verifier.require_signature = true;
  Got got;
  auto r = Start(o, &got);
  ASSERT_TRUE(got.report.has_value());
  EXPECT_TRUE(got.layers.empty());
  ASSERT_FALSE(got.report->refusals.empty());
  EXPECT_TRUE(got.report->refusals[0].status.Is(StreamError::kUnsignedManifest));
  // Without the requirement the fallback to "manifest" works.
  o.verifier.require_signature = false;
  Got ok;
  auto r2 = Start(o, &ok);
  ExpectAllOnce(ok);
}

TEST_F(RetrievalTest, CorruptObjectFromThePeerIsReportedForRecompute) {
  moqt::TrackStore hostile;
  ASSERT_NO_FATAL_FAILURE(ServeWithBlock1OfLayer4Corrupted(&hostile));
  Got got;
  auto r = Start(Options(RetrievalMode::kLive, tokens_), &got);
  ASSERT_TRUE(got.report.has_value());
  EXPECT_EQ(got.layers.size(), d_.layers - 1u);
  EXPECT_EQ(got.layers.count({0, 4}), 0u);  // never handed over
  EXPECT_EQ(got.report->at(1, 4).source, BlockSource::kRecompute);
  EXPECT_EQ(got.report->at(1, 4).reason, StreamError::kObjectInvalid);
  EXPECT_EQ(got.report->at(0, 4).reason, StreamError::kMissing);  // its layer never completed
  EXPECT_EQ(got.report->at(0, 3).source, BlockSource::kMoqt);
  EXPECT_EQ(got.report->recompute_count(), 3u);
}

TEST_F(RetrievalTest, CorruptObjectCostsOnlyItsBlockWithDeliverVerifiedBlocks) {
  moqt::TrackStore hostile;
  ASSERT_NO_FATAL_FAILURE(ServeWithBlock1OfLayer4Corrupted(&hostile));
  Got got;
  RetrievalOptions o = Options(RetrievalMode::kLive, tokens_);
  o.deliver_verified_blocks = true;
  auto r = Start(std::move(o), &got);
  ASSERT_TRUE(got.report.has_value());
  EXPECT_TRUE(got.mismatches.empty());
  EXPECT_EQ(got.layers.size(), d_.layers);
  EXPECT_EQ(got.layers[std::make_pair(0u, 4u)], 2);  // blocks 0 and 2, one run each
  EXPECT_EQ(got.report->at(1, 4).source, BlockSource::kRecompute);
  EXPECT_EQ(got.report->at(1, 4).reason, StreamError::kObjectInvalid);
  EXPECT_EQ(got.report->at(0, 4).source, BlockSource::kMoqt);
  EXPECT_EQ(got.report->at(2, 4).source, BlockSource::kMoqt);
  EXPECT_EQ(got.report->recompute_count(), 1u);
}

TEST_F(RetrievalTest, PublisherThatStopsEndsAtTheRecomputeDeadline) {
  Create(PubConfig());
  Serve(&store_);
  PublishLayers(8);
  Got got;
  auto r = Start(Options(RetrievalMode::kLive, tokens_), &got);
  EXPECT_EQ(got.layers.size(), 8u);
  now_ = r->deadline_ms() - 1;
  r->OnTimer();
  EXPECT_FALSE(got.report.has_value());
  now_ = r->deadline_ms();
  r->OnTimer();
  ASSERT_TRUE(got.report.has_value());
  EXPECT_TRUE(got.report->timed_out);
  EXPECT_EQ(got.report->at(0, 8).reason, StreamError::kDeadline);
  EXPECT_EQ(got.report->at(2, 7).source, BlockSource::kMoqt);
  EXPECT_EQ(got.report->recompute_count(), 3u * 2);
}

// ---- kAuto: per segment by the manifest's `complete`.

TEST_F(RetrievalTest, AutoFetchesACompletedPublication) {
  Create(PubConfig());
  PublishLayers(d_.layers);
  Serve(&store_);
  Arrivals a;
  Got got;
  auto r = StartCounted(Options(RetrievalMode::kAuto, tokens_), &a, &got);
  ExpectAllOnce(got);
  EXPECT_EQ(got.report->count(BlockSource::kMoqtFetch), 3u * d_.layers);
  ExpectEachObjectOnce(a, 2u * 3 * d_.layers);
  EXPECT_EQ(a.fetched, 2u * 3 * d_.layers);
  EXPECT_EQ(a.live, 0u);
  EXPECT_GE(a.manifests, 1u);
}

TEST_F(RetrievalTest, AutoSubscribesAPublicationStillProduced) {
  Create(PubConfig());
  Serve(&store_);
  PublishLayers(5);
  Arrivals a;
  Got got;
  auto r = StartCounted(Options(RetrievalMode::kAuto, tokens_), &a, &got);
  EXPECT_FALSE(got.report.has_value());
  PublishLayers(d_.layers);
  pair_.RunUntilIdle();
  ExpectAllOnce(got);
  EXPECT_EQ(got.report->count(BlockSource::kMoqt), 3u * d_.layers);
  ExpectEachObjectOnce(a, 2u * 3 * d_.layers);
  EXPECT_EQ(a.fetched, 0u);
}

// A relay-like copy whose manifest already marks segment 0 complete while its data tracks hold
// only the objects before `before` (the relay is still receiving them); the rest arrives after the
// retrieval started.
class ShortFetchTest : public RetrievalTest {
 protected:
  moqt::TrackStore lagging_;
  const std::vector<std::string> data_ = {"k.raw.s0", "v.raw.s0"};

  void ServeUpTo(moqt::Location before) {
    Create(PubConfig());
    PublishLayers(d_.layers);
    const moqt::TrackNamespace ns = pub_->track_namespace();
    ASSERT_TRUE(test::CopyTracks(store_, ns, {"manifest"}, lagging_).ok());
    ASSERT_TRUE(test::CopyTracks(store_, ns, data_, lagging_, {}, {{0, 0}, before}).ok());
    Serve(&lagging_);
  }
  void DeliverTheRest(moqt::Location from) {
    ASSERT_TRUE(
        test::CopyTracks(store_, pub_->track_namespace(), data_, lagging_, {}, {from}).ok());
    pair_.RunUntilIdle();
  }
};

TEST_F(ShortFetchTest, AShortFetchIsContinuedLiveFromWhereItStoppedEachObjectOnce) {
  // The copy holds layers 0..4 and blocks 0..1 of layer 5.
  ASSERT_NO_FATAL_FAILURE(ServeUpTo({5, 2}));
  Arrivals a;
  Got got;
  auto r = StartCounted(Options(RetrievalMode::kAuto, tokens_), &a, &got);
  EXPECT_FALSE(got.report.has_value());
  EXPECT_EQ(got.layers.size(), 5u);        // 0..4 by FETCH, verified by the manifest
  EXPECT_EQ(a.fetched, 2u * (3 * 5 + 2));  // what the copy held when it answered
  EXPECT_EQ(a.live, 0u);
  DeliverTheRest({5, 2});
  ExpectAllOnce(got);
  ExpectEachObjectOnce(a, 2u * 3 * d_.layers);  // never an object twice
  EXPECT_EQ(a.live, 2u * (1 + 3 * 4));          // from 5:2 on by the subscription
  EXPECT_EQ(got.report->at(2, 4).source, BlockSource::kMoqtFetch);
  EXPECT_EQ(got.report->at(0, 5).source, BlockSource::kMoqt);  // layer 5 was completed live
  EXPECT_EQ(got.report->count(BlockSource::kMoqtFetch), 3u * 5);
  EXPECT_EQ(got.report->count(BlockSource::kMoqt), 3u * 5);
}

TEST_F(ShortFetchTest, AFetchRefusedForARangeNotHeldYetIsContinuedLive) {
  // The copy holds layers 0..5; layers 7..9 are asked: INVALID_RANGE, then a subscription from
  // 7:0.
  ASSERT_NO_FATAL_FAILURE(ServeUpTo({6, 0}));
  RetrievalOptions o = Options(RetrievalMode::kAuto, tokens_);
  o.verifier.first_layer = 7;
  Arrivals a;
  Got got;
  auto r = StartCounted(std::move(o), &a, &got);
  EXPECT_FALSE(got.report.has_value());
  EXPECT_EQ(a.fetched, 0u);
  DeliverTheRest({6, 0});
  ASSERT_TRUE(got.report.has_value());
  EXPECT_TRUE(got.report->all_from_moqt());
  EXPECT_TRUE(got.report->refusals.empty());
  EXPECT_EQ(got.report->count(BlockSource::kMoqt), 3u * 3);
  EXPECT_EQ(got.layers.size(), 3u);
  ExpectEachObjectOnce(a, 2u * 3 * 3);  // 7:0 on, nothing of layer 6
}

TEST_F(ShortFetchTest, ExplicitCompletedModeDoesNotContinueAShortFetch) {
  ASSERT_NO_FATAL_FAILURE(ServeUpTo({5, 2}));
  Got got;
  auto r = Start(Options(RetrievalMode::kCompleted, tokens_), &got);
  ASSERT_TRUE(got.report.has_value());
  EXPECT_EQ(got.report->count(BlockSource::kMoqtFetch), 3u * 5);
  EXPECT_EQ(got.report->at(0, 5).reason, StreamError::kMissing);
}

// ---- LayerVerifier fed directly with hostile manifests and objects.

class VerifierTest : public RetrievalTest {
 protected:
  void SetUp() override {
    RetrievalTest::SetUp();
    Create(PubConfig());
    PublishLayers(d_.layers);
  }
  VerifierConfig Config() {
    VerifierConfig c;
    c.identity = *CacheIdentity::Compute(d_, scope_, tokens_);
    c.publication = pub_->ns();
    c.require_signature = false;
    return c;
  }
  Bytes Manifest(const Publisher& p) {
    auto t =
        p.config().producer_key ? nullptr : store_.FindTrack({p.track_namespace(), "manifest"});
    return *t->Find(*t->largest_normal())->payload;
  }
  Bytes Object(const std::string& track, moqt::Location loc) {
    return *store_.FindTrack({pub_->track_namespace(), track})->Find(loc)->payload;
  }
};

TEST_F(VerifierTest, ManifestCompatNotTheNamespace) {
  // A manifest of another descriptor under this publication's namespace.
  moqt::TrackStore other_store;
  PublisherConfig c = PubConfig();
  c.descriptor.model = "another/model";
  auto other = *Publisher::Create(&other_store, c, tokens_);
  auto t = other_store.FindTrack({other->track_namespace(), "manifest"});
  Got got;
  LayerVerifier v(Config(), Checker(d_, &got));
  Status s = v.OnManifest(profile::TrackKind::kManifest, *t->Find({0, 0})->payload);
  EXPECT_TRUE(s.Is(StreamError::kCompatMismatch)) << s.ToString();
  EXPECT_TRUE(v.OnObject({pub_->track_namespace(), "k.raw.s0"}, {0, 0}, Object("k.raw.s0", {0, 0}))
                  .Is(StreamError::kPublicationRefused));
  EXPECT_TRUE(got.layers.empty());
}

TEST_F(VerifierTest, ManifestWithMoreLayersThanTheDescriptor) {
  moqt::TrackStore other_store;
  PublisherConfig c = PubConfig();
  c.descriptor.layers = 12;
  auto other = *Publisher::Create(&other_store, c, tokens_);
  auto t = other_store.FindTrack({other->track_namespace(), "manifest"});
  VerifierConfig vc = Config();
  vc.publication = other->ns();  // consistent with its own namespace, not with our descriptor
  LayerVerifier v(vc, nullptr);
  Status s = v.OnManifest(profile::TrackKind::kManifest, *t->Find({0, 0})->payload);
  EXPECT_TRUE(s.Is(StreamError::kDescriptorMismatch)) << s.ToString();
}

TEST_F(VerifierTest, ObjectsWhoseLayerBlockLengthOrDigestDisagree) {
  Got got;
  LayerVerifier v(Config(), Checker(d_, &got));
  ASSERT_TRUE(v.OnManifest(profile::TrackKind::kManifest, Manifest(*pub_)).ok());
  const moqt::FullTrackName k{pub_->track_namespace(), "k.raw.s0"};
  Bytes good = Object("k.raw.s0", {2, 1});
  // Layer (group) disagrees, block (object) disagrees.
  EXPECT_TRUE(v.OnObject(k, {3, 1}, good).Is(StreamError::kObjectInvalid));
  EXPECT_TRUE(v.OnObject(k, {2, 2}, good).Is(StreamError::kObjectInvalid));
  // Length: truncated and extended.
  Bytes shorter(good.begin(), good.end() - 1), longer = good;
  longer.push_back(0);
  EXPECT_TRUE(v.OnObject(k, {2, 1}, shorter).Is(StreamError::kObjectInvalid));
  EXPECT_TRUE(v.OnObject(k, {2, 1}, longer).Is(StreamError::kObjectInvalid));
  // Digest: a flipped Data byte.
  Bytes flipped = good;
  flipped[profile::kObjectHeaderSize + 3] ^= 0x40;
  EXPECT_TRUE(v.OnObject(k, {2, 1}, flipped).Is(StreamError::kObjectInvalid));
  // Self-consistent, but not the Data the manifest lists.
  profile::ObjectInfo info{Component::kK, 2, 1, 4, 4, 1};
  Bytes forged = *profile::EncodeObject(info, Bytes(good.size() - profile::kObjectHeaderSize, 7));
  EXPECT_TRUE(v.OnObject(k, {2, 1}, forged).Is(StreamError::kListedDigestMismatch));
  // Another publication's object in this segment.
  moqt::TrackNamespace foreign = pub_->track_namespace();
  foreign[4][0] ^= 1;
  EXPECT_TRUE(v.OnObject({foreign, "k.raw.s0"}, {2, 1}, good).Is(StreamError::kForeignPublication));
  EXPECT_TRUE(got.layers.empty());
  // The genuine objects still complete the layer.
  for (uint64_t b = 0; b < 3; ++b) {
    ASSERT_TRUE(v.OnObject(k, {2, b}, Object("k.raw.s0", {2, b})).ok());
    ASSERT_TRUE(
        v.OnObject({k.track_namespace, "v.raw.s0"}, {2, b}, Object("v.raw.s0", {2, b})).ok());
  }
  EXPECT_EQ(got.layers.size(), 1u);
  EXPECT_TRUE(got.mismatches.empty());
  RetrievalReport rep = v.Report(StreamError::kMissing);
  EXPECT_EQ(rep.at(1, 2).source, BlockSource::kMoqt);
  EXPECT_EQ(rep.at(1, 3).reason, StreamError::kObjectInvalid);  // the object sent at 3:1
  EXPECT_EQ(rep.at(2, 3).reason, StreamError::kMissing);
  EXPECT_GE(rep.refusals_total, 7u);
}

TEST_F(VerifierTest, ObjectsBeforeTheManifestWaitAndTheBufferIsBounded) {
  Got got;
  VerifierConfig c = Config();
  c.max_buffered_bytes = 4 * Object("k.raw.s0", {0, 0}).size();
  LayerVerifier v(c, Checker(d_, &got));
  const moqt::FullTrackName k{pub_->track_namespace(), "k.raw.s0"},
      val{pub_->track_namespace(), "v.raw.s0"};
  for (uint64_t b = 0; b < 2; ++b) {
    ASSERT_TRUE(v.OnObject(k, {0, b}, Object("k.raw.s0", {0, b})).ok());
    ASSERT_TRUE(v.OnObject(val, {0, b}, Object("v.raw.s0", {0, b})).ok());
  }
  EXPECT_TRUE(v.OnObject(k, {0, 2}, Object("k.raw.s0", {0, 2})).Is(StreamError::kBufferFull));
  EXPECT_EQ(v.buffered_bytes(), c.max_buffered_bytes);
  EXPECT_TRUE(got.layers.empty());
  ASSERT_TRUE(v.OnManifest(profile::TrackKind::kManifest, Manifest(*pub_)).ok());
  ASSERT_TRUE(v.OnObject(k, {0, 2}, Object("k.raw.s0", {0, 2})).Is(StreamError::kBufferFull));
}

TEST_F(VerifierTest, JointCodecTrackDecodesToTheCallersDtype) {
  moqt::TrackStore s2;
  PublisherConfig c = PubConfig();
  c.encodings = {Encoding{kvsp::Codec::kFp8E4m3, true}};
  auto p = *Publisher::Create(&s2, c, tokens_);
  for (uint32_t l = 0; l < d_.layers; ++l) {
    ASSERT_TRUE(p->PublishLayer(l, test::LayerK(d_, l, 0, 3), test::LayerV(d_, l, 0, 3)).ok());
  }
  VerifierConfig vc = Config();
  vc.publication = p->ns();
  vc.encoding = c.encodings[0];
  std::vector<size_t> sizes;
  LayerVerifier v(vc,
                  [&](const VerifiedLayer& l) { sizes.push_back(l.k[0].size() + l.v[0].size()); });
  auto mt = s2.FindTrack({p->track_namespace(), "manifest"});
  ASSERT_TRUE(
      v.OnManifest(profile::TrackKind::kManifest, *mt->Find(*mt->largest_normal())->payload).ok());
  auto kv = s2.FindTrack({p->track_namespace(), "kv.fp8-e4m3.s0"});
  for (uint64_t b = 0; b < 3; ++b) {
    ASSERT_TRUE(v.OnObject(kv->name(), {1, b}, *kv->Find({1, b})->payload).ok());
  }
  ASSERT_EQ(sizes.size(), 1u);
  EXPECT_EQ(sizes[0], kvsp::KSectionBytes(d_) + kvsp::VSectionBytes(d_));
}

}  // namespace
}  // namespace kvcs::stream
