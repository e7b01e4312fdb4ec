#include "transport/test_tools/in_memory_session.h"

#include <gtest/gtest.h>

#include <optional>

namespace kvcs::transport::test {
namespace {

class Visitor : public SessionVisitor {
 public:
  explicit Visitor(Session* s) : s_(s) {}
  void OnSessionReady() override { ready = true; }
  void OnSessionClosed(const CloseInfo& i) override { closed = i; }
  void OnIncomingBidirectionalStreamAvailable() override {
    while (Stream* st = s_->AcceptIncomingBidirectionalStream())
      incoming.push_back(st->GetStreamId());
  }
  void OnIncomingUnidirectionalStreamAvailable() override {
    while (Stream* st = s_->AcceptIncomingUnidirectionalStream())
      incoming.push_back(st->GetStreamId());
  }
  void OnDatagramReceived(ByteSpan d) override { datagrams.emplace_back(d.begin(), d.end()); }
  void OnCanCreateNewOutgoingBidirectionalStream() override { ++can_open; }
  void OnCanCreateNewOutgoingUnidirectionalStream() override { ++can_open; }
  Session* s_;
  bool ready = false;
  std::optional<CloseInfo> closed;
  std::vector<StreamId> incoming;
  std::vector<Bytes> datagrams;
  int can_open = 0;
};

// Records into a struct the test owns: the visitor dies with its stream.
struct StreamEvents {
  std::optional<ErrorCode> reset, stop;
  bool closed = false;
};
struct StreamLog : StreamVisitor {
  explicit StreamLog(StreamEvents* e) : e(e) {}
  void OnCanRead() override {}
  void OnCanWrite() override {}
  void OnResetStreamReceived(ErrorCode c) override { e->reset = c; }
  void OnStopSendingReceived(ErrorCode c) override { e->stop = c; }
  void OnStreamClosed() override { e->closed = true; }
  StreamEvents* e;
};

class InMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    InMemoryOptions o;
    o.stream_window = 1000;
    o.stream_send_buffer = 4000;
    o.max_incoming_bidi = 2;
    pair_ = std::make_unique<InMemorySessionPair>(o, o);
    cv_ = std::make_unique<Visitor>(&pair_->client());
    sv_ = std::make_unique<Visitor>(&pair_->server());
    pair_->client().SetVisitor(cv_.get());
    pair_->server().SetVisitor(sv_.get());
    pair_->Connect();
    pair_->RunUntilIdle();
  }
  std::unique_ptr<InMemorySessionPair> pair_;
  std::unique_ptr<Visitor> cv_, sv_;
};

TEST_F(InMemoryTest, StreamDataFlowControlAndFin) {
  ASSERT_TRUE(cv_->ready && sv_->ready);
  Stream* c = pair_->client().OpenOutgoingBidirectionalStream();
  ASSERT_NE(c, nullptr);
  Bytes data(3500);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i);
  ASSERT_TRUE(c->Write(data, true).ok());
  pair_->RunUntilIdle();
  ASSERT_EQ(sv_->incoming.size(), 1u);
  Stream* s = pair_->server().GetStreamById(sv_->incoming[0]);
  ASSERT_NE(s, nullptr);
  // Only one window's worth arrives until the server consumes.
  EXPECT_EQ(s->ReadableBytes(), 1000u);
  EXPECT_EQ(c->BufferedBytes(), 2500u);
  Bytes got;
  uint8_t buf[700];
  for (int i = 0; i < 100; ++i) {
    auto r = s->Read(buf);
    got.insert(got.end(), buf, buf + r.bytes_read);
    if (r.fin) break;
    pair_->RunUntilIdle();
  }
  EXPECT_EQ(got, data);
}

