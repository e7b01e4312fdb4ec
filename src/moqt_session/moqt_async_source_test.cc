// What a relay needs of the session and the Track: a TrackSource that answers later (or passes
// on its upstream's error), a requester leaving while the answer is pending, a Track filled out
// of order whose fill and fetch streams wait for what has not arrived, live groups that arrive
// after its End of Track, and a Track that fails.
// Over the deterministic in-memory transport; no sleeps.
#include <gtest/gtest.h>

#include <deque>

#include "moqt_session/moqt_session.h"
#include "moqt_session/moqt_track.h"
#include "transport/test_tools/in_memory_session.h"

namespace kvcs::moqt {
namespace {

using transport::test::InMemorySessionPair;
using T = LocationFilterType;

struct Got {
  Location loc;
  ObjectStatus status;
  std::string payload;
  DeliveryKind via;
};

struct Sub : SubscribeVisitor {
  void OnSubscribeOk(const SubscribeOkInfo& i) override { ok = i; }
  void OnObject(const ReceivedObject& o) override {
    objects.push_back(
        {o.location, o.status, std::string(o.payload.begin(), o.payload.end()), o.via});
  }
  void OnComplete(const SubscriptionDone& d) override {
    EXPECT_FALSE(done.has_value());
    done = d;
  }
  std::vector<Location> Normal() const {
    std::vector<Location> v;
    for (const Got& g : objects) {
      if (g.status == ObjectStatus::kNormal) v.push_back(g.loc);
    }
    return v;
  }
  std::optional<SubscribeOkInfo> ok;
  std::vector<Got> objects;
  std::optional<SubscriptionDone> done;
};

struct Fet : FetchVisitor {
  void OnObject(const ReceivedObject& o) override {
    objects.push_back(
        {o.location, o.status, std::string(o.payload.begin(), o.payload.end()), o.via});
  }
  void OnComplete(const FetchDone& d) override { done = d; }
  std::vector<Got> objects;
  std::optional<FetchDone> done;
};

// Answers nothing until the test says so, as a relay waiting on its upstream.
struct DeferredSource : TrackSource {
  std::shared_ptr<Track> FindTrack(const FullTrackName&) override { return nullptr; }
  void ResolveTrack(const TrackQuery& q, TrackResolved done) override {
    queries.push_back(q);
    pending.push_back(std::move(done));
  }
  std::vector<TrackNamespace> ListNamespaces() override { return {}; }
  void AddNamespaceListener(NamespaceListener*) override {}
  void RemoveNamespaceListener(NamespaceListener*) override {}
  void Answer(std::shared_ptr<Track> t) {
    TrackResolution r;
    r.track = std::move(t);
    TrackResolved cb = std::move(pending.front());
    pending.pop_front();
    cb(std::move(r));
  }
  void Refuse(RequestErrorCode code, std::string reason) {
    TrackResolution r;
    r.error = code;
    r.reason = std::move(reason);
    TrackResolved cb = std::move(pending.front());
    pending.pop_front();
    cb(std::move(r));
  }
  std::vector<TrackQuery> queries;
  std::deque<TrackResolved> pending;
};

FullTrackName Name() { return {{"kvcs-1", "scope"}, "k.raw.s0"}; }

PublishedObject Obj(uint64_t g, uint64_t o, ObjectStatus st = ObjectStatus::kNormal) {
  PublishedObject p;
  p.location = {g, o};
  p.status = st;
  std::string s = st == ObjectStatus::kNormal ? "g" + std::to_string(g) + "o" + std::to_string(o)
                                              : std::string();
  p.payload = std::make_shared<const Bytes>(s.begin(), s.end());
  return p;
}

class AsyncSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MoqtSessionConfig c;
    c.perspective = Perspective::kClient;
    MoqtSessionConfig s;
    s.perspective = Perspective::kServer;
    client_ = std::make_unique<MoqtSession>(&pair_.client(), c, nullptr, nullptr);
    server_ = std::make_unique<MoqtSession>(&pair_.server(), s, nullptr, &source_);
    pair_.Connect();
    Run();
    ASSERT_TRUE(client_->setup_complete());
  }
  void Run() { pair_.RunUntilIdle(); }
  // A relay's track for `name`: filling, its upstream's Largest Object known.
  static std::shared_ptr<Track> FillingTrack(Location largest) {
    auto t = std::make_shared<Track>(Name(), TrackOptions{});
    t->StartFilling();
    t->SetLargestKnown(largest);
    return t;
  }
  InMemorySessionPair pair_;
  DeferredSource source_;
  std::unique_ptr<MoqtSession> client_, server_;
};

