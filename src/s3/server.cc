// The S3 API mounted on http::Server: per request, an x-amz-request-id, S3 addressing, the choice
// between an Extension and the built-in handlers, SigV4 authentication and the payload reader it
// implies. Sockets, bounds and timeouts are src/http's; S3 semantics are handlers.cc's.
#include "s3/server.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "common/crypto.h"
#include "common/hex.h"
#include "common/log.h"
#include "common/strings.h"
#include "http/server.h"
#include "s3/handlers.h"
#include "s3/http_util.h"
#include "s3/payload_reader.h"
#include "s3/s3_error.h"
#include "s3/sigv4.h"

namespace kvcs::s3 {

namespace {

// A request that carries no credentials of any kind (no Authorization header, no SigV4 or SigV2
// query parameters).
bool IsAnonymous(const ExtensionRequest& r) {
  if (r.Header("authorization")) return false;
  for (std::string_view q :
       {"X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Signature", "AWSAccessKeyId", "Signature"}) {
    if (r.HasQuery(q)) return false;
  }
  return true;
}

int64_t NowUnix() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The HTTP server's response writer plus what every S3 answer carries: x-amz-request-id, and
// SendError's XML <Error>.
class S3Response final : public ResponseWriter {
 public:
  S3Response(http::ResponseWriter& out, std::string request_id)
      : out_(out), request_id_(std::move(request_id)) {}

  Awaitable<Status> Start(int status, HeaderList headers,
                          std::optional<uint64_t> content_length) override {
    headers.emplace_back("x-amz-request-id", request_id_);
    co_return co_await out_.Start(status, std::move(headers), content_length);
  }
  Awaitable<Status> Write(ByteSpan data) override { return out_.Write(data); }
  Awaitable<Status> Finish() override { return out_.Finish(); }
  bool started() const override { return out_.started(); }

  Awaitable<Status> SendError(int status, std::string_view code,
                              std::string_view message) override {
    std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>" + XmlEscape(code) +
                    "</Code><Message>" + XmlEscape(message) + "</Message><RequestId>" +
                    request_id_ + "</RequestId></Error>";
    HeaderList h;
    h.emplace_back("Content-Type", "application/xml");
    co_return co_await http::SendComplete(*this, status, std::move(h), x);
  }

 private:
  http::ResponseWriter& out_;
  std::string request_id_;
};

// The S3 <Code> for an error the HTTP server answers itself.
std::string_view CodeForHttpStatus(int status) {
  switch (status) {
    case 404:
      return "NoSuchKey";
    case 413:
      return "EntityTooLarge";
    default:
      return status >= 500 ? "InternalError" : "InvalidRequest";
  }
}

http::ServerOptions HttpOptions(const ServerConfig& c) {
  http::ServerOptions o;
  o.name = "s3";
  o.listen_host = c.listen_host;
  o.port = c.port;
  o.tls_cert_file = c.tls_cert_file;
  o.tls_key_file = c.tls_key_file;
  o.io_threads = c.io_threads;
  o.limits = c.http_limits;  // http::Limits' defaults unless the CLI set them; no body limit
  return o;
}

}  // namespace

struct Server::Impl {
  ServerConfig config;
  store::ObjectStore& store;
  std::vector<Extension> extensions;
  std::atomic<uint64_t> next_request{0};
  uint64_t boot_id = 0;
  http::Server http;

  Impl(ServerConfig c, store::ObjectStore& s)
      : config(std::move(c)), store(s), http(HttpOptions(config)) {
    RandomBytes(reinterpret_cast<uint8_t*>(&boot_id), sizeof boot_id);
    // S3 owns every request no other route claims.
    http.router().SetFallback([this](http::HandlerContext& hc) { return Serve(hc); });
    http.SetErrorResponder(
        [this](http::ResponseWriter& w, int status, std::string_view message) -> Awaitable<Status> {
          S3Response resp(w, NextRequestId());
          co_return co_await resp.SendError(status, CodeForHttpStatus(status), message);
        });
  }

  std::string NextRequestId() {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%08X%08llX", static_cast<unsigned>(boot_id),
                  static_cast<unsigned long long>(next_request.fetch_add(1)));
    return buf;
  }

