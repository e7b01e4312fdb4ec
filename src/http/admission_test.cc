// ConnectionAdmission's decisions, without sockets: the total and per-address caps, eviction
// order at the cap (head-pending past a grace, then idle past a minimum idle age, then young
// head-pending, then recently idle ones of the address holding the most; oldest first), refusal
// when all are busy or recently idle, the head
// deadline under pressure, requests in flight per address, Stop, and the counters.
#include "http/admission.h"

#include <gtest/gtest.h>

namespace kvcs::http {
namespace {

using Verdict = ConnectionAdmission::Verdict;
using HeadVerdict = ConnectionAdmission::HeadVerdict;
using std::chrono::milliseconds;
// Connections are admitted at T0; T1 is past the eviction grace (1 s).
const ConnectionAdmission::TimePoint T0{};
const ConnectionAdmission::TimePoint T1 = T0 + std::chrono::seconds(5);

Limits Small() {
  Limits l;
  l.max_connections = 4;
  l.max_connections_per_address = 3;
  l.max_requests_per_address = 2;
  l.header_timeout = milliseconds(10000);
  l.header_timeout_under_pressure = milliseconds(2000);
  l.pressure_percent = 75;
  return l;
}

// Admits and makes the connection busy (a request head arrived).
ConnectionAdmission::ConnectionId Busy(ConnectionAdmission& a, const char* address) {
  auto d = a.Admit(address, T0);
  EXPECT_EQ(d.verdict, Verdict::kAdmitted);
  EXPECT_TRUE(a.AwaitHead(d.id, T0));
  EXPECT_EQ(a.HeadArrived(d.id), HeadVerdict::kServe);
  return d.id;
}

TEST(ConnectionAdmission, PerAddressConnectionCap) {
  ConnectionAdmission a(Small());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(a.Admit("10.0.0.1", T0).verdict, Verdict::kAdmitted);
  EXPECT_EQ(a.Admit("10.0.0.1", T0).verdict, Verdict::kRefusedAddress);
  EXPECT_EQ(a.Admit("10.0.0.2", T0).verdict, Verdict::kAdmitted);
  EXPECT_EQ(a.metrics().refused_address_connections, 1u);
  EXPECT_EQ(a.metrics().admitted, 4u);
}

TEST(ConnectionAdmission, AtTheCapTheOldestHeadPendingGoesFirst) {
  ConnectionAdmission a(Small());
  auto idle = Busy(a, "10.0.0.1");
  ASSERT_TRUE(a.AwaitHead(idle, T0));  // idle keep-alive now
  auto p1 = a.Admit("10.0.0.2", T0).id;
  auto p2 = a.Admit("10.0.0.2", T0).id;
  auto busy = Busy(a, "10.0.0.3");
  auto d = a.Admit("10.0.0.4", T1);
  ASSERT_EQ(d.verdict, Verdict::kAdmitted);
  EXPECT_EQ(d.evict, std::vector<ConnectionAdmission::ConnectionId>{p1});
  EXPECT_FALSE(a.Live(p1));
  EXPECT_FALSE(a.AwaitHead(p1, T0));
  EXPECT_EQ(a.HeadArrived(p1), HeadVerdict::kGone);
  EXPECT_EQ(a.Admit("10.0.0.5", T1).evict, std::vector<ConnectionAdmission::ConnectionId>{p2});
  // The head-pending ones left (d and the last) are within their grace: the idle one goes.
  EXPECT_EQ(a.Admit("10.0.0.6", T1).evict, std::vector<ConnectionAdmission::ConnectionId>{idle});
  // Then, with no idle connection left, the oldest young head-pending one (d).
  EXPECT_EQ(a.Admit("10.0.0.7", T1).evict, std::vector<ConnectionAdmission::ConnectionId>{d.id});
  auto m = a.metrics();
  EXPECT_EQ(m.evicted_head_pending, 3u);
  EXPECT_EQ(m.evicted_idle, 1u);
  EXPECT_TRUE(a.Live(busy));
  EXPECT_EQ(a.active(), 4u);
}

TEST(ConnectionAdmission, IdleOldestFirstThenRefusedWhenAllBusy) {
  ConnectionAdmission a(Small());
  auto i1 = Busy(a, "10.0.0.1");
  auto i2 = Busy(a, "10.0.0.2");
  Busy(a, "10.0.0.3");
  Busy(a, "10.0.0.4");
  ASSERT_TRUE(a.AwaitHead(i2, T0));  // i2 went idle before i1
  ASSERT_TRUE(a.AwaitHead(i1, T0));
  auto n1 = a.Admit("10.0.0.5", T1);
  EXPECT_EQ(n1.evict, std::vector<ConnectionAdmission::ConnectionId>{i2});
  ASSERT_EQ(a.HeadArrived(n1.id), HeadVerdict::kServe);
  EXPECT_EQ(a.Admit("10.0.0.6", T1).evict, std::vector<ConnectionAdmission::ConnectionId>{i1});
  // Now: three busy and one head-pending (the last newcomer), which goes next; make it busy.
  auto last = a.Admit("10.0.0.7", T1);
  ASSERT_EQ(last.verdict, Verdict::kAdmitted);
  ASSERT_EQ(a.HeadArrived(last.id), HeadVerdict::kServe);
  auto refused = a.Admit("10.0.0.8", T1);
  EXPECT_EQ(refused.verdict, Verdict::kRefusedFull);
  EXPECT_TRUE(refused.evict.empty());
  auto m = a.metrics();
  EXPECT_EQ(m.evicted_idle, 2u);
  EXPECT_EQ(m.refused_full, 1u);
}

TEST(ConnectionAdmission, RecentlyIdleConnectionsAreSparedForAHogsNewcomers) {
  Limits l = Small();
  l.max_connections_per_address = 4;
  ConnectionAdmission a(l);
  auto good = Busy(a, "good");
  ASSERT_TRUE(a.AwaitHead(good, T0));  // between two requests
  std::vector<ConnectionAdmission::ConnectionId> hog;
  for (int i = 0; i < 3; ++i) {
    hog.push_back(Busy(a, "hog"));
    ASSERT_TRUE(a.AwaitHead(hog.back(), T0 + milliseconds(10)));
  }
  // Every connection is recently idle and the hog's address holds the most idle ones: the hog's
  // newcomer evicts the hog's own oldest, not the well-behaved connection (idle the longest).
  auto own = a.Admit("hog", T0 + milliseconds(500));
  EXPECT_EQ(own.verdict, Verdict::kAdmitted);
  EXPECT_EQ(own.evict, std::vector<ConnectionAdmission::ConnectionId>{hog[0]});  // churns its own
  EXPECT_TRUE(a.Live(good));
  hog.erase(hog.begin());
  ASSERT_EQ(a.HeadArrived(own.id), HeadVerdict::kServe);
  ASSERT_TRUE(a.AwaitHead(own.id, T0 + milliseconds(500)));
  hog.push_back(own.id);
  // A newcomer of another address evicts the hog's oldest idle connection.
  auto other = a.Admit("other", T0 + milliseconds(500));
  ASSERT_EQ(other.verdict, Verdict::kAdmitted);
  EXPECT_EQ(other.evict, std::vector<ConnectionAdmission::ConnectionId>{hog[0]});
  // Idle for min_idle_age, the well-behaved connection is the oldest idle one and goes first.
  EXPECT_EQ(a.Admit("hog", T0 + milliseconds(1000)).evict,
            std::vector<ConnectionAdmission::ConnectionId>{good});
  EXPECT_EQ(a.metrics().refused_full, 0u);
}

TEST(ConnectionAdmission, AClientWithAsManyYoungConnectionsAsAnEvictedHogKeepsThem) {
  // A well-behaved client opening a connection per request holds young head-pending connections
  // (heads sent, not yet read by a busy server); a hog's address holds as many. The newcomer of
  // the well-behaved address evicts the hog's (its record: connections evicted), not its own.
  Limits l = Small();
  l.max_connections_per_address = 4;
  ConnectionAdmission a(l);
  std::vector<ConnectionAdmission::ConnectionId> hog, good;
  for (int i = 0; i < 4; ++i) hog.push_back(a.Admit("hog", T0).id);
  auto at = [](int ms) { return T0 + milliseconds(ms); };
  for (int i = 0; i < 3; ++i) {
    auto d = a.Admit("good", at(10 * (i + 1)));
    ASSERT_EQ(d.verdict, Verdict::kAdmitted);
    EXPECT_EQ(d.evict, std::vector<ConnectionAdmission::ConnectionId>{hog[i]}) << i;
    good.push_back(d.id);
  }
  // "good" holds 3 young connections, "hog" 1: the hog's newcomer churns its own.
  auto h = a.Admit("hog", at(40));
  EXPECT_EQ(h.evict, std::vector<ConnectionAdmission::ConnectionId>{hog[3]});
  for (auto id : good) EXPECT_TRUE(a.Live(id));
  EXPECT_EQ(a.metrics().evicted_head_pending, 4u);
}

TEST(ConnectionAdmission, HeadDeadlinesCountAgainstTheAddress) {
  Limits l = Small();
  l.max_connections_per_address = 4;
  ConnectionAdmission a(l);
  auto slow = a.Admit("slow", T0).id;
  auto slow2 = a.Admit("slow", T0).id;
  auto g1 = a.Admit("good", T0).id;
  a.Admit("good", T0);
  ASSERT_TRUE(a.AwaitHead(slow, T0));
  a.NoteHeadDeadline(slow);
  a.Release(slow);
  a.Admit("good", T0);
  // "good" holds three young connections, "slow" one and one closed past its head deadline.
  auto d = a.Admit("good", T0 + milliseconds(10));
  EXPECT_EQ(d.evict, std::vector<ConnectionAdmission::ConnectionId>{slow2});
  EXPECT_TRUE(a.Live(g1));
  EXPECT_EQ(a.metrics().head_deadline_closes, 1u);
}

TEST(ConnectionAdmission, MinIdleAgeIsConfigurable) {
  Limits l = Small();
  l.min_idle_age = milliseconds(0);  // the old order: any idle connection before young heads
  l.max_connections_per_address = 4;
  ConnectionAdmission a(l);
  auto good = Busy(a, "good");
  ASSERT_TRUE(a.AwaitHead(good, T0));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(a.AwaitHead(Busy(a, "hog"), T0));
  EXPECT_EQ(a.Admit("hog", T0).evict, std::vector<ConnectionAdmission::ConnectionId>{good});
}

TEST(ConnectionAdmission, HeadDeadlineShrinksUnderPressure) {
  ConnectionAdmission a(Small());
  auto c1 = a.Admit("a", T0).id;
  a.Admit("b", T0);
  EXPECT_EQ(*a.AwaitHead(c1, T0), milliseconds(10000));  // 2 of 4: 50%
  a.Admit("c", T0);
  EXPECT_EQ(*a.AwaitHead(c1, T0), milliseconds(2000));  // 3 of 4: 75%
  Limits l = Small();
  l.header_timeout = milliseconds(300);  // a shorter normal deadline wins
  ConnectionAdmission b(l);
  auto d1 = b.Admit("a", T0).id;
  b.Admit("b", T0);
  b.Admit("c", T0);
  EXPECT_EQ(*b.AwaitHead(d1, T0), milliseconds(300));
}

TEST(ConnectionAdmission, RequestsInFlightPerAddress) {
  Limits l = Small();
  l.max_connections_per_address = 4;
  ConnectionAdmission a(l);
  auto c1 = Busy(a, "a");
  Busy(a, "a");
  auto c3 = a.Admit("a", T0).id;
  ASSERT_TRUE(a.AwaitHead(c3, T0));
  EXPECT_EQ(a.HeadArrived(c3), HeadVerdict::kRefusedAddressRequests);
  EXPECT_EQ(a.metrics().refused_address_requests, 1u);
  ASSERT_TRUE(a.AwaitHead(c1, T0));  // c1's request finished
  EXPECT_EQ(a.HeadArrived(c3), HeadVerdict::kServe);
  a.Release(c3);  // a busy connection's release frees its request slot
  auto c4 = a.Admit("a", T0).id;
  EXPECT_EQ(a.HeadArrived(c4), HeadVerdict::kServe);
}

TEST(ConnectionAdmission, StopReturnsTheWaitingAndRefusesMore) {
  ConnectionAdmission a(Small());
  auto pending = a.Admit("a", T0).id;
  auto busy = Busy(a, "b");
  auto idle = Busy(a, "c");
  ASSERT_TRUE(a.AwaitHead(idle, T0));
  auto waiting = a.BeginStop();
  std::sort(waiting.begin(), waiting.end());
  EXPECT_EQ(waiting, (std::vector<ConnectionAdmission::ConnectionId>{pending, idle}));
  EXPECT_FALSE(a.AwaitHead(busy, T0));
  EXPECT_EQ(a.Admit("d", T0).verdict, Verdict::kRefusedStopping);
  EXPECT_EQ(a.Release(pending), 2u);
  EXPECT_EQ(a.Release(pending), 2u);  // twice: a no-op
  a.Release(busy);
  EXPECT_EQ(a.Release(idle), 0u);
}

}  // namespace
}  // namespace kvcs::http