TEST_F(AsyncSourceTest, SubscribeIsAnsweredOnlyOnceTheSourceAnswers) {
  auto sub = std::make_shared<Sub>();
  ASSERT_TRUE(client_->Subscribe(Name(), {}, sub).ok());
  Run();
  ASSERT_EQ(source_.pending.size(), 1u);
  EXPECT_EQ(source_.queries[0].type, MessageType::kSubscribe);
  EXPECT_FALSE(sub->ok.has_value());
  EXPECT_FALSE(sub->done.has_value());
  source_.Answer(FillingTrack({4, 2}));
  Run();
  ASSERT_TRUE(sub->ok.has_value());
  EXPECT_EQ(sub->ok->largest, (Location{4, 2}));  // the upstream's Largest, not what is stored
}

TEST_F(AsyncSourceTest, TheSourcesErrorIsPassedOn) {
  auto sub = std::make_shared<Sub>();
  ASSERT_TRUE(client_->Subscribe(Name(), {}, sub).ok());
  auto fet = std::make_shared<Fet>();
  ASSERT_TRUE(client_->Fetch(Name(), {}, fet).ok());
  std::optional<TrackStatusReply> status;
  ASSERT_TRUE(
      client_->RequestTrackStatus(Name(), [&](const TrackStatusReply& r) { status = r; }).ok());
  Run();
  ASSERT_EQ(source_.pending.size(), 3u);
  EXPECT_EQ(source_.queries[1].type, MessageType::kFetch);
  EXPECT_EQ(source_.queries[2].type, MessageType::kTrackStatus);
  source_.Refuse(RequestErrorCode::kUnauthorized, "upstream says no");
  source_.Refuse(RequestErrorCode::kInvalidRange, "upstream says no");
  source_.Refuse(RequestErrorCode::kTimeout, "upstream timed out");
  Run();
  ASSERT_TRUE(sub->done && sub->done->error);
  EXPECT_EQ(sub->done->error->error_code, static_cast<uint64_t>(RequestErrorCode::kUnauthorized));
  ASSERT_TRUE(fet->done && fet->done->error);
  EXPECT_EQ(fet->done->error->error_code, static_cast<uint64_t>(RequestErrorCode::kInvalidRange));
  ASSERT_TRUE(status && status->error);
  EXPECT_EQ(status->error->error_code, static_cast<uint64_t>(RequestErrorCode::kTimeout));
  EXPECT_FALSE(client_->closed());
}

TEST_F(AsyncSourceTest, ASubscriberLeavingWhilePendingIsForgotten) {
  auto sub = std::make_shared<Sub>();
  auto id = client_->Subscribe(Name(), {}, sub);
  ASSERT_TRUE(id.ok());
  Run();
  ASSERT_TRUE(client_->Unsubscribe(*id).ok());
  Run();
  auto t = FillingTrack({0, 0});
  source_.Answer(t);  // late: the requester is gone
  Run();
  ASSERT_TRUE(t->InsertObject(Obj(1, 0)).ok());
  Run();
  EXPECT_FALSE(sub->ok.has_value());
  EXPECT_TRUE(sub->objects.empty());
  EXPECT_EQ(server_->stats().objects_sent, 0u);
  EXPECT_FALSE(server_->closed());
}

TEST_F(AsyncSourceTest, AnswerAfterTheSessionIsGoneIsDropped) {
  auto sub = std::make_shared<Sub>();
  ASSERT_TRUE(client_->Subscribe(Name(), {}, sub).ok());
  Run();
  server_.reset();
  source_.Answer(FillingTrack({0, 0}));  // must not touch the destroyed session
  SUCCEED();
}

