#include "s3/payload_reader.h"

#include "s3/s3_error.h"

namespace kvcs::s3 {

void PayloadReader::ExpectPlain(std::optional<Digest> expected_sha256) {
  expected_sha256_ = expected_sha256;
}

void PayloadReader::ExpectAwsChunked(std::optional<ChunkSigning> signing,
                                     std::optional<uint64_t> decoded_length) {
  decoded_length_ = decoded_length;
  decoder_.emplace(std::move(signing));
  staging_.resize(kRawBufferBytes);
}

http::Awaitable<Result<size_t>> PayloadReader::Read(std::span<uint8_t> out) {
  if (!error_.ok()) co_return error_;
  if (out.empty()) co_return size_t{0};
  auto r = co_await ReadInner(out);
  if (!r.ok()) {
    error_ = r.status();
    raw_.Abandon();
  }
  co_return r;
}

http::Awaitable<Result<size_t>> PayloadReader::ReadRaw(std::span<uint8_t> out) {
  auto n = co_await raw_.Read(out);
  if (n.ok()) co_return n;
  S3Error e;
  switch (static_cast<http::BodyError>(n.status().detail())) {
    case http::BodyError::kTimeout:
      e = S3Error::kRequestTimeout;
      break;
    case http::BodyError::kTooLarge:
      e = S3Error::kEntityTooLarge;
      break;
    default:
      e = S3Error::kIncompleteBody;
      break;
  }
  co_return S3Status(e, n.status().message());
}

http::Awaitable<Result<size_t>> PayloadReader::ReadInner(std::span<uint8_t> out) {
  if (!decoder_) {
    auto n = co_await ReadRaw(out);
    if (!n.ok()) co_return n;
    if (*n > 0) {
      if (expected_sha256_) sha_.Update(ByteSpan(out.data(), *n));
      co_return n;
    }
    if (expected_sha256_ && !finished_) {
      finished_ = true;
      if (sha_.Finish() != *expected_sha256_) {
        co_return S3Status(S3Error::kXAmzContentSHA256Mismatch,
                           "The provided 'x-amz-content-sha256' header does not match what "
                           "was computed.");
      }
    }
    co_return size_t{0};
  }
  for (;;) {
    if (!avail_.empty()) {
      auto produced = decoder_->Decode(&avail_, out);
      if (!produced.ok()) co_return produced;
      if (*produced > 0) co_return produced;
      if (!avail_.empty()) continue;
    }
    if (decoder_->done()) {
      uint8_t extra[1];
      auto n = co_await ReadRaw(std::span<uint8_t>(extra, 1));
      if (!n.ok()) co_return n;
      if (*n > 0) co_return S3Status(S3Error::kInvalidRequest, "data after aws-chunked end");
      if (decoded_length_ && *decoded_length_ != decoder_->decoded_bytes()) {
        co_return S3Status(S3Error::kIncompleteBody,
                           "x-amz-decoded-content-length does not match the chunked payload");
      }
      co_return size_t{0};
    }
    auto n = co_await ReadRaw(staging_);
    if (!n.ok()) co_return n;
    if (*n == 0) {
      co_return S3Status(S3Error::kIncompleteBody, "aws-chunked body ended before its last chunk");
    }
    avail_ = ByteSpan(staging_.data(), *n);
  }
}

}  // namespace kvcs::s3
