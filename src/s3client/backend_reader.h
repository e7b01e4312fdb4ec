// BackendReader: S3BackendStore's ObjectReader, a pinned snapshot of one object version. Opened by
// one range GET of the object's first bytes (its metadata and ETag come from that response, the
// bytes are kept); every later read is a range GET with If-Match on that ETag, so all bytes a
// reader returns belong to the version it opened (a changed or vanished object fails the read,
// kFailedPrecondition, instead of returning other bytes).
//
// Read-ahead (S3BackendStore::ReadMany only): when a read starts where this reader's previous
// read ended (give or take kReadAheadGap), the GET also fetches up to read_ahead_factor times its
// length beyond it, and the reader keeps those bytes for the next reads (layer l+1, l+2, ... of a
// block read layer-major). The kept bytes come from an If-Match GET, so they are of the pinned
// version too. Their total over all readers of a store is bounded by one ReadAheadBudget.
//
// Thread-safety: every method is thread-safe. The client and the budget must outlive the reader.
#ifndef KVCS_S3CLIENT_BACKEND_READER_H_
#define KVCS_S3CLIENT_BACKEND_READER_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>

#include "common/bytes.h"
#include "s3client/s3_client.h"
#include "store/object_store.h"

namespace kvcs::s3client {

// The bytes of read-ahead all readers of one store may still hold
// (S3BackendOptions::read_ahead_budget). Lock-free.
class ReadAheadBudget {
 public:
  explicit ReadAheadBudget(uint64_t bytes) : left_(static_cast<int64_t>(bytes)) {}
  // Takes `bytes` from the budget; false (nothing taken) when fewer are left.
  bool TryReserve(uint64_t bytes);
  // Returns `bytes` taken earlier.
  void Give(uint64_t bytes) {
    left_.fetch_add(static_cast<int64_t>(bytes), std::memory_order_relaxed);
  }

 private:
  std::atomic<int64_t> left_;
};

class BackendReader final : public store::ObjectReader {
 public:
  // `bucket` is the backend bucket; `prefix` the object's first bytes (may be empty).
  BackendReader(S3Client* client, ReadAheadBudget* budget, uint32_t read_ahead_factor,
                std::string bucket, store::ObjectMeta meta, Bytes prefix);
  ~BackendReader() override;

  const store::ObjectMeta& meta() const override { return meta_; }
  Result<size_t> ReadAt(uint64_t offset, std::span<uint8_t> out) const override;

  // What ReadMany drives:
  // Copies [offset, offset + out.size()) from the bytes kept at Open or by read-ahead when they
  // hold all of it.
  bool FromKept(uint64_t offset, std::span<uint8_t> out) const;
  // Called for each GET ReadMany sends for [offset, end): how many bytes past `end` to fetch as
  // read-ahead (0 unless the read continues the previous one), reserved from the budget.
  uint64_t PlanAhead(uint64_t offset, uint64_t end) const;
  // Keeps `bytes` (read at `offset`), the read-ahead PlanAhead reserved budget for.
  void KeepAhead(uint64_t offset, Bytes bytes) const;
  // Drops the kept read-ahead and gives its budget back.
  void Release() const;
  // The store's answer for a GET of `want` bytes that returned `r` (a short read or a failed
  // If-Match means the object changed since Open).
  Result<size_t> Finish(const Result<size_t>& r, size_t want) const;
  const std::string& bucket() const { return bucket_; }

 private:
  static constexpr uint64_t kNone = ~uint64_t{0};
  // A read "continues" the previous one if it starts at most this far past its end (room for
  // alignment padding between a container's layers).
  static constexpr uint64_t kReadAheadGap = 4096;

  S3Client* const client_;
  ReadAheadBudget* const budget_;
  const uint32_t read_ahead_factor_;
  const std::string bucket_;
  const store::ObjectMeta meta_;
  const Bytes prefix_;  // the first bytes of this version (at most open_prefix_bytes)
  mutable std::mutex mu_;
  mutable uint64_t last_end_ = kNone;  // end of the previous read (ReadMany), kNone before one
  mutable uint64_t ahead_offset_ = 0;  // read-ahead bytes kept: [ahead_offset_, + ahead_.size())
  mutable Bytes ahead_;
  mutable uint64_t reserved_ = 0;  // budget held for ahead_ (or for the GET filling it)
  mutable uint64_t streak_ = 0;    // consecutive reads that continued the previous one
};

}  // namespace kvcs::s3client

#endif  // KVCS_S3CLIENT_BACKEND_READER_H_
