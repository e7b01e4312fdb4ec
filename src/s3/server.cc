// Beast/Asio glue: listener, one coroutine per connection, the body reader (SigV4 payload
// verification, aws-chunked decoding) and the streamed response writer. All S3 semantics live in
// handlers.cc; this file only moves bytes and enforces bounds and timeouts.
#include "common/asio.h"

#include "s3/server.h"

#include <atomic>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <csignal>
#include <functional>
#include <limits>
#include <list>
#include <mutex>
#include <thread>

#include "common/hex.h"
#include "common/log.h"
#include "s3/chunked.h"
#include "s3/handlers.h"
#include "s3/http_util.h"
#include "s3/s3_error.h"
#include "s3/sigv4.h"

namespace kvcs::s3 {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

namespace {

// Request line + headers. Presigned URLs with 1 KiB keys and a few dozen headers fit in 16 KiB;
// 64 KiB leaves room for long x-amz-meta-* sets (S3 caps user metadata at 2 KiB anyway).
constexpr uint32_t kMaxHeaderBytes = 64 * 1024;
// Concurrent connections; beyond this new ones are closed at once (fd and memory bound).
constexpr size_t kMaxConnections = 1024;
// Idle keep-alive connections and slow request heads are closed after this.
constexpr auto kHeaderTimeout = 60s;
// Each body read and each response write must make progress within this.
constexpr auto kIoTimeout = 120s;
// TLS handshake deadline.
constexpr auto kHandshakeTimeout = 30s;
// aws-chunked raw staging buffer (framing + payload before decoding).
constexpr size_t kRawBufferBytes = 256 * 1024;
// Unread request bodies up to this size are drained to keep the connection; larger ones close it.
constexpr uint64_t kMaxDrainBytes = 256 * 1024;
// Receive buffer of a connection (request heads and bodies). Beast reads at most 64 KiB at a time;
// 64 KiB × kMaxConnections bounds the total at 64 MiB.
constexpr size_t kReceiveBufferBytes = 64 * 1024;
// On shutdown, in-flight requests get this long before the event loop stops.
constexpr auto kShutdownGrace = 5s;

int64_t NowUnix() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

template <class Stream>
beast::tcp_stream& Lowest(Stream& s) {
  return beast::get_lowest_layer(s);
}

template <class Stream>
class BeastBody final : public BodyReader {
 public:
  enum class Mode { kRaw, kPlain, kChunkedSigned, kChunkedUnsigned };

  BeastBody(Stream& stream, beast::flat_buffer& buf, http::request_parser<http::buffer_body>& p,
            bool expect_continue)
      : stream_(stream), buf_(buf), parser_(p), expect_continue_(expect_continue) {}

  void Configure(Mode mode, std::optional<Digest> expected_sha256, std::optional<ChunkSigning> cs,
                 std::optional<uint64_t> decoded_length) {
    mode_ = mode;
    expected_sha256_ = expected_sha256;
    decoded_length_ = decoded_length;
    if (mode == Mode::kChunkedSigned || mode == Mode::kChunkedUnsigned) {
      decoder_.emplace(std::move(cs));
      raw_.resize(kRawBufferBytes);
    }
  }

  bool continue_pending() const { return expect_continue_ && !continue_sent_; }
  bool failed() const { return !error_.ok(); }

  // Reads raw body bytes (after HTTP framing) into `out`; 0 at the end of the body.
  Awaitable<Result<size_t>> ReadRaw(std::span<uint8_t> out) {
    for (;;) {
      if (parser_.is_done()) co_return size_t{0};
      beast::error_code ec;
      if (expect_continue_ && !continue_sent_) {
        continue_sent_ = true;
        http::response<http::empty_body> cont{http::status::continue_, 11};
        Lowest(stream_).expires_after(kIoTimeout);
        co_await http::async_write(stream_, cont, asio::redirect_error(asio::use_awaitable, ec));
        if (ec) co_return S3Status(S3Error::kIncompleteBody, "write 100-continue: " + ec.message());
      }
      parser_.get().body().data = out.data();
      parser_.get().body().size = out.size();
      Lowest(stream_).expires_after(kIoTimeout);
      co_await http::async_read(stream_, buf_, parser_,
                                asio::redirect_error(asio::use_awaitable, ec));
      if (ec == http::error::need_buffer) ec = {};
      if (ec) {
        S3Error e = ec == beast::error::timeout     ? S3Error::kRequestTimeout
                    : ec == http::error::body_limit ? S3Error::kEntityTooLarge
                                                    : S3Error::kIncompleteBody;
        co_return S3Status(e, "reading request body: " + ec.message());
      }
      size_t n = out.size() - parser_.get().body().size;
      if (n > 0) co_return n;
    }
  }

