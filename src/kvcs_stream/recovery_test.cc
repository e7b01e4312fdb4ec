// Recovery over the in-memory transport: the primary Retrieval, then an alternative MOQT source,
// then KVSP holders (an in-memory HolderSource), and the deadlines (recovery.h).
#include "kvcs_stream/recovery.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "kvcs_stream/publisher.h"
#include "kvcs_stream/test_tools/test_cache.h"
#include "kvcs_stream/test_tools/track_copy.h"
#include "kvsp/container.h"
#include "transport/test_tools/in_memory_session.h"

namespace kvcs::stream {
namespace {

const std::vector<std::string> kTracks = {"manifest", "k.raw.s0", "v.raw.s0"};

// A holder in memory: raw containers of the test cache; answers when the test says so.
class MemoryHolder : public HolderSource {
 public:
  MemoryHolder(const kvsp::Descriptor& d, std::string name) : d_(d), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  void Fetch(const CacheIdentity& id, std::vector<HolderFetch> blocks, uint64_t timeout_ms,
             Done done) override {
    ++fetches;
    timeout = timeout_ms;
    asked = blocks;
    pending.clear();
    for (const HolderFetch& f : blocks) {
      HolderBlock hb{f.block, {}, {}};
      if (!held.count(f.block)) {
        hb.status = NotFound("block not held");
      } else {
        std::vector<Bytes> raw;
        std::vector<kvsp::LayerSections> secs;
        for (uint32_t l = f.first_layer; l <= f.last_layer; ++l) {
          raw.push_back(test::LayerK(d_, l, f.block, 1));
          raw.push_back(wrong_data.count(f.block) ? test::LayerK(d_, l, f.block, 1)
                                                  : test::LayerV(d_, l, f.block, 1));
        }
        for (size_t i = 0; i < raw.size(); i += 2) secs.push_back({raw[i], raw[i + 1]});
        hb.container = *kvsp::EncodeContainerFromRaw(
            d_, id.compat_id, id.block_keys[f.block], static_cast<uint32_t>(f.block + 1),
            kvsp::Codec::kRaw, static_cast<uint16_t>(f.first_layer), secs);
        if (flip.count(f.block)) hb.container.back() ^= 1;
      }
      pending.push_back(std::move(hb));
    }
    done_ = std::move(done);
  }
  void Cancel() override {
    ++cancels;
    done_ = nullptr;
  }
  // Answers the Fetch in progress.
  void Deliver() {
    if (auto d = std::move(done_)) d(std::move(pending));
  }

  std::set<uint64_t> held, flip, wrong_data;
  std::vector<HolderFetch> asked;
  std::vector<HolderBlock> pending;
  uint64_t timeout = 0;
  int fetches = 0, cancels = 0;

 private:
  kvsp::Descriptor d_;
  std::string name_;
  Done done_;
};

struct Link {
  transport::test::InMemorySessionPair pair;
  std::unique_ptr<moqt::MoqtSession> server, client;
};

class RecoveryTest : public ::testing::Test {
 protected:
  kvsp::Descriptor d_ = test::SmallDescriptor(10, 4);
  kvsp::ScopeKey scope_{};
  std::vector<uint32_t> tokens_ = test::Tokens(12);  // 3 blocks
  moqt::TrackStore store_, relay_;
  std::unique_ptr<Publisher> pub_;
  Link primary_, alt_;
  uint64_t now_ = 1000;
  profile::KeySet keys_;
  std::map<std::pair<uint64_t, uint32_t>, int> got_;  // (block, layer) -> deliveries
  int mismatches_ = 0;
  std::optional<RetrievalReport> report_;

