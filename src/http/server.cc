// Beast/Asio glue: listener, connection admission, one coroutine per connection, the body reader
// and the streamed response writer. Routes decide what a request means; this file only moves
// bytes and enforces bounds and timeouts.
#include "common/asio.h"

#include "http/server.h"

#include <atomic>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <csignal>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/log.h"
#include "common/strings.h"
#include "http/admission.h"
#include "http/date.h"
#include "http/uri.h"

namespace kvcs::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;

namespace {

int64_t NowUnix() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

template <class Stream>
beast::tcp_stream& Lowest(Stream& s) {
  return beast::get_lowest_layer(s);
}

Status BodyFailure(BodyError e, std::string message) {
  Code code = e == BodyError::kTooLarge ? Code::kResourceExhausted : Code::kIoError;
  return Status(code, std::move(message), static_cast<int>(e));
}

// The request body after HTTP framing, read straight from the connection's parser.
template <class Stream>
class StreamBody final : public BodyReader {
 public:
  StreamBody(Stream& stream, beast::flat_buffer& buf, bhttp::request_parser<bhttp::buffer_body>& p,
             bool expect_continue, std::chrono::milliseconds io_timeout)
      : stream_(stream),
        buf_(buf),
        parser_(p),
        expect_continue_(expect_continue),
        io_timeout_(io_timeout) {}

  bool continue_pending() const { return expect_continue_ && !continue_sent_; }
  // A failed read or an abandoned body: the connection cannot be reused.
  bool failed() const { return !error_.ok() || abandoned_; }

  Awaitable<Result<size_t>> Read(std::span<uint8_t> out) override {
    if (!error_.ok()) co_return error_;
    if (out.empty()) co_return size_t{0};
    auto r = co_await ReadRaw(out);
    if (!r.ok()) error_ = r.status();
    co_return r;
  }

  void Abandon() override { abandoned_ = true; }

  // Reads body bytes into `out`; 0 at the end of the body. Does not make failures sticky (the
  // server's drain uses it directly).
  Awaitable<Result<size_t>> ReadRaw(std::span<uint8_t> out) {
    for (;;) {
      if (parser_.is_done()) co_return size_t{0};
      beast::error_code ec;
      if (expect_continue_ && !continue_sent_) {
        continue_sent_ = true;
        bhttp::response<bhttp::empty_body> cont{bhttp::status::continue_, 11};
        Lowest(stream_).expires_after(io_timeout_);
        co_await bhttp::async_write(stream_, cont, asio::redirect_error(asio::use_awaitable, ec));
        if (ec)
          co_return BodyFailure(BodyError::kIncomplete, "write 100-continue: " + ec.message());
      }
      parser_.get().body().data = out.data();
      parser_.get().body().size = out.size();
      Lowest(stream_).expires_after(io_timeout_);
      co_await bhttp::async_read(stream_, buf_, parser_,
                                 asio::redirect_error(asio::use_awaitable, ec));
      if (ec == bhttp::error::need_buffer) ec = {};
      if (ec) {
        BodyError e = ec == beast::error::timeout      ? BodyError::kTimeout
                      : ec == bhttp::error::body_limit ? BodyError::kTooLarge
                                                       : BodyError::kIncomplete;
        co_return BodyFailure(e, "reading request body: " + ec.message());
      }
      size_t n = out.size() - parser_.get().body().size;
      if (n > 0) co_return n;
    }
  }

 private:
  Stream& stream_;
  beast::flat_buffer& buf_;
  bhttp::request_parser<bhttp::buffer_body>& parser_;
  bool expect_continue_;
  std::chrono::milliseconds io_timeout_;
  bool continue_sent_ = false;
  bool abandoned_ = false;
  Status error_;
};

template <class Stream>
class StreamResponse final : public ResponseWriter {
 public:
  StreamResponse(Stream& stream, bool head, bool keep_alive, std::chrono::milliseconds io_timeout)
      : stream_(stream), head_(head), keep_alive_(keep_alive), io_timeout_(io_timeout) {}
  void SetBodyLeftTooLarge(std::function<bool()> f) { body_left_too_large_ = std::move(f); }