  Awaitable<void> Serve(http::HandlerContext& hc);
};

Awaitable<void> Server::Impl::Serve(http::HandlerContext& hc) {
  std::string request_id = NextRequestId();
  S3Response resp(hc.response, request_id);
  PayloadReader body(hc.body);
  ExtensionRequest er;
  static_cast<http::Request&>(er) = hc.request;
  S3Address addr = ResolveAddress(er.Header("host").value_or(""), er.path, config.virtual_hosts);
  er.bucket = addr.bucket;
  er.key = addr.key;
  std::optional<std::string_view> payload = er.Header("x-amz-content-sha256");
  bool aws_chunked = payload && payload->substr(0, 10) == "STREAMING-";
  if (aws_chunked) {
    er.content_length.reset();
    if (auto d = er.Header("x-amz-decoded-content-length")) {
      er.content_length = ParseDecimal<uint64_t>(*d);  // absent when not a number
    }
  }

  const Extension* ext = nullptr;
  for (const Extension& e : extensions) {
    if (e.matches && e.matches(er)) {
      ext = &e;
      break;
    }
  }
  S3Context s3ctx{er, body, resp, store, config, request_id};
  Status early;
  SigV4Input in{er.method, er.path, &er.query, &er.headers};
  if (!ext && IsAnonymous(er)) {
    // No credentials at all: the built-in handlers serve it as nobody (empty user_id), which only
    // an ACL granting AllUsers lets through (s3/access.h). Extensions stay signed-only.
    if (aws_chunked) {
      early = S3Status(S3Error::kNotImplemented, "aws-chunked bodies must be signed");
    } else {
      body.ExpectPlain(std::nullopt);
    }
  } else if (!ext || ext->auth == ExtensionAuth::kSigV4) {
    auto auth = VerifySigV4(in, config.secrets, NowUnix());
    if (!auth.ok()) {
      early = auth.status();
    } else {
      er.access_key = auth->access_key;
      er.user_id = UserOf(config, er.access_key).id;
      const std::string& ph = auth->payload_hash;
      if (ph == kStreamingSignedPayload) {
        ChunkSigning cs{auth->signing_key, auth->amz_date, auth->scope, auth->seed_signature};
        body.ExpectAwsChunked(cs, er.content_length);
      } else if (ph == kStreamingUnsignedTrailer) {
        body.ExpectAwsChunked(std::nullopt, er.content_length);
      } else if (IsLowerHex(ph, 64)) {
        body.ExpectPlain(*FromHexFixed<32>(ph));
      } else if (aws_chunked) {
        early = S3Status(S3Error::kNotImplemented, "this streaming payload mode is not supported");
      }
    }
  }

  if (!early.ok()) {
    co_await SendS3Error(s3ctx, early);
  } else if (ext) {
    ExtensionContext ectx{er, body, resp, store, hc.executor};
    co_await ext->handle(ectx);
    if (!resp.started()) {
      co_await resp.SendError(500, "InternalError", "extension produced no response");
    }
  } else {
    co_await HandleS3(s3ctx);
  }
  KVCS_LOG_DEBUG("s3: {} {} -> done (req {})", er.method, er.target, request_id);
}

Server::Server(ServerConfig config, store::ObjectStore& store)
    : impl_(std::make_unique<Impl>(std::move(config), store)) {}
Server::~Server() = default;

void Server::AddExtension(Extension extension) {
  impl_->extensions.push_back(std::move(extension));
}

Status Server::Start() {
  // Over a store that records no owners every bucket would be every user's: refuse to mix users.
  if (!impl_->store.RecordsOwners() && CountUsers(impl_->config) > 1) {
    return Status(Code::kUnsupported,
                  "this store (the S3 backend) records no bucket owners, so it cannot keep " +
                      std::to_string(CountUsers(impl_->config)) +
                      " users apart: configure keys of one user only (`user =` the same id in "
                      "every [key] section)");
  }
  return impl_->http.Start();
}

uint16_t Server::port() const { return impl_->http.port(); }

void Server::Run(bool handle_signals) { impl_->http.Run(handle_signals); }

void Server::Stop() { impl_->http.Stop(); }

}  // namespace kvcs::s3
