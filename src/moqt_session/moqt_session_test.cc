// MoqtSession end to end over the deterministic in-memory transport: a client session and a
// server session wired back to back (two pairs share one server TrackStore where a test needs a
// "server" with several sessions). No sleeps: InMemorySessionPair::RunUntilIdle delivers events.
#include "moqt_session/moqt_session.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>

#include "moqt/moqt_control_parser.h"
#include "moqt/moqt_framer.h"
#include "moqt/moqt_limits.h"
#include "moqt/moqt_varint.h"
#include "moqt_session/moqt_track_store.h"
#include "transport/test_tools/in_memory_session.h"
#include "transport/test_tools/recording_session_visitor.h"

namespace kvcs::moqt {
namespace {

using transport::test::InMemoryOptions;
using transport::test::InMemorySessionPair;
using T = LocationFilterType;

Bytes B(std::string_view s) { return Bytes(s.begin(), s.end()); }
std::string Payload(uint64_t g, uint64_t o) {
  return "g" + std::to_string(g) + "o" + std::to_string(o);
}

struct Obj {
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
  void OnUpdateResult(uint64_t id, const std::optional<RequestError>& e) override {
    updates.push_back({id, e.has_value()});
  }
  void OnComplete(const SubscriptionDone& d) override {
    EXPECT_FALSE(done.has_value()) << "OnComplete twice";
    done = d;
  }
  std::vector<Obj> Normal() const {
    std::vector<Obj> v;
    for (const Obj& o : objects) {
      if (o.status == ObjectStatus::kNormal) v.push_back(o);
    }
    return v;
  }
  std::optional<SubscribeOkInfo> ok;
  std::vector<Obj> objects;
  std::vector<std::pair<uint64_t, bool>> updates;
  std::optional<SubscriptionDone> done;
};

struct Fet : FetchVisitor {
  void OnObject(const ReceivedObject& o) override {
    objects.push_back(
        {o.location, o.status, std::string(o.payload.begin(), o.payload.end()), o.via});
  }
  void OnEndOfRange(const EndOfRange& m) override { markers.push_back(m); }
  void OnComplete(const FetchDone& d) override { done = d; }
  std::vector<Obj> objects;
  std::vector<EndOfRange> markers;
  std::optional<FetchDone> done;
};

struct Ns : NamespaceVisitor {
  void OnRequestOk() override { ok = true; }
  void OnNamespace(const TrackNamespace& s) override { events.push_back({true, s}); }
  void OnNamespaceDone(const TrackNamespace& s) override { events.push_back({false, s}); }
  void OnClosed(const std::optional<RequestError>& e) override { closed = e; }
  bool ok = false;
  std::vector<std::pair<bool, TrackNamespace>> events;
  std::optional<std::optional<RequestError>> closed;
};

struct Callbacks : MoqtSessionCallbacks {
  void OnSetupComplete(const SetupOptions& p) override { peer = p; }
  void OnSessionClosed(uint64_t code, const std::string& r, bool by_peer) override {
    closed_code = code;
    closed_by_peer = by_peer;
  }
  void OnGoAway(const std::string& uri) override { goaway = uri; }
  std::optional<RequestErrorCode> OnPublishNamespace(const TrackNamespace& ns) override {
    announced.push_back(ns);
    if (store) (void)store->AddAnnouncedNamespace(ns);
    return {};
  }
  void OnPublishNamespaceDone(const TrackNamespace& ns) override {
    withdrawn.push_back(ns);
    if (store) store->RemoveAnnouncedNamespace(ns);
  }
  std::optional<SetupOptions> peer;
  std::optional<uint64_t> closed_code;
  bool closed_by_peer = false;
  std::optional<std::string> goaway;
  std::vector<TrackNamespace> announced, withdrawn;
  TrackStore* store = nullptr;
};

// One client/server pair. The server publishes from `store` (shared between pairs if given).
struct Peer {
  Peer(TrackStore* store, uint64_t* clock, InMemoryOptions copts = {}, InMemoryOptions sopts = {},
       uint64_t server_max_ranges = 64)
      : pair(copts, sopts) {
    MoqtSessionConfig c;
    c.perspective = Perspective::kClient;
    c.path = "/moq";
    c.authority = "example.com";
    c.implementation = "client/1";
    c.clock_ms = [clock] { return *clock; };
    MoqtSessionConfig s;
    s.perspective = Perspective::kServer;
    s.implementation = "server/1";
    s.max_filter_ranges = server_max_ranges;
    s.clock_ms = [clock] { return *clock; };
    server_cb.store = store;
    client = std::make_unique<MoqtSession>(&pair.client(), c, &client_cb, nullptr);
    server = std::make_unique<MoqtSession>(&pair.server(), s, &server_cb, store);
    pair.Connect();
    pair.RunUntilIdle();
  }
  void Run() { pair.RunUntilIdle(); }
  InMemorySessionPair pair;
  Callbacks client_cb, server_cb;
  std::unique_ptr<MoqtSession> client, server;
};

class MoqtSessionTest : public ::testing::Test {
 protected:
  void SetUp() override { p_ = std::make_unique<Peer>(&store_, &now_); }
  std::shared_ptr<Track> MakeTrack(const std::string& name, TrackOptions o = {}) {
    auto t = store_.CreateTrack({{"kvcs-1", "scope"}, name}, o);
    EXPECT_TRUE(t.ok());
    return *t;
  }
  static FullTrackName Name(const std::string& n) { return {{"kvcs-1", "scope"}, n}; }
  // Publishes groups [g0, g1) of `objects` objects each, pumping after every object.
  void Produce(Track& t, uint64_t g0, uint64_t g1, uint64_t objects, bool pump = true) {
    for (uint64_t g = g0; g < g1; ++g) {
      ASSERT_TRUE(t.StartGroup(g).ok());
      for (uint64_t o = 0; o < objects; ++o) {
        ASSERT_TRUE(t.AppendObject(B(Payload(g, o))).ok());
        if (pump) p_->Run();
      }
      ASSERT_TRUE(t.EndGroup().ok());
    }
    p_->Run();
  }
  uint64_t now_ = 0;
  TrackStore store_;
  std::unique_ptr<Peer> p_;
};

TEST_F(MoqtSessionTest, SetupExchangesOptions) {
  ASSERT_TRUE(p_->client->setup_complete());
  ASSERT_TRUE(p_->server->setup_complete());
  ASSERT_TRUE(p_->server_cb.peer.has_value());
  EXPECT_EQ(p_->server_cb.peer->path, "/moq");
  EXPECT_EQ(p_->server_cb.peer->authority, "example.com");
  EXPECT_EQ(p_->server_cb.peer->implementation, "client/1");
  EXPECT_EQ(p_->server_cb.peer->max_filter_ranges, 64u);
  EXPECT_EQ(p_->client_cb.peer->implementation, "server/1");
  EXPECT_FALSE(p_->client_cb.peer->path.has_value());
  EXPECT_EQ(p_->client->peer_max_filter_ranges(), 64u);
}

TEST_F(MoqtSessionTest, RequestsBeforeSetupAreRefusedLocally) {
  InMemorySessionPair pair;
  Callbacks cb;
  MoqtSession c(&pair.client(), {}, &cb, nullptr);
  auto r = c.Subscribe(Name("x"), {}, std::make_shared<Sub>());
  EXPECT_TRUE(r.status().Is(SessionApiError::kNotReady));
}

TEST_F(MoqtSessionTest, LiveSubscriptionNextObjectThenEndOfTrack) {
  auto t = MakeTrack("v");
  Produce(*t, 0, 2, 3);  // before the subscription: not delivered
  auto sub = std::make_shared<Sub>();
  ASSERT_TRUE(p_->client->Subscribe(Name("v"), {}, sub).ok());
  p_->Run();
  ASSERT_TRUE(sub->ok.has_value());
  EXPECT_EQ(sub->ok->largest, (Location{1, 3}));  // End of Group of group 1
  Produce(*t, 2, 4, 3);
  ASSERT_TRUE(t->EndTrack().ok());
  p_->Run();
  std::vector<Location> got;
  for (const Obj& o : sub->objects) got.push_back(o.loc);
  std::vector<Location> want = {{2, 0}, {2, 1}, {2, 2}, {2, 3}, {3, 0},
                                {3, 1}, {3, 2}, {3, 3}, {4, 0}};
  EXPECT_EQ(got, want);
  EXPECT_EQ(sub->objects[3].status, ObjectStatus::kEndOfGroup);
  EXPECT_EQ(sub->objects.back().status, ObjectStatus::kEndOfTrack);
  EXPECT_EQ(sub->objects[0].payload, "g2o0");
  ASSERT_TRUE(sub->done.has_value());
  EXPECT_TRUE(sub->done->track_ended);
  EXPECT_TRUE(sub->done->all_streams_received);
  EXPECT_EQ(sub->done->status, static_cast<uint64_t>(PublishDoneCode::kTrackEnded));
}

TEST_F(MoqtSessionTest, UnknownTrackIsDoesNotExist) {
  auto sub = std::make_shared<Sub>();
  ASSERT_TRUE(p_->client->Subscribe(Name("nope"), {}, sub).ok());
  p_->Run();
  ASSERT_TRUE(sub->done.has_value());
  ASSERT_TRUE(sub->done->error.has_value());
  EXPECT_EQ(sub->done->error->error_code, static_cast<uint64_t>(RequestErrorCode::kDoesNotExist));
  EXPECT_FALSE(p_->client->closed());
}

// The exactly-once pattern (seed §5.2): Next Object + fill Absolute Start {0,0}, joined in the
// middle of production (mid-group), under limited send capacity so fill and live interleave.
struct Constraints {
  size_t capacity = 0;     // server send capacity per pump (0 = unlimited)
  size_t payload_pad = 0;  // extra payload bytes per object
  size_t send_buffer = 256 << 10;
  size_t window = 64 << 10;  // client receive window per stream
  uint64_t max_uni = 100;    // uni streams the client lets the server open at once
};

void ExactlyOnceJoin(uint64_t join_group, uint64_t join_object, Constraints k = {}) {
  uint64_t now = 0;
  TrackStore store;
  InMemoryOptions so, co;
  so.send_capacity_per_pump = k.capacity;
  so.stream_send_buffer = k.send_buffer;
  co.stream_window = k.window;
  co.max_incoming_uni = k.max_uni;
  Peer p(&store, &now, co, so);
  auto t = *store.CreateTrack({{"kvcs-1", "s"}, "layer-data"});
  auto sub = std::make_shared<Sub>();
  constexpr uint64_t kGroups = 32, kObjects = 64;
  bool joined = false;
  for (uint64_t g = 0; g < kGroups; ++g) {
    ASSERT_TRUE(t->StartGroup(g).ok());
    for (uint64_t o = 0; o < kObjects; ++o) {
      if (g == join_group && o == join_object) {
        SubscribeOptions opts;
        opts.filter = {T::kNextObject};
        opts.fill = LocationFilter{T::kAbsoluteStart, 0, 0};
        ASSERT_TRUE(p.client->Subscribe({{"kvcs-1", "s"}, "layer-data"}, opts, sub).ok());
        joined = true;
      }
      std::string payload = Payload(g, o) + std::string(k.payload_pad, '.');
      ASSERT_TRUE(t->AppendObject(B(payload)).ok());
      if (o % 7 == 0) p.Run();  // let some (not all) deliveries happen between objects
    }
    ASSERT_TRUE(t->EndGroup().ok());
  }
  ASSERT_TRUE(t->EndTrack().ok());
  p.Run();
  ASSERT_TRUE(joined);
  std::map<Location, int> seen;
  for (const Obj& o : sub->Normal()) {
    seen[o.loc]++;
    EXPECT_EQ(o.payload, Payload(o.loc.group, o.loc.object) + std::string(k.payload_pad, '.'));
  }
  for (uint64_t g = 0; g < kGroups; ++g) {
    for (uint64_t o = 0; o < kObjects; ++o) {
      EXPECT_EQ(seen[(Location{g, o})], 1) << g << "," << o;
    }
  }
  EXPECT_EQ(seen.size(), kGroups * kObjects);
  size_t fill = 0;
  for (const Obj& o : sub->Normal()) fill += o.via == DeliveryKind::kFill;
  EXPECT_GT(fill, 0u);
  ASSERT_TRUE(sub->done.has_value());
  EXPECT_TRUE(sub->done->track_ended);
  EXPECT_TRUE(sub->done->all_streams_received);
}

TEST(MoqtExactlyOnceTest, JoinDuringProductionMidGroup) { ExactlyOnceJoin(10, 20); }
TEST(MoqtExactlyOnceTest, JoinDuringProductionLimitedCapacity) {
  ExactlyOnceJoin(17, 1, {.capacity = 700});
}
TEST(MoqtExactlyOnceTest, JoinUnderFlowControlAndStreamLimits) {
  // 1 KiB objects, 4 KiB send buffers, 8 KiB windows and at most 3 concurrent uni streams:
  // writes block (OnCanWrite resumes them) and group streams wait for stream credit.
  ExactlyOnceJoin(
      5, 30,
      {.capacity = 3000, .payload_pad = 1024, .send_buffer = 4096, .window = 8192, .max_uni = 3});
}
TEST(MoqtExactlyOnceTest, JoinAtFirstObject) { ExactlyOnceJoin(0, 0); }
TEST(MoqtExactlyOnceTest, JoinWhenEveryPayloadWaitsForItsHeaderToDrain) {
  // A 1-byte send buffer: after each object header the stream is full, so every payload is
  // written from the Track's buffer on a later pump (OutData::pending_payload), for subgroup
  // and fill streams alike.
  ExactlyOnceJoin(
      3, 9,
      {.capacity = 5000, .payload_pad = 3000, .send_buffer = 1, .window = 16384, .max_uni = 8});
}

TEST_F(MoqtSessionTest, JoinAfterTrackEndedGetsEverythingFromFillAndCompletes) {
  auto t = MakeTrack("done");
  Produce(*t, 0, 32, 64, false);
  ASSERT_TRUE(t->EndTrack().ok());
  auto sub = std::make_shared<Sub>();
  SubscribeOptions opts;
  opts.fill = LocationFilter{T::kAbsoluteStart, 0, 0};
  ASSERT_TRUE(p_->client->Subscribe(Name("done"), opts, sub).ok());
  p_->Run();
  ASSERT_EQ(sub->objects.size(), 32u * 64u);
  size_t i = 0;
  for (uint64_t g = 0; g < 32; ++g) {
    for (uint64_t o = 0; o < 64; ++o, ++i) {
      EXPECT_EQ(sub->objects[i].loc, (Location{g, o}));
      EXPECT_EQ(sub->objects[i].via, DeliveryKind::kFill);
    }
  }
  ASSERT_TRUE(sub->done.has_value());
  EXPECT_TRUE(sub->done->track_ended);
  EXPECT_TRUE(sub->done->all_streams_received);
}

TEST_F(MoqtSessionTest, FillRelativeStartOneIsTheCurrentGroup) {
  auto t = MakeTrack("manifest");
  Produce(*t, 0, 3, 2);
  ASSERT_TRUE(t->StartGroup(3).ok());
  ASSERT_TRUE(t->AppendObject(B("m3")).ok());
  auto sub = std::make_shared<Sub>();
  SubscribeOptions opts;
  opts.fill = LocationFilter{T::kRelativeStart, 1};
  ASSERT_TRUE(p_->client->Subscribe(Name("manifest"), opts, sub).ok());
  p_->Run();
  ASSERT_EQ(sub->objects.size(), 1u);
  EXPECT_EQ(sub->objects[0].loc, (Location{3, 0}));
  EXPECT_EQ(sub->objects[0].via, DeliveryKind::kFill);
  ASSERT_TRUE(t->AppendObject(B("m3b")).ok());
  p_->Run();
  ASSERT_EQ(sub->objects.size(), 2u);
  EXPECT_EQ(sub->objects[1].loc, (Location{3, 1}));
  EXPECT_EQ(sub->objects[1].via, DeliveryKind::kSubscription);
}

struct FilterCase {
  LocationFilter filter;
  std::vector<Location> want;  // Normal objects delivered
};

TEST_F(MoqtSessionTest, EveryLocationFilterTypeOnASubscription) {
  // The track has groups 0..1 when the subscription is processed (largest {1,2} = EoG);
  // groups 2..5 of 3 objects are then produced.
  std::vector<FilterCase> cases = {
      {{T::kNone}, {}},
      {{T::kRelativeStart, 0}, {}},
      {{T::kAbsoluteStart, 3, 1}, {}},
      {{T::kAbsoluteStartGroupEnd, 3, 1, 1}, {}},
      {{T::kAbsoluteRange, 2, 2, 2, 0}, {{2, 2}, {3, 0}, {3, 1}, {3, 2}, {4, 0}}},
      {{T::kNextObject}, {}},
  };
  auto all_from = [](Location from) {
    std::vector<Location> v;
    for (uint64_t g = 2; g < 6; ++g) {
      for (uint64_t o = 0; o < 3; ++o) {
        if (Location{g, o} >= from) v.push_back({g, o});
      }
    }
    return v;
  };
  cases[0].want = all_from({0, 0});
  cases[1].want = all_from({2, 0});
  cases[2].want = all_from({3, 1});
  cases[3].want = {{3, 1}, {3, 2}, {4, 0}, {4, 1}, {4, 2}};
  cases[5].want = all_from({0, 0});
  int n = 0;
  for (const FilterCase& c : cases) {
    SCOPED_TRACE(static_cast<int>(c.filter.type));
    TrackStore store;
    uint64_t now = 0;
    Peer p(&store, &now);
    auto t = *store.CreateTrack({{"f"}, "t" + std::to_string(n++)});
    for (uint64_t g = 0; g < 2; ++g) {
      ASSERT_TRUE(t->StartGroup(g).ok());
      for (int o = 0; o < 2; ++o) ASSERT_TRUE(t->AppendObject(B("old")).ok());
    }
    ASSERT_TRUE(t->EndGroup().ok());
    auto sub = std::make_shared<Sub>();
    SubscribeOptions opts;
    opts.filter = c.filter;
    ASSERT_TRUE(p.client->Subscribe(t->name(), opts, sub).ok());
    p.Run();
    for (uint64_t g = 2; g < 6; ++g) {
      ASSERT_TRUE(t->StartGroup(g).ok());
      for (int o = 0; o < 3; ++o) ASSERT_TRUE(t->AppendObject(B("new")).ok());
      p.Run();
    }
    ASSERT_TRUE(t->EndTrack().ok());
    p.Run();
    std::vector<Location> got;
    for (const Obj& o : sub->Normal()) got.push_back(o.loc);
    EXPECT_EQ(got, c.want);
    ASSERT_TRUE(sub->done.has_value());
    EXPECT_TRUE(sub->done->all_streams_received);
  }
}

TEST_F(MoqtSessionTest, FetchGroupsAToBWithObjectIdRangeAscending) {
  auto t = MakeTrack("kv");
  Produce(*t, 0, 32, 64, false);
  auto f = std::make_shared<Fet>();
  FetchOptions o;
  o.range = LocationFilter{T::kAbsoluteStartGroupEnd, 5, 0, 3};  // groups 5..8
  o.object_id_ranges = {{0, 9}};                                 // blocks 0..9
  ASSERT_TRUE(p_->client->Fetch(Name("kv"), o, f).ok());
  p_->Run();
  ASSERT_TRUE(f->done.has_value());
  EXPECT_TRUE(f->done->ok);
  EXPECT_FALSE(f->done->end_of_track);
  EXPECT_EQ(f->done->end_location, (Location{8, 63}));
  std::vector<Location> want;
  for (uint64_t g = 5; g <= 8; ++g) {
    for (uint64_t i = 0; i <= 9; ++i) want.push_back({g, i});
  }
  std::vector<Location> got;
  for (const Obj& x : f->objects) {
    got.push_back(x.loc);
    EXPECT_EQ(x.payload, Payload(x.loc.group, x.loc.object));
    EXPECT_EQ(x.via, DeliveryKind::kFetch);
  }
  EXPECT_EQ(got, want);
}

TEST_F(MoqtSessionTest, FetchObjectIdRangeBeyondPeerMaxFilterRangesIsFilteredLocally) {
  TrackStore store;
  uint64_t now = 0;
  Peer p(&store, &now, {}, {}, /*server_max_ranges=*/0);
  auto t = *store.CreateTrack({{"a"}, "b"});
  ASSERT_TRUE(t->StartGroup(0).ok());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(t->AppendObject(B("x")).ok());
  ASSERT_TRUE(t->EndTrack().ok());
  EXPECT_EQ(p.client->peer_max_filter_ranges(), 0u);
  auto f = std::make_shared<Fet>();
  FetchOptions o;
  o.object_id_ranges = {{2, 3}, {7, 7}};
  ASSERT_TRUE(p.client->Fetch({{"a"}, "b"}, o, f).ok());
  p.Run();
  ASSERT_TRUE(f->done && f->done->ok);
  EXPECT_TRUE(f->done->end_of_track);
  std::vector<Location> got;
  for (const Obj& x : f->objects) got.push_back(x.loc);
  EXPECT_EQ(got, (std::vector<Location>{{0, 2}, {0, 3}, {0, 7}}));
}

TEST_F(MoqtSessionTest, FetchDescendingGroupOrder) {
  auto t = MakeTrack("kv");
  Produce(*t, 0, 4, 2, false);
  auto f = std::make_shared<Fet>();
  FetchOptions o;
  o.range = LocationFilter{T::kAbsoluteRange, 1, 1, 2, 0};  // {1,1}..{3,0}
  o.group_order = GroupOrder::kDescending;
  ASSERT_TRUE(p_->client->Fetch(Name("kv"), o, f).ok());
  p_->Run();
  ASSERT_TRUE(f->done && f->done->ok);
  std::vector<Location> got;
  for (const Obj& x : f->objects) got.push_back(x.loc);
  EXPECT_EQ(got, (std::vector<Location>{{3, 0}, {2, 0}, {2, 1}, {1, 1}}));
}

TEST_F(MoqtSessionTest, FetchErrors) {
  auto t = MakeTrack("kv");
  auto f = std::make_shared<Fet>();
  ASSERT_TRUE(p_->client->Fetch(Name("kv"), {}, f).ok());  // nothing published
  auto g = std::make_shared<Fet>();
  ASSERT_TRUE(p_->client->Fetch(Name("missing"), {}, g).ok());
  p_->Run();
  ASSERT_TRUE(f->done && f->done->error);
  EXPECT_EQ(f->done->error->error_code, static_cast<uint64_t>(RequestErrorCode::kInvalidRange));
  ASSERT_TRUE(g->done && g->done->error);
  EXPECT_EQ(g->done->error->error_code, static_cast<uint64_t>(RequestErrorCode::kDoesNotExist));
  Produce(*t, 0, 1, 3, false);
  auto h = std::make_shared<Fet>();
  FetchOptions o;
  o.range = LocationFilter{T::kNextObject};
  ASSERT_TRUE(p_->client->Fetch(Name("kv"), o, h).ok());
  p_->Run();
  ASSERT_TRUE(h->done && h->done->error);
  EXPECT_EQ(h->done->error->error_code, static_cast<uint64_t>(RequestErrorCode::kInvalidRange));
  EXPECT_FALSE(p_->client->closed());
}

TEST_F(MoqtSessionTest, SubscriptionObjectIdFilterAndUpdates) {
  auto t = MakeTrack("v");
  auto sub = std::make_shared<Sub>();
  SubscribeOptions opts;
  opts.object_id_ranges = {{1, 2}};
  auto id = p_->client->Subscribe(Name("v"), opts, sub);
  ASSERT_TRUE(id.ok());
  p_->Run();
  Produce(*t, 0, 1, 4);
  std::vector<Location> got;
  for (const Obj& o : sub->Normal()) got.push_back(o.loc);
  EXPECT_EQ(got, (std::vector<Location>{{0, 1}, {0, 2}}));
  // Pause forwarding: nothing arrives; the update is acknowledged.
  auto u1 = p_->client->UpdateSubscription(*id, {.forward = false});
  ASSERT_TRUE(u1.ok());
  p_->Run();
  Produce(*t, 1, 2, 4);
  EXPECT_EQ(sub->Normal().size(), 2u);
  // Resume with a fill of group 1 (named by the update's request ID).
  SubscriptionUpdate up;
  up.forward = true;
  up.subscriber_priority = 3;
  up.fill = LocationFilter{T::kAbsoluteStart, 1, 0};
  auto u2 = p_->client->UpdateSubscription(*id, up);
  ASSERT_TRUE(u2.ok());
  p_->Run();
  ASSERT_EQ(sub->updates.size(), 2u);
  EXPECT_EQ(sub->updates[0], std::make_pair(*u1, false));
  EXPECT_EQ(sub->updates[1], std::make_pair(*u2, false));
  got.clear();
  for (const Obj& o : sub->Normal()) got.push_back(o.loc);
  EXPECT_EQ(got, (std::vector<Location>{{0, 1}, {0, 2}, {1, 1}, {1, 2}}));
  EXPECT_EQ(sub->Normal().back().via, DeliveryKind::kFill);
  ASSERT_TRUE(t->EndTrack().ok());
  p_->Run();
  ASSERT_TRUE(sub->done.has_value());
  EXPECT_TRUE(sub->done->all_streams_received);
}

TEST_F(MoqtSessionTest, PausingMidGroupStopsThatGroupsOpenStream) {
  auto t = MakeTrack("v");
  auto sub = std::make_shared<Sub>();
  auto id = p_->client->Subscribe(Name("v"), {}, sub);
  ASSERT_TRUE(id.ok());
  p_->Run();
  ASSERT_TRUE(t->StartGroup(0).ok());
  ASSERT_TRUE(t->AppendObject(B("a")).ok());  // group 0's subgroup stream is open now
  p_->Run();
  ASSERT_EQ(sub->Normal().size(), 1u);
  ASSERT_TRUE(p_->client->UpdateSubscription(*id, {.forward = false}).ok());
  p_->Run();
  // Forwarding is off: the rest of group 0 must not go out, not even when the track's end
  // flushes the open streams.
  ASSERT_TRUE(t->AppendObject(B("b")).ok());
  ASSERT_TRUE(t->AppendObject(B("c")).ok());
  ASSERT_TRUE(t->EndTrack().ok());
  p_->Run();
  EXPECT_EQ(sub->Normal().size(), 1u);
  ASSERT_TRUE(sub->done.has_value());
  EXPECT_TRUE(sub->done->track_ended);
  EXPECT_FALSE(sub->done->all_streams_received);  // group 0's stream was reset
  EXPECT_FALSE(p_->client->closed());
}

TEST_F(MoqtSessionTest, UpdateNarrowsTheLocationFilter) {
  auto t = MakeTrack("v");
  auto sub = std::make_shared<Sub>();
  auto id = p_->client->Subscribe(Name("v"), {}, sub);
  ASSERT_TRUE(id.ok());
  p_->Run();
  Produce(*t, 0, 1, 2);
  SubscriptionUpdate up;
  up.filter = LocationFilter{T::kAbsoluteRange, 2, 0, 0, 1};
  ASSERT_TRUE(p_->client->UpdateSubscription(*id, up).ok());
  p_->Run();
  Produce(*t, 1, 4, 3);
  std::vector<Location> got;
  for (const Obj& o : sub->Normal()) got.push_back(o.loc);
  EXPECT_EQ(got, (std::vector<Location>{{0, 0}, {0, 1}, {2, 0}, {2, 1}}));
  ASSERT_EQ(sub->updates.size(), 1u);
  EXPECT_FALSE(sub->updates[0].second);
}

TEST_F(MoqtSessionTest, UnsubscribeStopsDeliveryAndServerKeepsServing) {
  auto t = MakeTrack("v");
  auto a = std::make_shared<Sub>();
  auto b = std::make_shared<Sub>();
  auto ida = p_->client->Subscribe(Name("v"), {}, a);
  ASSERT_TRUE(p_->client->Subscribe(Name("v"), {}, b).ok());
  p_->Run();
  Produce(*t, 0, 1, 2);
  ASSERT_TRUE(p_->client->Unsubscribe(*ida).ok());
  p_->Run();
  Produce(*t, 1, 2, 2);
  EXPECT_EQ(a->Normal().size(), 2u);
  EXPECT_FALSE(a->done.has_value());  // cancelled: no further callbacks
  EXPECT_EQ(b->Normal().size(), 4u);
  EXPECT_TRUE(p_->client->Unsubscribe(*ida).Is(SessionApiError::kUnknownRequest));
}

TEST_F(MoqtSessionTest, TrackStatus) {
  TrackOptions o;
  o.publisher_priority = 7;
  auto t = MakeTrack("v", o);
  Produce(*t, 0, 1, 2, false);
  std::optional<TrackStatusReply> ok, missing;
  ASSERT_TRUE(
      p_->client->RequestTrackStatus(Name("v"), [&](const TrackStatusReply& r) { ok = r; }).ok());
  ASSERT_TRUE(
      p_->client->RequestTrackStatus(Name("x"), [&](const TrackStatusReply& r) { missing = r; })
          .ok());
  p_->Run();
  ASSERT_TRUE(ok && !ok->error);
  EXPECT_EQ(ok->largest, (Location{0, 2}));
  EXPECT_EQ(ok->track_properties,
            (Properties{KeyValuePair::Int(
                static_cast<uint64_t>(PropertyType::kDefaultPublisherPriority), 7)}));
  ASSERT_TRUE(missing && missing->error);
  EXPECT_EQ(missing->error->error_code, static_cast<uint64_t>(RequestErrorCode::kDoesNotExist));
}

TEST_F(MoqtSessionTest, NamespaceAnnouncementAndDiscoveryAcrossTwoClients) {
  // Client A announces a namespace to the server; client B (another session on the same server)
  // discovers it, then sees a track namespace appear and both disappear.
  Peer b(&store_, &now_);
  std::optional<std::optional<RequestError>> announce_result;
  auto ann = p_->client->PublishNamespace(
      {"kvcs-1", "scopeX", "compat", "anchor"},
      [&](const std::optional<RequestError>& e) { announce_result = e; });
  ASSERT_TRUE(ann.ok());
  p_->Run();
  ASSERT_TRUE(announce_result.has_value());
  EXPECT_FALSE(announce_result->has_value());
  EXPECT_EQ(p_->server_cb.announced.size(), 1u);
  auto ns = std::make_shared<Ns>();
  ASSERT_TRUE(b.client->SubscribeNamespace({"kvcs-1", "scopeX"}, ns).ok());
  b.Run();
  EXPECT_TRUE(ns->ok);
  ASSERT_EQ(ns->events.size(), 1u);
  EXPECT_EQ(ns->events[0], std::make_pair(true, TrackNamespace{"compat", "anchor"}));
  auto t = store_.CreateTrack({{"kvcs-1", "scopeX", "other"}, "t"});
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(store_.CreateTrack({{"kvcs-1", "elsewhere"}, "t"}).ok());  // not under the prefix
  b.Run();
  ASSERT_EQ(ns->events.size(), 2u);
  EXPECT_EQ(ns->events[1], std::make_pair(true, TrackNamespace{"other"}));
  ASSERT_TRUE(p_->client->PublishNamespaceDone(*ann).ok());
  p_->Run();
  b.Run();
  EXPECT_EQ(p_->server_cb.withdrawn.size(), 1u);
  store_.RemoveTrack({{"kvcs-1", "scopeX", "other"}, "t"});
  b.Run();
  ASSERT_EQ(ns->events.size(), 4u);
  EXPECT_EQ(ns->events[2], std::make_pair(false, TrackNamespace{"compat", "anchor"}));
  EXPECT_EQ(ns->events[3], std::make_pair(false, TrackNamespace{"other"}));
  // An overlapping prefix on the same session is refused.
  auto ns2 = std::make_shared<Ns>();
  ASSERT_TRUE(b.client->SubscribeNamespace({"kvcs-1"}, ns2).ok());
  b.Run();
  ASSERT_TRUE(ns2->closed.has_value());
  ASSERT_TRUE(ns2->closed->has_value());
  EXPECT_EQ((*ns2->closed)->error_code, static_cast<uint64_t>(RequestErrorCode::kPrefixOverlap));
}

TEST_F(MoqtSessionTest, GoAwayBlocksNewRequestsAndTimesOut) {
  ASSERT_TRUE(p_->server->GoAway("moqt://other.example/moq", 5000).ok());
  EXPECT_FALSE(p_->client->GoAway("moqt://x", 0).ok());  // a client sends no URI
  p_->Run();
  EXPECT_EQ(p_->client_cb.goaway, "moqt://other.example/moq");
  auto r = p_->client->Subscribe(Name("v"), {}, std::make_shared<Sub>());
  EXPECT_TRUE(r.status().Is(SessionApiError::kGoingAway));
  now_ = 4999;
  p_->server->OnTimer();
  p_->Run();
  EXPECT_FALSE(p_->server->closed());
  now_ = 5000;
  p_->server->OnTimer();
  p_->Run();
  EXPECT_EQ(p_->client_cb.closed_code, static_cast<uint64_t>(SessionError::kGoawayTimeout));
  EXPECT_TRUE(p_->client_cb.closed_by_peer);
}

TEST_F(MoqtSessionTest, DatagramsWhenNegotiated) {
  TrackOptions o;
  o.prefer_datagrams = true;
  auto t = MakeTrack("audio", o);
  auto sub = std::make_shared<Sub>();
  ASSERT_TRUE(p_->client->Subscribe(Name("audio"), {}, sub).ok());
  p_->Run();
  EXPECT_TRUE(p_->server->datagrams_enabled());
  Produce(*t, 0, 2, 3);
  ASSERT_EQ(sub->Normal().size(), 6u);
  for (const Obj& x : sub->Normal()) EXPECT_EQ(x.via, DeliveryKind::kDatagram);
  EXPECT_EQ(p_->server->stats().datagrams_sent, 6u);
  ASSERT_TRUE(t->EndTrack().ok());
  p_->Run();
  ASSERT_TRUE(sub->done.has_value());
  EXPECT_TRUE(sub->done->track_ended);
}

TEST_F(MoqtSessionTest, HigherPrioritySubscriptionIsSentFirstUnderContention) {
  TrackStore store;
  uint64_t now = 0;
  InMemoryOptions so;
  so.send_capacity_per_pump = 1500;
  Peer p(&store, &now, {}, so);
  auto lo = *store.CreateTrack({{"p"}, "lo"});
  auto hi = *store.CreateTrack({{"p"}, "hi"});
  std::vector<std::string> order;
  struct Rec : Sub {
    Rec(std::vector<std::string>* o, std::string n) : order(o), name(std::move(n)) {}
    void OnObject(const ReceivedObject& o) override {
      if (o.status == ObjectStatus::kNormal) order->push_back(name);
    }
    std::vector<std::string>* order;
    std::string name;
  };
  SubscribeOptions lo_opts, hi_opts;
  lo_opts.subscriber_priority = 200;
  hi_opts.subscriber_priority = 10;
  ASSERT_TRUE(p.client->Subscribe(lo->name(), lo_opts, std::make_shared<Rec>(&order, "lo")).ok());
  ASSERT_TRUE(p.client->Subscribe(hi->name(), hi_opts, std::make_shared<Rec>(&order, "hi")).ok());
  p.Run();
  // Both tracks produce before the transport runs: the low-priority one first.
  for (auto* t : {lo.get(), hi.get()}) {
    ASSERT_TRUE(t->StartGroup(0).ok());
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(t->AppendObject(Bytes(500, 1)).ok());
    ASSERT_TRUE(t->EndGroup().ok());
  }
  p.Run();
  ASSERT_EQ(order.size(), 40u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(order[i], "hi") << i;
}

// KVCS sets a publisher priority per group (floor(128·g/L) per layer): the subgroup header of
// each group's stream carries that group's priority, and under limited capacity the group with
// the more urgent priority is sent first even though it was produced last.
TEST_F(MoqtSessionTest, PublisherPriorityPerGroupOrdersStreamsAndIsInTheHeader) {
  TrackStore store;
  uint64_t now = 0;
  InMemoryOptions so;
  so.send_capacity_per_pump = 1500;
  Peer p(&store, &now, {}, so);
  auto t = *store.CreateTrack({{"p"}, "layers"});  // track default priority 128
  struct Rec : Sub {
    void OnObject(const ReceivedObject& o) override {
      if (o.status == ObjectStatus::kNormal)
        got.push_back({o.location.group, o.publisher_priority});
    }
    std::vector<std::pair<uint64_t, uint8_t>> got;
  };
  auto rec = std::make_shared<Rec>();
  ASSERT_TRUE(p.client->Subscribe(t->name(), {}, rec).ok());
  p.Run();
  auto add = [&](uint64_t g, uint64_t id, uint8_t priority) {
    PublishedObject o;
    o.location = {g, id};
    o.publisher_priority = priority;
    o.payload = std::make_shared<const Bytes>(Bytes(500, 1));
    ASSERT_TRUE(t->AddObject(std::move(o)).ok());
  };
  // Both groups are written before the transport runs: group 0 (less urgent, 200) first.
  for (uint64_t i = 0; i < 20; ++i) add(0, i, 200);
  for (uint64_t i = 0; i < 20; ++i) add(1, i, 10);
  p.Run();
  ASSERT_EQ(rec->got.size(), 40u);
  for (size_t i = 0; i < 20; ++i) {
    EXPECT_EQ(rec->got[i], (std::pair<uint64_t, uint8_t>{1, 10})) << i;
    EXPECT_EQ(rec->got[20 + i], (std::pair<uint64_t, uint8_t>{0, 200})) << i;
  }
}

// ------------------------------------------------------------------ malformed peer input

// A raw client: writes bytes straight into the transport and records how the session ended.
using RawClient = transport::test::RecordingSessionVisitor;

Bytes SetupBytes() {
  moqt::Setup s;
  s.options.path = "/";
  return *SerializeControlMessage(s);
}

struct MalformedCase {
  std::string name;
  std::function<void(transport::Session&)> send;
  SessionError want;
};

TEST(MoqtMalformedTest, MalformedInputClosesThatSessionOnlyWithTheRightCode) {
  auto with_control = [](Bytes extra) {
    return [extra](transport::Session& s) {
      Bytes b = SetupBytes();
      b.insert(b.end(), extra.begin(), extra.end());
      ASSERT_TRUE(s.OpenOutgoingUnidirectionalStream()->Write(b, false).ok());
    };
  };
  auto with_request = [](Bytes req) {
    return [req](transport::Session& s) {
      ASSERT_TRUE(s.OpenOutgoingUnidirectionalStream()->Write(SetupBytes(), false).ok());
      ASSERT_TRUE(s.OpenOutgoingBidirectionalStream()->Write(req, false).ok());
    };
  };
  auto with_data = [](Bytes data, bool fin) {
    return [data, fin](transport::Session& s) {
      ASSERT_TRUE(s.OpenOutgoingUnidirectionalStream()->Write(SetupBytes(), false).ok());
      ASSERT_TRUE(s.OpenOutgoingUnidirectionalStream()->Write(data, fin).ok());
    };
  };
  moqt::Subscribe odd;
  odd.request_id = 1;  // a client uses even IDs
  odd.track = {{"a"}, "b"};
  moqt::Subscribe good;
  good.track = {{"a"}, "b"};
  Bytes two = *SerializeControlMessage(good);
  Bytes dup = two;
  dup.insert(dup.end(), two.begin(), two.end());
  std::vector<MalformedCase> cases = {
      {"unknown message type on the control stream", with_control({0x3F, 0x00, 0x00}),
       SessionError::kProtocolViolation},
      {"GOAWAY with trailing bytes in its body", with_control({0x10, 0x00, 0x03, 0x00, 0x00, 0x00}),
       SessionError::kProtocolViolation},
      {"SUBSCRIBE on the control stream", with_control(two), SessionError::kProtocolViolation},
      {"PATH twice in SETUP",
       [](transport::Session& s) {
         ASSERT_TRUE(s.OpenOutgoingUnidirectionalStream()
                         ->Write(Bytes{0xAF, 0x00, 0x00, 0x04, 0x01, 0x00, 0x00, 0x00}, false)
                         .ok());
       },
       SessionError::kProtocolViolation},
      {"second SETUP on the control stream", with_control(SetupBytes()),
       SessionError::kProtocolViolation},
      {"SUBSCRIBE_OK opens a request stream", with_request(*SerializeControlMessage(SubscribeOk{})),
       SessionError::kProtocolViolation},
      {"request ID of the wrong parity", with_request(*SerializeControlMessage(odd)),
       SessionError::kInvalidRequestId},
      {"second SUBSCRIBE on one request stream", with_request(dup),
       SessionError::kProtocolViolation},
      {"invalid subgroup stream type", with_data({0x06, 0x00, 0x00}, false),
       SessionError::kProtocolViolation},
      {"unknown stream type", with_data({0x80, 0xFF, 0x01}, false),
       SessionError::kProtocolViolation},
      {"FIN inside a fetch header", with_data({0x05}, true), SessionError::kProtocolViolation},
      {"fetch stream for a request never sent", with_data({0x05, 0x21}, false),
       SessionError::kProtocolViolation},
      {"second control stream", with_data(SetupBytes(), false), SessionError::kProtocolViolation},
  };
  for (const MalformedCase& c : cases) {
    SCOPED_TRACE(c.name);
    uint64_t now = 0;
    TrackStore store;
    auto track = *store.CreateTrack({{"a"}, "b"});
    // The "server": two sessions on one store. Session 1 gets the malformed input.
    InMemorySessionPair bad;
    RawClient raw(&bad.client());
    bad.client().SetVisitor(&raw);
    MoqtSessionConfig sc;
    sc.perspective = Perspective::kServer;
    Callbacks bad_cb;
    MoqtSession bad_server(&bad.server(), sc, &bad_cb, &store);
    bad.Connect();
    bad.RunUntilIdle();
    Peer good_peer(&store, &now);
    auto sub = std::make_shared<Sub>();
    ASSERT_TRUE(good_peer.client->Subscribe({{"a"}, "b"}, {}, sub).ok());
    good_peer.Run();

    c.send(bad.client());
    bad.RunUntilIdle();
    ASSERT_TRUE(raw.closed.has_value());
    EXPECT_EQ(raw.closed->code, static_cast<uint64_t>(c.want)) << raw.closed->reason;
    EXPECT_TRUE(raw.closed->by_peer);
    EXPECT_TRUE(bad_server.closed());

    // The other session on the same server keeps working.
    ASSERT_TRUE(track->StartGroup(0).ok());
    ASSERT_TRUE(track->AppendObject(B("still here")).ok());
    good_peer.Run();
    ASSERT_EQ(sub->Normal().size(), 1u);
    EXPECT_EQ(sub->Normal()[0].payload, "still here");
    EXPECT_FALSE(good_peer.server->closed());
  }
}

TEST(MoqtMalformedTest, MalformedDataFromPublisherClosesSubscriberSession) {
  // A raw "server" answers SUBSCRIBE with SUBSCRIBE_OK, then sends a subgroup stream whose
  // object ID goes backwards... (a FIN mid-object is the simplest malformed data).
  InMemorySessionPair pair;
  RawClient raw(&pair.server());
  pair.server().SetVisitor(&raw);
  MoqtSessionConfig cc;
  Callbacks cb;
  MoqtSession client(&pair.client(), cc, &cb, nullptr);
  pair.Connect();
  pair.RunUntilIdle();
  moqt::Setup s;
  ASSERT_TRUE(pair.server()
                  .OpenOutgoingUnidirectionalStream()
                  ->Write(*SerializeControlMessage(s), false)
                  .ok());
  pair.RunUntilIdle();
  ASSERT_TRUE(client.setup_complete());
  auto sub = std::make_shared<Sub>();
  ASSERT_TRUE(client.Subscribe({{"a"}, "b"}, {}, sub).ok());
  pair.RunUntilIdle();
  transport::Stream* req = pair.server().GetStreamById(0);
  ASSERT_NE(req, nullptr);
  SubscribeOk ok;
  ok.track_alias = 9;
  ASSERT_TRUE(req->Write(*SerializeControlMessage(ok), false).ok());
  pair.RunUntilIdle();
  ASSERT_TRUE(sub->ok.has_value());
  // SUBGROUP_HEADER type 0x14 alias 9 group 0 subgroup 0 priority 0x80, object 0 length 5, then
  // FIN after 2 payload bytes.
  ASSERT_TRUE(pair.server()
                  .OpenOutgoingUnidirectionalStream()
                  ->Write(Bytes{0x14, 0x09, 0x00, 0x00, 0x80, 0x00, 0x05, 'a', 'b'}, true)
                  .ok());
  pair.RunUntilIdle();
  ASSERT_TRUE(raw.closed.has_value());
  EXPECT_EQ(raw.closed->code, static_cast<uint64_t>(SessionError::kProtocolViolation));
  ASSERT_TRUE(sub->done.has_value());
  EXPECT_TRUE(sub->done->session_closed);
}

}  // namespace
}  // namespace kvcs::moqt

namespace kvcs::moqt {
namespace {

// A client MoqtSession against a raw publisher that writes protocol bytes by hand.
struct RawPublisher {
  RawPublisher() : raw(&pair.server()) {
    pair.server().SetVisitor(&raw);
    MoqtSessionConfig cc;
    cc.clock_ms = [this] { return now; };
    client = std::make_unique<MoqtSession>(&pair.client(), cc, &cb, nullptr);
    pair.Connect();
    pair.RunUntilIdle();
    moqt::Setup s;
    s.options.max_filter_ranges = 8;
    EXPECT_TRUE(pair.server()
                    .OpenOutgoingUnidirectionalStream()
                    ->Write(*SerializeControlMessage(s), false)
                    .ok());
    pair.RunUntilIdle();
  }
  void Send(transport::StreamId id, const ControlMessage& m, bool fin = false) {
    ASSERT_TRUE(pair.server().GetStreamById(id)->Write(*SerializeControlMessage(m), fin).ok());
  }
  // The client subscribes a/b for `sub` and this publisher accepts it with track alias 4.
  void SubscribeAccepted(std::shared_ptr<SubscribeVisitor> sub) {
    ASSERT_TRUE(client->Subscribe({{"a"}, "b"}, {}, std::move(sub)).ok());
    pair.RunUntilIdle();
    SubscribeOk ok;
    ok.track_alias = 4;
    Send(0, ok);
    pair.RunUntilIdle();
  }
  uint64_t now = 0;
  InMemorySessionPair pair;
  RawClient raw;
  Callbacks cb;
  std::unique_ptr<MoqtSession> client;
};

// `sub` (PUBLISH_DONE received at time 0) is still waiting 1 ms before done_stream_wait_ms, and
// ends, not whole, at it.
void ExpectEndsNotWholeAtTheWait(RawPublisher& p, Sub& sub) {
  p.now = kDefaultDoneStreamWaitMs - 1;
  p.client->OnTimer();
  EXPECT_FALSE(sub.done.has_value());
  p.now = kDefaultDoneStreamWaitMs;
  p.client->OnTimer();
  ASSERT_TRUE(sub.done.has_value());
  EXPECT_FALSE(sub.done->all_streams_received);
}

TEST(MoqtPublishDoneTest, CompletionWaitsForTheCountedStreams) {
  RawPublisher p;
  ASSERT_TRUE(p.client->setup_complete());
  auto sub = std::make_shared<Sub>();
  ASSERT_TRUE(p.client->Subscribe({{"a"}, "b"}, {}, sub).ok());
  p.pair.RunUntilIdle();
  SubscribeOk ok;
  ok.track_alias = 4;
  p.Send(0, ok);
  PublishDone done;
  done.status_code = static_cast<uint64_t>(PublishDoneCode::kTrackEnded);
  done.stream_count = 1;
  p.Send(0, done, true);  // PUBLISH_DONE overtakes the data stream
  p.pair.RunUntilIdle();
  EXPECT_FALSE(sub->done.has_value());
  // The counted stream: group 0, object 0 "hi", FIN.
  transport::Stream* d = p.pair.server().OpenOutgoingUnidirectionalStream();
  ASSERT_TRUE(d->Write(Bytes{0x14, 0x04, 0x00, 0x00, 0x80, 0x00, 0x02, 'h', 'i'}, true).ok());
  p.pair.RunUntilIdle();
  ASSERT_EQ(sub->objects.size(), 1u);
  EXPECT_EQ(sub->objects[0].payload, "hi");
  ASSERT_TRUE(sub->done.has_value());
  EXPECT_TRUE(sub->done->all_streams_received);
  EXPECT_TRUE(sub->done->track_ended);
}

TEST(MoqtPublishDoneTest, MissingStreamsTimeOutThroughTheInjectedClock) {
  RawPublisher p;
  auto sub = std::make_shared<Sub>();
  ASSERT_TRUE(p.client->Subscribe({{"a"}, "b"}, {}, sub).ok());
  p.pair.RunUntilIdle();
  p.Send(0, SubscribeOk{});
  PublishDone done;
  done.status_code = static_cast<uint64_t>(PublishDoneCode::kGoingAway);
  done.stream_count = 2;
  p.Send(0, done, true);
  p.pair.RunUntilIdle();
  ASSERT_NO_FATAL_FAILURE(ExpectEndsNotWholeAtTheWait(p, *sub));
  EXPECT_FALSE(sub->done->track_ended);
  EXPECT_EQ(sub->done->status, static_cast<uint64_t>(PublishDoneCode::kGoingAway));
}

TEST(MoqtPublishDoneTest, MoreStreamsThanCountedIsAViolation) {
  RawPublisher p;
  auto sub = std::make_shared<Sub>();
  ASSERT_TRUE(p.client->Subscribe({{"a"}, "b"}, {}, sub).ok());
  p.pair.RunUntilIdle();
  SubscribeOk ok;
  ok.track_alias = 1;
  p.Send(0, ok);
  PublishDone done;
  done.stream_count = 1;
  p.Send(0, done, false);
  // Two streams (groups 0 and 1), neither finished: the second exceeds the count.
  for (uint8_t g : {0, 1}) {
    ASSERT_TRUE(p.pair.server()
                    .OpenOutgoingUnidirectionalStream()
                    ->Write(Bytes{0x14, 0x01, g, 0x00, 0x80}, false)
                    .ok());
  }
  p.pair.RunUntilIdle();
  ASSERT_TRUE(p.raw.closed.has_value());
  EXPECT_EQ(p.raw.closed->code, static_cast<uint64_t>(SessionError::kProtocolViolation));
}

// A subscriber cut off (PUBLISH_DONE TOO_FAR_BEHIND) completes at once, not after the wait for
// the counted streams: the publisher reset them, and those reset before their header arrived
// can never be counted.
TEST(MoqtPublishDoneTest, TooFarBehindDoesNotWaitForStreamsThatWereReset) {
  RawPublisher p;
  auto sub = std::make_shared<Sub>();
  ASSERT_TRUE(p.client->Subscribe({{"a"}, "b"}, {}, sub).ok());
  p.pair.RunUntilIdle();
  p.Send(0, SubscribeOk{});
  PublishDone done;
  done.status_code = static_cast<uint64_t>(PublishDoneCode::kTooFarBehind);
  done.stream_count = 2;  // neither stream's header ever reaches the subscriber
  p.Send(0, done, false);
  p.pair.RunUntilIdle();
  ASSERT_TRUE(sub->done.has_value());
  EXPECT_FALSE(sub->done->all_streams_received);
  EXPECT_FALSE(sub->done->track_ended);
  EXPECT_EQ(sub->done->status, static_cast<uint64_t>(PublishDoneCode::kTooFarBehind));
}

// A fill stream from the raw publisher for request `request_id`: objects {0,0} and {0,1}, FIN.
void SendFill(RawPublisher& p, uint64_t request_id) {
  Bytes b;
  ASSERT_TRUE(AppendFetchHeader(FetchHeader{request_id}, &b).ok());
  FetchStreamWriter w;
  for (uint64_t o : {0, 1}) {
    ObjectHeader h;
    h.location = {0, o};
    h.subgroup_id = 0;
    h.publisher_priority = 128;
    const std::string pl = Payload(0, o);
    ASSERT_TRUE(w.AppendObject(h, B(pl), &b).ok());
  }
  ASSERT_TRUE(p.pair.server().OpenOutgoingUnidirectionalStream()->Write(b, true).ok());
}

// The client subscribes a/b from {0,0} (Next Object + fill); the raw publisher answers with
// Largest {0,1} (so a fill of {0,0}..{0,1} is owed) and then PUBLISH_DONE TRACK_ENDED counting
// `count` streams, before any fill stream.
std::shared_ptr<Sub> SubscribedWithFillThenDone(RawPublisher& p, uint64_t count) {
  auto sub = std::make_shared<Sub>();
  SubscribeOptions so;
  so.fill = LocationFilter{T::kAbsoluteStart, 0, 0};
  EXPECT_TRUE(p.client->Subscribe({{"a"}, "b"}, so, sub).ok());
  p.pair.RunUntilIdle();
  SubscribeOk ok;
  ok.track_alias = 4;
  ok.params.largest_object = Location{0, 1};
  p.Send(0, ok);
  PublishDone done;
  done.status_code = static_cast<uint64_t>(PublishDoneCode::kTrackEnded);
  done.stream_count = count;
  p.Send(0, done, true);
  p.pair.RunUntilIdle();
  return sub;
}

// PUBLISH_DONE TRACK_ENDED with an unknown stream count overtakes the fill stream: the
// subscription is not complete (nor reported whole) before the fill ends, which it then does.
TEST(MoqtPublishDoneTest, AnUnknownCountWaitsForTheFillAskedFor) {
  RawPublisher p;
  auto sub = SubscribedWithFillThenDone(p, kStreamCountUnknown);
  EXPECT_FALSE(sub->done.has_value()) << "complete before the fill arrived";
  SendFill(p, 0);
  p.pair.RunUntilIdle();
  ASSERT_TRUE(sub->done.has_value());
  EXPECT_TRUE(sub->done->track_ended);
  EXPECT_TRUE(sub->done->all_streams_received);
  ASSERT_EQ(sub->objects.size(), 2u);
  EXPECT_EQ(sub->objects[1].payload, "g0o1");
  EXPECT_EQ(sub->objects[1].via, DeliveryKind::kFill);
}

// The fill never comes: the wait is bounded (done_stream_wait_ms on the injected clock), and the
// subscription then ends as not whole.
TEST(MoqtPublishDoneTest, AFillThatNeverComesEndsTheSubscriptionNotWholeAfterTheWait) {
  RawPublisher p;
  auto sub = SubscribedWithFillThenDone(p, kStreamCountUnknown);
  ASSERT_NO_FATAL_FAILURE(ExpectEndsNotWholeAtTheWait(p, *sub));
}

// A known count that leaves no stream for the fill (the publisher opened none): the fill never
// comes, and the subscription, complete at once, is not reported whole.
TEST(MoqtPublishDoneTest, ACountWithoutTheFillIsNotWhole) {
  RawPublisher p;
  auto sub = SubscribedWithFillThenDone(p, 0);
  ASSERT_TRUE(sub->done.has_value());
  EXPECT_TRUE(sub->done->track_ended);
  EXPECT_FALSE(sub->done->all_streams_received);
}

// The normal order is unchanged: PUBLISH_DONE counting the fill stream, which arrives after it.
TEST(MoqtPublishDoneTest, ACountedFillArrivingAfterPublishDoneCompletesWhole) {
  RawPublisher p;
  auto sub = SubscribedWithFillThenDone(p, 1);
  EXPECT_FALSE(sub->done.has_value());
  SendFill(p, 0);
  p.pair.RunUntilIdle();
  ASSERT_TRUE(sub->done.has_value());
  EXPECT_TRUE(sub->done->all_streams_received);
  EXPECT_EQ(sub->objects.size(), 2u);
}

// Reads every control message the server wrote on a raw client's request stream.
std::vector<ControlMessage> ReadResponses(transport::Stream* s) {
  ControlStreamParser parser;
  uint8_t buf[4096];
  for (;;) {
    auto r = s->Read(buf);
    if (r.bytes_read == 0) break;
    parser.Append(ByteSpan(buf, r.bytes_read));
  }
  std::vector<ControlMessage> out;
  for (;;) {
    auto m = parser.Next();
    if (!m.ok()) break;
    out.push_back(*m);
  }
  return out;
}

TEST(MoqtMaxFilterRangesTest, TooManyRangesIsInvalidFilterAndTheSessionStaysUp) {
  InMemorySessionPair pair;
  RawClient raw(&pair.client());
  pair.client().SetVisitor(&raw);
  TrackStore store;
  ASSERT_TRUE(store.CreateTrack({{"a"}, "b"}).ok());
  MoqtSessionConfig sc;
  sc.perspective = Perspective::kServer;
  sc.max_filter_ranges = 1;
  MoqtSession server(&pair.server(), sc, nullptr, &store);
  pair.Connect();
  pair.RunUntilIdle();
  ASSERT_TRUE(pair.client().OpenOutgoingUnidirectionalStream()->Write(SetupBytes(), false).ok());
  moqt::Subscribe sub;
  sub.track = {{"a"}, "b"};
  RangeFilter f;
  f.ranges = {{0, 1}, {5, 6}};
  sub.params.range_filters.object_id.push_back(f);
  transport::Stream* req = pair.client().OpenOutgoingBidirectionalStream();
  const transport::StreamId rid = req->GetStreamId();
  ASSERT_TRUE(req->Write(*SerializeControlMessage(sub), false).ok());
  pair.RunUntilIdle();
  req = pair.client().GetStreamById(rid);
  ASSERT_NE(req, nullptr);
  std::vector<ControlMessage> got = ReadResponses(req);
  ASSERT_EQ(got.size(), 1u);
  auto* err = std::get_if<RequestError>(&got[0]);
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(err->error_code, static_cast<uint64_t>(RequestErrorCode::kInvalidFilter));
  EXPECT_FALSE(server.closed());
  // One range is within the limit: SUBSCRIBE_OK.
  sub.request_id = 2;
  sub.params.range_filters.object_id[0].ranges = {{0, 1}};
  transport::Stream* req2 = pair.client().OpenOutgoingBidirectionalStream();
  const transport::StreamId rid2 = req2->GetStreamId();
  ASSERT_TRUE(req2->Write(*SerializeControlMessage(sub), false).ok());
  pair.RunUntilIdle();
  got = ReadResponses(pair.client().GetStreamById(rid2));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<SubscribeOk>(got[0]));
}

}  // namespace
}  // namespace kvcs::moqt

