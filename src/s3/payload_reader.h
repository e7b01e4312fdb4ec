// The request body as S3 handlers see it: a BodyReader wrapping the HTTP server's reader that
// verifies and decodes the payload the way SigV4 declared it.
//
//   raw       - passed through (unauthenticated extensions, ExtensionAuth::kNone)
//   plain     - passed through; with a signed x-amz-content-sha256 the final Read (the one
//               returning 0) fails with kXAmzContentSHA256Mismatch when the bytes do not match
//   aws-chunked (signed or unsigned-with-trailer) - decoded chunk by chunk (s3/chunked.h), each
//               chunk signature verified; the handler sees only the payload
//
// Every failure carries an S3Error detail (s3/s3_error.h): HTTP-level failures are mapped
// (timeout -> RequestTimeout, over the body limit -> EntityTooLarge, cut short ->
// IncompleteBody). After a failure the reader keeps failing and abandons the HTTP body, so the
// connection is closed after the response rather than reused. Not thread-safe.
#ifndef KVCS_S3_PAYLOAD_READER_H_
#define KVCS_S3_PAYLOAD_READER_H_

#include <cstdint>
#include <optional>
#include <span>

#include "common/bytes.h"
#include "common/crypto.h"
#include "common/status.h"
#include "http/body_reader.h"
#include "s3/chunked.h"

namespace kvcs::s3 {

// aws-chunked raw staging buffer (framing + payload before decoding).
inline constexpr size_t kRawBufferBytes = 256 * 1024;

class PayloadReader final : public http::BodyReader {
 public:
  explicit PayloadReader(http::BodyReader& raw) : raw_(raw) {}

  // Plain payload; verified against `expected_sha256` when set.
  void ExpectPlain(std::optional<Digest> expected_sha256);
  // aws-chunked payload: signed chunks when `signing` is set, else unsigned chunks with an
  // optional trailer. `decoded_length` is x-amz-decoded-content-length, checked at the end.
  void ExpectAwsChunked(std::optional<ChunkSigning> signing,
                        std::optional<uint64_t> decoded_length);

  http::Awaitable<Result<size_t>> Read(std::span<uint8_t> out) override;
  void Abandon() override { raw_.Abandon(); }

 private:
  http::Awaitable<Result<size_t>> ReadRaw(std::span<uint8_t> out);
  http::Awaitable<Result<size_t>> ReadInner(std::span<uint8_t> out);

  http::BodyReader& raw_;
  std::optional<Digest> expected_sha256_;
  std::optional<uint64_t> decoded_length_;
  Sha256 sha_;
  bool finished_ = false;
  std::optional<AwsChunkedDecoder> decoder_;
  Bytes staging_;
  ByteSpan avail_;
  Status error_;
};

}  // namespace kvcs::s3

#endif  // KVCS_S3_PAYLOAD_READER_H_
