// The S3 server's extension hook: how another module (objcache's aggregated layer-major requests,
// the KVSP retrieval endpoints) serves requests on the same port and the same ObjectStore.
//
// An Extension is a predicate plus a coroutine handler. For every request, after the request head
// (line + headers) has been read and parsed, the server asks each registered extension, in
// registration order, whether it Matches() the head; the first that does handles the request,
// otherwise the built-in S3 handlers do.
//
// Authentication (Extension::auth):
//   kSigV4 - the server verifies AWS SigV4 (Authorization header or presigned query) BEFORE
//            calling the handler, answering 403 with an S3 XML error on failure; the handler sees
//            the authenticated access key in ExtensionRequest::access_key. The body reader then
//            also verifies the payload: x-amz-content-sha256 (signed hash: a mismatch makes the
//            final Read() fail), aws-chunked streaming signatures (decoded and verified chunk by
//            chunk, the handler sees only the payload) or UNSIGNED-PAYLOAD.
//   kNone  - the server calls the handler without any check; access_key is empty and the body is
//            the raw body (after HTTP chunked decoding). The handler decides (e.g. KVSP tokens).
//
// Registration: Server::AddExtension before Server::Start. `kvcs store` (src/cli/cmd_store.cc)
// registers objcache::Service::Extensions() when src/objcache is built.
//
// Lifetimes: the ExtensionContext and everything reachable from it (request, body, response,
// store) are valid only until the handler's awaitable completes. The ObjectStore outlives the
// server. Extensions are registered before Server::Run and never change afterwards.
//
// Threading: the server runs one coroutine per connection on an io_context served by several
// threads; a handler runs inside that connection's coroutine (requests on one connection are
// sequential). Matches() may be called concurrently from several threads: keep it pure. Blocking
// ObjectStore calls from a handler are allowed (they occupy one of the server's I/O threads);
// ObjectStore::ReadMany parallelizes range reads on the store's own threads.
//
// Backpressure and memory: ResponseWriter::Write completes only once the bytes are handed to the
// socket (TLS or TCP), so a handler that awaits each Write never buffers more than what it holds
// itself. BodyReader::Read fills at most the caller's buffer.
//
// The types are src/http's (the S3 server is S3 routes mounted on http::Server) plus what S3 adds:
// the S3 addressing and authenticated key in ExtensionRequest, SendError's XML <Error> answers.
//
// Errors: if the handler returns without calling ResponseWriter::Start, the server answers 500
// InternalError. If the handler fails after Start, it should return; the server then closes the
// connection (the chunked body is left unterminated so the client sees a truncated response).
// If the handler does not consume the whole request body, the server closes the connection after
// the response instead of reading the next request.
#ifndef KVCS_S3_EXTENSION_H_
#define KVCS_S3_EXTENSION_H_

#include <utility>  // must precede Asio on Boost 1.74 + GCC 12 (common/asio.h)

#include <boost/asio/any_io_executor.hpp>
#include <functional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "http/awaitable.h"
#include "http/body_reader.h"
#include "http/headers.h"
#include "http/request.h"
#include "http/response_writer.h"
#include "store/object_store.h"

namespace kvcs::s3 {

template <typename T>
using Awaitable = http::Awaitable<T>;

using HeaderList = http::HeaderList;

// The parsed request head as seen by an extension (http::Request: method, target, decoded path
// and query, headers, content_length) plus what S3 resolves. content_length is the declared
// payload length, decoded for aws-chunked.
struct ExtensionRequest : http::Request {
  // S3 addressing resolved from Host (virtual-hosted) or the path (path-style); empty if none.
  std::string bucket;
  std::string key;
  std::string access_key;  // authenticated access key (kSigV4), empty for kNone
  // The user that key acts as (ServerConfig::users, s3/config.h UserOf); empty for kNone. Check
  // a bucket with s3/access.h CheckBucketAccess(store, bucket, user_id).
  std::string user_id;
};

// The request body, read in caller-sized chunks. For kSigV4 requests it is the verified,
// decoded payload; a Read fails (and keeps failing) on a socket error, a timeout, or a payload
// that fails SigV4 / x-amz-content-sha256 verification (detail S3Error as int, see s3/s3_error.h).
using BodyReader = http::BodyReader;

// The response, streamed: http::ResponseWriter (Start once, Write, Finish; Start adds
// x-amz-request-id besides the server's Server, Date and Connection) plus S3 error answers.
class ResponseWriter : public http::ResponseWriter {
 public:
  // Convenience: a complete S3 XML error response (<Error><Code>..) with the given HTTP status.
  // REQUIRES: not started.
  virtual Awaitable<Status> SendError(int status, std::string_view code,
                                      std::string_view message) = 0;
};

// Everything a handler may touch while it runs.
struct ExtensionContext {
  const ExtensionRequest& request;
  BodyReader& body;
  ResponseWriter& response;
  store::ObjectStore& store;
  boost::asio::any_io_executor executor;  // the connection's executor (for timers, co_spawn)
};

enum class ExtensionAuth { kSigV4, kNone };

struct Extension {
  std::string name;  // for logs
  ExtensionAuth auth = ExtensionAuth::kSigV4;
  // Pure predicate on the request head (access_key is not yet set when it is called).
  std::function<bool(const ExtensionRequest&)> matches;
  // The handler. Runs inside the connection's coroutine.
  std::function<Awaitable<void>(ExtensionContext&)> handle;
};

}  // namespace kvcs::s3

#endif  // KVCS_S3_EXTENSION_H_