  void SetUp() override {
    scope_[3] = 42;
    PublisherConfig c;
    c.descriptor = d_;
    c.scope_key = scope_;
    auto p = Publisher::Create(&store_, c, tokens_);
    ASSERT_TRUE(p.ok());
    pub_ = std::move(*p);
  }
  void Produce(uint32_t to) {
    for (uint32_t l = pub_->next_layer(); l < to; ++l) {
      ASSERT_TRUE(pub_->PublishLayer(l, test::LayerK(d_, l, 0, 3), test::LayerV(d_, l, 0, 3)).ok());
    }
  }
  // Publishes every layer, then serves the primary link from relay_, a copy whose v object of
  // layer 4, block 1 has one bit flipped (its Data no longer matches its Data Digest).
  void ServeWithBlock1OfLayer4Corrupted() {
    Produce(d_.layers);
    Bytes bad = *store_.FindTrack({pub_->track_namespace(), "v.raw.s0"})->Find({4, 1})->payload;
    bad.back() ^= 1;
    ASSERT_TRUE(test::CopyTracks(store_, pub_->track_namespace(), kTracks, relay_,
                                 {"v.raw.s0", {4, 1}, bad})
                    .ok());
    Serve(primary_, &relay_);
  }
  void Serve(Link& link, moqt::TrackSource* source) {
    moqt::MoqtSessionConfig sc;
    sc.perspective = moqt::Perspective::kServer;
    link.server = std::make_unique<moqt::MoqtSession>(&link.pair.server(), sc, nullptr, source);
    moqt::MoqtSessionConfig cc;
    cc.perspective = moqt::Perspective::kClient;
    cc.path = "/moq";
    cc.clock_ms = [this] { return now_; };
    link.client = std::make_unique<moqt::MoqtSession>(&link.pair.client(), cc, nullptr, nullptr);
    link.pair.Connect();
    link.pair.RunUntilIdle();
    ASSERT_TRUE(link.client->setup_complete());
  }
  void Run() {
    for (int i = 0; i < 4; ++i) {
      primary_.pair.RunUntilIdle();
      if (alt_.client) alt_.pair.RunUntilIdle();
    }
  }
  RecoveryOptions Options() {
    RecoveryOptions o;
    o.retrieval.verifier.identity = *CacheIdentity::Compute(d_, scope_, tokens_);
    o.retrieval.verifier.publication = pub_->ns();
    o.retrieval.verifier.require_signature = false;
    o.retrieval.verifier.keys = &keys_;
    o.retrieval.compute_ns_per_token_layer = 1'000'000;  // T = 3·4·10 ms = 120 ms -> floor 1 s
    return o;
  }
  std::unique_ptr<Recovery> Start(RecoveryOptions o) {
    const kvsp::Descriptor d = d_;
    auto r = Recovery::Start(
        primary_.client.get(), std::move(o),
        [this, d](const VerifiedLayer& l) {
          for (size_t i = 0; i < l.k.size(); ++i) {
            got_[{l.first_block + i, l.layer}]++;
            if (Bytes(l.k[i].begin(), l.k[i].end()) !=
                    test::LayerK(d, l.layer, l.first_block + i, 1) ||
                Bytes(l.v[i].begin(), l.v[i].end()) !=
                    test::LayerV(d, l.layer, l.first_block + i, 1)) {
              ++mismatches_;
            }
          }
        },
        [this](const RetrievalReport& rep) { report_ = rep; }, [this] { return now_; });
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    Run();
    return r.ok() ? std::move(*r) : nullptr;
  }
  void ExpectEverythingOnce() {
    ASSERT_TRUE(report_.has_value());
    EXPECT_TRUE(report_->all_retrieved()) << report_->recompute_count();
    EXPECT_EQ(mismatches_, 0);
    EXPECT_EQ(got_.size(), 3u * d_.layers);
    for (const auto& [k, n] : got_) EXPECT_EQ(n, 1) << k.first << "/" << k.second;
  }
};

TEST(RecoveryDeadlinesTest, TheFormulas) {
  RecoveryDeadlines d = PlanDeadlines(100, 1000, true);
  EXPECT_EQ(d.end_ms, 1100u);
  EXPECT_EQ(d.primary_ms, 600u);
  EXPECT_EQ(PlanDeadlines(100, 1000, false).primary_ms, 1100u);
  // 5 pairs of 16 tokens at 1 ms each: 80 ms, but at least the floor, never past D.
  EXPECT_EQ(RecoveryEndMs(700, 1100, 5, 16, 1'000'000, 0), 780u);
  EXPECT_EQ(RecoveryEndMs(700, 1100, 5, 16, 1'000'000, 200), 900u);
  EXPECT_EQ(RecoveryEndMs(700, 1100, 500, 16, 1'000'000, 0), 1100u);
  EXPECT_EQ(RecoveryEndMs(1200, 1100, 5, 16, 1'000'000, 0), 1100u);
  EXPECT_EQ(SourceDeadlineMs(700, 1000, 3), 800u);
  EXPECT_EQ(SourceDeadlineMs(700, 1000, 1), 1000u);
  EXPECT_EQ(SourceDeadlineMs(1200, 1000, 2), 1000u);
}

TEST_F(RecoveryTest, NothingToRecoverNeedsNoSource) {
  Produce(d_.layers);
  Serve(primary_, &store_);
  MemoryHolder h(d_, "http holder mem");
  RecoveryOptions o = Options();
  o.holders = {&h};
  auto r = Start(o);
  ExpectEverythingOnce();
  EXPECT_EQ(report_->count(BlockSource::kMoqt), 3u * d_.layers);
  EXPECT_EQ(h.fetches, 0);
  EXPECT_EQ(report_->sources.size(), 1u);
}

TEST_F(RecoveryTest, CorruptObjectRecoveredFromAHolderVerifiedAgainstTheManifest) {
  ASSERT_NO_FATAL_FAILURE(ServeWithBlock1OfLayer4Corrupted());
  MemoryHolder empty(d_, "http holder empty"), h(d_, "http holder mem");
  h.held = {0, 1, 2};
  RecoveryOptions o = Options();
  o.holders = {&empty, &h};
  auto r = Start(o);
  ASSERT_FALSE(report_.has_value());
  // Layer 4 never completed: all three blocks of it, from the holders in order.
  ASSERT_EQ(empty.asked.size(), 3u);
  EXPECT_EQ(empty.asked[1].first_layer, 4u);
  EXPECT_EQ(empty.asked[1].last_layer, 4u);
  // One (block, layer) pair = 4 tokens · 1 ms, floor 1 s, and two sources share it.
  EXPECT_EQ(empty.timeout, 500u);
  empty.Deliver();
  ASSERT_EQ(h.fetches, 1);
  h.Deliver();
  ExpectEverythingOnce();
  EXPECT_EQ(report_->at(1, 4).source, BlockSource::kHttpHolder);
  EXPECT_EQ(report_->at(0, 4).source, BlockSource::kHttpHolder);
  EXPECT_EQ(report_->sources[report_->at(0, 4).source_index], "http holder mem");
  EXPECT_EQ(report_->at(1, 3).source, BlockSource::kMoqt);
  EXPECT_EQ(report_->count(BlockSource::kHttpHolder), 3u);
  EXPECT_GE(report_->refusals_total, 4u);  // the object, and "not held" three times
  EXPECT_FALSE(report_->timed_out);
}

TEST_F(RecoveryTest, WithDeliverVerifiedBlocksOnlyTheCorruptBlockIsAskedOfTheHolder) {
  ASSERT_NO_FATAL_FAILURE(ServeWithBlock1OfLayer4Corrupted());
  MemoryHolder h(d_, "http holder mem");
  h.held = {0, 1, 2};
  RecoveryOptions o = Options();
  o.retrieval.deliver_verified_blocks = true;
  o.holders = {&h};
  auto r = Start(o);
  ASSERT_EQ(h.asked.size(), 1u);
  EXPECT_EQ(h.asked[0].block, 1u);
  EXPECT_EQ(h.asked[0].first_layer, 4u);
  EXPECT_EQ(h.asked[0].last_layer, 4u);
  h.Deliver();
  ExpectEverythingOnce();
  EXPECT_EQ(report_->at(1, 4).source, BlockSource::kHttpHolder);
  EXPECT_EQ(report_->at(0, 4).source, BlockSource::kMoqt);
  EXPECT_EQ(report_->count(BlockSource::kHttpHolder), 1u);
}

TEST_F(RecoveryTest, HolderBytesThatFailVerificationAreNotUsed) {
  Produce(d_.layers);
  ASSERT_TRUE(test::CopyTracks(store_, pub_->track_namespace(), kTracks, relay_,
                               {"k.raw.s0", {2, 0}, std::nullopt})
                  .ok());  // the relay lost (layer 2, block 0) of k
  Serve(primary_, &relay_);
  MemoryHolder h(d_, "http holder mem");
  h.held = {0, 1, 2};
  h.flip = {0};        // container bytes damaged in transit: digest fails
  h.wrong_data = {1};  // a well-formed container of other bytes: the manifest's digests differ
  RecoveryOptions o = Options();
  o.holders = {&h};
  auto r = Start(o);
  h.Deliver();
  ASSERT_TRUE(report_.has_value());
  EXPECT_EQ(mismatches_, 0);
  EXPECT_EQ(report_->at(2, 2).source, BlockSource::kHttpHolder);
  EXPECT_EQ(report_->at(0, 2).source, BlockSource::kRecompute);
  EXPECT_EQ(report_->at(0, 2).reason, StreamError::kMissing);
  EXPECT_EQ(report_->at(1, 2).source, BlockSource::kRecompute);
  EXPECT_EQ(report_->recompute_count(), 2u);
  bool digest = false, container = false;
  for (const Refusal& f : report_->refusals) {
    digest |= f.status.Is(StreamError::kListedDigestMismatch);
    container |=
        f.status.Is(StreamError::kObjectInvalid) && f.track.find("block 0") != std::string::npos;
  }
  EXPECT_TRUE(digest);
  EXPECT_TRUE(container);
}

TEST_F(RecoveryTest, MissingObjectRecoveredFromAnotherRelayOfThePublication) {
  Produce(d_.layers);
  ASSERT_TRUE(test::CopyTracks(store_, pub_->track_namespace(), kTracks, relay_,
                               {"v.raw.s0", {7, 2}, std::nullopt})
                  .ok());
  Serve(primary_, &relay_);
  Serve(alt_, &store_);
  MemoryHolder h(d_, "http holder mem");
  RecoveryOptions o = Options();
  o.alternates = {{alt_.client.get(), pub_->ns(), "relay-2"}};
  o.holders = {&h};
  auto r = Start(o);
  ExpectEverythingOnce();
  EXPECT_EQ(report_->count(BlockSource::kAltMoqt), 3u);  // layer 7
  EXPECT_EQ(report_->at(2, 7).source, BlockSource::kAltMoqt);
  EXPECT_EQ(report_->sources[report_->at(2, 7).source_index].rfind("alt moqt relay-2", 0), 0u);
  EXPECT_EQ(h.fetches, 0);
}

// The primary publication (through a relay that lost (layer 3, block 1) of v) and another
// publication of the same prompt as the alternative; `deterministic` for both or neither.
class MixingTest : public RecoveryTest {
 protected:
  void Run2(bool deterministic) {
    std::vector<std::unique_ptr<Publisher>> pubs;
    for (int i = 0; i < 2; ++i) {
      PublisherConfig c;
      c.descriptor = d_;
      c.scope_key = scope_;
      c.deterministic = deterministic;
      auto p = Publisher::Create(&store_, c, tokens_);
      ASSERT_TRUE(p.ok());
      for (uint32_t l = 0; l < d_.layers; ++l) {
        ASSERT_TRUE(
            (*p)->PublishLayer(l, test::LayerK(d_, l, 0, 3), test::LayerV(d_, l, 0, 3)).ok());
      }
      pubs.push_back(std::move(*p));
    }
    ASSERT_TRUE(test::CopyTracks(store_, pubs[0]->track_namespace(), kTracks, relay_,
                                 {"v.raw.s0", {3, 1}, std::nullopt})
                    .ok());
    Serve(primary_, &relay_);
    Serve(alt_, &store_);
    RecoveryOptions o = Options();
    o.retrieval.verifier.publication = pubs[0]->ns();
    o.alternates = {{alt_.client.get(), pubs[1]->ns(), "publication b"}};
    auto r = Start(o);
    ASSERT_TRUE(report_.has_value());
  }
};

TEST_F(MixingTest, AnotherPublicationIsNotMixedIntoASegmentUnlessBothAreDeterministic) {
  Run2(false);
  EXPECT_EQ(report_->recompute_count(), 3u);  // layer 3
  EXPECT_EQ(report_->at(0, 3).reason, StreamError::kMissing);
  EXPECT_EQ(report_->count(BlockSource::kAltMoqt), 0u);
  bool foreign = false;
  for (const Refusal& f : report_->refusals)
    foreign |= f.status.Is(StreamError::kForeignPublication);
  EXPECT_TRUE(foreign);
  EXPECT_EQ(mismatches_, 0);
}

TEST_F(MixingTest, TwoDeterministicPublicationsMix) {
  Run2(true);
  ExpectEverythingOnce();
  EXPECT_EQ(report_->count(BlockSource::kAltMoqt), 3u);
  EXPECT_EQ(report_->at(1, 3).source, BlockSource::kAltMoqt);
}

TEST_F(RecoveryTest, PublisherThatStopsRecoversWhatItCanWithinTheBound) {
  Produce(6);  // 6 of 10 layers, then silence
  Serve(primary_, &store_);
  MemoryHolder h(d_, "http holder mem");
  h.held = {0};  // only the first block
  RecoveryOptions o = Options();
  o.holders = {&h};
  const uint64_t start = now_;
  auto r = Start(o);
  EXPECT_EQ(got_.size(), 0u);                 // no manifest yet (every 8 layers)
  EXPECT_EQ(r->deadline_ms(), start + 1000);  // T: the 1 s floor
  now_ = start + 499;
  r->OnTimer();
  EXPECT_EQ(h.fetches, 0);
  now_ = start + 500;  // the primary's half
  r->OnTimer();
  ASSERT_EQ(h.fetches, 1);
  ASSERT_EQ(h.asked.size(), 3u);
  EXPECT_EQ(h.asked[0].first_layer, 0u);
  EXPECT_EQ(h.asked[0].last_layer, 9u);
  h.Deliver();
  ASSERT_TRUE(report_.has_value());
  EXPECT_TRUE(report_->timed_out);
  EXPECT_EQ(report_->count(BlockSource::kHttpHolder), 10u);
  EXPECT_EQ(report_->recompute_count(), 20u);
  EXPECT_EQ(report_->at(1, 0).reason, StreamError::kDeadline);
  EXPECT_EQ(mismatches_, 0);
}

TEST_F(RecoveryTest, AHolderThatNeverAnswersIsCancelledAtItsShare) {
  Produce(6);
  Serve(primary_, &store_);
  MemoryHolder slow(d_, "http holder slow"), h(d_, "http holder mem");
  h.held = {0, 1, 2};
  RecoveryOptions o = Options();
  o.holders = {&slow, &h};
  const uint64_t start = now_;
  auto r = Start(o);
  now_ = start + 500;
  r->OnTimer();
  ASSERT_EQ(slow.fetches, 1);
  // 30 missing pairs · 4 tokens · 1 ms = 120 ms, floor 1 s, capped at D = start + 1000: 500 ms
  // left for two sources.
  EXPECT_EQ(slow.timeout, 250u);
  now_ = start + 750;
  r->OnTimer();
  EXPECT_EQ(slow.cancels, 1);
  ASSERT_EQ(h.fetches, 1);
  h.Deliver();
  ASSERT_TRUE(report_.has_value());
  EXPECT_TRUE(report_->all_retrieved());
  EXPECT_LE(now_, r->deadline_ms());
}

}  // namespace
}  // namespace kvcs::stream
