// A request body, read in caller-sized chunks by the handler that serves the request.
//
// The server's reader (server.cc) delivers the body after HTTP framing (Content-Length or
// chunked transfer coding), sends "100 Continue" before the first read when the client asked for
// it, and bounds every read by the server's I/O timeout and the body limit. A layer above may wrap
// it to decode or verify the payload (S3's SigV4 payload checks and aws-chunked decoding).
#ifndef KVCS_HTTP_BODY_READER_H_
#define KVCS_HTTP_BODY_READER_H_

#include <cstddef>
#include <span>

#include "common/bytes.h"
#include "common/status.h"
#include "http/awaitable.h"

namespace kvcs::http {

// Status::detail() of a failed BodyReader::Read of the server's reader, so a layer above can map
// it to its own error vocabulary. Distinct from the store's and S3's detail values.
enum class BodyError {
  kNone = 0,
  kTimeout = 3000,  // no progress within the server's I/O timeout
  kTooLarge,        // the body exceeds ServerOptions::max_body_bytes
  kIncomplete,      // the connection failed or closed before the end of the body
};

class BodyReader {
 public:
  virtual ~BodyReader() = default;
  // Reads up to out.size() bytes; returns 0 at the end of the body. Fails (and keeps failing) on
  // a socket error, a timeout or a body over the server's bound (a BodyError detail), or on
  // whatever check a wrapping reader adds.
  virtual Awaitable<Result<size_t>> Read(std::span<uint8_t> out) = 0;
  // Gives up on the rest of the body: the server closes the connection after the response
  // instead of draining the unread bytes to reuse it. A wrapping decoder calls it when the bytes
  // it was given are unusable. Idempotent.
  virtual void Abandon() = 0;
  // Reads the whole remaining body if it is at most `limit` bytes (kResourceExhausted otherwise).
  Awaitable<Result<Bytes>> ReadAll(size_t limit);
};

}  // namespace kvcs::http

#endif  // KVCS_HTTP_BODY_READER_H_