  Awaitable<Result<size_t>> Read(std::span<uint8_t> out) override {
    if (!error_.ok()) co_return error_;
    if (out.empty()) co_return size_t{0};
    auto r = co_await ReadInner(out);
    if (!r.ok()) error_ = r.status();
    co_return r;
  }

 private:
  Awaitable<Result<size_t>> ReadInner(std::span<uint8_t> out) {
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
        if (!parser_.is_done()) {
          uint8_t extra[1];
          auto n = co_await ReadRaw(std::span<uint8_t>(extra, 1));
          if (!n.ok()) co_return n;
          if (*n > 0) co_return S3Status(S3Error::kInvalidRequest, "data after aws-chunked end");
        }
        if (decoded_length_ && *decoded_length_ != decoder_->decoded_bytes()) {
          co_return S3Status(S3Error::kIncompleteBody,
                             "x-amz-decoded-content-length does not match the chunked payload");
        }
        co_return size_t{0};
      }
      auto n = co_await ReadRaw(raw_);
      if (!n.ok()) co_return n;
      if (*n == 0) {
        co_return S3Status(S3Error::kIncompleteBody,
                           "aws-chunked body ended before its last chunk");
      }
      avail_ = ByteSpan(raw_.data(), *n);
    }
  }

  Stream& stream_;
  beast::flat_buffer& buf_;
  http::request_parser<http::buffer_body>& parser_;
  bool expect_continue_;
  bool continue_sent_ = false;
  Mode mode_ = Mode::kRaw;
  std::optional<Digest> expected_sha256_;
  std::optional<uint64_t> decoded_length_;
  Sha256 sha_;
  bool finished_ = false;
  std::optional<AwsChunkedDecoder> decoder_;
  Bytes raw_;
  ByteSpan avail_;
  Status error_;
};

template <class Stream>
class BeastResponse final : public ResponseWriter {
 public:
  BeastResponse(Stream& stream, bool head, bool keep_alive, std::string request_id)
      : stream_(stream), head_(head), keep_alive_(keep_alive), request_id_(std::move(request_id)) {}
  void SetBodyLeftTooLarge(std::function<bool()> f) { body_left_too_large_ = std::move(f); }

