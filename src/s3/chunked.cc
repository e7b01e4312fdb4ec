#include "s3/chunked.h"

#include <algorithm>

#include "common/hex.h"
#include "s3/s3_error.h"
#include "s3/sigv4.h"

namespace kvcs::s3 {

AwsChunkedDecoder::AwsChunkedDecoder(std::optional<ChunkSigning> signing)
    : signing_(std::move(signing)) {
  if (signing_) previous_signature_ = signing_->seed_signature;
}

Status AwsChunkedDecoder::Fail(Status s) {
  state_ = State::kFailed;
  error_ = s;
  return s;
}

Status AwsChunkedDecoder::ParseHeader() {
  std::string_view line = line_;
  size_t semi = line.find(';');
  std::string_view size_hex = line.substr(0, semi);
  if (size_hex.empty() || size_hex.size() > 16) {
    return S3Status(S3Error::kInvalidRequest, "aws-chunked: bad chunk size");
  }
  uint64_t size = 0;
  for (char c : size_hex) {
    int v = HexDigitValue(c);
    if (v < 0) return S3Status(S3Error::kInvalidRequest, "aws-chunked: bad chunk size");
    size = size * 16 + static_cast<uint64_t>(v);
  }
  if (size > kMaxAwsChunkBytes) {
    return S3Status(S3Error::kEntityTooLarge, "aws-chunked: chunk larger than 64 MiB");
  }
  chunk_signature_.clear();
  if (semi != std::string_view::npos) {
    std::string_view ext = line.substr(semi + 1);
    constexpr std::string_view kSig = "chunk-signature=";
    if (ext.substr(0, kSig.size()) == kSig) chunk_signature_ = std::string(ext.substr(kSig.size()));
  }
  if (signing_ && chunk_signature_.size() != 64) {
    return S3Status(S3Error::kSignatureDoesNotMatch, "aws-chunked: missing chunk-signature");
  }
  chunk_size_ = size;
  remaining_ = size;
  return Status::Ok();
}

Status AwsChunkedDecoder::FinishChunk() {
  if (!signing_) return Status::Ok();
  Digest h = chunk_sha_.Finish();
  std::string sts = ChunkStringToSign(signing_->amz_date, signing_->scope, previous_signature_, h);
  std::string expected = SignHex(signing_->signing_key, sts);
  if (!ConstantTimeEqual(AsBytes(expected), AsBytes(chunk_signature_))) {
    return S3Status(S3Error::kSignatureDoesNotMatch, "aws-chunked: chunk signature does not match");
  }
  previous_signature_ = chunk_signature_;
  return Status::Ok();
}

Result<size_t> AwsChunkedDecoder::Decode(ByteSpan* in, std::span<uint8_t> out) {
  size_t produced = 0;
  while (!in->empty()) {
    switch (state_) {
      case State::kFailed:
        return error_;
      case State::kDone:
        return Fail(S3Status(S3Error::kInvalidRequest, "aws-chunked: data after the last chunk"));
      case State::kHeader:
      case State::kTrailer: {
        uint8_t c = (*in)[0];
        *in = in->subspan(1);
        if (c != '\n') {
          if (line_.size() >= kMaxChunkHeaderBytes) {
            return Fail(S3Status(S3Error::kInvalidRequest, "aws-chunked: header line too long"));
          }
          line_.push_back(static_cast<char>(c));
          break;
        }
        if (line_.empty() || line_.back() != '\r') {
          return Fail(S3Status(S3Error::kInvalidRequest, "aws-chunked: line without CRLF"));
        }
        line_.pop_back();
        if (state_ == State::kTrailer) {
          if (line_.empty()) {
            state_ = State::kDone;
          } else {
            size_t colon = line_.find(':');
            if (colon == std::string::npos ||
                trailers_.size() >= static_cast<size_t>(kMaxTrailerLines)) {
              return Fail(S3Status(S3Error::kInvalidRequest, "aws-chunked: bad trailer"));
            }
            trailers_.emplace_back(line_.substr(0, colon), line_.substr(colon + 1));
          }
          line_.clear();
          break;
        }
        Status s = ParseHeader();
        line_.clear();
        if (!s.ok()) return Fail(s);
        if (chunk_size_ == 0 && !signing_) {
          state_ = State::kTrailer;  // unsigned: trailer lines (maybe none) then CRLF
        } else {
          state_ = State::kData;
        }
        break;
      }
      case State::kData: {
        if (remaining_ == 0) {
          state_ = State::kDataCr;
          break;
        }
        size_t room = out.size() - produced;
        if (room == 0) return produced;
        size_t n = static_cast<size_t>(std::min<uint64_t>({remaining_, in->size(), room}));
        std::copy_n(in->data(), n, out.data() + produced);
        if (signing_) chunk_sha_.Update(ByteSpan(in->data(), n));
        *in = in->subspan(n);
        produced += n;
        remaining_ -= n;
        decoded_ += n;
        break;
      }
      case State::kDataCr:
        if ((*in)[0] != '\r') {
          return Fail(
              S3Status(S3Error::kIncompleteBody, "aws-chunked: chunk longer than its size"));
        }
        *in = in->subspan(1);
        state_ = State::kDataLf;
        break;
      case State::kDataLf: {
        if ((*in)[0] != '\n') {
          return Fail(
              S3Status(S3Error::kIncompleteBody, "aws-chunked: chunk longer than its size"));
        }
        *in = in->subspan(1);
        Status s = FinishChunk();
        if (!s.ok()) return Fail(s);
        state_ = chunk_size_ == 0 ? State::kDone : State::kHeader;
        break;
      }
    }
  }
  if (state_ == State::kFailed) return error_;
  return produced;
}

}  // namespace kvcs::s3
