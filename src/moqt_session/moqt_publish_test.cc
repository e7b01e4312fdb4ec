// PUBLISH (draft-22 §10) between two MoqtSessions over the in-memory transport: the client
// publishes from its TrackStore, the server accepts or refuses in MoqtSessionCallbacks::OnPublish.
#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "moqt/moqt_framer.h"
#include "moqt_session/moqt_publish_set.h"
#include "moqt_session/moqt_session.h"
#include "moqt_session/moqt_track_store.h"
#include "transport/test_tools/in_memory_session.h"
#include "transport/test_tools/recording_session_visitor.h"

namespace kvcs::moqt {
namespace {

using transport::test::InMemorySessionPair;

Bytes B(const std::string& s) { return Bytes(s.begin(), s.end()); }
std::string Payload(uint64_t g, uint64_t o) {
  return "g" + std::to_string(g) + "o" + std::to_string(o);
}
FullTrackName Name(const std::string& n) { return {{"kvcs-1", "scope"}, n}; }

struct Received : SubscribeVisitor {
  void OnSubscribeOk(const SubscribeOkInfo& i) override { ok = i; }
  void OnObject(const ReceivedObject& o) override {
    if (o.status != ObjectStatus::kNormal) {
      statuses.push_back({o.location, o.status});
      return;
    }
    EXPECT_TRUE(o.payload_buffer || !o.payload.empty());
    objects.push_back({o.location, std::string(o.payload.begin(), o.payload.end())});
    vias.insert(o.via);
  }
  void OnFillComplete(bool clean) override { fill_clean = clean; }
  void OnComplete(const SubscriptionDone& d) override {
    EXPECT_FALSE(done.has_value()) << "OnComplete twice";
    done = d;
  }
  std::optional<SubscribeOkInfo> ok;
  std::vector<std::pair<Location, std::string>> objects;
  std::vector<std::pair<Location, ObjectStatus>> statuses;
  std::set<DeliveryKind> vias;
  std::optional<bool> fill_clean;
  std::optional<SubscriptionDone> done;
};

struct Offered : PublishVisitor {
  void OnPublishResult(const std::optional<RequestError>& e) override { result = e; }
  void OnPublishDone(bool d) override {
    EXPECT_FALSE(delivered.has_value()) << "OnPublishDone twice";
    delivered = d;
  }
  std::optional<std::optional<RequestError>> result;
  std::optional<bool> delivered;
};

// The subscriber's callbacks: accepts every PUBLISH into `accepted` unless `refuse` is set.
struct SubscriberCallbacks : MoqtSessionCallbacks {
  PublishAnswer OnPublish(const IncomingPublish& p) override {
    publishes.push_back(p);
    PublishAnswer a;
    if (refuse) {
      a.error = *refuse;
      a.reason = "no thanks";
      return a;
    }
    auto v = std::make_shared<Received>();
    accepted[p.track.name] = v;
    a.visitor = v;
    a.fill_existing = fill_existing;
    return a;
  }
  void OnSessionClosed(uint64_t code, const std::string&, bool by_peer) override {
    closed_code = code;
  }
  std::optional<RequestErrorCode> refuse;
  bool fill_existing = true;
  std::vector<IncomingPublish> publishes;
  std::map<std::string, std::shared_ptr<Received>> accepted;
  std::optional<uint64_t> closed_code;
};

struct Pair {
  // `clock_ms`: both sessions' clock (null: always 0).
  explicit Pair(MoqtSessionCallbacks* server_cb = nullptr,
                std::function<uint64_t()> clock_ms = nullptr) {
    MoqtSessionConfig c;
    c.perspective = Perspective::kClient;
    c.path = "/moq";
    c.clock_ms = clock_ms;
    MoqtSessionConfig s;
    s.perspective = Perspective::kServer;
    s.clock_ms = clock_ms;
    client = std::make_unique<MoqtSession>(&pair.client(), c, nullptr, &store);
    server = std::make_unique<MoqtSession>(&pair.server(), s, server_cb ? server_cb : &default_cb,
                                           nullptr);
    pair.Connect();
    pair.RunUntilIdle();
  }
  void Run() { pair.RunUntilIdle(); }
  std::shared_ptr<Track> MakeTrack(const std::string& name) {
    return *store.CreateTrack(Name(name));
  }
  void Produce(Track& t, uint64_t g0, uint64_t g1, uint64_t objects) {
    for (uint64_t g = g0; g < g1; ++g) {
      ASSERT_TRUE(t.StartGroup(g).ok());
      for (uint64_t o = 0; o < objects; ++o) {
        ASSERT_TRUE(t.AppendObject(B(Payload(g, o))).ok());
        Run();
      }
      ASSERT_TRUE(t.EndGroup().ok());
      Run();
    }
  }
  InMemorySessionPair pair;
  TrackStore store;
  MoqtSessionCallbacks default_cb;
  std::unique_ptr<MoqtSession> client, server;
};

std::vector<std::pair<Location, std::string>> Expected(uint64_t groups, uint64_t objects) {
  std::vector<std::pair<Location, std::string>> v;
  for (uint64_t g = 0; g < groups; ++g) {
    for (uint64_t o = 0; o < objects; ++o) v.push_back({{g, o}, Payload(g, o)});
  }
  return v;
}

std::vector<std::pair<Location, std::string>> Sorted(
    std::vector<std::pair<Location, std::string>> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(MoqtPublishTest, AcceptedPublishDeliversExistingAndLiveObjectsExactlyOnce) {
  SubscriberCallbacks cb;
  Pair p(&cb);
  auto t = p.MakeTrack("k");
  p.Produce(*t, 0, 2, 3);  // before the PUBLISH: reaches the subscriber as the fill
  auto offered = std::make_shared<Offered>();
  ASSERT_TRUE(p.client->PublishTrack(Name("k"), {}, offered).ok());
  p.Run();
  ASSERT_EQ(cb.publishes.size(), 1u);
  EXPECT_EQ(cb.publishes[0].largest, (Location{1, 3}));
  ASSERT_TRUE(offered->result.has_value());
  EXPECT_FALSE(offered->result->has_value());  // PUBLISH_OK
  p.Produce(*t, 2, 4, 3);                      // live
  ASSERT_TRUE(t->EndTrack().ok());
  p.Run();
  auto rx = cb.accepted["k"];
  ASSERT_TRUE(rx);
  ASSERT_TRUE(rx->ok.has_value());
  EXPECT_EQ(rx->ok->largest, (Location{1, 3}));
  EXPECT_EQ(rx->objects.size(), 12u);  // exactly once: no duplicate, none missing
  EXPECT_EQ(Sorted(rx->objects), Expected(4, 3));
  EXPECT_TRUE(rx->vias.count(DeliveryKind::kFill));
  EXPECT_TRUE(rx->vias.count(DeliveryKind::kSubscription));
  EXPECT_EQ(rx->fill_clean, true);
  ASSERT_TRUE(rx->done.has_value());
  EXPECT_TRUE(rx->done->track_ended);
  EXPECT_TRUE(rx->done->all_streams_received);
  EXPECT_EQ(rx->done->status, static_cast<uint64_t>(PublishDoneCode::kTrackEnded));
  ASSERT_FALSE(rx->statuses.empty());
  EXPECT_EQ(rx->statuses.back().second, ObjectStatus::kEndOfTrack);
  EXPECT_EQ(offered->delivered, true);
  EXPECT_FALSE(p.client->closed());
  EXPECT_FALSE(p.server->closed());
}

TEST(MoqtPublishTest, PublishOfAnEndedTrackDeliversItWholeBeforeThePublisherLeaves) {
  SubscriberCallbacks cb;
  Pair p(&cb);
  auto t = p.MakeTrack("v");
  p.Produce(*t, 0, 3, 4);
  ASSERT_TRUE(t->EndTrack().ok());
  auto offered = std::make_shared<Offered>();
  ASSERT_TRUE(p.client->PublishTrack(Name("v"), {}, offered).ok());
  p.Run();
  ASSERT_EQ(offered->delivered, true);  // the publisher may leave now
  p.client->Close(SessionError::kNoError, "bye");
  p.Run();
  auto rx = cb.accepted["v"];
  ASSERT_TRUE(rx && rx->done.has_value());
  EXPECT_EQ(Sorted(rx->objects), Expected(3, 4));
  EXPECT_TRUE(rx->done->track_ended);
  EXPECT_TRUE(rx->done->all_streams_received);
  EXPECT_FALSE(rx->done->session_closed);
}

TEST(MoqtPublishTest, APublishBeforeAnyObjectIsAllLive) {
  SubscriberCallbacks cb;
  Pair p(&cb);
  auto t = p.MakeTrack("m");
  auto offered = std::make_shared<Offered>();
  ASSERT_TRUE(p.client->PublishTrack(Name("m"), {}, offered).ok());
  p.Produce(*t, 0, 2, 2);  // the PUBLISH is still on its way for the first object
  ASSERT_TRUE(t->EndTrack().ok());
  p.Run();
  auto rx = cb.accepted["m"];
  ASSERT_TRUE(rx && rx->done.has_value());
  EXPECT_FALSE(cb.publishes[0].largest.has_value());
  EXPECT_EQ(rx->objects, Expected(2, 2));
  EXPECT_EQ(rx->vias, (std::set<DeliveryKind>{DeliveryKind::kSubscription}));
  EXPECT_FALSE(rx->fill_clean.has_value());  // no fill stream
  EXPECT_TRUE(rx->done->track_ended);
  EXPECT_EQ(offered->delivered, true);
}

// The subscriber wants only what comes after the PUBLISH (no fill request): the publisher, which
// holds PUBLISH_DONE for that request, waits publish_done_wait_ms and then ends the PUBLISH
// with every live object delivered.
TEST(MoqtPublishTest, PublishDoneWaitsForAFillRequestOnlyPublishDoneWaitMs) {
  SubscriberCallbacks cb;
  cb.fill_existing = false;
  uint64_t now = 1000;
  Pair p(&cb, [&now] { return now; });
  auto t = p.MakeTrack("k");
  p.Produce(*t, 0, 1, 2);  // before the PUBLISH: not wanted
  auto offered = std::make_shared<Offered>();
  ASSERT_TRUE(p.client->PublishTrack(Name("k"), {}, offered).ok());
  p.Run();
  p.Produce(*t, 1, 3, 2);  // live: the tail
  ASSERT_TRUE(t->EndTrack().ok());
  p.Run();
  p.client->OnTimer();
  p.Run();
  auto rx = cb.accepted["k"];
  ASSERT_TRUE(rx);
  EXPECT_FALSE(rx->done.has_value());  // within the wait: a fill request could still come
  now += kDefaultPublishDoneWaitMs;
  p.client->OnTimer();
  p.Run();
  ASSERT_TRUE(rx->done.has_value()) << "PUBLISH_DONE held for a fill request that never comes";
  EXPECT_TRUE(rx->done->track_ended);
  EXPECT_TRUE(rx->done->all_streams_received);
  std::vector<std::pair<Location, std::string>> tail;
  for (uint64_t g = 1; g < 3; ++g) {
    for (uint64_t o = 0; o < 2; ++o) tail.push_back({{g, o}, Payload(g, o)});
  }
  EXPECT_EQ(Sorted(rx->objects), tail);  // the whole tail, nothing before the PUBLISH
  EXPECT_EQ(offered->delivered, true);
}

// A fill request that reaches the publisher after its wait for one ended (it sent PUBLISH_DONE,
// counting only the live streams, and ignores the late request): the subscriber, whose request
// was never answered, does not take the track for whole; its fill never came.
TEST(MoqtPublishTest, AFillRequestedAfterThePublishersWaitLeavesTheSubscriptionNotWhole) {
  SubscriberCallbacks cb;
  cb.fill_existing = false;  // asked for by hand below, too late
  uint64_t now = 1000;
  Pair p(&cb, [&now] { return now; });
  auto t = p.MakeTrack("k");
  p.Produce(*t, 0, 1, 2);  // before the PUBLISH: only a fill would bring it
  auto offered = std::make_shared<Offered>();
  ASSERT_TRUE(p.client->PublishTrack(Name("k"), {}, offered).ok());
  p.Run();
  p.Produce(*t, 1, 2, 2);
  ASSERT_TRUE(t->EndTrack().ok());
  p.Run();
  now += kDefaultPublishDoneWaitMs;
  p.client->OnTimer();  // PUBLISH_DONE goes (not delivered yet)
  SubscriptionUpdate fill;
  fill.fill = LocationFilter{LocationFilterType::kAbsoluteRange, 0, 0, 0, 1};
  ASSERT_EQ(cb.publishes.size(), 1u);
  ASSERT_TRUE(p.server->UpdateSubscription(cb.publishes[0].request_id, fill).ok());
  p.Run();
  auto rx = cb.accepted["k"];
  ASSERT_TRUE(rx && rx->done.has_value());
  EXPECT_TRUE(rx->done->track_ended);
  EXPECT_FALSE(rx->done->all_streams_received) << "whole without the fill it asked for";
  EXPECT_FALSE(rx->fill_clean.has_value());  // no fill stream came
}

TEST(MoqtPublishTest, RefusedPublishIsReportedAndNothingIsDelivered) {
  SubscriberCallbacks cb;
  cb.refuse = RequestErrorCode::kUnauthorized;
  Pair p(&cb);
  auto t = p.MakeTrack("k");
  p.Produce(*t, 0, 1, 2);
  auto offered = std::make_shared<Offered>();
  ASSERT_TRUE(p.client->PublishTrack(Name("k"), {}, offered).ok());
  p.Produce(*t, 1, 3, 2);
  p.Run();
  ASSERT_TRUE(offered->result.has_value());
  ASSERT_TRUE(offered->result->has_value());
  EXPECT_EQ((*offered->result)->error_code, static_cast<uint64_t>(RequestErrorCode::kUnauthorized));
  EXPECT_EQ(offered->delivered, false);
  EXPECT_TRUE(cb.accepted.empty());
  EXPECT_EQ(p.server->stats().objects_received, 0u);
  // Later objects are not sent, and both sessions stay up.
  const uint64_t sent = p.client->stats().objects_sent;
  p.Produce(*t, 3, 4, 2);
  EXPECT_EQ(p.client->stats().objects_sent, sent);
  EXPECT_FALSE(p.client->closed());
  EXPECT_FALSE(p.server->closed());
}

TEST(MoqtPublishTest, ASessionWithoutAPublishHandlerRefusesNotSupported) {
  Pair p;  // default callbacks
  p.MakeTrack("k");
  auto offered = std::make_shared<Offered>();
  ASSERT_TRUE(p.client->PublishTrack(Name("k"), {}, offered).ok());
  p.Run();
  ASSERT_TRUE(offered->result.has_value() && offered->result->has_value());
  EXPECT_EQ((*offered->result)->error_code, static_cast<uint64_t>(RequestErrorCode::kNotSupported));
  EXPECT_FALSE(p.client->PublishTrack(Name("absent"), {}, offered).ok());
}

TEST(MoqtPublishTest, SubscriberCancellingAPublishStopsThePublisher) {
  SubscriberCallbacks cb;
  Pair p(&cb);
  auto t = p.MakeTrack("k");
  auto offered = std::make_shared<Offered>();
  auto id = p.client->PublishTrack(Name("k"), {}, offered);
  ASSERT_TRUE(id.ok());
  p.Produce(*t, 0, 1, 2);
  ASSERT_TRUE(p.server->Unsubscribe(*id).ok());
  p.Run();
  EXPECT_EQ(offered->delivered, false);
  const uint64_t sent = p.client->stats().objects_sent;
  p.Produce(*t, 1, 3, 2);
  EXPECT_EQ(p.client->stats().objects_sent, sent);
  EXPECT_FALSE(p.client->closed());
}

TEST(MoqtPublishSetTest, CallsBackOnceTheSubscriberHoldsEveryTrack) {
  SubscriberCallbacks cb;
  Pair p(&cb);
  auto k = p.MakeTrack("k");
  auto v = p.MakeTrack("v");
  PublishSet set(p.client.get());
  ASSERT_TRUE(set.Publish({Name("k"), Name("v")}).ok());
  ASSERT_TRUE(set.Publish({Name("k")}).ok());  // PUBLISHed once
  EXPECT_FALSE(set.Publish({Name("absent")}).ok());
  EXPECT_EQ(set.pending(), 2u);
  bool done = false;
  set.WhenDone([&] { done = true; });
  p.Produce(*k, 0, 2, 2);
  p.Produce(*v, 0, 2, 2);
  ASSERT_TRUE(k->EndTrack().ok());
  p.Run();
  EXPECT_FALSE(done);  // v has not ended
  ASSERT_TRUE(v->EndTrack().ok());
  p.Run();
  EXPECT_TRUE(done);
  EXPECT_EQ(set.delivered(), 2u);
  EXPECT_TRUE(set.failed().empty());
  EXPECT_EQ(cb.publishes.size(), 2u);
}

Bytes SetupBytes() {
  Setup s;
  s.options.path = "/";
  return *SerializeControlMessage(s);
}

// A raw client sends `requests` (each on its own request stream) to a server session.
uint64_t CloseCodeFor(const std::vector<Bytes>& requests, bool fin) {
  InMemorySessionPair pair;
  transport::test::RecordingSessionVisitor raw(&pair.client());
  pair.client().SetVisitor(&raw);
  SubscriberCallbacks cb;
  MoqtSessionConfig sc;
  sc.perspective = Perspective::kServer;
  MoqtSession server(&pair.server(), sc, &cb, nullptr);
  pair.Connect();
  pair.RunUntilIdle();
  EXPECT_TRUE(pair.client().OpenOutgoingUnidirectionalStream()->Write(SetupBytes(), false).ok());
  for (const Bytes& r : requests) {
    EXPECT_TRUE(pair.client().OpenOutgoingBidirectionalStream()->Write(r, fin).ok());
  }
  pair.RunUntilIdle();
  EXPECT_TRUE(server.closed());
  return raw.closed ? raw.closed->code : UINT64_MAX;
}

TEST(MoqtPublishTest, MalformedPublishClosesTheSessionWithTheDraftCode) {
  Publish a;
  a.request_id = 0;
  a.track = Name("k");
  a.track_alias = 7;
  Bytes first = *SerializeControlMessage(a);
  Publish b = a;
  b.request_id = 2;
  b.track = Name("v");  // another track on the same alias
  Bytes second = *SerializeControlMessage(b);
  EXPECT_EQ(CloseCodeFor({first, second}, false),
            static_cast<uint64_t>(SessionError::kDuplicateTrackAlias));
  Bytes cut(first.begin(), first.end() - 3);  // the stream ends inside the PUBLISH
  EXPECT_EQ(CloseCodeFor({cut}, true), static_cast<uint64_t>(SessionError::kProtocolViolation));
  Publish odd = a;
  odd.request_id = 1;  // a client's IDs are even
  EXPECT_EQ(CloseCodeFor({*SerializeControlMessage(odd)}, false),
            static_cast<uint64_t>(SessionError::kInvalidRequestId));
}

}  // namespace
}  // namespace kvcs::moqt