// ------------------------------------------------------------------ hardening (hostile peers)
namespace kvcs::moqt {
namespace {

// A server MoqtSession on one store, driven by a raw client that has sent its SETUP.
struct RawServerFixture {
  explicit RawServerFixture(InMemoryOptions copts = {}, InMemoryOptions sopts = {})
      : pair(copts, sopts), raw(&pair.client()) {
    pair.client().SetVisitor(&raw);
    track = *store.CreateTrack({{"a"}, "b"});
    MoqtSessionConfig sc;
    sc.perspective = Perspective::kServer;
    server = std::make_unique<MoqtSession>(&pair.server(), sc, nullptr, &store);
    pair.Connect();
    pair.RunUntilIdle();
    EXPECT_TRUE(pair.client().OpenOutgoingUnidirectionalStream()->Write(SetupBytes(), false).ok());
    pair.RunUntilIdle();
  }
  // Opens a request stream carrying `m`; returns its ID.
  transport::StreamId Request(const ControlMessage& m, bool fin = false) {
    transport::Stream* s = pair.client().OpenOutgoingBidirectionalStream();
    EXPECT_NE(s, nullptr);
    const transport::StreamId id = s->GetStreamId();  // `s` may be gone after the run
    EXPECT_TRUE(s->Write(*SerializeControlMessage(m), fin).ok());
    pair.RunUntilIdle();
    return id;
  }
  InMemorySessionPair pair;
  RawClient raw;
  TrackStore store;
  std::shared_ptr<Track> track;
  std::unique_ptr<MoqtSession> server;
};

TEST(MoqtHardeningTest, UpdateFloodFromAPeerThatNeverReadsIsBackPressured) {
  InMemoryOptions copts, sopts;
  copts.stream_window = 4096;       // the client's credit for the server's answers
  copts.stream_send_buffer = 4096;  // the client's own send buffer
  sopts.stream_window = 4096;
  sopts.stream_send_buffer = 4096;
  RawServerFixture f(copts, sopts);
  moqt::Subscribe sub;
  sub.track = {{"a"}, "b"};
  const transport::StreamId rid = f.Request(sub);
  // Floods REQUEST_UPDATEs (fresh IDs) and never reads the REQUEST_OKs. Without back-pressure
  // the server keeps consuming and queues every answer in memory; with it, it stops reading and
  // flow control blocks the client well before 200 000 updates.
  uint64_t next_id = 2;
  uint64_t sent = 0;
  bool blocked = false;
  for (int round = 0; round < 2000 && !blocked; ++round) {
    transport::Stream* req = f.pair.client().GetStreamById(rid);
    ASSERT_NE(req, nullptr);
    if (!req->CanWrite()) {
      blocked = true;
      break;
    }
    Bytes batch;
    for (int i = 0; i < 100; ++i) {
      RequestUpdate u;
      u.request_id = next_id;
      next_id += 2;
      ASSERT_TRUE(AppendControlMessage(u, &batch).ok());
    }
    ASSERT_TRUE(req->Write(batch, false).ok());
    sent += 100;
    f.pair.RunUntilIdle();
  }
  EXPECT_TRUE(blocked) << sent << " updates accepted without back-pressure";
  EXPECT_FALSE(f.server->closed());
  // Reading the answers lets the server go on: every update is answered, in order.
  uint64_t oks = 0;
  ControlStreamParser parser;
  for (int round = 0; round < 100000 && oks < sent; ++round) {
    transport::Stream* req = f.pair.client().GetStreamById(rid);
    ASSERT_NE(req, nullptr);
    uint8_t buf[4096];
    for (;;) {
      auto r = req->Read(buf);
      if (r.bytes_read == 0) break;
      parser.Append(ByteSpan(buf, r.bytes_read));
    }
    for (;;) {
      auto m = parser.Next();
      if (!m.ok()) break;
      oks += std::holds_alternative<RequestOk>(*m);
    }
    f.pair.RunUntilIdle();
  }
  EXPECT_EQ(oks, sent);
  EXPECT_FALSE(f.raw.closed.has_value());
}

TEST(MoqtHardeningTest, PartlyReceivedObjectsOfResetStreamsDoNotLeakTheReassemblyBudget) {
  RawPublisher p;
  auto sub = std::make_shared<Sub>();
  ASSERT_NO_FATAL_FAILURE(p.SubscribeAccepted(sub));
  // Subgroup streams for groups 0..9, each with object 0 announcing 10 000 payload bytes of
  // which 3 000 arrive before the publisher resets the stream (e.g. a delivery timeout).
  for (uint8_t g = 0; g < 10; ++g) {
    Bytes b = {0x14, 0x04, g, 0x00, 0x80, 0x00};
    AppendVarint(&b, 10000);
    b.insert(b.end(), 3000, 0xAB);
    transport::Stream* d = p.pair.server().OpenOutgoingUnidirectionalStream();
    const transport::StreamId id = d->GetStreamId();
    ASSERT_TRUE(d->Write(b, false).ok());
    p.pair.RunUntilIdle();
    EXPECT_GT(p.client->stats().reassembly_bytes, 0u);
    p.pair.server().GetStreamById(id)->ResetWithCode(
        static_cast<uint64_t>(StreamResetCode::kDeliveryTimeout));
    p.pair.RunUntilIdle();
    EXPECT_EQ(p.client->stats().reassembly_bytes, 0u) << "group " << int{g};
  }
  // The same after an Unsubscribe with an object half received.
  Bytes b = {0x14, 0x04, 0x20, 0x00, 0x80, 0x00};
  AppendVarint(&b, 10000);
  b.insert(b.end(), 3000, 0xAB);
  ASSERT_TRUE(p.pair.server().OpenOutgoingUnidirectionalStream()->Write(b, false).ok());
  p.pair.RunUntilIdle();
  EXPECT_GT(p.client->stats().reassembly_bytes, 0u);
  ASSERT_TRUE(p.client->Unsubscribe(0).ok());
  p.pair.RunUntilIdle();
  EXPECT_EQ(p.client->stats().reassembly_bytes, 0u);
  EXPECT_TRUE(sub->objects.empty());
  EXPECT_FALSE(p.client->closed());
}

// Subscribes `sub` through `p` and sends group 0: object 0, 10 000 payload bytes in two writes
// (two chunks: reassembled), `between` running after the first; then object 1, "hello", in the
// same write as its header (one chunk). Object 0's payload goes to *payload.
void DeliverAReassembledAndAOneChunkObject(RawPublisher& p, std::shared_ptr<SubscribeVisitor> sub,
                                           Bytes* payload,
                                           const std::function<void()>& between = {}) {
  ASSERT_NO_FATAL_FAILURE(p.SubscribeAccepted(sub));
  payload->assign(10000, 0);
  for (size_t i = 0; i < payload->size(); ++i) (*payload)[i] = static_cast<uint8_t>(i * 7);
  Bytes b = {0x14, 0x04, 0x00, 0x00, 0x80, 0x00};
  AppendVarint(&b, payload->size());
  b.insert(b.end(), payload->begin(), payload->begin() + 3000);
  transport::Stream* d = p.pair.server().OpenOutgoingUnidirectionalStream();
  ASSERT_TRUE(d->Write(b, false).ok());
  p.pair.RunUntilIdle();
  if (between) between();
  Bytes rest(payload->begin() + 3000, payload->end());
  rest.insert(rest.end(), {0x00, 0x05, 'h', 'e', 'l', 'l', 'o'});
  ASSERT_TRUE(d->Write(rest, false).ok());
  p.pair.RunUntilIdle();
}

// A payload gathered from several transport chunks is handed to the visitor in the session's
// reassembly buffer (ReceivedObject::payload_buffer), which the visitor may keep without a copy
// (a relay's Track does); one that arrived in one chunk points into the transport's bytes and
// SharedPayload() copies it.
TEST(MoqtReassemblyTest, AReassembledPayloadIsHandedOnInItsOwnBuffer) {
  struct Keeper : SubscribeVisitor {
    void OnObject(const ReceivedObject& o) override {
      buffers.push_back(o.payload_buffer);
      views.push_back(o.payload.data());
      shared.push_back(o.SharedPayload());
    }
    void OnComplete(const SubscriptionDone&) override {}
    std::vector<std::shared_ptr<const Bytes>> buffers, shared;
    std::vector<const uint8_t*> views;
  };
  RawPublisher p;
  auto sub = std::make_shared<Keeper>();
  Bytes payload;
  ASSERT_NO_FATAL_FAILURE(DeliverAReassembledAndAOneChunkObject(
      p, sub, &payload, [&] { EXPECT_TRUE(sub->buffers.empty()); }));
  ASSERT_EQ(sub->buffers.size(), 2u);
  ASSERT_TRUE(sub->buffers[0]);
  EXPECT_EQ(*sub->buffers[0], payload);
  EXPECT_EQ(sub->views[0], sub->buffers[0]->data()) << "the payload viewed in that buffer";
  EXPECT_EQ(sub->shared[0], sub->buffers[0]) << "kept without a copy";
  EXPECT_EQ(p.client->stats().reassembly_bytes, 0u) << "no longer the session's to hold";
  EXPECT_FALSE(sub->buffers[1]);
  ASSERT_TRUE(sub->shared[1]);
  EXPECT_EQ(*sub->shared[1], B("hello"));
  EXPECT_FALSE(p.client->closed());
}

// TakePayload moves a reassembled payload's buffer out to the visitor (a consumer that keeps
// each object needs no copy of its own); a payload that arrived in one chunk, or a buffer someone
// else already shares, is copied, and the shared one stays intact.
TEST(MoqtReassemblyTest, TakePayloadMovesAnUnsharedReassemblyBufferOutAndCopiesOtherwise) {
  struct Taker : SubscribeVisitor {
    void OnObject(const ReceivedObject& o) override {
      if (share_first) shared.push_back(o.SharedPayload());
      views.push_back(o.payload.data());
      taken.push_back(o.TakePayload());
    }
    void OnComplete(const SubscriptionDone&) override {}
    bool share_first = false;
    std::vector<std::shared_ptr<const Bytes>> shared;
    std::vector<const uint8_t*> views;
    std::vector<Bytes> taken;
  };
  for (bool share_first : {false, true}) {
    RawPublisher p;
    auto sub = std::make_shared<Taker>();
    sub->share_first = share_first;
    Bytes payload;
    ASSERT_NO_FATAL_FAILURE(DeliverAReassembledAndAOneChunkObject(p, sub, &payload));
    ASSERT_EQ(sub->taken.size(), 2u);
    EXPECT_EQ(sub->taken[0], payload);
    EXPECT_EQ(sub->taken[1], B("hello"));
    EXPECT_NE(sub->taken[1].data(), sub->views[1]) << "a chunk of the transport's is copied";
    if (share_first) {
      EXPECT_NE(sub->taken[0].data(), sub->views[0]) << "a shared buffer is copied";
      ASSERT_EQ(sub->shared.size(), 2u);
      EXPECT_EQ(*sub->shared[0], payload) << "and stays intact";
    } else {
      EXPECT_EQ(sub->taken[0].data(), sub->views[0]) << "moved out without a copy";
    }
    EXPECT_EQ(p.client->stats().reassembly_bytes, 0u);
    EXPECT_FALSE(p.client->closed());
  }
}

TEST(MoqtHardeningTest, RequestIdsThatNeverArriveDoNotEventuallyCloseTheSession) {
  InMemoryOptions sopts;
  sopts.max_incoming_bidi = 10000;
  RawServerFixture f({}, sopts);
  // Request ID 0 never arrives (its stream was reset before any byte got through); the client
  // goes on with 2, 4, ... Every later ID sits above that gap.
  const uint64_t n = kMaxRequestIdGaps + 50;
  for (uint64_t i = 0; i < n; ++i) {
    moqt::TrackStatus ts;
    ts.request_id = 2 + 2 * i;
    ts.track = {{"a"}, "b"};
    transport::Stream* s = f.pair.client().OpenOutgoingBidirectionalStream();
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->Write(*SerializeControlMessage(ts), true).ok());
    if (i % 200 == 0) f.pair.RunUntilIdle();
  }
  f.pair.RunUntilIdle();
  EXPECT_FALSE(f.raw.closed.has_value()) << f.raw.closed->code << " " << f.raw.closed->reason;
  EXPECT_EQ(f.server->stats().incoming_requests, n);
  // A reused ID is still refused.
  moqt::TrackStatus dup;
  dup.request_id = 2 + 2 * (n - 1);
  dup.track = {{"a"}, "b"};
  f.Request(dup, true);
  ASSERT_TRUE(f.raw.closed.has_value());
  EXPECT_EQ(f.raw.closed->code, static_cast<uint64_t>(SessionError::kInvalidRequestId));
}

TEST(MoqtHardeningTest, FailedUpdateEndsTheSubscriptionEvenWithStreamsWaitingForCredit) {
  InMemoryOptions copts;
  copts.max_incoming_uni = 2;  // the server's control stream + one data stream
  RawServerFixture f(copts, {});
  moqt::Subscribe sub;
  sub.track = {{"a"}, "b"};
  const transport::StreamId rid = f.Request(sub);
  ASSERT_TRUE(f.track->StartGroup(0).ok());
  ASSERT_TRUE(f.track->AppendObject(B("g0")).ok());  // group 0: the last uni credit
  ASSERT_TRUE(f.track->StartGroup(1).ok());
  ASSERT_TRUE(f.track->AppendObject(B("g1")).ok());  // group 1: waits for credit
  f.pair.RunUntilIdle();
  EXPECT_EQ(f.server->stats().data_streams_opened, 1u);
  // An update the server must refuse (more ranges than its MAX_FILTER_RANGES of 64).
  RequestUpdate u;
  u.request_id = 2;
  RangeFilter rf;
  for (uint64_t i = 0; i < 65; ++i) rf.ranges.push_back({10 * i, 10 * i + 1});
  u.params.range_filters.object_id.push_back(rf);
  ASSERT_TRUE(f.pair.client().GetStreamById(rid)->Write(*SerializeControlMessage(u), false).ok());
  f.pair.RunUntilIdle();
  std::vector<ControlMessage> got = ReadResponses(f.pair.client().GetStreamById(rid));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_TRUE(std::holds_alternative<SubscribeOk>(got[0]));
  EXPECT_TRUE(std::holds_alternative<RequestError>(got[1]));
  auto* done = std::get_if<PublishDone>(&got[2]);
  ASSERT_NE(done, nullptr);
  EXPECT_EQ(done->status_code, static_cast<uint64_t>(PublishDoneCode::kUpdateFailed));
  EXPECT_EQ(done->stream_count, 1u);
  // Credit comes back: the ended subscription opens nothing.
  for (transport::StreamId id : {transport::StreamId{7}}) {
    if (transport::Stream* s = f.pair.client().GetStreamById(id)) s->SendStopSending(0);
  }
  ASSERT_TRUE(f.track->AppendObject(B("g1 again")).ok());
  f.pair.RunUntilIdle();
  EXPECT_EQ(f.server->stats().data_streams_opened, 1u);
  EXPECT_FALSE(f.raw.closed.has_value());
}

// A FETCH ending with a group a relay's track is still filling has its FETCH_OK deferred until
// that group's end is known (fetch_ok_pending). The requester then stops the fetch's data
// stream (STOP_SENDING): the End Location will never be known for this request, so it is
// answered REQUEST_ERROR instead of never; the session goes on serving other requests.
TEST(MoqtHardeningTest, ADeferredFetchOkWhoseDataStreamIsStoppedIsAnsweredWithAnError) {
  RawServerFixture f;
  f.track->StartFilling();
  f.track->SetLargestKnown({1, 0});
  PublishedObject o;
  o.location = {0, 0};
  o.payload = std::make_shared<const Bytes>(B("g0o0"));
  ASSERT_TRUE(f.track->InsertObject(std::move(o)).ok());
  f.track->SetCompleteThrough({0, 0});  // group 0's end is not known
  moqt::Fetch fetch;
  fetch.request_id = 0;
  fetch.track = {{"a"}, "b"};
  fetch.params.location_filter = LocationFilter{T::kAbsoluteStartGroupEnd, 0, 0, 0};  // group 0
  const transport::StreamId rid = f.Request(fetch);
  EXPECT_TRUE(ReadResponses(f.pair.client().GetStreamById(rid)).empty());  // deferred
  // The fetch's data stream: the server's first uni stream after its control stream.
  transport::Stream* data = f.pair.client().GetStreamById(7);
  ASSERT_NE(data, nullptr);
  data->SendStopSending(static_cast<uint64_t>(StreamResetCode::kCancelled));
  f.pair.RunUntilIdle();
  std::vector<ControlMessage> got = ReadResponses(f.pair.client().GetStreamById(rid));
  ASSERT_EQ(got.size(), 1u) << "the deferred FETCH_OK was never answered";
  auto* err = std::get_if<RequestError>(&got[0]);
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(err->error_code, static_cast<uint64_t>(RequestErrorCode::kInternalError));
  // Still serving: a FETCH of what is known is answered at once.
  moqt::Fetch again;
  again.request_id = 2;
  again.track = {{"a"}, "b"};
  again.params.location_filter = LocationFilter{T::kAbsoluteRange, 0, 0, 0, 0};
  const transport::StreamId rid2 = f.Request(again);
  got = ReadResponses(f.pair.client().GetStreamById(rid2));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<FetchOk>(got[0]));
  EXPECT_FALSE(f.server->closed());
  EXPECT_FALSE(f.raw.closed.has_value());
}