// The relay's case: the upstream's fill (groups 0..1 up to {1,1}) and live objects (above it)
// arrive interleaved and out of order; a downstream Next Object + fill 0:0 gets each object
// exactly once, the fill in order, waiting for what has not arrived yet.
TEST_F(AsyncSourceTest, FillFromAFillingTrackWaitsAndDeliversEachObjectOnce) {
  auto t = FillingTrack({1, 1});
  SubscribeOptions so;
  so.fill = LocationFilter{T::kAbsoluteStart, 0, 0};
  auto sub = std::make_shared<Sub>();
  ASSERT_TRUE(client_->Subscribe(Name(), so, sub).ok());
  Run();
  source_.Answer(t);
  Run();
  ASSERT_TRUE(sub->ok.has_value());
  EXPECT_EQ(sub->ok->largest, (Location{1, 1}));
  ASSERT_TRUE(t->InsertObject(Obj(1, 2)).ok());  // live, above the Largest
  ASSERT_TRUE(t->InsertObject(Obj(1, 1)).ok());  // fill, below: out of order within group 1
  Run();
  // The fill has nothing it may send yet: {0,0} and {0,1} are not known.
  for (const Got& g : sub->objects) EXPECT_NE(g.via, DeliveryKind::kFill);
  ASSERT_TRUE(t->InsertObject(Obj(0, 0)).ok());
  ASSERT_TRUE(t->InsertObject(Obj(0, 1)).ok());
  t->SetCompleteThrough({0, 1});
  Run();
  ASSERT_TRUE(t->InsertObject(Obj(1, 0)).ok());
  t->SetCompleteThrough({1, 2});
  ASSERT_TRUE(t->InsertObject(Obj(1, 3, ObjectStatus::kEndOfGroup)).ok());
  ASSERT_TRUE(t->InsertObject(Obj(2, 0, ObjectStatus::kEndOfTrack)).ok());
  t->MarkComplete();
  Run();
  std::vector<Location> fill, live;
  for (const Got& g : sub->objects) {
    if (g.status != ObjectStatus::kNormal) continue;
    (g.via == DeliveryKind::kFill ? fill : live).push_back(g.loc);
  }
  EXPECT_EQ(fill, (std::vector<Location>{{0, 0}, {0, 1}, {1, 0}, {1, 1}}));
  EXPECT_EQ(live, (std::vector<Location>{{1, 2}}));
  ASSERT_TRUE(sub->done.has_value());
  EXPECT_TRUE(sub->done->track_ended);
  EXPECT_TRUE(sub->done->all_streams_received);
}