  Awaitable<Status> Start(int status, HeaderList headers,
                          std::optional<uint64_t> content_length) override {
    if (started_) co_return Status(Code::kFailedPrecondition, "response already started");
    started_ = true;
    res_.emplace(static_cast<bhttp::status>(status), 11);
    for (auto& [k, v] : headers) res_->set(k, v);
    res_->set(bhttp::field::server, "kvcs");
    res_->set(bhttp::field::date, FormatHttpDate(NowUnix()));
    // Say "Connection: close" when the connection will be closed after this response because the
    // handler left a request body unread that is too large to drain (see ServeOne).
    res_->keep_alive(keep_alive_ && !(body_left_too_large_ && body_left_too_large_()));
    bool no_body = status == 204 || status == 304 || (status >= 100 && status < 200);
    if (head_ || no_body) {
      if (head_ && content_length && !no_body) {
        res_->set(bhttp::field::content_length, std::to_string(*content_length));
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
    Lowest(stream_).expires_after(io_timeout_);
    co_await bhttp::async_write_header(stream_, *sr_,
                                       asio::redirect_error(asio::use_awaitable, ec));
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
    Lowest(stream_).expires_after(io_timeout_);
    co_await bhttp::async_write(stream_, *sr_, asio::redirect_error(asio::use_awaitable, ec));
    if (ec == bhttp::error::need_buffer) ec = {};
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
    Lowest(stream_).expires_after(io_timeout_);
    co_await bhttp::async_write(stream_, *sr_, asio::redirect_error(asio::use_awaitable, ec));
    if (ec == bhttp::error::need_buffer) ec = {};
    if (ec) co_return Fail("finish body: " + ec.message());
    co_return Status::Ok();
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
  std::chrono::milliseconds io_timeout_;
  std::function<bool()> body_left_too_large_;
  bool started_ = false, finished_ = false, no_body_ = false;
  std::optional<uint64_t> remaining_;
  std::optional<bhttp::response<bhttp::buffer_body>> res_;
  std::optional<bhttp::response_serializer<bhttp::buffer_body>> sr_;
  Status error_;
};

Awaitable<Status> PlainTextError(ResponseWriter& response, int status, std::string_view message) {
  HeaderList h;
  h.emplace_back("Content-Type", "text/plain; charset=utf-8");
  std::string body = std::to_string(status) + " " + std::string(message) + "\n";
  co_return co_await SendComplete(response, status, std::move(h), body);
}

// Fills path and query from the raw target; on failure returns the message for a 400.
std::optional<std::string> DecodeTarget(Request* r) {
  size_t q = r->target.find('?');
  auto path = UriDecode(std::string_view(r->target).substr(0, q));
  if (!path.ok() || path->empty() || (*path)[0] != '/') {
    return "Couldn't parse the specified URI.";
  }
  r->path = std::move(*path);
  if (q != std::string::npos) {
    auto query = ParseQuery(std::string_view(r->target).substr(q + 1));
    if (!query.ok()) return "Couldn't parse the query string.";
    r->query = std::move(*query);
  }
  return std::nullopt;
}

// A connection's receive buffer, counted in the server's total of receive buffer bytes
// (Server::connection_memory).
class ReceiveBuffer {
 public:
  explicit ReceiveBuffer(std::atomic<size_t>& total) : total_(total) {}
  ~ReceiveBuffer() { total_ -= counted_; }
  ReceiveBuffer(const ReceiveBuffer&) = delete;
  ReceiveBuffer& operator=(const ReceiveBuffer&) = delete;

  beast::flat_buffer& get() { return buf_; }
  // Before waiting for a request head: holds kHeadBufferBytes unless it still holds pipelined
  // bytes. Slow heads and idle keep-alive connections never keep a body-sized buffer.
  void ForHead() {
    if (buf_.size() == 0 && buf_.capacity() > kHeadBufferBytes) buf_.shrink_to_fit();
    buf_.reserve(kHeadBufferBytes);
    Count();
  }
  // Before reading a body of `length` bytes (nullopt: chunked, unknown): room for up to `most`
  // bytes at once, so Beast reads the body in large recv calls (at most max(512, free
  // capacity) each) without holding more than the body needs.
  void ForBody(boost::optional<uint64_t> length, size_t most) {
    uint64_t want = std::min<uint64_t>(length.value_or(most), most);
    buf_.reserve(buf_.size() + static_cast<size_t>(want));
    Count();
  }

 private:
  // A request head with SigV4 headers (~1.5 KiB) arrives in one recv.
  static constexpr size_t kHeadBufferBytes = 4096;
  void Count() {
    size_t c = buf_.capacity();
    total_ += c;
    total_ -= counted_;
    counted_ = c;
  }
  std::atomic<size_t>& total_;
  size_t counted_ = 0;
  beast::flat_buffer buf_;
};

}  // namespace

struct Server::Impl {
  ServerOptions options;
  Router router;
  ErrorResponder error_responder = PlainTextError;
  // Declaration order matters for destruction: the acceptor goes first, then the io_context
  // (destroying any parked session coroutines), then the TLS context they may reference.
  std::optional<asio::ssl::context> tls;
  asio::io_context ioc;
  std::optional<tcp::acceptor> acceptor;
  uint16_t port = 0;
  ConnectionAdmission admission;
  std::atomic<bool> stopping{false};
  std::atomic<size_t> receive_buffer_bytes{0};  // capacity of every connection's receive buffer

  // Every live connection's stream, by admission id, so evictions and Stop() can close it. An
  // entry is added and removed on the connection's strand, where the stream lives.
  using ConnectionId = ConnectionAdmission::ConnectionId;
  std::mutex sessions_mu;
  std::unordered_map<ConnectionId, std::pair<beast::tcp_stream*, asio::any_io_executor>> sessions;

  // Keeps `stream` in `sessions` for the life of a connection coroutine.
  class Registration {
   public:
    Registration(Impl& impl, ConnectionId id, beast::tcp_stream& stream) : impl_(impl), id_(id) {
      std::lock_guard<std::mutex> l(impl_.sessions_mu);
      impl_.sessions.emplace(id, std::make_pair(&stream, stream.get_executor()));
    }
    ~Registration() {
      std::lock_guard<std::mutex> l(impl_.sessions_mu);
      impl_.sessions.erase(id_);
    }
    Registration(const Registration&) = delete;
    Registration& operator=(const Registration&) = delete;

   private:
    Impl& impl_;
    ConnectionId id_;
  };

  explicit Impl(ServerOptions o) : options(std::move(o)), admission(options.limits) {}

  const char* name() const { return options.name.c_str(); }

  template <class Stream>
  Awaitable<void> Session(Stream& stream, ConnectionId id);
  template <class Stream>
  Awaitable<bool> ServeOne(Stream& stream, ReceiveBuffer& rb, ConnectionId id);
  Awaitable<void> Accept();
  Awaitable<void> RunConnection(tcp::socket s, ConnectionId id);
  // Cancels the pending operations of these connections (on their strands); a connection not
  // registered yet notices at registration (admission.Live) or at its next AwaitHead.
  void Cancel(const std::vector<ConnectionId>& ids);
  void BeginStop();
};

void Server::Impl::Cancel(const std::vector<ConnectionId>& ids) {
  std::lock_guard<std::mutex> l(sessions_mu);
  for (ConnectionId id : ids) {
    auto it = sessions.find(id);
    if (it == sessions.end()) continue;
    // Runs on the connection's strand: if it is still registered there, its stream is alive.
    asio::post(it->second.second, [this, id] {
      std::lock_guard<std::mutex> l2(sessions_mu);
      auto s = sessions.find(id);
      if (s != sessions.end()) s->second.first->cancel();
    });
  }
}

template <class Stream>
Awaitable<void> Server::Impl::Session(Stream& stream, ConnectionId id) {
  ReceiveBuffer buf(receive_buffer_bytes);
  for (;;) {
    if (stopping) break;
    bool keep = co_await ServeOne(stream, buf, id);
    if (!keep) break;
  }
  beast::error_code ec;
  Lowest(stream).socket().shutdown(tcp::socket::shutdown_send, ec);
}

template <class Stream>
Awaitable<bool> Server::Impl::ServeOne(Stream& stream, ReceiveBuffer& rb, ConnectionId id) {
  const Limits& limits = options.limits;
  beast::flat_buffer& buf = rb.get();
  rb.ForHead();
  // No suspension between AwaitHead and starting the read: an eviction or Stop() (posted to
  // this strand) either finds the read pending and cancels it, or AwaitHead says "close".
  std::optional<std::chrono::milliseconds> head_deadline =
      admission.AwaitHead(id, std::chrono::steady_clock::now());
  if (!head_deadline) co_return false;
  bhttp::request_parser<bhttp::buffer_body> parser;
  parser.header_limit(limits.max_header_bytes);
  // Unbounded while the head is read: a declared length over max_body_bytes is answered 413 below
  // rather than failing the head read.
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  beast::error_code ec;
  Lowest(stream).expires_after(*head_deadline);
  co_await bhttp::async_read_header(stream, buf, parser,
                                    asio::redirect_error(asio::use_awaitable, ec));
  if (ec == beast::error::timeout) admission.NoteHeadDeadline(id);
  if (ec) {
    if (ec != bhttp::error::end_of_stream && ec != asio::error::eof &&
        ec != beast::error::timeout && ec != asio::error::operation_aborted) {
      KVCS_LOG_DEBUG("{}: bad request head: {}", name(), ec.message());
      // A field the parser refuses (a control character in a value, a bad name) is the
      // client's error, answered as such (S3 and radosgw answer 400 too).
      if (ec == bhttp::error::header_limit || ec == bhttp::error::bad_target ||
          ec == bhttp::error::bad_value || ec == bhttp::error::bad_field) {
        StreamResponse<Stream> resp(stream, false, false, limits.io_timeout);
        co_await error_responder(resp, 400, "Malformed or oversized request head");
      }
    }
    co_return false;
  }
  switch (admission.HeadArrived(id)) {
    case ConnectionAdmission::HeadVerdict::kServe:
      break;
    case ConnectionAdmission::HeadVerdict::kGone:
      co_return false;
    case ConnectionAdmission::HeadVerdict::kRefusedAddressRequests: {
      StreamResponse<Stream> resp(stream, false, false, limits.io_timeout);
      co_await error_responder(resp, 503, "Too many requests in flight from this address");
      co_return false;
    }
  }
  parser.body_limit(limits.max_body_bytes);  // counts chunked bodies as they arrive
  // Beast receives at most max(512, free capacity) bytes per read: without room a request body
  // arrived 512 bytes per recv call.
  if (!parser.is_done()) rb.ForBody(parser.content_length(), limits.receive_buffer_bytes);
  auto& head = parser.get();
  Request req;
  req.method = std::string(head.method_string());
  req.target = std::string(head.target());
  for (const auto& f : head)
    req.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
  if (parser.content_length()) req.content_length = *parser.content_length();
  bool keep_alive = head.keep_alive() && !stopping;
  bool expect_continue = false;
  if (auto e = req.Header("expect")) expect_continue = AsciiIEquals(*e, "100-continue");
  StreamResponse<Stream> resp(stream, req.method == "HEAD", keep_alive, limits.io_timeout);
  StreamBody<Stream> body(stream, buf, parser, expect_continue, limits.io_timeout);
  // The same test as the drain after the handler (below): a body left unread closes the
  // connection unless it is small enough to drain.
  auto body_left_too_large = [&parser, &body, &limits] {
    if (parser.is_done()) return false;
    if (body.continue_pending() || body.failed()) return true;
    auto cl = parser.content_length();
    return !cl || *cl > limits.max_drain_bytes;
  };
  resp.SetBodyLeftTooLarge(body_left_too_large);

  // Refusals before routing: the handler never sees these requests.
  int refuse_status = 0;
  std::string refuse_message;
  if (auto bad = DecodeTarget(&req)) {
    refuse_status = 400;
    refuse_message = std::move(*bad);
  } else if (req.content_length && *req.content_length > limits.max_body_bytes) {
    refuse_status = 413;
    refuse_message = "Request body larger than " + std::to_string(limits.max_body_bytes) + " bytes";
    body.Abandon();  // never read a body we refused
  }

  bool threw = false;
  try {
    if (refuse_status != 0) {
      co_await error_responder(resp, refuse_status, refuse_message);
    } else if (const Handler* handler = router.Find(req)) {
      // GCC 12: never co_await inside a braced aggregate initializer. GCC 12 bit-copies the
      // awaited temporary into the member and then destroys the temporary as well, so the
      // strand executor's shared state was released twice (heap use-after-free of the
      // connection's strand, seen as corruption at shutdown).
      asio::any_io_executor ex = co_await asio::this_coro::executor;
      HandlerContext ctx{req, body, resp, ex};
      co_await (*handler)(ctx);
      if (!resp.started()) co_await error_responder(resp, 500, "handler produced no response");
    } else {
      std::string message = "No handler for " + req.path;
      co_await error_responder(resp, 404, message);
    }
  } catch (const std::exception& e) {
    KVCS_LOG_ERROR("{}: {} {}: exception: {}", name(), req.method, req.target, e.what());
    threw = true;
  }
  if (threw) {
    if (!resp.started()) co_await error_responder(resp, 500, "internal error");
    co_return false;
  }
  KVCS_LOG_DEBUG("{}: {} {} -> done", name(), req.method, req.target);
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

Awaitable<void> Server::Impl::RunConnection(tcp::socket s, ConnectionId id) {
  if (tls) {
    beast::ssl_stream<beast::tcp_stream> stream(beast::tcp_stream(std::move(s)), *tls);
    Registration registration(*this, id, Lowest(stream));
    if (!admission.Live(id)) co_return;  // evicted before it was registered
    beast::error_code ec;
    Lowest(stream).expires_after(options.limits.handshake_timeout);
    co_await stream.async_handshake(asio::ssl::stream_base::server,
                                    asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return;
    co_await Session(stream, id);
  } else {
    beast::tcp_stream stream(std::move(s));
    Registration registration(*this, id, stream);
    co_await Session(stream, id);
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
      KVCS_LOG_WARN("{}: accept: {}", name(), ec.message());
      continue;
    }
    // Per-address limits key on the peer's IP address (text form); a socket whose peer is
    // already gone shares the empty key.
    std::string address;
    if (auto peer = sock.remote_endpoint(ec); !ec) address = peer.address().to_string();
    ConnectionAdmission::Decision d = admission.Admit(address, std::chrono::steady_clock::now());
    if (!d.evict.empty()) Cancel(d.evict);
    if (d.verdict != ConnectionAdmission::Verdict::kAdmitted) {
      // Debug only: under a flood this line would be written once per refused connection.
      KVCS_LOG_DEBUG("{}: refusing a connection from {} ({})", name(), address,
                     d.verdict == ConnectionAdmission::Verdict::kRefusedAddress
                         ? "per-address connection limit"
                         : "connection limit, every connection busy");
      sock.close(ec);
      continue;
    }
    sock.set_option(tcp::no_delay(true), ec);
    ConnectionId id = d.id;
    asio::co_spawn(strand, RunConnection(std::move(sock), id), [this, id](std::exception_ptr e) {
      if (admission.Release(id) == 0 && stopping) ioc.stop();  // the last connection drained
      if (e) {
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& ex) {
          KVCS_LOG_ERROR("{}: session ended with exception: {}", name(), ex.what());
        }
      }
    });
  }
}

void Server::Impl::BeginStop() {
  if (stopping.exchange(true)) return;
  KVCS_LOG_INFO("{}: shutting down", name());
  asio::post(ioc, [this] {
    beast::error_code ec;
    if (acceptor) acceptor->close(ec);
    // Connections waiting for a request head are closed now; later AwaitHeads answer "close".
    Cancel(admission.BeginStop());
    if (admission.active() == 0) ioc.stop();
  });
  auto timer = std::make_shared<asio::steady_timer>(ioc, options.limits.shutdown_grace);
  timer->async_wait([this, timer](beast::error_code) { ioc.stop(); });
}

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Server::~Server() = default;

Router& Server::router() { return impl_->router; }

void Server::SetErrorResponder(ErrorResponder responder) {
  impl_->error_responder = std::move(responder);
}

Status Server::Start() {
  Impl& s = *impl_;
  const ServerOptions& o = s.options;
  if (!o.tls_cert_file.empty() || !o.tls_key_file.empty()) {
    if (o.tls_cert_file.empty() || o.tls_key_file.empty()) {
      return InvalidArgument("TLS needs both a certificate and a key file");
    }
    s.tls.emplace(asio::ssl::context::tls_server);
    boost::system::error_code ec;
    s.tls->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                           asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                           asio::ssl::context::no_tlsv1_1,
                       ec);
    s.tls->use_certificate_chain_file(o.tls_cert_file, ec);
    if (ec) return InvalidArgument("TLS certificate " + o.tls_cert_file + ": " + ec.message());
    s.tls->use_private_key_file(o.tls_key_file, asio::ssl::context::pem, ec);
    if (ec) return InvalidArgument("TLS key " + o.tls_key_file + ": " + ec.message());
  }
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(o.listen_host, ec);
  if (ec) return InvalidArgument("bad listen address " + o.listen_host);
  tcp::endpoint ep(addr, o.port);
  s.acceptor.emplace(s.ioc);
  s.acceptor->open(ep.protocol(), ec);
  if (!ec) s.acceptor->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) s.acceptor->bind(ep, ec);
  if (!ec) s.acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status(Code::kUnavailable, "cannot listen on " + o.listen_host + ":" +
                                          std::to_string(o.port) + ": " + ec.message());
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
  int n = std::max(1, s.options.io_threads);
  std::vector<std::thread> threads;
  for (int i = 1; i < n; ++i) threads.emplace_back([&s] { s.ioc.run(); });
  s.ioc.run();
  for (auto& t : threads) t.join();
  AdmissionMetrics m = s.admission.metrics();
  KVCS_LOG_INFO(
      "{}: connections admitted {}, refused {} (per-address {}, all busy {}, stopping {}), "
      "evicted {} (no head {}, idle {}); requests refused per-address {}; head deadlines {}",
      s.name(), m.admitted, m.refused_address_connections + m.refused_full + m.refused_stopping,
      m.refused_address_connections, m.refused_full, m.refused_stopping,
      m.evicted_head_pending + m.evicted_idle, m.evicted_head_pending, m.evicted_idle,
      m.refused_address_requests, m.head_deadline_closes);
}

AdmissionMetrics Server::admission_metrics() const { return impl_->admission.metrics(); }

ConnectionMemory Server::connection_memory() const {
  ConnectionMemory m;
  {
    std::lock_guard<std::mutex> l(impl_->sessions_mu);
    m.connections = impl_->sessions.size();
  }
  m.receive_buffer_bytes = impl_->receive_buffer_bytes;
  return m;
}

void Server::Stop() { impl_->BeginStop(); }

}  // namespace kvcs::http
