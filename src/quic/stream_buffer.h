// Per-stream byte buffers built from fixed 64 KiB chunks taken from a per-connection pool, so
// steady-state transfer allocates nothing.
//
// SendBuffer: bytes the application wrote, kept until the peer acknowledges them (ngtcp2 keeps
// pointers into this memory for retransmission until acked_stream_data_offset reports them):
// copies in pooled chunks, and shared immutable buffers referenced without a copy. Chunks and
// buffers are released from the front as the acknowledged prefix grows; their addresses never
// move while referenced.
// RecvBuffer: in-order bytes ngtcp2 delivered and the application has not consumed yet.
//
// Not thread-safe. The pool must outlive every buffer using it.
#ifndef KVCS_QUIC_STREAM_BUFFER_H_
#define KVCS_QUIC_STREAM_BUFFER_H_

#include <ngtcp2/ngtcp2.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <span>
#include <vector>

namespace kvcs::quic {

class ChunkPool {
 public:
  // 64 KiB: large enough that one chunk spans ~45 packets; small enough to release memory
  // promptly as acknowledgements arrive.
  static constexpr size_t kChunkSize = 64 << 10;
  // Free chunks kept for reuse (4 MiB); more are returned to the allocator.
  static constexpr size_t kMaxFree = 64;

  ChunkPool() = default;
  ChunkPool(const ChunkPool&) = delete;
  ~ChunkPool() {
    for (uint8_t* c : free_) delete[] c;
  }
  uint8_t* Get() {
    if (free_.empty()) return new uint8_t[kChunkSize];
    uint8_t* c = free_.back();
    free_.pop_back();
    return c;
  }
  void Put(uint8_t* c) {
    if (free_.size() < kMaxFree) {
      free_.push_back(c);
    } else {
      delete[] c;
    }
  }

 private:
  std::vector<uint8_t*> free_;
};

// A FIFO of bytes in chunks: [head_, tail_) in stream offsets; chunks_[0] starts at base_.
class ChunkQueue {
 public:
  explicit ChunkQueue(ChunkPool* pool) : pool_(pool) {}
  ChunkQueue(const ChunkQueue&) = delete;
  ~ChunkQueue() { Clear(); }

  void Append(const uint8_t* data, size_t len) {
    while (len > 0) {
      size_t off = static_cast<size_t>(tail_ - base_);
      size_t in_chunk = off % ChunkPool::kChunkSize;
      if (off / ChunkPool::kChunkSize >= chunks_.size()) chunks_.push_back(pool_->Get());
      size_t n = std::min(len, ChunkPool::kChunkSize - in_chunk);
      memcpy(chunks_[off / ChunkPool::kChunkSize] + in_chunk, data, n);
      data += n;
      len -= n;
      tail_ += n;
    }
  }
  // Drops bytes before `offset` (clamped to the tail) and releases whole chunks.
  void ReleaseUpTo(uint64_t offset) {
    offset = std::min(offset, tail_);
    if (offset <= head_) return;
    head_ = offset;
    while (!chunks_.empty() && base_ + ChunkPool::kChunkSize <= head_) {
      pool_->Put(chunks_.front());
      chunks_.pop_front();
      base_ += ChunkPool::kChunkSize;
    }
  }
  // Contiguous bytes starting at `offset` (head_ <= offset <= tail_).
  std::span<const uint8_t> ContiguousAt(uint64_t offset) const {
    if (offset >= tail_) return {};
    size_t off = static_cast<size_t>(offset - base_);
    size_t in_chunk = off % ChunkPool::kChunkSize;
    size_t n = std::min<uint64_t>(ChunkPool::kChunkSize - in_chunk, tail_ - offset);
    return {chunks_[off / ChunkPool::kChunkSize] + in_chunk, n};
  }
  void Clear() {
    for (uint8_t* c : chunks_) pool_->Put(c);
    chunks_.clear();
    base_ = head_ = tail_;  // offsets stay monotonic; chunk math is relative to base_
  }
  uint64_t head() const { return head_; }
  uint64_t tail() const { return tail_; }
  size_t size() const { return static_cast<size_t>(tail_ - head_); }

 private:
  ChunkPool* pool_;
  std::deque<uint8_t*> chunks_;
  uint64_t base_ = 0, head_ = 0, tail_ = 0;
};

// The stream's bytes in order, as segments: bytes the application wrote by copy live in pooled
// chunks (one ChunkQueue for all of them, consecutive copies merged into one segment); a buffer
// written shared (SendBuffer::AppendShared) is referenced in place until acknowledged, so a
// payload sent to many peers is never copied per stream.
class SendBuffer {
 public:
  // Shared buffers smaller than this are copied (a segment per tiny buffer costs more).
  static constexpr size_t kMinSharedBytes = 1024;