TEST(MoqtHardeningTest, UpdatesRespectThePeersMaxRequestUpdates) {
  InMemorySessionPair pair;
  RawClient raw(&pair.server());
  pair.server().SetVisitor(&raw);
  Callbacks cb;
  MoqtSession client(&pair.client(), {}, &cb, nullptr);
  pair.Connect();
  pair.RunUntilIdle();
  moqt::Setup s;
  s.options.max_request_updates = 1;
  ASSERT_TRUE(pair.server()
                  .OpenOutgoingUnidirectionalStream()
                  ->Write(*SerializeControlMessage(s), false)
                  .ok());
  pair.RunUntilIdle();
  auto sub = std::make_shared<Sub>();
  auto id = client.Subscribe({{"a"}, "b"}, {}, sub);
  ASSERT_TRUE(id.ok());
  pair.RunUntilIdle();
  transport::Stream* req = pair.server().GetStreamById(0);
  ASSERT_TRUE(req->Write(*SerializeControlMessage(SubscribeOk{}), false).ok());
  pair.RunUntilIdle();
  SubscriptionUpdate u;
  u.subscriber_priority = 3;
  auto first = client.UpdateSubscription(*id, u);
  ASSERT_TRUE(first.ok());
  // One update unanswered: a second one would exceed the peer's limit.
  auto second = client.UpdateSubscription(*id, u);
  EXPECT_TRUE(second.status().Is(SessionApiError::kTooManyRequests));
  ASSERT_TRUE(
      pair.server().GetStreamById(0)->Write(*SerializeControlMessage(RequestOk{}), false).ok());
  pair.RunUntilIdle();
  ASSERT_EQ(sub->updates.size(), 1u);
  EXPECT_TRUE(client.UpdateSubscription(*id, u).ok());
  EXPECT_FALSE(client.closed());
}

