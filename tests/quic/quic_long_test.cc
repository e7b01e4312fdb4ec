// Long QUIC end-to-end test (CTest label 'long'): 1 GiB on one stream, digests compared.
#include <gtest/gtest.h>

#include "tests/quic/quic_test_support.h"

namespace kvcs::quic::test {
namespace {

TEST(QuicLong, OneGiBOnOneStream) {
  ServerApp server;
  ClientLoop loop(std::chrono::seconds(120));
  ClientVisitor visitor;
  auto s = QuicClientSession::Connect(loop.io, MakeClientConfig(server.port()), &visitor);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto session = std::move(*s);
  ASSERT_TRUE(loop.RunUntil([&] { return visitor.ready || visitor.closed; }, "handshake"));
  ASSERT_TRUE(visitor.ready) << visitor.info.ToString();
  constexpr uint64_t kSize = 1ull << 30;
  Stream* st = session->OpenOutgoingBidirectionalStream();
  ASSERT_TRUE(st);
  auto send = Attach(st, std::make_shared<SendStream>(st, 'D', kSize, 2024));
  auto t0 = std::chrono::steady_clock::now();
  send->Start();
  ASSERT_TRUE(loop.RunUntil([&] { return send->reply_fin; }, "1 GiB digest reply"));
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(send->reply.size(), 40u);
  EXPECT_EQ(GetU64(send->reply.data()), kSize);
  EXPECT_TRUE(
      std::equal(send->sent_digest.begin(), send->sent_digest.end(), send->reply.begin() + 8));
  std::cout << "1 GiB in " << secs << " s (" << (kSize * 8 / secs / 1e9)
            << " Gbit/s incl. payload generation and SHA-256 on both sides)\n";
}

}  // namespace
}  // namespace kvcs::quic::test