TEST_F(InMemoryTest, ResetStopSendingAndCredit) {
  Stream* a = pair_->client().OpenOutgoingBidirectionalStream();
  Stream* b = pair_->client().OpenOutgoingBidirectionalStream();
  ASSERT_TRUE(a && b);
  const StreamId a_id = a->GetStreamId();
  EXPECT_FALSE(pair_->client().CanOpenNextOutgoingBidirectionalStream());  // limit 2
  StreamEvents ea;
  a->SetVisitor(std::make_unique<StreamLog>(&ea));
  ASSERT_TRUE(a->Write(AsBytes("x"), false).ok());
  ASSERT_TRUE(b->Write(AsBytes("y"), true).ok());
  pair_->RunUntilIdle();
  Stream* sa = pair_->server().GetStreamById(a->GetStreamId());
  Stream* sb = pair_->server().GetStreamById(b->GetStreamId());
  ASSERT_TRUE(sa && sb);
  sa->ResetWithCode(5);
  sa->SendStopSending(6);
  pair_->RunUntilIdle();
  EXPECT_EQ(ea.reset, 5u);
  EXPECT_EQ(ea.stop, 6u);
  EXPECT_TRUE(ea.closed);
  EXPECT_EQ(pair_->client().GetStreamById(a_id), nullptr);  // both sides done: `a` is gone
  // Finishing the server's side of stream b returns stream credit to the client.
  uint8_t buf[8];
  EXPECT_TRUE(sb->Read(buf).fin);
  ASSERT_TRUE(sb->Write({}, true).ok());
  pair_->RunUntilIdle();
  EXPECT_GE(cv_->can_open, 1);
  EXPECT_TRUE(pair_->client().CanOpenNextOutgoingBidirectionalStream());
}

TEST_F(InMemoryTest, DatagramsAndClose) {
  ASSERT_TRUE(pair_->client().SendOrQueueDatagram(AsBytes("hello")).ok());
  EXPECT_TRUE(
      pair_->client().SendOrQueueDatagram(Bytes(5000)).Is(TransportError::kDatagramTooLarge));
  pair_->RunUntilIdle();
  ASSERT_EQ(sv_->datagrams.size(), 1u);
  pair_->server().CloseSession(9, "done");
  pair_->RunUntilIdle();
  ASSERT_TRUE(cv_->closed && sv_->closed);
  EXPECT_TRUE(cv_->closed->by_peer);
  EXPECT_EQ(cv_->closed->code, 9u);
  EXPECT_EQ(cv_->closed->reason, "done");
  EXPECT_FALSE(pair_->client().IsOpen());
}

}  // namespace
}  // namespace kvcs::transport::test

namespace kvcs::transport::test {
namespace {

// Records, per stream id, the order in which bytes became readable at the receiver.
struct OrderLog : StreamVisitor {
  OrderLog(Stream* s, std::vector<StreamId>* log) : s(s), log(log) {}
  void OnCanRead() override {
    uint8_t buf[4096];
    while (s->Read(buf).bytes_read > 0) log->push_back(s->GetStreamId());
  }
  void OnCanWrite() override {}
  void OnResetStreamReceived(ErrorCode) override {}
  void OnStopSendingReceived(ErrorCode) override {}
  Stream* s;
  std::vector<StreamId>* log;
};

TEST(InMemorySendOrderTest, LowerSendOrderDrainsFirstUnderLimitedCapacity) {
  InMemoryOptions co;
  co.send_capacity_per_pump = 1000;
  co.stream_window = 1 << 20;
  InMemoryOptions so = co;
  InMemorySessionPair pair(co, so);
  std::vector<StreamId> log;
  struct Accept : Visitor {
    using Visitor::Visitor;
    std::vector<StreamId>* log = nullptr;
    void OnIncomingUnidirectionalStreamAvailable() override {
      while (Stream* st = s_->AcceptIncomingUnidirectionalStream())
        st->SetVisitor(std::make_unique<OrderLog>(st, log));
    }
  };
  Visitor cv(&pair.client());
  Accept sv(&pair.server());
  sv.log = &log;
  pair.client().SetVisitor(&cv);
  pair.server().SetVisitor(&sv);
  pair.Connect();
  pair.RunUntilIdle();
  Stream* low = pair.client().OpenOutgoingUnidirectionalStream();   // opened first...
  Stream* high = pair.client().OpenOutgoingUnidirectionalStream();  // ...but more important
  low->SetSendOrder(100);
  high->SetSendOrder(5);
  EXPECT_EQ(high->GetSendOrder(), 5u);
  Bytes data(10000, 0xAB);
  ASSERT_TRUE(low->Write(data, true).ok());
  ASSERT_TRUE(high->Write(data, true).ok());
  const StreamId low_id = low->GetStreamId(), high_id = high->GetStreamId();
  pair.RunUntilIdle();  // both streams finish and are destroyed here
  ASSERT_FALSE(log.empty());
  // Every chunk of `high` arrived before the first chunk of `low`.
  auto first_low = std::find(log.begin(), log.end(), low_id);
  ASSERT_NE(first_low, log.end());
  EXPECT_GT(std::count(log.begin(), log.end(), high_id), 1);
  EXPECT_EQ(std::count(log.begin(), first_low, high_id),
            std::count(log.begin(), log.end(), high_id));
}

}  // namespace
}  // namespace kvcs::transport::test
