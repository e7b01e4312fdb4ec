// End-to-end tests of the QUIC transport over real UDP sockets on 127.0.0.1. The server runs on
// its own thread and io_context; the client runs in the test thread. Every wait is bounded by a
// deadline (ClientLoop), so failures fail instead of hanging. No sleeps, no timing assertions.
#include <gtest/gtest.h>

#include "tests/quic/quic_test_support.h"
#include "transport/session.h"

namespace kvcs::quic::test {
namespace {

struct Connected {
  ClientVisitor visitor;
  std::unique_ptr<QuicClientSession> session;
};

std::unique_ptr<Connected> Connect(ClientLoop& loop, ClientConfig cfg) {
  auto c = std::make_unique<Connected>();
  auto s = QuicClientSession::Connect(loop.io, cfg, &c->visitor);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (!s.ok()) return nullptr;
  c->session = std::move(*s);
  return c;
}

std::shared_ptr<SendStream> OpenSend(Session& s, char cmd, uint64_t size, uint64_t seed,
                                     bool bidi = true) {
  Stream* st = bidi ? s.OpenOutgoingBidirectionalStream() : s.OpenOutgoingUnidirectionalStream();
  if (!st) return nullptr;
  auto p = Attach(st, std::make_shared<SendStream>(st, cmd, size, seed));
  p->Start();
  return p;
}

// Checks a 'D' reply: u64 count + digest.
void ExpectDigestReply(const std::shared_ptr<SendStream>& s, uint64_t size) {
  ASSERT_EQ(s->reply.size(), 40u);
  EXPECT_EQ(GetU64(s->reply.data()), size);
  EXPECT_TRUE(std::equal(s->sent_digest.begin(), s->sent_digest.end(), s->reply.begin() + 8))
      << "digest mismatch";
}

TEST(QuicE2E, HandshakeAndOneStream) {
  ServerApp server;
  ClientLoop loop;
  auto c = Connect(loop, MakeClientConfig(server.port()));
  ASSERT_TRUE(c);
  ASSERT_TRUE(loop.RunUntil([&] { return c->visitor.ready || c->visitor.closed; }, "handshake"));
  ASSERT_TRUE(c->visitor.ready) << c->visitor.info.ToString();
  EXPECT_EQ(c->session->GetNegotiatedAlpn(), kAlpn);
  auto s = OpenSend(*c->session, 'D', 100000, 1);
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(loop.RunUntil([&] { return s->reply_fin; }, "digest reply"));
  ExpectDigestReply(s, 100000);
}

}  // namespace
}  // namespace kvcs::quic::test