// Unsubscribes from inside OnObject, while the rest of the same chunk is still being parsed.
struct UnsubscribeOnFirst : Sub {
  void OnObject(const ReceivedObject& o) override {
    Sub::OnObject(o);
    if (session && objects.size() == 1) {
      EXPECT_TRUE(session->Unsubscribe(id).ok());
    }
  }
  MoqtSession* session = nullptr;
  uint64_t id = 0;
};

TEST(MoqtHardeningTest, UnsubscribeFromInsideOnObjectMidChunk) {
  RawPublisher p;
  auto sub = std::make_shared<UnsubscribeOnFirst>();
  auto id = p.client->Subscribe({{"a"}, "b"}, {}, sub);
  ASSERT_TRUE(id.ok());
  sub->session = p.client.get();
  sub->id = *id;
  p.pair.RunUntilIdle();
  SubscribeOk ok;
  ok.track_alias = 4;
  p.Send(0, ok);
  p.pair.RunUntilIdle();
  // Three objects in one write (one chunk): the session must stop after the first, deferring
  // its STOP_SENDING until the parser let go of the stream's bytes.
  transport::Stream* d = p.pair.server().OpenOutgoingUnidirectionalStream();
  const transport::StreamId did = d->GetStreamId();
  ASSERT_TRUE(d->Write(Bytes{0x14, 0x04, 0x00, 0x00, 0x80, 0x00, 0x02, 'h', 'i', 0x00, 0x02, 'h',
                             'o', 0x00, 0x02, 'h', 'u'},
                       false)
                  .ok());
  p.pair.RunUntilIdle();
  ASSERT_EQ(sub->objects.size(), 1u);
  EXPECT_EQ(sub->objects[0].payload, "hi");
  EXPECT_FALSE(sub->done.has_value());  // cancelled: no further callbacks
  transport::Stream* after = p.pair.server().GetStreamById(did);
  EXPECT_TRUE(after == nullptr || !after->CanWrite()) << "no STOP_SENDING reached the publisher";
  EXPECT_FALSE(p.client->closed());
}

