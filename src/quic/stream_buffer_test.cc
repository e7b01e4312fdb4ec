#include "quic/stream_buffer.h"

#include <gtest/gtest.h>

#include <numeric>

namespace kvcs::quic {
namespace {

std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

TEST(SendBufferTest, GatherMarkAckAcrossChunks) {
  ChunkPool pool;
  SendBuffer b(&pool);
  auto data = Pattern(3 * ChunkPool::kChunkSize + 123, 1);
  b.Append(data);
  EXPECT_EQ(b.Unsent(), data.size());
  std::vector<uint8_t> out;
  while (b.Unsent() > 0) {
    ngtcp2_vec v[2];
    size_t n = b.GatherUnsent(v, 2);
    ASSERT_GT(n, 0u);
    size_t take = std::min<size_t>(v[0].len, 1000);
    out.insert(out.end(), v[0].base, v[0].base + take);
    b.MarkSent(take);
  }
  EXPECT_EQ(out, data);
  EXPECT_EQ(b.Buffered(), data.size());  // nothing acknowledged yet
  b.Ack(ChunkPool::kChunkSize + 5);
  EXPECT_EQ(b.Buffered(), data.size() - ChunkPool::kChunkSize - 5);
  b.Ack(data.size());
  EXPECT_EQ(b.Buffered(), 0u);
}

TEST(RecvBufferTest, AppendPeekConsumeRead) {
  ChunkPool pool;
  RecvBuffer r(&pool);
  auto data = Pattern(2 * ChunkPool::kChunkSize + 77, 9);
  for (size_t off = 0; off < data.size(); off += 1400) {
    r.Append(data.data() + off, std::min<size_t>(1400, data.size() - off));
  }
  EXPECT_EQ(r.Readable(), data.size());
  EXPECT_EQ(r.Peek().size(), ChunkPool::kChunkSize);
  r.Consume(10);
  std::vector<uint8_t> out(data.size());
  size_t n = r.Read(out);
  EXPECT_EQ(n, data.size() - 10);
  EXPECT_TRUE(std::equal(out.begin(), out.begin() + n, data.begin() + 10));
  EXPECT_EQ(r.Readable(), 0u);
  r.Append(data.data(), 5);
  EXPECT_EQ(r.Clear(), 5u);
}

}  // namespace
}  // namespace kvcs::quic