// A relay's upstream sends each live group on its own stream, and the streams arrive in any
// order: End of Track (group 3) may come before group 2's stream and before the rest of group 1.
// The Track takes them below its end (InsertObject); what has not arrived is not known yet, so the
// downstream subscription neither ends group 1's stream at the End of Track nor sends PUBLISH_DONE
// before group 2 went out: every live object once, then the end.
TEST_F(AsyncSourceTest, LiveGroupsArrivingAfterTheEndOfTrackStillGoOut) {
  auto t = FillingTrack({0, 1});
  auto sub = std::make_shared<Sub>();
  ASSERT_TRUE(client_->Subscribe(Name(), {}, sub).ok());  // Next Object: live from {0,2}
  Run();
  source_.Answer(t);
  Run();
  ASSERT_TRUE(sub->ok.has_value());
  ASSERT_TRUE(t->InsertObject(Obj(0, 0)).ok());
  ASSERT_TRUE(t->InsertObject(Obj(0, 1)).ok());
  ASSERT_TRUE(t->InsertObject(Obj(0, 2, ObjectStatus::kEndOfGroup)).ok());
  ASSERT_TRUE(t->InsertObject(Obj(1, 0)).ok());
  t->SetCompleteThrough({1, 0});
  ASSERT_TRUE(t->InsertObject(Obj(3, 0, ObjectStatus::kEndOfTrack)).ok());  // overtook 1 and 2
  Run();
  EXPECT_FALSE(sub->done.has_value());  // groups 1 and 2 are still on their way
  ASSERT_TRUE(t->InsertObject(Obj(1, 1)).ok());
  ASSERT_TRUE(t->InsertObject(Obj(1, 2, ObjectStatus::kEndOfGroup)).ok());
  t->SetCompleteThrough({1, UINT64_MAX});
  Run();
  EXPECT_FALSE(sub->done.has_value());
  ASSERT_TRUE(t->InsertObject(Obj(2, 0)).ok());
  ASSERT_TRUE(t->InsertObject(Obj(2, 1)).ok());
  ASSERT_TRUE(t->InsertObject(Obj(2, 2, ObjectStatus::kEndOfGroup)).ok());
  t->SetCompleteThrough({3, 0});
  t->MarkComplete();
  Run();
  EXPECT_EQ(sub->Normal(), (std::vector<Location>{{1, 0}, {1, 1}, {2, 0}, {2, 1}}));
  ASSERT_TRUE(sub->done.has_value());
  EXPECT_TRUE(sub->done->track_ended);
  EXPECT_TRUE(sub->done->all_streams_received);
  EXPECT_FALSE(client_->closed());
}

TEST_F(AsyncSourceTest, FetchFromAFillingTrackEndsOnlyWhenItsRangeIsKnown) {
  auto t = FillingTrack({1, 0});
  FetchOptions fo;
  fo.range = LocationFilter{T::kAbsoluteRange, 0, 0, 1, 0};
  auto fet = std::make_shared<Fet>();
  ASSERT_TRUE(client_->Fetch(Name(), fo, fet).ok());
  Run();
  ASSERT_EQ(source_.queries.size(), 1u);
  ASSERT_TRUE(source_.queries[0].fetch_range.has_value());
  EXPECT_EQ(source_.queries[0].fetch_range->type, T::kAbsoluteRange);
  source_.Answer(t);
  Run();
  ASSERT_TRUE(t->InsertObject(Obj(0, 1)).ok());
  Run();
  EXPECT_TRUE(fet->objects.empty());  // {0,0} may still come
  ASSERT_TRUE(t->InsertObject(Obj(0, 0)).ok());
  t->SetCompleteThrough({0, 1});
  Run();
  ASSERT_EQ(fet->objects.size(), 2u);
  EXPECT_FALSE(fet->done.has_value());  // {1,0} not known yet
  ASSERT_TRUE(t->InsertObject(Obj(1, 0)).ok());
  t->SetCompleteThrough({1, 0});
  Run();
  ASSERT_TRUE(fet->done.has_value());
  EXPECT_TRUE(fet->done->ok);
  ASSERT_EQ(fet->objects.size(), 3u);
  EXPECT_EQ(fet->objects[2].payload, "g1o0");
}

TEST_F(AsyncSourceTest, AFailedTrackEndsSubscriptionsAndFetches) {
  auto t = FillingTrack({1, 0});
  SubscribeOptions so;
  so.fill = LocationFilter{T::kAbsoluteStart, 0, 0};
  auto sub = std::make_shared<Sub>();
  ASSERT_TRUE(client_->Subscribe(Name(), so, sub).ok());
  auto fet = std::make_shared<Fet>();
  ASSERT_TRUE(client_->Fetch(Name(), {}, fet).ok());
  Run();
  source_.Answer(t);
  source_.Answer(t);
  Run();
  ASSERT_TRUE(t->InsertObject(Obj(1, 1)).ok());
  Run();
  t->Fail(PublishDoneCode::kInternalError, "upstream lost");
  Run();
  ASSERT_TRUE(sub->done.has_value());
  EXPECT_EQ(sub->done->status, static_cast<uint64_t>(PublishDoneCode::kInternalError));
  EXPECT_FALSE(sub->done->track_ended);
  ASSERT_TRUE(fet->done.has_value());
  EXPECT_FALSE(fet->done->ok);
  EXPECT_FALSE(client_->closed());
}

