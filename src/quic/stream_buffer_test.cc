#include "quic/stream_buffer.h"

#include <gtest/gtest.h>

#include <memory>
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

// Copies and shared buffers interleaved (an object header, then its payload by reference): the
// bytes come out in order, a shared buffer is referenced in place (not copied) until its bytes
// are acknowledged, and copies after a fully sent segment are still sent.
TEST(SendBufferTest, SharedBuffersAreReferencedUntilAcknowledged) {
  ChunkPool pool;
  SendBuffer b(&pool);
  std::vector<uint8_t> expect;
  std::vector<std::shared_ptr<const std::vector<uint8_t>>> payloads;
  for (uint8_t i = 0; i < 5; ++i) {
    auto header = Pattern(7, i);
    b.Append(header);
    expect.insert(expect.end(), header.begin(), header.end());
    payloads.push_back(std::make_shared<const std::vector<uint8_t>>(Pattern(40000, 100 + i)));
    b.AppendShared(payloads.back());
    expect.insert(expect.end(), payloads.back()->begin(), payloads.back()->end());
  }
  auto tiny = std::make_shared<const std::vector<uint8_t>>(Pattern(10, 3));
  b.AppendShared(tiny);  // small: copied
  expect.insert(expect.end(), tiny->begin(), tiny->end());
  EXPECT_EQ(tiny.use_count(), 1);
  EXPECT_EQ(b.Unsent(), expect.size());
  std::vector<uint8_t> out;
  bool saw_in_place = false;
  auto drain = [&] {
    while (b.Unsent() > 0) {
      ngtcp2_vec v[3];
      size_t n = b.GatherUnsent(v, 3);
      ASSERT_GT(n, 0u);
      for (const auto& p : payloads) {
        if (v[0].base >= p->data() && v[0].base < p->data() + p->size()) saw_in_place = true;
      }
      size_t take = std::min<size_t>(v[0].len, 1300);
      out.insert(out.end(), v[0].base, v[0].base + take);
      b.MarkSent(take);
    }
  };
  drain();
  // Everything is sent; a copy appended now must still go out.
  b.Append(Pattern(3, 9));
  auto tail = Pattern(3, 9);
  expect.insert(expect.end(), tail.begin(), tail.end());
  drain();
  EXPECT_EQ(out, expect);
  EXPECT_TRUE(saw_in_place) << "shared payloads are sent from their own memory";
  EXPECT_EQ(b.Buffered(), expect.size());
  EXPECT_EQ(payloads[0].use_count(), 2);
  b.Ack(7 + 40000 + 3);  // the first header and payload, and part of the second header
  EXPECT_EQ(payloads[0].use_count(), 1) << "released once acknowledged";
  EXPECT_EQ(payloads[1].use_count(), 2);
  EXPECT_EQ(b.Buffered(), expect.size() - (7 + 40000 + 3));
  b.Ack(expect.size());
  EXPECT_EQ(b.Buffered(), 0u);
  for (const auto& p : payloads) EXPECT_EQ(p.use_count(), 1);
  b.AppendShared(payloads[4]);
  EXPECT_EQ(payloads[4].use_count(), 2);
  b.Clear();
  EXPECT_EQ(payloads[4].use_count(), 1);
  EXPECT_EQ(b.Unsent(), 0u);
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