// Ends its own namespace subscription from OnRequestOk; only the session holds it.
struct QuitOnOk : NamespaceVisitor {
  QuitOnOk(MoqtSession* s, int* calls) : s(s), calls(calls) {}
  void OnRequestOk() override {
    EXPECT_TRUE(s->UnsubscribeNamespace(id).ok());
    ++*calls;  // touches this object after the session dropped its reference
  }
  void OnNamespace(const TrackNamespace&) override {}
  void OnNamespaceDone(const TrackNamespace&) override {}
  MoqtSession* s;
  int* calls;
  uint64_t id = 0;
};

TEST_F(MoqtSessionTest, NamespaceVisitorMayEndItsRequestFromOnRequestOk) {
  MakeTrack("x");
  int calls = 0;
  auto v = std::make_shared<QuitOnOk>(p_->client.get(), &calls);
  QuitOnOk* raw = v.get();
  auto id = p_->client->SubscribeNamespace({"kvcs-1"}, std::move(v));
  ASSERT_TRUE(id.ok());
  raw->id = *id;
  p_->Run();
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(p_->client->closed());
  EXPECT_FALSE(p_->server->closed());
}

// Produces new groups (evicting the oldest) from inside the fetch's OnObject.
struct EvictingFetch : Fet {
  void OnObject(const ReceivedObject& o) override {
    Fet::OnObject(o);
    if (o.location == Location{0, 2}) {
      for (uint64_t g = 3; g < 4; ++g) {  // evicts group 0 only
        EXPECT_TRUE(track->StartGroup(g).ok());
        EXPECT_TRUE(track->AppendObject(B("new")).ok());
      }
    }
  }
  Track* track = nullptr;
};

