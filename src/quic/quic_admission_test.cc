// QuicAdmission's decisions with a fake clock: Retry by cause and its hysteresis, per-address
// limits, eviction of the oldest handshake at the cap, the handshake deadline.
#include "quic/quic_admission.h"

#include <gtest/gtest.h>

namespace kvcs::quic {
namespace {

using std::chrono::milliseconds;
using Verdict = QuicAdmission::Verdict;

const QuicAdmission::TimePoint kT0{};

AdmissionLimits Small() {
  AdmissionLimits l;
  l.max_connections_per_address = 6;
  l.max_handshakes_per_address = 4;
  l.retry_on_handshakes = 8;
  l.retry_off_handshakes = 4;
  l.handshake_deadline = milliseconds(1000);
  return l;
}

TEST(QuicAdmission, AdmitsAndRetriesWhenRequired) {
  QuicAdmission a(16, /*require_retry=*/true, Small());
  EXPECT_EQ(a.OnInitial("a", false, kT0).verdict, Verdict::kRetry);
  EXPECT_EQ(a.metrics().retry_required, 1u);
  auto d = a.OnInitial("a", true, kT0);
  EXPECT_EQ(d.verdict, Verdict::kAdmitted);
  EXPECT_NE(d.id, 0u);
  EXPECT_EQ(a.handshakes(), 1u);
  a.HandshakeCompleted(d.id);
  EXPECT_EQ(a.handshakes(), 0u);
  EXPECT_EQ(a.active(), 1u);
  a.Release(d.id);
  a.Release(d.id);  // idempotent
  EXPECT_EQ(a.active(), 0u);
}

TEST(QuicAdmission, PerAddressHandshakesGetRetryThenRefusalUnderLoad) {
  QuicAdmission a(64, false, Small());
  for (int i = 0; i < 4; ++i) EXPECT_EQ(a.OnInitial("x", false, kT0).verdict, Verdict::kAdmitted);
  EXPECT_EQ(a.OnInitial("x", false, kT0).verdict, Verdict::kRetry);
  EXPECT_EQ(a.metrics().retry_address, 1u);
  // Four handshakes of other addresses: 8 in progress, Retry under load is on.
  for (const char* other : {"p", "q", "r", "s"}) {
    EXPECT_EQ(a.OnInitial(other, false, kT0).verdict, Verdict::kAdmitted);
  }
  ASSERT_TRUE(a.retry_on());
  // A validated one replaces the address's oldest unvalidated handshake.
  auto v = a.OnInitial("x", true, kT0);
  EXPECT_EQ(v.verdict, Verdict::kAdmitted);
  EXPECT_EQ(v.evict.size(), 1u);
  EXPECT_EQ(a.metrics().evicted_address_handshakes, 1u);
  // Once the address's handshakes are all validated, a further validated one is refused.
  for (int i = 0; i < 3; ++i) {
    auto w = a.OnInitial("x", true, kT0);
    EXPECT_EQ(w.verdict, Verdict::kAdmitted);
    EXPECT_EQ(w.evict.size(), 1u);
  }
  EXPECT_EQ(a.OnInitial("x", true, kT0).verdict, Verdict::kRefusedAddress);
  EXPECT_EQ(a.metrics().refused_address_handshakes, 1u);
  // Other addresses are unaffected.
  EXPECT_EQ(a.OnInitial("y", true, kT0).verdict, Verdict::kAdmitted);
}

TEST(QuicAdmission, ABurstOfOneHundredSessionsFromOneAddressAllConnectWithDefaults) {
  QuicAdmission a(1024, false, AdmissionLimits{});
  size_t admitted = 0, retried = 0;
  for (int i = 0; i < 100; ++i) {
    auto d = a.OnInitial("127.0.0.1", false, kT0);
    if (d.verdict == Verdict::kRetry) {
      ++retried;
      d = a.OnInitial("127.0.0.1", true, kT0);  // the client's Initial with the token
    }
    EXPECT_EQ(d.verdict, Verdict::kAdmitted) << "session " << i;
    EXPECT_TRUE(d.evict.empty()) << "session " << i;
    admitted += d.verdict == Verdict::kAdmitted;
  }
  EXPECT_EQ(admitted, 100u);
  EXPECT_EQ(retried, 100u - AdmissionLimits::kDefaultMaxHandshakesPerAddress);
  EXPECT_EQ(a.handshakes(), 100u);
  EXPECT_FALSE(a.retry_on());
}

TEST(QuicAdmission, PerAddressConnections) {
  QuicAdmission a(64, false, Small());
  for (int i = 0; i < 6; ++i) {
    auto d = a.OnInitial("x", false, kT0);
    ASSERT_EQ(d.verdict, Verdict::kAdmitted);
    a.HandshakeCompleted(d.id);
  }
  EXPECT_EQ(a.OnInitial("x", true, kT0).verdict, Verdict::kRefusedAddress);
  EXPECT_EQ(a.metrics().refused_address_connections, 1u);
}

TEST(QuicAdmission, RetryUnderLoadSwitchesOnAndOffWithHysteresis) {
  QuicAdmission a(64, false, Small());
  std::vector<QuicAdmission::ConnectionId> ids;
  for (int i = 0; i < 8; ++i) {
    auto d = a.OnInitial("addr" + std::to_string(i), false, kT0);
    ASSERT_EQ(d.verdict, Verdict::kAdmitted);
    ids.push_back(d.id);
  }
  EXPECT_TRUE(a.retry_on());
  EXPECT_EQ(a.metrics().retry_mode_on, 1u);
  EXPECT_EQ(a.OnInitial("new", false, kT0).verdict, Verdict::kRetry);
  EXPECT_EQ(a.metrics().retry_load, 1u);
  EXPECT_EQ(a.OnInitial("new", true, kT0).verdict, Verdict::kAdmitted);
  // 9 in progress; still on at 4 (off below 4 only).
  for (int i = 0; i < 5; ++i) a.HandshakeCompleted(ids[i]);
  EXPECT_EQ(a.handshakes(), 4u);
  EXPECT_TRUE(a.retry_on());
  a.Release(ids[5]);
  EXPECT_FALSE(a.retry_on());
  EXPECT_EQ(a.OnInitial("new2", false, kT0).verdict, Verdict::kAdmitted);
}

TEST(QuicAdmission, PerAddressLimitOfOneEvictsItsOnlyHandshake) {
  AdmissionLimits l = Small();
  l.max_connections_per_address = 1;
  QuicAdmission a(64, false, l);
  auto first = a.OnInitial("x", false, kT0);
  auto second = a.OnInitial("x", true, kT0);
  ASSERT_EQ(second.verdict, Verdict::kAdmitted);
  EXPECT_EQ(second.evict, std::vector<uint64_t>{first.id});
  EXPECT_EQ(a.active(), 1u);
  a.Release(second.id);
  EXPECT_EQ(a.active(), 0u);
  EXPECT_EQ(a.OnInitial("x", false, kT0).verdict, Verdict::kAdmitted);
}

TEST(QuicAdmission, AtTheCapUnvalidatedHandshakesGoFirst) {
  AdmissionLimits l = Small();
  l.retry_on_handshakes = 1000;
  QuicAdmission a(2, false, l);
  auto validated = a.OnInitial("a", true, kT0);
  auto unvalidated = a.OnInitial("b", false, kT0 + milliseconds(1));
  auto d = a.OnInitial("c", true, kT0 + milliseconds(2));
  EXPECT_EQ(d.evict, std::vector<uint64_t>{unvalidated.id});
  auto e = a.OnInitial("d", true, kT0 + milliseconds(3));
  EXPECT_EQ(e.evict, std::vector<uint64_t>{validated.id});  // then the oldest handshake
}

TEST(QuicAdmission, AtTheCapEvictsTheOldestHandshake) {
  AdmissionLimits l = Small();
  l.retry_on_handshakes = 1000;
  QuicAdmission a(3, false, l);
  auto est = a.OnInitial("a", false, kT0);
  a.HandshakeCompleted(est.id);
  auto h1 = a.OnInitial("b", false, kT0 + milliseconds(1));
  auto h2 = a.OnInitial("c", false, kT0 + milliseconds(2));
  auto d = a.OnInitial("d", false, kT0 + milliseconds(3));
  ASSERT_EQ(d.verdict, Verdict::kAdmitted);
  ASSERT_EQ(d.evict.size(), 1u);
  EXPECT_EQ(d.evict[0], h1.id);  // the oldest handshake, not the established connection
  EXPECT_EQ(a.metrics().evicted_handshakes, 1u);
  a.Release(h1.id);  // the server's later release is a no-op
  EXPECT_EQ(a.active(), 3u);
  a.HandshakeCompleted(h2.id);
  a.HandshakeCompleted(d.id);
  // Every connection established: refused.
  EXPECT_EQ(a.OnInitial("e", true, kT0).verdict, Verdict::kRefusedFull);
  EXPECT_EQ(a.metrics().refused_full, 1u);
}

TEST(QuicAdmission, HandshakeDeadline) {
  QuicAdmission a(64, false, Small());
  EXPECT_FALSE(a.NextDeadline());
  auto old = a.OnInitial("a", false, kT0);
  auto done = a.OnInitial("b", false, kT0 + milliseconds(100));
  auto young = a.OnInitial("c", false, kT0 + milliseconds(600));
  a.HandshakeCompleted(done.id);
  EXPECT_EQ(*a.NextDeadline(), kT0 + milliseconds(1000));
  EXPECT_TRUE(a.Expire(kT0 + milliseconds(999)).empty());
  auto expired = a.Expire(kT0 + milliseconds(1200));
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0], old.id);
  EXPECT_EQ(*a.NextDeadline(), kT0 + milliseconds(1600));
  EXPECT_EQ(a.Expire(kT0 + milliseconds(5000)), std::vector<uint64_t>{young.id});
  EXPECT_EQ(a.metrics().handshake_deadline_drops, 2u);
  EXPECT_EQ(a.active(), 1u);  // the established one stays
  EXPECT_FALSE(a.NextDeadline());
}

}  // namespace
}  // namespace kvcs::quic
