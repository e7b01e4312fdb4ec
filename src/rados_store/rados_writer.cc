#include "rados_store/rados_writer.h"

#include <algorithm>

namespace kvcs::rados_store {

using store::StoreError;

RadosWriter::RadosWriter(std::shared_ptr<RadosIo> io, std::string bucket_id, std::string key,
                         store::PutOptions options, uint64_t stripe_bytes, uint64_t limit,
                         DescribeVersion describe, Publish publish)
    : io_(std::move(io)),
      bucket_id_(std::move(bucket_id)),
      key_(std::move(key)),
      options_(std::move(options)),
      stripe_bytes_(stripe_bytes),
      limit_(limit),
      describe_(std::move(describe)),
      publish_(std::move(publish)),
      version_(NewId(16)) {}

RadosWriter::~RadosWriter() {
  if (!published_ && wrote_any_) RemoveStripes();
}

void RadosWriter::RemoveStripes() {
  std::vector<std::string> oids;
  for (uint64_t n = 0; n <= stripes_; ++n) oids.push_back(StripeObject(bucket_id_, version_, n));
  (void)io_->RemoveAll(oids);  // best effort: what is left is unreferenced
  wrote_any_ = false;
}

Status RadosWriter::Fail(Status s) {
  done_ = true;
  if (wrote_any_) RemoveStripes();
  return s;
}

Status RadosWriter::WriteStripe(uint64_t n, ByteSpan data) {
  WriteOp op;
  rados_write_op_write_full(op.op, reinterpret_cast<const char*>(data.data()), data.size());
  if (!wrote_any_) first_write_ = std::chrono::steady_clock::now();
  wrote_any_ = true;
  const int r = io_->Write(op, StripeObject(bucket_id_, version_, n));
  if (r < 0) return RadosError(r, "writing " + key_);
  return Status::Ok();
}

Status RadosWriter::Write(ByteSpan data) {
  if (done_) return Status(Code::kFailedPrecondition, "write after commit or failure");
  if (data.size() > limit_ - written_) {
    return Fail(
        StoreErr(Code::kResourceExhausted, StoreError::kEntityTooLarge, "object too large"));
  }
  sha_.Update(data);
  md5_.Update(data);
  written_ += data.size();
  while (!data.empty()) {
    const size_t n =
        static_cast<size_t>(std::min<uint64_t>(data.size(), stripe_bytes_ - buf_.size()));
    buf_.insert(buf_.end(), data.begin(), data.begin() + static_cast<ptrdiff_t>(n));
    data = data.subspan(n);
    if (buf_.size() < stripe_bytes_) break;
    // A full stripe: stripe 0 waits for Commit (it carries the metadata), the others go now.
    if (stripes_ == 0) {
      stripe0_ = std::move(buf_);
    } else {
      Status s = WriteStripe(stripes_, buf_);
      if (!s.ok()) return Fail(s);
    }
    buf_.clear();
    ++stripes_;
  }
  return Status::Ok();
}

Result<store::ObjectMeta> RadosWriter::Commit() {
  if (done_) return Status(Code::kFailedPrecondition, "commit after commit or failure");
  done_ = true;
  if (options_.expected_size && *options_.expected_size != written_) {
    return Fail(StoreErr(Code::kInvalidArgument, StoreError::kIncompleteBody,
                         "body has " + std::to_string(written_) + " bytes, expected " +
                             std::to_string(*options_.expected_size)));
  }
  WrittenVersion v;
  v.md5 = md5_.Finish();
  v.sha256 = sha_.Finish();
  if (options_.expected_md5 && !ConstantTimeEqual(*options_.expected_md5, v.md5)) {
    return Fail(StoreErr(Code::kInvalidArgument, StoreError::kBadDigest,
                         "Content-MD5 does not match the body"));
  }
  if (options_.expected_sha256 && !ConstantTimeEqual(*options_.expected_sha256, v.sha256)) {
    return Fail(StoreErr(Code::kInvalidArgument, StoreError::kSha256Mismatch,
                         "x-amz-content-sha256 does not match the body"));
  }
  v.segment = {version_, written_, stripe_bytes_};
  // The partial last stripe (when stripe 0 is already full), then stripe 0 with the xattrs: both
  // at once.
  const bool single = stripes_ == 0;
  ByteSpan first = single ? ByteSpan(buf_) : ByteSpan(stripe0_);
  const std::string meta = describe_(v);
  WriteOp op0;
  rados_write_op_write_full(op0.op, reinterpret_cast<const char*>(first.data()), first.size());
  rados_write_op_setxattr(op0.op, kKeyXattr, key_.data(), key_.size());
  rados_write_op_setxattr(op0.op, kMetaXattr, meta.data(), meta.size());
  Completion c0;
  if (!wrote_any_) first_write_ = std::chrono::steady_clock::now();
  wrote_any_ = true;
  int r0 = io_->AioWrite(op0, StripeObject(bucket_id_, version_, 0), c0);
  Status last;
  if (!single && !buf_.empty()) last = WriteStripe(stripes_, buf_);
  if (r0 == 0) r0 = c0.Wait();
  if (r0 < 0) return Fail(RadosError(r0, "writing " + key_));
  if (!last.ok()) return Fail(last);
  if (std::chrono::duration<double>(std::chrono::steady_clock::now() - first_write_).count() >
      kMaxWriteAgeS) {  // a sweep may be removing these stripes (rados_sweep.h)
    return Fail(Status(Code::kUnavailable, "rados: writing " + key_ + " took longer than " +
                                               std::to_string(int(kMaxWriteAgeS)) +
                                               " s; its stripes may be swept as orphans"));
  }
  auto published = publish_(v);
  if (!published.ok()) return Fail(published.status());
  published_ = true;
  buf_.clear();
  buf_.shrink_to_fit();
  stripe0_.clear();
  stripe0_.shrink_to_fit();
  return published;
}

}  // namespace kvcs::rados_store
