// Decoder for S3's aws-chunked payload encoding (Content-Encoding: aws-chunked), with
// per-chunk SigV4 verification for STREAMING-AWS4-HMAC-SHA256-PAYLOAD and trailer support for
// STREAMING-UNSIGNED-PAYLOAD-TRAILER.
//
//   chunk   = hex-size [";chunk-signature=" 64hex] CRLF data CRLF
//   body    = chunk* zero-chunk (CRLF | trailer-lines CRLF)
//
// Incremental: Decode() takes whatever bytes have arrived and returns the payload bytes it could
// produce; it never buffers payload (only the current chunk header line, bounded). Payload bytes
// are handed out before their chunk's signature is checked (the check happens at the chunk's end),
// so a consumer must not act on the payload until Decode has reported done() without error. The
// S3 server commits an object only then. Not thread-safe.
#ifndef KVCS_S3_CHUNKED_H_
#define KVCS_S3_CHUNKED_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "common/bytes.h"
#include "common/crypto.h"
#include "common/status.h"

namespace kvcs::s3 {

// A chunk header is "<hex>;chunk-signature=<64 hex>" (~90 bytes); 4 KiB allows extensions.
inline constexpr size_t kMaxChunkHeaderBytes = 4096;
// SDKs use 8 KiB..8 MiB chunks; 64 MiB bounds a hostile size while accepting all of them.
inline constexpr uint64_t kMaxAwsChunkBytes = 64ull << 20;
// Trailer lines (x-amz-checksum-*) after the last chunk.
inline constexpr int kMaxTrailerLines = 16;

struct ChunkSigning {
  Digest signing_key{};
  std::string amz_date;
  std::string scope;
  std::string seed_signature;  // the request's signature (hex)
};

class AwsChunkedDecoder {
 public:
  // `signing` set: every chunk must carry a valid chunk-signature. Unset: unsigned chunks, and a
  // trailer section is allowed after the last chunk.
  explicit AwsChunkedDecoder(std::optional<ChunkSigning> signing);

  // Consumes bytes from the front of *in (advancing it) and writes payload into `out`.
  // Returns the number of payload bytes written (possibly 0 when only framing was consumed or
  // `in` ran out). Errors (S3Error detail): kSignatureDoesNotMatch for a bad chunk signature,
  // kIncompleteBody/kInvalidRequest for bad framing. After an error, keeps failing.
  Result<size_t> Decode(ByteSpan* in, std::span<uint8_t> out);

  bool done() const { return state_ == State::kDone; }
  uint64_t decoded_bytes() const { return decoded_; }
  const std::vector<std::pair<std::string, std::string>>& trailers() const { return trailers_; }

 private:
  enum class State { kHeader, kData, kDataCr, kDataLf, kTrailer, kDone, kFailed };
  Status Fail(Status s);
  Status ParseHeader();
  Status FinishChunk();

  std::optional<ChunkSigning> signing_;
  State state_ = State::kHeader;
  std::string line_;
  uint64_t remaining_ = 0;
  uint64_t chunk_size_ = 0;
  std::string chunk_signature_;
  std::string previous_signature_;
  Sha256 chunk_sha_;
  uint64_t decoded_ = 0;
  Status error_;
  std::vector<std::pair<std::string, std::string>> trailers_;
};

}  // namespace kvcs::s3

#endif  // KVCS_S3_CHUNKED_H_