  explicit SendBuffer(ChunkPool* pool) : copied_(pool) {}
  void Append(std::span<const uint8_t> data) {
    if (data.empty()) return;
    if (segs_.empty() || segs_.back().shared) {
      segs_.push_back({end_, 0, copied_.tail(), nullptr});
    } else if (sent_seg_ == segs_.size()) {
      sent_seg_ = segs_.size() - 1;  // the last segment, all sent, grows unsent bytes again
    }
    copied_.Append(data.data(), data.size());
    segs_.back().size += data.size();
    end_ += data.size();
  }
  // Appends `data` without copying it; the buffer is kept (and must not change) until its bytes
  // are acknowledged or the buffer is cleared.
  void AppendShared(std::shared_ptr<const std::vector<uint8_t>> data) {
    if (data->size() < kMinSharedBytes) {
      Append(*data);
      return;
    }
    const size_t n = data->size();
    segs_.push_back({end_, n, 0, std::move(data)});
    end_ += n;
  }
  size_t Unsent() const { return static_cast<size_t>(end_ - sent_); }
  size_t Buffered() const { return static_cast<size_t>(end_ - acked_); }  // not yet acknowledged
  uint64_t end() const { return end_; }
  // Fills up to `max` vectors with unsent bytes; returns the count.
  size_t GatherUnsent(ngtcp2_vec* v, size_t max) const {
    size_t n = 0;
    uint64_t off = sent_;
    for (size_t i = sent_seg_; n < max && i < segs_.size(); ++i) {
      const Segment& s = segs_[i];
      const uint64_t seg_end = s.offset + s.size;
      while (n < max && off < seg_end) {
        if (s.shared) {
          v[n++] = {const_cast<uint8_t*>(s.shared->data() + (off - s.offset)),
                    static_cast<size_t>(seg_end - off)};
          off = seg_end;
          continue;
        }
        auto span = copied_.ContiguousAt(s.copied_offset + (off - s.offset));
        const size_t len = static_cast<size_t>(std::min<uint64_t>(span.size(), seg_end - off));
        v[n++] = {const_cast<uint8_t*>(span.data()), len};
        off += len;
      }
    }
    return n;
  }
  void MarkSent(size_t n) {
    sent_ += n;
    while (sent_seg_ < segs_.size() && segs_[sent_seg_].offset + segs_[sent_seg_].size <= sent_) {
      ++sent_seg_;
    }
  }
  // Releases what the peer acknowledged: bytes before `upto` (clamped to the end).
  void Ack(uint64_t upto) {
    upto = std::min(upto, end_);
    if (upto <= acked_) return;
    acked_ = upto;
    while (!segs_.empty() && segs_.front().offset + segs_.front().size <= acked_) {
      const Segment& f = segs_.front();
      if (!f.shared) copied_.ReleaseUpTo(f.copied_offset + f.size);
      segs_.pop_front();
      if (sent_seg_ > 0) --sent_seg_;
    }
    if (!segs_.empty() && !segs_.front().shared && segs_.front().offset < acked_) {
      const Segment& f = segs_.front();
      copied_.ReleaseUpTo(f.copied_offset + (acked_ - f.offset));
    }
  }
  void Clear() {
    copied_.Clear();
    segs_.clear();
    sent_seg_ = 0;
    acked_ = sent_ = end_;
  }

 private:
  struct Segment {
    uint64_t offset = 0;  // stream offset of the segment's first byte
    size_t size = 0;
    uint64_t copied_offset = 0;  // a copied segment: where its bytes start in copied_
    std::shared_ptr<const std::vector<uint8_t>> shared;  // null: copied
  };
  ChunkQueue copied_;
  std::deque<Segment> segs_;
  size_t sent_seg_ = 0;  // the first segment with unsent bytes (segs_.size(): none)
  uint64_t acked_ = 0, sent_ = 0, end_ = 0;
};

class RecvBuffer {
 public:
  explicit RecvBuffer(ChunkPool* pool) : q_(pool) {}
  void Append(const uint8_t* data, size_t len) { q_.Append(data, len); }
  size_t Readable() const { return q_.size(); }
  std::span<const uint8_t> Peek() const { return q_.ContiguousAt(q_.head()); }
  void Consume(size_t n) { q_.ReleaseUpTo(q_.head() + n); }
  size_t Read(std::span<uint8_t> out) {
    size_t done = 0;
    while (done < out.size()) {
      auto s = Peek();
      if (s.empty()) break;
      size_t n = std::min(s.size(), out.size() - done);
      memcpy(out.data() + done, s.data(), n);
      Consume(n);
      done += n;
    }
    return done;
  }
  // Drops everything unread; returns how many bytes were dropped.
  size_t Clear() {
    size_t n = q_.size();
    q_.Clear();
    return n;
  }

 private:
  ChunkQueue q_;
};

}  // namespace kvcs::quic

#endif  // KVCS_QUIC_STREAM_BUFFER_H_