  Awaitable<Status> Start(int status, HeaderList headers,
                          std::optional<uint64_t> content_length) override {
    if (started_) co_return Status(Code::kFailedPrecondition, "response already started");
    started_ = true;
    res_.emplace(static_cast<http::status>(status), 11);
    for (auto& [k, v] : headers) res_->set(k, v);
    res_->set(http::field::server, "kvcs");
    res_->set(http::field::date, FormatHttpDate(NowUnix()));
    res_->set("x-amz-request-id", request_id_);
    // Say "Connection: close" when the connection will be closed after this response because the
    // handler left a request body unread that is too large to drain (see HandleOne).
    res_->keep_alive(keep_alive_ && !(body_left_too_large_ && body_left_too_large_()));
    bool no_body = status == 204 || status == 304 || (status >= 100 && status < 200);
    if (head_ || no_body) {
      if (head_ && content_length && !no_body) {
        res_->set(http::field::content_length, std::to_string(*content_length));
      }
      no_body_ = true;
    } else if (content_length) {
      res_->content_length(*content_length);
      remaining_ = *content_length;
    } else {
      res_->chunked(true);
    }
    res_->body().data = nullptr;
    res_->body().size = 0;
    res_->body().more = !no_body_;
    sr_.emplace(*res_);
    beast::error_code ec;
    Lowest(stream_).expires_after(kIoTimeout);
    co_await http::async_write_header(stream_, *sr_, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return Fail("write header: " + ec.message());
    co_return Status::Ok();
  }

  Awaitable<Status> Write(ByteSpan data) override {
    if (!started_ || finished_) co_return Status(Code::kFailedPrecondition, "not writable");
    if (!error_.ok()) co_return error_;
    if (no_body_ || data.empty()) co_return Status::Ok();
    if (remaining_ && data.size() > *remaining_) {
      co_return Fail("response body longer than its Content-Length");
    }
    res_->body().data = const_cast<uint8_t*>(data.data());
    res_->body().size = data.size();
    res_->body().more = true;
    beast::error_code ec;
    Lowest(stream_).expires_after(kIoTimeout);
    co_await http::async_write(stream_, *sr_, asio::redirect_error(asio::use_awaitable, ec));
    if (ec == http::error::need_buffer) ec = {};
    if (ec) co_return Fail("write body: " + ec.message());
    if (remaining_) *remaining_ -= data.size();
    co_return Status::Ok();
  }

  Awaitable<Status> Finish() override {
    if (!started_ || finished_) co_return Status(Code::kFailedPrecondition, "not finishable");
    if (!error_.ok()) co_return error_;
    if (remaining_ && *remaining_ != 0) co_return Fail("response body shorter than declared");
    finished_ = true;
    if (no_body_) co_return Status::Ok();
    res_->body().data = nullptr;
    res_->body().size = 0;
    res_->body().more = false;
    beast::error_code ec;
    Lowest(stream_).expires_after(kIoTimeout);
    co_await http::async_write(stream_, *sr_, asio::redirect_error(asio::use_awaitable, ec));
    if (ec == http::error::need_buffer) ec = {};
    if (ec) co_return Fail("finish body: " + ec.message());
    co_return Status::Ok();
  }

  Awaitable<Status> SendError(int status, std::string_view code,
                              std::string_view message) override {
    std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>" + XmlEscape(code) +
                    "</Code><Message>" + XmlEscape(message) + "</Message><RequestId>" +
                    request_id_ + "</RequestId></Error>";
    HeaderList h;
    h.emplace_back("Content-Type", "application/xml");
    Status s = co_await Start(status, std::move(h), x.size());
    if (s.ok()) s = co_await Write(AsBytes(x));
    if (s.ok()) s = co_await Finish();
    co_return s;
  }

  bool started() const override { return started_; }
  bool finished() const { return finished_; }
  bool healthy() const { return error_.ok(); }

 private:
  Status Fail(std::string m) {
    error_ = Status(Code::kIoError, std::move(m));
    return error_;
  }
  Stream& stream_;
  bool head_;
  bool keep_alive_;
  std::function<bool()> body_left_too_large_;
  std::string request_id_;
  bool started_ = false, finished_ = false, no_body_ = false;
  std::optional<uint64_t> remaining_;
  std::optional<http::response<http::buffer_body>> res_;
  std::optional<http::response_serializer<http::buffer_body>> sr_;
  Status error_;
};

}  // namespace

struct Server::Impl {
  ServerConfig config;
  store::ObjectStore& store;
  std::vector<Extension> extensions;
  // Declaration order matters for destruction: the acceptor goes first, then the io_context
  // (destroying any parked session coroutines), then the TLS context they may reference.
  std::optional<asio::ssl::context> tls;
  asio::io_context ioc;
  std::optional<tcp::acceptor> acceptor;
  uint16_t port = 0;
  std::atomic<size_t> connections{0};
  std::atomic<uint64_t> next_request{0};
  std::atomic<bool> stopping{false};
  uint64_t boot_id = 0;

  // Idle sessions register here so Stop() can close them at once.
  std::mutex sessions_mu;
  std::list<std::pair<beast::tcp_stream*, asio::any_io_executor>> idle_sessions;

  Impl(ServerConfig c, store::ObjectStore& s) : config(std::move(c)), store(s) {
    RandomBytes(reinterpret_cast<uint8_t*>(&boot_id), sizeof boot_id);
  }

  std::string NextRequestId() {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%08X%08llX", static_cast<unsigned>(boot_id),
                  static_cast<unsigned long long>(next_request.fetch_add(1)));
    return buf;
  }

  template <class Stream>
  Awaitable<void> Session(Stream& stream);
  template <class Stream>
  Awaitable<bool> ServeOne(Stream& stream, beast::flat_buffer& buf);
  Awaitable<void> Accept();
  Awaitable<void> RunConnection(tcp::socket s);
  void BeginStop();
};