TEST(RelayTrackTest, InsertObjectTakesAnyOrderBelowTheEnds) {
  Track t(Name(), {});
  ASSERT_TRUE(t.InsertObject(Obj(3, 2)).ok());
  ASSERT_TRUE(t.InsertObject(Obj(3, 0)).ok());
  ASSERT_TRUE(t.InsertObject(Obj(1, 0)).ok());
  EXPECT_TRUE(t.InsertObject(Obj(3, 0)).Is(TrackError::kExists));
  ASSERT_TRUE(t.InsertObject(Obj(3, 3, ObjectStatus::kEndOfGroup)).ok());
  ASSERT_TRUE(t.InsertObject(Obj(3, 1)).ok());  // below End of Group
  EXPECT_TRUE(t.InsertObject(Obj(3, 4)).Is(TrackError::kGroupEnded));
  ASSERT_TRUE(t.InsertObject(Obj(4, 0, ObjectStatus::kEndOfTrack)).ok());
  ASSERT_TRUE(t.InsertObject(Obj(2, 0)).ok());  // below End of Track
  EXPECT_TRUE(t.InsertObject(Obj(5, 0)).Is(TrackError::kTrackEnded));
  EXPECT_EQ(t.NextInGroup(3, 0)->location, (Location{3, 0}));
  EXPECT_EQ(t.NextInGroup(3, 1)->location, (Location{3, 1}));
  // AddObject (an original publisher) still refuses what is not ascending.
  Track a(Name(), {});
  ASSERT_TRUE(a.AddObject(Obj(0, 1)).ok());
  EXPECT_TRUE(a.AddObject(Obj(0, 0)).Is(TrackError::kObjectNotAscending));
}

TEST(RelayTrackTest, KeepWholeRefusesInsteadOfEvictingItsOwnGroups) {
  auto budget = std::make_shared<ByteBudget>(3 * (4 + kTrackObjectOverheadBytes) +
                                             3 * kTrackGroupOverheadBytes);
  TrackOptions o;
  o.budget = budget;
  o.keep_whole = true;
  Track t(Name(), o);
  for (uint64_t g = 0; g < 3; ++g) ASSERT_TRUE(t.InsertObject(Obj(g, 0)).ok());
  EXPECT_TRUE(t.InsertObject(Obj(3, 0)).Is(TrackError::kBudgetExhausted));
  EXPECT_NE(t.Find({0, 0}), nullptr);  // nothing was evicted
  EXPECT_LE(budget->used(), budget->limit());
  // Without keep_whole the oldest group makes room.
  auto b2 = std::make_shared<ByteBudget>(budget->limit());
  TrackOptions o2;
  o2.budget = b2;
  Track u(Name(), o2);
  for (uint64_t g = 0; g < 4; ++g) ASSERT_TRUE(u.InsertObject(Obj(g, 0)).ok());
  EXPECT_EQ(u.Find({0, 0}), nullptr);
}

TEST(RelayTrackTest, CompleteThroughAndFailure) {
  Track t(Name(), {});
  EXPECT_TRUE(t.KnownThrough({9, 9}));  // an original publisher's track is complete
  t.StartFilling();
  EXPECT_FALSE(t.KnownThrough({0, 0}));
  t.SetCompleteThrough({2, 5});
  EXPECT_TRUE(t.KnownThrough({2, 5}));
  EXPECT_FALSE(t.KnownThrough({2, 6}));
  t.SetCompleteThrough({1, 0});  // never moves back
  EXPECT_TRUE(t.KnownThrough({2, 5}));
  t.MarkComplete();
  EXPECT_TRUE(t.KnownThrough({100, 0}));
  t.Fail(PublishDoneCode::kInternalError, "x");
  ASSERT_TRUE(t.failure().has_value());
  EXPECT_TRUE(t.InsertObject(Obj(0, 0)).Is(TrackError::kTrackEnded));
}

}  // namespace
}  // namespace kvcs::moqt