TEST(MoqtHardeningTest, FetchWhoseRemainingObjectsAreEvictedIsNotReportedComplete) {
  uint64_t now = 0;
  TrackStore store;
  InMemoryOptions sopts;
  sopts.stream_send_buffer = 1;  // the server writes about one object ahead of the client
  Peer p(&store, &now, {}, sopts);
  TrackOptions o;
  o.max_groups = 3;
  auto t = *store.CreateTrack({{"a"}, "b"}, o);
  for (uint64_t g = 0; g < 3; ++g) {
    ASSERT_TRUE(t->StartGroup(g).ok());
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(t->AppendObject(B(Payload(g, i))).ok());
  }
  auto f = std::make_shared<EvictingFetch>();
  f->track = t.get();
  FetchOptions fo;
  fo.range = LocationFilter{LocationFilterType::kAbsoluteStartGroupEnd, 0, 0, 0};  // group 0
  ASSERT_TRUE(p.client->Fetch({{"a"}, "b"}, fo, f).ok());
  p.Run();
  ASSERT_TRUE(f->done.has_value());
  // Group 0 was evicted while the fetch was in it: the fetch cannot be complete. Before the fix
  // the stream went past the range end and FINed (the rest of group 0 silently "non-existent").
  EXPECT_FALSE(f->done->ok) << f->objects.size() << " objects of 10";
  EXPECT_LT(f->objects.size(), 10u);
  EXPECT_FALSE(p.client->closed());
}

}  // namespace
}  // namespace kvcs::moqt
