#include "s3client/backend_reader.h"

#include <algorithm>

#include "s3client/backend_mapping.h"
#include "s3client/backend_store.h"  // kMaxCoalescedGetBytes

namespace kvcs::s3client {

using store::StoreError;

bool ReadAheadBudget::TryReserve(uint64_t bytes) {
  const auto want = static_cast<int64_t>(bytes);
  int64_t left = left_.load(std::memory_order_relaxed);
  while (left >= want && !left_.compare_exchange_weak(left, left - want)) {
  }
  return left >= want;
}

BackendReader::BackendReader(S3Client* client, ReadAheadBudget* budget, uint32_t read_ahead_factor,
                             std::string bucket, store::ObjectMeta meta, Bytes prefix)
    : client_(client),
      budget_(budget),
      read_ahead_factor_(read_ahead_factor),
      bucket_(std::move(bucket)),
      meta_(std::move(meta)),
      prefix_(std::move(prefix)) {}

BackendReader::~BackendReader() { Release(); }

Result<size_t> BackendReader::ReadAt(uint64_t offset, std::span<uint8_t> out) const {
  if (offset >= meta_.size || out.empty()) return size_t{0};
  out = out.first(static_cast<size_t>(std::min<uint64_t>(out.size(), meta_.size - offset)));
  if (FromKept(offset, out)) return out.size();
  auto r = client_->GetRange(bucket_, meta_.key, offset, out, meta_.etag);
  return Finish(r, out.size());
}

bool BackendReader::FromKept(uint64_t offset, std::span<uint8_t> out) const {
  if (offset <= prefix_.size() && out.size() <= prefix_.size() - offset) {
    std::copy_n(prefix_.begin() + static_cast<ptrdiff_t>(offset), out.size(), out.begin());
    return true;
  }
  std::lock_guard lock(mu_);
  if (offset < ahead_offset_ || offset - ahead_offset_ > ahead_.size() ||
      out.size() > ahead_.size() - (offset - ahead_offset_)) {
    return false;
  }
  std::copy_n(ahead_.begin() + static_cast<ptrdiff_t>(offset - ahead_offset_), out.size(),
              out.begin());
  last_end_ = offset + out.size();
  return true;
}

uint64_t BackendReader::PlanAhead(uint64_t offset, uint64_t end) const {
  std::lock_guard lock(mu_);
  const bool sequential =
      last_end_ != kNone && offset >= last_end_ && offset - last_end_ <= kReadAheadGap;
  last_end_ = end;
  // The kept bytes did not serve this read (ReadMany asked FromKept first): they are behind it
  // now; give their budget back before reserving more.
  budget_->Give(reserved_);
  reserved_ = 0;
  ahead_.clear();
  streak_ = sequential ? streak_ + 1 : 0;
  if (!sequential || end >= meta_.size) return 0;
  // Grows with the run of consecutive reads (1, 2, .. factor times the read): the early layers,
  // which the client waits for first, are not slowed by large GETs.
  const uint64_t factor = std::min<uint64_t>(streak_, read_ahead_factor_);
  uint64_t want = std::min<uint64_t>((end - offset) * factor, meta_.size - end);
  want = std::min<uint64_t>(want, kMaxCoalescedGetBytes - (end - offset));
  if (want == 0) return 0;
  if (!budget_->TryReserve(want)) return 0;  // budget spent: read only what is asked
  reserved_ = want;  // held from now; KeepAhead keeps the bytes, Release gives it back
  return want;
}

void BackendReader::KeepAhead(uint64_t offset, Bytes bytes) const {
  std::lock_guard lock(mu_);
  ahead_offset_ = offset;
  ahead_ = std::move(bytes);
}

void BackendReader::Release() const {
  std::lock_guard lock(mu_);
  budget_->Give(reserved_);
  reserved_ = 0;
  ahead_.clear();
  ahead_.shrink_to_fit();
}

Result<size_t> BackendReader::Finish(const Result<size_t>& r, size_t want) const {
  if (!r.ok()) {
    if (r.status().Is(ClientError::kPreconditionFailed) || r.status().Is(ClientError::kNoSuchKey)) {
      return StoreErr(Code::kFailedPrecondition, StoreError::kIo,
                      "S3 backend: object " + meta_.key +
                          " changed or vanished after it was opened; reopen it");
    }
    return ToStoreStatus(r.status());
  }
  if (*r != want) {  // the size was pinned at Open: a short read means another version
    return StoreErr(Code::kIoError, StoreError::kIo,
                    "S3 backend: short read of " + meta_.key + " (object changed?)");
  }
  return *r;
}

}  // namespace kvcs::s3client
