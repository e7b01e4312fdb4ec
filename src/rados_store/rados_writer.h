// RadosWriter: the RADOS backend's ObjectWriter, for a PUT and for a multipart part alike. The
// bytes become a new version (a fresh random name, docs/protocols/rados-backend.md): stripes
// 1, 2, ... are written as they fill while the body streams in; stripe 0 is kept until Commit,
// which checks the declared size and digests, then writes the last stripe and stripe 0 with its
// xattrs (kvcs.key, kvcs.meta) in ONE write op, and hands the version to `publish` (the store's
// compare-and-set of the index entry, or of the part record). Nothing is visible before publish
// succeeds; a failed or dropped writer removes the stripes it wrote (a crash leaves unreferenced
// stripes, never a torn or half-listed object).
//
// Thread-safety: one thread at a time.
#ifndef KVCS_RADOS_STORE_RADOS_WRITER_H_
#define KVCS_RADOS_STORE_RADOS_WRITER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/bytes.h"
#include "common/crypto.h"
#include "rados_store/rados_io.h"
#include "rados_store/rados_layout.h"
#include "store/object_store.h"

namespace kvcs::rados_store {

// A writer publishes nothing whose first stripe it wrote longer ago than this (Commit fails with
// kUnavailable and removes the stripes): SweepOrphans (rados_sweep.h) relies on it to never
// remove a version a writer may still publish.
inline constexpr double kMaxWriteAgeS = 3600;

// What Commit hands to the publisher: the written version and what is known about its bytes.
struct WrittenVersion {
  Segment segment;
  store::Md5 md5{};
  Digest sha256{};
};
// Publishes the version (and returns the object's metadata); on failure the writer removes its
// stripes. `xattr_meta` is what stripe 0 will carry as kvcs.meta: the publisher is called after
// the stripes are written.
using Publish = std::function<Result<store::ObjectMeta>(const WrittenVersion&)>;
// The kvcs.meta xattr of the version (an ObjectRecord or PartRecord, encoded).
using DescribeVersion = std::function<std::string(const WrittenVersion&)>;

class RadosWriter final : public store::ObjectWriter {
 public:
  // `limit`: the most bytes this writer takes (kMaxObjectBytes, or kMaxPartBytes for a part).
  RadosWriter(std::shared_ptr<RadosIo> io, std::string bucket_id, std::string key,
              store::PutOptions options, uint64_t stripe_bytes, uint64_t limit,
              DescribeVersion describe, Publish publish);
  ~RadosWriter() override;

  Status Write(ByteSpan data) override;
  Result<store::ObjectMeta> Commit() override;
  uint64_t bytes_written() const override { return written_; }

 private:
  Status WriteStripe(uint64_t n, ByteSpan data);
  Status Fail(Status s);
  void RemoveStripes();

  const std::shared_ptr<RadosIo> io_;
  const std::string bucket_id_, key_;
  const store::PutOptions options_;
  const uint64_t stripe_bytes_, limit_;
  const DescribeVersion describe_;
  const Publish publish_;
  const std::string version_;
  Bytes stripe0_;         // stripe 0, written at Commit
  Bytes buf_;             // the stripe being filled
  uint64_t stripes_ = 0;  // stripes complete (0 kept in stripe0_, the others written)
  uint64_t written_ = 0;
  Sha256 sha_;
  store::Md5Hasher md5_;
  bool done_ = false, published_ = false, wrote_any_ = false;
  std::chrono::steady_clock::time_point first_write_{};  // of the first stripe written
};

}  // namespace kvcs::rados_store

#endif  // KVCS_RADOS_STORE_RADOS_WRITER_H_
