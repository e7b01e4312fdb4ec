// RadosReader: the RADOS backend's ObjectReader, one version of one object as the bucket index
// described it when it was opened: its metadata and its segments (one per PUT, one per multipart
// part), each striped over RADOS objects of stripe_bytes. A version's objects are written once
// and never changed (docs/protocols/rados-backend.md), so every byte a reader returns belongs to
// the version it opened; if the key is overwritten or deleted and the old version's objects are
// removed, reads fail (kFailedPrecondition, "changed since open") instead of returning other bytes.
//
// Locate() cuts a byte range into per-RADOS-object pieces; ReadAt reads them concurrently with
// asynchronous librados reads; RadosStore::ReadMany batches the pieces of many ranges.
//
// Thread-safety: all methods are thread-safe.
#ifndef KVCS_RADOS_STORE_RADOS_READER_H_
#define KVCS_RADOS_STORE_RADOS_READER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "rados_store/rados_io.h"
#include "rados_store/rados_layout.h"
#include "store/object_store.h"

namespace kvcs::rados_store {

class RadosReader final : public store::ObjectReader {
 public:
  RadosReader(std::shared_ptr<RadosIo> io, std::string bucket_id, ObjectRecord record);

  const store::ObjectMeta& meta() const override { return record_.meta; }
  Result<size_t> ReadAt(uint64_t offset, std::span<uint8_t> out) const override;

  // One piece of a range: `len` bytes at `offset` in RADOS object `oid`, for position `pos` of
  // the caller's buffer.
  struct Piece {
    std::string oid;
    uint64_t offset = 0;
    size_t len = 0;
    size_t pos = 0;
  };
  // Appends the pieces of [offset, offset + len) (REQUIRES: inside the object).
  void Locate(uint64_t offset, size_t len, std::vector<Piece>* out) const;
  // The error a failed or short piece read means.
  Status ReadFailure(int err) const;
  // The connection (and so the pool and namespace) the reader's objects are in.
  const RadosIo* io() const { return io_.get(); }

 private:
  const std::shared_ptr<RadosIo> io_;
  const std::string bucket_id_;
  const ObjectRecord record_;
  std::vector<uint64_t> starts_;  // starts_[i]: offset of segment i in the object
};

}  // namespace kvcs::rados_store

#endif  // KVCS_RADOS_STORE_RADOS_READER_H_
