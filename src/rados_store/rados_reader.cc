#include "rados_store/rados_reader.h"

#include <algorithm>
#include <cerrno>

namespace kvcs::rados_store {

using store::StoreError;

RadosReader::RadosReader(std::shared_ptr<RadosIo> io, std::string bucket_id, ObjectRecord record)
    : io_(std::move(io)), bucket_id_(std::move(bucket_id)), record_(std::move(record)) {
  uint64_t at = 0;
  for (const Segment& s : record_.segments) {
    starts_.push_back(at);
    at += s.size;
  }
}

void RadosReader::Locate(uint64_t offset, size_t len, std::vector<Piece>* out) const {
  size_t pos = 0;
  auto seg = std::upper_bound(starts_.begin(), starts_.end(), offset) - starts_.begin() - 1;
  while (len > 0 && seg >= 0 && static_cast<size_t>(seg) < starts_.size()) {
    const Segment& s = record_.segments[static_cast<size_t>(seg)];
    const uint64_t in_seg = offset - starts_[static_cast<size_t>(seg)];
    if (in_seg >= s.size) {
      ++seg;
      continue;
    }
    const uint64_t stripe = in_seg / s.stripe_bytes;
    const uint64_t in_stripe = in_seg % s.stripe_bytes;
    const size_t n =
        static_cast<size_t>(std::min<uint64_t>({len, s.stripe_bytes - in_stripe, s.size - in_seg}));
    out->push_back({StripeObject(bucket_id_, s.version, stripe), in_stripe, n, pos});
    offset += n;
    pos += n;
    len -= n;
  }
}

Status RadosReader::ReadFailure(int err) const {
  if (err == -ENOENT || err >= 0) {
    return StoreErr(
        Code::kFailedPrecondition, StoreError::kIo,
        "rados: object " + record_.meta.key + " changed since it was opened (its version is gone)");
  }
  return RadosError(err, "read of " + record_.meta.key);
}

Result<size_t> RadosReader::ReadAt(uint64_t offset, std::span<uint8_t> out) const {
  const uint64_t size = record_.meta.size;
  if (offset >= size || out.empty()) return size_t{0};
  const size_t len = static_cast<size_t>(std::min<uint64_t>(out.size(), size - offset));
  std::vector<Piece> pieces;
  Locate(offset, len, &pieces);
  struct Flight {
    ReadOp op;
    Completion c;
    size_t got = 0;
    int prval = 0;
    int started = 0;
  };
  std::vector<std::unique_ptr<Flight>> flights;
  for (const Piece& p : pieces) {
    auto f = std::make_unique<Flight>();
    rados_read_op_read(f->op.op, p.offset, p.len, reinterpret_cast<char*>(out.data() + p.pos),
                       &f->got, &f->prval);
    f->started = io_->AioRead(f->op, p.oid, f->c);
    flights.push_back(std::move(f));
  }
  Status failed;
  for (size_t i = 0; i < flights.size(); ++i) {
    Flight& f = *flights[i];
    int r = f.started < 0 ? f.started : f.c.Wait();
    if (r >= 0 && f.prval < 0) r = f.prval;
    if (failed.ok() && (r < 0 || f.got != pieces[i].len)) failed = ReadFailure(r);
  }
  if (!failed.ok()) return failed;
  return len;
}

}  // namespace kvcs::rados_store