template <class Stream>
Awaitable<void> Server::Impl::Session(Stream& stream) {
  beast::flat_buffer buf;
  // Beast receives at most max(512, free capacity) bytes per read: without this a request body
  // arrived 512 bytes per recv call.
  buf.reserve(kReceiveBufferBytes);
  for (;;) {
    if (stopping) break;
    {
      auto ex = co_await asio::this_coro::executor;
      std::lock_guard<std::mutex> l(sessions_mu);
      idle_sessions.emplace_front(&Lowest(stream), ex);
    }
    bool keep = co_await ServeOne(stream, buf);
    if (!keep) break;
  }
  beast::error_code ec;
  Lowest(stream).socket().shutdown(tcp::socket::shutdown_send, ec);
}

template <class Stream>
Awaitable<bool> Server::Impl::ServeOne(Stream& stream, beast::flat_buffer& buf) {
  // The registration made in Session() is removed as soon as a request head arrives.
  auto unregister = [&] {
    std::lock_guard<std::mutex> l(sessions_mu);
    idle_sessions.remove_if([&](auto& p) { return p.first == &Lowest(stream); });
  };
  http::request_parser<http::buffer_body> parser;
  parser.header_limit(kMaxHeaderBytes);
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  beast::error_code ec;
  Lowest(stream).expires_after(kHeaderTimeout);
  co_await http::async_read_header(stream, buf, parser,
                                   asio::redirect_error(asio::use_awaitable, ec));
  unregister();
  if (ec) {
    if (ec != http::error::end_of_stream && ec != asio::error::eof && ec != beast::error::timeout &&
        ec != asio::error::operation_aborted) {
      KVCS_LOG_DEBUG("s3: bad request head: {}", ec.message());
      if (ec == http::error::header_limit || ec == http::error::bad_target) {
        BeastResponse<Stream> resp(stream, false, false, NextRequestId());
        co_await resp.SendError(400, "InvalidRequest", "Malformed or oversized request head");
      }
    }
    co_return false;
  }
  auto& req = parser.get();
  ExtensionRequest er;
  er.method = std::string(req.method_string());
  er.target = std::string(req.target());
  for (const auto& f : req)
    er.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
  std::string request_id = NextRequestId();
  bool keep_alive = req.keep_alive() && !stopping;
  bool head = er.method == "HEAD";
  bool expect_continue = false;
  if (auto e = er.Header("expect")) expect_continue = IEquals(*e, "100-continue");
  BeastResponse<Stream> resp(stream, head, keep_alive, request_id);
  BeastBody<Stream> body(stream, buf, parser, expect_continue);
  // The same test as the drain after the handler (below): a body left unread closes the
  // connection unless it is small enough to drain.
  auto body_left_too_large = [&parser, &body] {
    if (parser.is_done()) return false;
    if (body.continue_pending() || body.failed()) return true;
    auto cl = parser.content_length();
    return !cl || *cl > kMaxDrainBytes;
  };
  resp.SetBodyLeftTooLarge(body_left_too_large);

  Status early;
  {
    size_t q = er.target.find('?');
    auto path = UriDecode(std::string_view(er.target).substr(0, q));
    if (!path.ok() || path->empty() || (*path)[0] != '/') {
      early = S3Status(S3Error::kInvalidRequest, "Couldn't parse the specified URI.");
    } else {
      er.path = *path;
    }
    if (q != std::string::npos && early.ok()) {
      auto query = ParseQuery(std::string_view(er.target).substr(q + 1));
      if (!query.ok()) {
        early = S3Status(S3Error::kInvalidRequest, "Couldn't parse the query string.");
      } else {
        er.query = std::move(*query);
      }
    }
  }
  S3Address addr = ResolveAddress(er.Header("host").value_or(""), er.path, config.virtual_hosts);
  er.bucket = addr.bucket;
  er.key = addr.key;
  std::optional<std::string_view> payload = er.Header("x-amz-content-sha256");
  bool aws_chunked = payload && payload->substr(0, 10) == "STREAMING-";
  if (aws_chunked) {
    if (auto d = er.Header("x-amz-decoded-content-length")) {
      er.content_length = std::strtoull(std::string(*d).c_str(), nullptr, 10);
    }
  } else if (parser.content_length()) {
    er.content_length = *parser.content_length();
  }

  const Extension* ext = nullptr;
  if (early.ok()) {
    for (const Extension& e : extensions) {
      if (e.matches && e.matches(er)) {
        ext = &e;
        break;
      }
    }
  }
  S3Context s3ctx{er, body, resp, store, config, request_id};
  if (early.ok() && (!ext || ext->auth == ExtensionAuth::kSigV4)) {
    SigV4Input in{er.method, er.path, &er.query, &er.headers};
    auto auth = VerifySigV4(in, config.secrets, NowUnix());
    if (!auth.ok()) {
      early = auth.status();
    } else {
      er.access_key = auth->access_key;
      const std::string& ph = auth->payload_hash;
      if (ph == kStreamingSignedPayload) {
        ChunkSigning cs{auth->signing_key, auth->amz_date, auth->scope, auth->seed_signature};
        body.Configure(BeastBody<Stream>::Mode::kChunkedSigned, std::nullopt, cs,
                       er.content_length);
      } else if (ph == kStreamingUnsignedTrailer) {
        body.Configure(BeastBody<Stream>::Mode::kChunkedUnsigned, std::nullopt, std::nullopt,
                       er.content_length);
      } else if (IsLowerHex(ph, 64)) {
        auto d = FromHexFixed<32>(ph);
        body.Configure(BeastBody<Stream>::Mode::kPlain, *d, std::nullopt, std::nullopt);
      } else if (aws_chunked) {
        early = S3Status(S3Error::kNotImplemented, "this streaming payload mode is not supported");
      } else {
        body.Configure(BeastBody<Stream>::Mode::kPlain, std::nullopt, std::nullopt, std::nullopt);
      }
    }
  }

  bool threw = false;
  try {
    if (!early.ok()) {
      co_await SendS3Error(s3ctx, early);
    } else if (ext) {
      // GCC 12: never co_await inside a braced aggregate initializer. GCC 12 bit-copies the
      // awaited temporary into the member and then destroys the temporary as well, so the
      // strand executor's shared state was released twice (heap use-after-free of the
      // connection's strand, seen as corruption at shutdown).
      asio::any_io_executor ex = co_await asio::this_coro::executor;
      ExtensionContext ectx{er, body, resp, store, ex};
      co_await ext->handle(ectx);
      if (!resp.started()) {
        co_await resp.SendError(500, "InternalError", "extension produced no response");
      }
    } else {
      co_await HandleS3(s3ctx);
    }
  } catch (const std::exception& e) {
    KVCS_LOG_ERROR("s3: {} {}: exception: {}", er.method, er.target, e.what());
    threw = true;
  }
  if (threw) {
    if (!resp.started()) co_await resp.SendError(500, "InternalError", "internal error");
    co_return false;
  }
  KVCS_LOG_DEBUG("s3: {} {} -> done (req {})", er.method, er.target, request_id);
  if (!resp.started() || !resp.finished() || !resp.healthy()) co_return false;
  if (!parser.is_done()) {
    // The handler did not read the whole body (an error answered early). Drain small bodies to
    // keep the connection; close otherwise (and always when 100-continue was never sent: the
    // client is not going to send the body).
    if (body_left_too_large()) co_return false;
    uint8_t scratch[16 * 1024];
    for (;;) {
      auto n = co_await body.ReadRaw(scratch);
      if (!n.ok()) co_return false;
      if (*n == 0) break;
    }
  }
  co_return keep_alive && !stopping;
}

