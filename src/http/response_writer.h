// The response to one request, streamed: Start once, then Write any number of times, then Finish.
//
// The server's writer (server.cc) adds Server, Date and Connection, answers HEAD and 204/304/1xx
// without a body, and bounds every write by the server's I/O timeout. Write completes only once
// the bytes are handed to the socket (TLS or TCP), so a handler that awaits each Write never
// buffers more than what it holds itself. A layer above may wrap it (S3 adds x-amz-request-id
// and its XML errors).
#ifndef KVCS_HTTP_RESPONSE_WRITER_H_
#define KVCS_HTTP_RESPONSE_WRITER_H_

#include <cstdint>
#include <optional>
#include <string_view>

#include "common/bytes.h"
#include "common/status.h"
#include "http/awaitable.h"
#include "http/headers.h"

namespace kvcs::http {

class ResponseWriter {
 public:
  virtual ~ResponseWriter() = default;
  // Sends the status line and headers. With content_length set the body must be exactly that
  // long; without it the body is sent with chunked transfer coding. REQUIRES: not started.
  virtual Awaitable<Status> Start(int status, HeaderList headers,
                                  std::optional<uint64_t> content_length) = 0;
  // Sends body bytes; completes when they are written to the socket (backpressure).
  // REQUIRES: started, not finished.
  virtual Awaitable<Status> Write(ByteSpan data) = 0;
  // Ends the body (the terminating chunk for chunked responses). REQUIRES: started.
  virtual Awaitable<Status> Finish() = 0;
  virtual bool started() const = 0;
};

// A complete response with a body of known length in one call: Start, Write, Finish.
Awaitable<Status> SendComplete(ResponseWriter& response, int status, HeaderList headers,
                               std::string_view body);

}  // namespace kvcs::http

#endif  // KVCS_HTTP_RESPONSE_WRITER_H_
