// Discovery over the in-memory transport: publishers' TrackStore served by a server MoqtSession,
// Discovery on the client session. The longest prefix with a publication wins; shorter prefixes
// are tried when no longer one exists (in windows); several publications of one prefix are all
// listed; another scope's publication is never listed; the found publication is then retrieved.
#include "kvcs_stream/discovery.h"

#include <gtest/gtest.h>

#include "kvcs_stream/publisher.h"
#include "kvcs_stream/retrieval.h"
#include "kvcs_stream/test_tools/test_cache.h"
#include "transport/test_tools/in_memory_session.h"

namespace kvcs::stream {
namespace {

class DiscoveryTest : public ::testing::Test {
 protected:
  kvsp::Descriptor d_ = test::SmallDescriptor(4, 4);
  kvsp::ScopeKey scope_{};
  moqt::TrackStore store_;
  std::vector<std::unique_ptr<Publisher>> pubs_;
  transport::test::InMemorySessionPair pair_;
  std::unique_ptr<moqt::MoqtSession> server_, client_;
  uint64_t now_ = 0;
  profile::KeySet keys_;

  void SetUp() override { scope_[3] = 9; }

  Publisher* Publish(uint64_t blocks, uint32_t scope_byte = 9) {
    PublisherConfig c;
    c.descriptor = d_;
    c.scope_key = scope_;
    c.scope_key[3] = scope_byte;
    auto p = Publisher::Create(&store_, c, test::Tokens(blocks * 4));
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    for (uint32_t l = 0; l < d_.layers; ++l) {
      EXPECT_TRUE(
          (*p)->PublishLayer(l, test::LayerK(d_, l, 0, blocks), test::LayerV(d_, l, 0, blocks))
              .ok());
    }
    pubs_.push_back(std::move(*p));
    return pubs_.back().get();
  }
  void Serve() {
    moqt::MoqtSessionConfig sc;
    sc.perspective = moqt::Perspective::kServer;
    server_ = std::make_unique<moqt::MoqtSession>(&pair_.server(), sc, nullptr, &store_);
    moqt::MoqtSessionConfig cc;
    cc.perspective = moqt::Perspective::kClient;
    cc.path = "/moq";
    cc.clock_ms = [this] { return now_; };
    client_ = std::make_unique<moqt::MoqtSession>(&pair_.client(), cc, nullptr, nullptr);
    pair_.Connect();
    pair_.RunUntilIdle();
    ASSERT_TRUE(client_->setup_complete());
  }
  CacheIdentity Identity(uint64_t blocks) {
    return *CacheIdentity::Compute(d_, scope_, test::Tokens(blocks * 4));
  }
  // Runs a discovery to its end, advancing the clock 10 ms per step.
  DiscoveryResult Discover(uint64_t blocks, DiscoveryOptions o = {}) {
    std::optional<DiscoveryResult> got;
    auto d = Discovery::Start(
        client_.get(), Identity(blocks), o, [&](const DiscoveryResult& r) { got = r; },
        [this] { return now_; });
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    if (!d.ok()) return {};
    for (int i = 0; i < 1000 && !got; ++i) {
      pair_.RunUntilIdle();
      now_ += 10;
      (*d)->OnTimer();
    }
    EXPECT_TRUE(got.has_value());
    return got.value_or(DiscoveryResult{});
  }
};

TEST_F(DiscoveryTest, LongestPrefixWinsAndIsRetrieved) {
  Publish(2);
  Publisher* full = Publish(3);
  Serve();
  DiscoveryResult r = Discover(3);
  ASSERT_EQ(r.publications.size(), 1u);
  EXPECT_EQ(r.best()->ns, full->ns());
  EXPECT_EQ(r.best()->anchor_blocks, 3u);
  EXPECT_EQ(r.prefixes_tried, 3u);  // one window: 3, 2, 1
  EXPECT_FALSE(r.timed_out);
  EXPECT_TRUE(r.refusals.empty());

  RetrievalOptions o;
  o.verifier.identity = Identity(3);
  o.verifier.publication = r.best()->ns;
  o.verifier.require_signature = false;
  o.verifier.keys = &keys_;
  o.compute_ns_per_token_layer = 1'000'000;
  std::optional<RetrievalReport> rep;
  auto ret = Retrieval::Start(
      client_.get(), o, [](const VerifiedLayer&) {}, [&](const RetrievalReport& x) { rep = x; },
      [this] { return now_; });
  ASSERT_TRUE(ret.ok());
  pair_.RunUntilIdle();
  ASSERT_TRUE(rep.has_value());
  EXPECT_TRUE(rep->all_from_moqt());
}

TEST_F(DiscoveryTest, ShorterPrefixFoundWhenNoLongerOneExists) {
  Publisher* short_pub = Publish(2);
  Publish(2, /*scope_byte=*/10);  // same tokens, another scope: never listed
  Serve();
  DiscoveryOptions o;
  o.window = 2;
  DiscoveryResult r = Discover(5, o);
  ASSERT_EQ(r.publications.size(), 1u);
  EXPECT_EQ(r.best()->ns, short_pub->ns());
  EXPECT_EQ(r.best()->anchor_blocks, 2u);
  EXPECT_EQ(r.prefixes_tried, 4u);  // windows {5, 4}, {3, 2}

  // The found publication covers the first 2 of the 5 blocks; the rest is for recompute.
  RetrievalOptions ro;
  ro.mode = RetrievalMode::kCompleted;
  ro.verifier.identity = Identity(5);
  ro.verifier.publication = r.best()->ns;
  ro.verifier.require_signature = false;
  ro.verifier.keys = &keys_;
  ro.compute_ns_per_token_layer = 1'000'000;
  std::optional<RetrievalReport> rep;
  auto ret = Retrieval::Start(
      client_.get(), ro, [](const VerifiedLayer&) {}, [&](const RetrievalReport& x) { rep = x; },
      [this] { return now_; });
  ASSERT_TRUE(ret.ok());
  pair_.RunUntilIdle();
  ASSERT_TRUE(rep.has_value());
  EXPECT_EQ(rep->at(1, 3).source, BlockSource::kMoqtFetch);
  EXPECT_EQ(rep->at(2, 0).reason, StreamError::kNotCovered);
}

TEST_F(DiscoveryTest, EveryPublicationOfThePrefixIsListed) {
  Publisher* a = Publish(3);
  Publisher* b = Publish(3);
  Serve();
  DiscoveryResult r = Discover(3);
  ASSERT_EQ(r.publications.size(), 2u);
  EXPECT_NE(r.publications[0].ns, r.publications[1].ns);
  for (const FoundPublication& f : r.publications) {
    EXPECT_TRUE(f.ns == a->ns() || f.ns == b->ns());
  }
}

TEST_F(DiscoveryTest, NothingPublishedTriesEveryPrefix) {
  Publish(2, /*scope_byte=*/10);
  Serve();
  DiscoveryOptions o;
  o.window = 3;
  o.min_blocks = 2;
  DiscoveryResult r = Discover(6, o);
  EXPECT_TRUE(r.publications.empty());
  EXPECT_EQ(r.best(), nullptr);
  EXPECT_EQ(r.prefixes_tried, 5u);  // 6..2
  EXPECT_FALSE(r.timed_out);
}

TEST_F(DiscoveryTest, PromptShorterThanMinBlocksIsRefused) {
  Serve();
  DiscoveryOptions o;
  o.min_blocks = 4;
  auto d = Discovery::Start(client_.get(), Identity(3), o, nullptr, [this] { return now_; });
  EXPECT_FALSE(d.ok());
}

}  // namespace
}  // namespace kvcs::stream