Awaitable<void> Server::Impl::RunConnection(tcp::socket s) {
  if (tls) {
    beast::ssl_stream<beast::tcp_stream> stream(beast::tcp_stream(std::move(s)), *tls);
    beast::error_code ec;
    Lowest(stream).expires_after(kHandshakeTimeout);
    co_await stream.async_handshake(asio::ssl::stream_base::server,
                                    asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return;
    co_await Session(stream);
  } else {
    beast::tcp_stream stream(std::move(s));
    co_await Session(stream);
  }
}

Awaitable<void> Server::Impl::Accept() {
  for (;;) {
    beast::error_code ec;
    // Each connection's socket (and so its tcp_stream timer) lives on its own strand: the
    // io_context runs on several threads.
    asio::any_io_executor strand = asio::make_strand(ioc);
    tcp::socket sock =
        co_await acceptor->async_accept(strand, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      if (ec == asio::error::operation_aborted || stopping) co_return;
      KVCS_LOG_WARN("s3: accept: {}", ec.message());
      continue;
    }
    if (connections.load() >= kMaxConnections) {
      KVCS_LOG_WARN("s3: connection limit ({}) reached; closing a new connection", kMaxConnections);
      sock.close(ec);
      continue;
    }
    sock.set_option(tcp::no_delay(true), ec);
    ++connections;
    asio::co_spawn(strand, RunConnection(std::move(sock)), [this](std::exception_ptr e) {
      if (--connections == 0 && stopping) ioc.stop();  // the last connection drained
      if (e) {
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& ex) {
          KVCS_LOG_ERROR("s3: session ended with exception: {}", ex.what());
        }
      }
    });
  }
}

void Server::Impl::BeginStop() {
  if (stopping.exchange(true)) return;
  KVCS_LOG_INFO("s3: shutting down");
  asio::post(ioc, [this] {
    beast::error_code ec;
    if (acceptor) acceptor->close(ec);
    if (connections.load() == 0) ioc.stop();
    std::lock_guard<std::mutex> l(sessions_mu);
    for (auto& [s, ex] : idle_sessions) {
      // Runs on the session's strand: if the session is still registered there, it is parked in
      // async_read_header and its stream is alive.
      // Match the executor too: a stream freed and reallocated at the same address by another
      // connection (another strand; this one is kept alive by the posted handler) is not ours.
      asio::post(ex, [this, s = s, ex = ex] {
        std::lock_guard<std::mutex> l2(sessions_mu);
        for (auto& p : idle_sessions) {
          if (p.first == s && p.second == ex) {
            s->cancel();
            break;
          }
        }
      });
    }
  });
  auto timer = std::make_shared<asio::steady_timer>(ioc, kShutdownGrace);
  timer->async_wait([this, timer](beast::error_code) { ioc.stop(); });
}

Server::Server(ServerConfig config, store::ObjectStore& store)
    : impl_(std::make_unique<Impl>(std::move(config), store)) {}
Server::~Server() = default;

void Server::AddExtension(Extension extension) {
  impl_->extensions.push_back(std::move(extension));
}

Status Server::Start() {
  Impl& s = *impl_;
  if (!s.config.tls_cert_file.empty() || !s.config.tls_key_file.empty()) {
    if (s.config.tls_cert_file.empty() || s.config.tls_key_file.empty()) {
      return InvalidArgument("TLS needs both a certificate and a key file");
    }
    s.tls.emplace(asio::ssl::context::tls_server);
    boost::system::error_code ec;
    s.tls->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                           asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                           asio::ssl::context::no_tlsv1_1,
                       ec);
    s.tls->use_certificate_chain_file(s.config.tls_cert_file, ec);
    if (ec)
      return InvalidArgument("TLS certificate " + s.config.tls_cert_file + ": " + ec.message());
    s.tls->use_private_key_file(s.config.tls_key_file, asio::ssl::context::pem, ec);
    if (ec) return InvalidArgument("TLS key " + s.config.tls_key_file + ": " + ec.message());
  }
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(s.config.listen_host, ec);
  if (ec) return InvalidArgument("bad listen address " + s.config.listen_host);
  tcp::endpoint ep(addr, s.config.port);
  s.acceptor.emplace(s.ioc);
  s.acceptor->open(ep.protocol(), ec);
  if (!ec) s.acceptor->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) s.acceptor->bind(ep, ec);
  if (!ec) s.acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status(Code::kUnavailable, "cannot listen on " + s.config.listen_host + ":" +
                                          std::to_string(s.config.port) + ": " + ec.message());
  }
  s.port = s.acceptor->local_endpoint().port();
  return Status::Ok();
}

uint16_t Server::port() const { return impl_->port; }

void Server::Run(bool handle_signals) {
  Impl& s = *impl_;
  asio::co_spawn(s.ioc, s.Accept(), asio::detached);
  std::optional<asio::signal_set> signals;
  if (handle_signals) {
    signals.emplace(s.ioc, SIGINT, SIGTERM);
    signals->async_wait([this](beast::error_code ec, int) {
      if (!ec) impl_->BeginStop();
    });
  }
  int n = std::max(1, s.config.io_threads);
  std::vector<std::thread> threads;
  for (int i = 1; i < n; ++i) threads.emplace_back([&s] { s.ioc.run(); });
  s.ioc.run();
  for (auto& t : threads) t.join();
}

void Server::Stop() { impl_->BeginStop(); }

}  // namespace kvcs::s3
