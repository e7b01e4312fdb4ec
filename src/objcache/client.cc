// ObjectCache client. See client.h.
#include "objcache/client.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <limits>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/asio.h"
#include "common/hex.h"
#include "common/strings.h"
#include "common/utc_time.h"
#include "objcache/shm_buffer.h"
#include "objcache/verify_queue.h"
#include "s3/http_util.h"
#include "s3/sigv4.h"
#include "s3client/http_connection.h"  // the TLS client context and peer checks

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

namespace kvcs::objcache {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

// Largest single socket receive (1 MiB amortizes syscalls on loopback and LAN); also the capacity
// reserved for the connection's receive buffer, so that Beast's own reads (small responses) are
// 64 KiB rather than 512 bytes.
constexpr size_t kReadChunk = 1u << 20;
// A non-chunked aggregated body (not what our server sends) is decoded through a buffer this big.
constexpr size_t kPlainBodyChunk = 256u << 10;
// Small responses (errors, JSON results) are read whole up to this size.
constexpr size_t kMaxSmallResponse = 16u << 20;

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string AmzDate(std::time_t t) { return FormatUtc(t, "%Y%m%dT%H%M%SZ"); }

Status Transport(const beast::error_code& ec, const char* what) {
  return Status(Code::kUnavailable, std::string("objcache client: ") + what + ": " + ec.message());
}

}  // namespace

std::optional<std::string> HttpResult::Header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (AsciiIEquals(k, name)) return v;
  return std::nullopt;
}

// The connection's byte stream for Beast's synchronous reads and writes: the TCP socket, or TLS
// over it (an https store).
class ConnStream {
 public:
  explicit ConnStream(tcp::socket& socket) : socket_(socket) {}
  void SetTls(asio::ssl::stream<tcp::socket&>* tls) { tls_ = tls; }
  using executor_type = tcp::socket::executor_type;
  executor_type get_executor() { return socket_.get_executor(); }
  template <class Buffers>
  size_t read_some(const Buffers& b) {
    return tls_ ? tls_->read_some(b) : socket_.read_some(b);
  }
  template <class Buffers>
  size_t read_some(const Buffers& b, beast::error_code& ec) {
    return tls_ ? tls_->read_some(b, ec) : socket_.read_some(b, ec);
  }
  template <class Buffers>
  size_t write_some(const Buffers& b) {
    return tls_ ? tls_->write_some(b) : socket_.write_some(b);
  }
  template <class Buffers>
  size_t write_some(const Buffers& b, beast::error_code& ec) {
    return tls_ ? tls_->write_some(b, ec) : socket_.write_some(b, ec);
  }

 private:
  tcp::socket& socket_;
  asio::ssl::stream<tcp::socket&>* tls_ = nullptr;
};

struct Client::Impl {
  explicit Impl(ClientOptions o)
      : options(std::move(o)),
        socket(io),
        verify_threads(options.verify_threads ? std::min(options.verify_threads, kMaxVerifyThreads)
                                              : std::clamp(std::thread::hardware_concurrency(), 1u,
                                                           kMaxVerifyThreads)) {
    RandomBytes(reinterpret_cast<uint8_t*>(&shm_nonce), sizeof shm_nonce);
  }
  ~Impl() {
    verify.reset();  // no verification still reads the shared buffer
    DropShm();
  }
  ClientOptions options;
  asio::io_context io;
  tcp::socket socket;
  std::unique_ptr<asio::ssl::context> tls_context;     // options.tls: made on first connect
  std::optional<asio::ssl::stream<tcp::socket&>> tls;  // over `socket` while connected
  ConnStream stream{socket};
  beast::flat_buffer buffer;
  bool connected = false;
  const uint32_t verify_threads;
  // The digest checks of a delivered layer: this thread and verify_threads - 1 helpers, started
  // by the first aggregated GET.
  std::unique_ptr<VerifyQueue> verify;

  // Same-host delivery: the registered buffer and its registration connection (-1: none).
  std::unique_ptr<SharedBuffer> shm_buffer;
  int shm_sock = -1;
  ShmToken shm_token{};
  uint64_t shm_nonce = 0;  // the last request's; the next is one more (never 0)

  Status ShmError(std::string what) const {
    return Status(Code::kUnavailable, "objcache client: shm socket " + options.shm_socket + ": " +
                                          what + " (is `kvcs store --shm-socket` running there?)");
  }
  void DropShm() {
    if (shm_sock >= 0) ::close(shm_sock);
    shm_sock = -1;
    shm_buffer.reset();
  }
  // Registers a buffer on the store's socket unless one is registered.
  Status EnsureShm() {
    if (shm_sock >= 0) return Status::Ok();
    if (options.shm_slots < 1 || options.shm_slots > kMaxShmSlots)
      return InvalidArgument("objcache client: shm_slots must be 1..65535");
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (options.shm_socket.size() >= sizeof addr.sun_path) return ShmError("path too long");
    std::memcpy(addr.sun_path, options.shm_socket.data(), options.shm_socket.size());
    KVCS_ASSIGN_OR_RETURN(auto buf, SharedBuffer::Create(options.shm_buffer_bytes));
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return ShmError(std::strerror(errno));
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      Status s = ShmError(std::string("connect: ") + std::strerror(errno));
      ::close(fd);
      return s;
    }
    Bytes msg;
    EncodeShmMessage(ShmMessage{ShmMessageType::kRegister}, &msg);
    Status s = SendWithFd(fd, msg, buf->fd());
    uint8_t in[kShmMessageBytes];
    size_t got = 0;
    while (s.ok() && got < sizeof in) {
      ssize_t n = ::recv(fd, in + got, sizeof in - got, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        s = ShmError("the store closed the registration");
      else
        got += size_t(n);
    }
    Result<ShmMessage> answer = s.ok() ? DecodeShmMessage(ByteSpan(in, sizeof in)) : s;
    if (answer.ok() && (answer->type != ShmMessageType::kRegistered ||
                        (answer->status == ShmRegisterStatus::kOk && answer->value != buf->size())))
      answer = ShmError("unexpected answer to REGISTER");
    if (!answer.ok()) {
      ::close(fd);
      return answer.status();
    }
    if (answer->status != ShmRegisterStatus::kOk) {
      ::close(fd);
      return Status(Code::kFailedPrecondition,
                    "objcache client: the store refused the shared buffer: " +
                        std::string(ShmRegisterStatusName(answer->status)));
    }
    shm_sock = fd;
    shm_buffer = std::move(buf);
    shm_token = answer->token;
    return Status::Ok();
  }
  // RELEASE or CANCEL for the current request; a broken registration is dropped (the next
  // request registers again, and the store ends this one when it notices). The buffer stays mapped
  // until then: records of this request still point into it.
  void ShmTell(ShmMessageType type, uint32_t released) {
    if (shm_sock < 0) return;
    ShmMessage m;
    m.type = type;
    m.value = shm_nonce;
    m.released = released;
    Bytes out;
    EncodeShmMessage(m, &out);
    size_t sent = 0;
    while (sent < out.size()) {
      ssize_t n = ::send(shm_sock, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ::close(shm_sock);
        shm_sock = -1;
        return;
      }
      sent += size_t(n);
    }
  }

  Result<AggregateStats> Aggregate(const std::string& bucket, AggregateRequest request,
                                   const LayerCallback& on_layer, const BlockCallback& on_block);

  std::string HostHeader() const { return options.host + ":" + std::to_string(options.port); }

  // Whether the kept connection is still usable: the store closes a keep-alive connection idle
  // past its head deadline (10 s, 2 s under pressure), and a request written into a closed one
  // fails ("Broken pipe", or end of stream before the answer). A connection the peer closed,
  // reset, or sent unasked bytes on is dropped here, before a request is sent, so every request
  // (PUTs too) goes out once, on a fresh connection if need be.
  bool StillOpen() {
    uint8_t probe;
    ssize_t n = ::recv(socket.native_handle(), &probe, 1, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && buffer.size() == 0;
  }

  Status Connect() {
    if (connected && StillOpen()) return Status::Ok();
    if (connected) Close();
    beast::error_code ec;
    tcp::resolver resolver(io);
    auto eps = resolver.resolve(options.host, std::to_string(options.port), ec);
    if (ec) return Transport(ec, "resolve");
    socket = tcp::socket(io);
    asio::connect(socket, eps, ec);
    if (ec) return Transport(ec, "connect");
    socket.set_option(tcp::no_delay(true), ec);
    if (options.tls) {
      if (!tls_context) {
        KVCS_ASSIGN_OR_RETURN(tls_context,
                              s3client::MakeTlsClientContext(options.ca_file, options.insecure));
      }
      tls.emplace(socket, *tls_context);
      SSL* ssl = tls->native_handle();
      Status peer = s3client::SetTlsPeer(ssl, options.host, !options.insecure);
      if (peer.ok()) {
        tls->handshake(asio::ssl::stream_base::client, ec);
        if (ec) {
          peer = s3client::TlsHandshakeError(ec, ssl, options.host, !options.insecure,
                                             !options.ca_file.empty());
        }
      }
      if (!peer.ok()) {
        tls.reset();
        socket.close(ec);
        return Status(Code::kUnavailable, "objcache client: " + peer.message());
      }
      stream.SetTls(&*tls);
    }
    buffer.clear();
    buffer.reserve(kReadChunk);
    connected = true;
    return Status::Ok();
  }
  void Close() {
    beast::error_code ec;
    stream.SetTls(nullptr);
    tls.reset();  // no close_notify: the connection is dropped, not reused
    socket.shutdown(tcp::socket::shutdown_both, ec);
    socket.close(ec);
    connected = false;
  }

  // Builds the request head, SigV4-signed when credentials are set and `sign`.
  http::request<http::empty_body> Head(const std::string& method, const std::string& path,
                                       const std::string& query, const std::string& payload_hash,
                                       uint64_t content_length, bool sign,
                                       const std::vector<std::pair<std::string, std::string>>& hs) {
    http::request<http::empty_body> req;
    req.method_string(method);
    req.target(s3::UriEncode(path, false) + (query.empty() ? "" : "?" + query));
    req.version(11);
    req.set(http::field::host, HostHeader());
    for (const auto& [k, v] : hs) req.set(k, v);
    if (content_length || method == "PUT" || method == "POST")
      req.set(http::field::content_length, std::to_string(content_length));
    if (sign && !options.access_key.empty()) {
      std::string amz = AmzDate(std::time(nullptr));
      std::string date = amz.substr(0, 8);
      std::string scope = date + "/" + options.region + "/s3/aws4_request";
      auto pairs = s3::ParseQuery(query);
      std::string cq = pairs.ok() ? s3::CanonicalQueryString(*pairs, false) : "";
      std::string ch = "host:" + HostHeader() + "\nx-amz-content-sha256:" + payload_hash +
                       "\nx-amz-date:" + amz + "\n";
      const std::string signed_headers = "host;x-amz-content-sha256;x-amz-date";
      std::string cr = s3::CanonicalRequest(method, s3::UriEncode(path, false), cq, ch,
                                            signed_headers, payload_hash);
      std::string sig = s3::SignHex(s3::SigningKey(options.secret_key, date, options.region, "s3"),
                                    s3::StringToSign(amz, scope, cr));
      req.set("x-amz-date", amz);
      req.set("x-amz-content-sha256", payload_hash);
      req.set(http::field::authorization, "AWS4-HMAC-SHA256 Credential=" + options.access_key +
                                              "/" + scope + ", SignedHeaders=" + signed_headers +
                                              ", Signature=" + sig);
    }
    return req;
  }

  Status SendHead(http::request<http::empty_body>& req) {
    beast::error_code ec;
    http::request_serializer<http::empty_body> sr(req);
    http::write_header(stream, sr, ec);
    if (ec) return Transport(ec, "write");
    return Status::Ok();
  }
  Status SendRaw(ByteSpan data) {
    beast::error_code ec;
    asio::write(stream, asio::buffer(data.data(), data.size()), ec);
    if (ec) return Transport(ec, "write");
    return Status::Ok();
  }

  // Reads a whole (small) response.
  Result<HttpResult> ReadSmall(bool head_request) {
    beast::error_code ec;
    http::response_parser<http::vector_body<uint8_t>> p;
    p.body_limit(kMaxSmallResponse);
    p.skip(head_request);
    http::read(stream, buffer, p, ec);
    if (ec) {
      Close();
      return Transport(ec, "read response");
    }
    HttpResult r;
    r.status = static_cast<int>(p.get().result_int());
    for (const auto& f : p.get()) r.headers.emplace_back(f.name_string(), f.value());
    r.body = std::move(p.get().body());
    if (!p.get().keep_alive()) Close();
    return r;
  }
};

Client::Client(ClientOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Client::~Client() = default;

Result<HttpResult> Client::Request(const std::string& method, const std::string& path,
                                   const std::string& query, ByteSpan body,
                                   const std::vector<std::pair<std::string, std::string>>& headers,
                                   bool sign) {
  KVCS_RETURN_IF_ERROR(impl_->Connect());
  // The payload hash is the body's SHA-256 unless the caller names one (UNSIGNED-PAYLOAD).
  std::string payload_hash;
  std::vector<std::pair<std::string, std::string>> hs;
  for (const auto& h : headers) {
    if (AsciiIEquals(h.first, "x-amz-content-sha256"))
      payload_hash = h.second;
    else
      hs.push_back(h);
  }
  if (payload_hash.empty()) payload_hash = ToHex(Sha256::Hash(body));
  auto req = impl_->Head(method, path, query, payload_hash, body.size(), sign, hs);
  Status s = impl_->SendHead(req);
  if (s.ok() && !body.empty()) s = impl_->SendRaw(body);
  if (!s.ok()) {
    impl_->Close();
    return s;
  }
  return impl_->ReadSmall(method == "HEAD");
}

Result<Client::ExistsResult> Client::AggregateExists(const std::string& bucket,
                                                     const AggregateRequest& request) {
  const std::string json = SerializeAggregateRequest(request);
  KVCS_ASSIGN_OR_RETURN(HttpResult r,
                        Request("POST", "/" + bucket, "kvcs-aggregate-exists", AsBytes(json)));
  if (r.status != 200) {
    return Status(Code::kUnavailable, "aggregated exists: HTTP " + std::to_string(r.status) + " " +
                                          std::string(AsStringView(r.body)));
  }
  ExistsResult out;
  try {
    auto j = nlohmann::json::parse(AsStringView(r.body));
    const std::string status = j.at("status").get<std::string>();
    out.leading = j.at("leading").get<uint64_t>();
    if (status.size() != request.block_keys.size() || out.leading > status.size()) {
      return Status(Code::kCorruption, "aggregated exists: answer does not match the request");
    }
    for (char c : status) {
      if (c < '0' || c > '0' + kMaxBlockStatus) {
        return Status(Code::kCorruption, "aggregated exists: bad block status");
      }
      out.status.push_back(static_cast<BlockStatus>(c - '0'));
    }
  } catch (const nlohmann::json::exception& e) {
    return Status(Code::kCorruption, std::string("aggregated exists: bad answer: ") + e.what());
  }
  return out;
}

Status Client::CreateBucket(const std::string& bucket) {
  KVCS_ASSIGN_OR_RETURN(HttpResult r, Request("PUT", "/" + bucket, "", {}));
  if (r.status != 200 && r.status != 409)
    return Status(Code::kUnavailable, "create bucket: HTTP " + std::to_string(r.status) + " " +
                                          std::string(AsStringView(r.body)));
  return Status::Ok();
}

Result<AggregateStats> Client::AggregateGet(const std::string& bucket,
                                            const AggregateRequest& request,
                                            const LayerCallback& on_layer,
                                            const BlockCallback& on_block) {
  auto r = impl_->Aggregate(bucket, request, on_layer, on_block);
  // A store restarted since the registration no longer knows the buffer: register again, once.
  if (!r.ok() && impl_->shm_sock >= 0 &&
      r.status().message().find("ShmUnknownToken") != std::string::npos) {
    impl_->DropShm();
    r = impl_->Aggregate(bucket, request, on_layer, on_block);
  }
  return r;
}

Result<AggregateStats> Client::Impl::Aggregate(const std::string& bucket, AggregateRequest request,
                                               const LayerCallback& on_layer,
                                               const BlockCallback& on_block) {
  KVCS_RETURN_IF_ERROR(Connect());
  request.shm.reset();
  const bool shm = !options.shm_socket.empty();
  if (shm) {
    KVCS_RETURN_IF_ERROR(EnsureShm());
    if (++shm_nonce == 0) ++shm_nonce;
    // No more slots than layers: the store then sizes each slot from the whole buffer.
    request.shm = ShmTarget{shm_token, shm_nonce, std::min(options.shm_slots, request.layer_count)};
  }
  std::string json = SerializeAggregateRequest(request);
  auto t0 = std::chrono::steady_clock::now();
  auto head = Head("POST", "/" + bucket, "kvcs-aggregate", ToHex(Sha256::Hash(json)), json.size(),
                   true, {{"Content-Type", "application/json"}});
  Status s = SendHead(head);
  if (s.ok()) s = SendRaw(AsBytes(json));
  if (!s.ok()) {
    Close();
    return s;
  }
  beast::error_code ec;
  http::response_parser<http::buffer_body> p;
  // Not boost::none: Beast 1.74 compares Content-Length > an empty optional, which is always true.
  p.body_limit(std::numeric_limits<std::uint64_t>::max());
  http::read_header(stream, buffer, p, ec);
  if (ec) {
    Close();
    return Transport(ec, "read response head");
  }
  if (p.get().result_int() != 200) {
    // Read the (small) error body.
    std::string err;
    Bytes chunk(64 * 1024);
    while (!p.is_done() && err.size() < kMaxSmallResponse) {
      p.get().body().data = chunk.data();
      p.get().body().size = chunk.size();
      http::read(stream, buffer, p, ec);
      if (ec == http::error::need_buffer) ec = {};
      if (ec) break;
      err.append(reinterpret_cast<char*>(chunk.data()), chunk.size() - p.get().body().size);
    }
    int code = static_cast<int>(p.get().result_int());
    Close();
    return Status(code == 404 ? Code::kNotFound
                              : (code == 403 ? Code::kPermissionDenied : Code::kInvalidArgument),
                  "aggregate: HTTP " + std::to_string(code) + ": " + err);
  }
  AggregateStats stats;
  StreamDecoder decoder;
  std::vector<StreamEvent> events;
  Status feed_status;
  bool header_seen = false;
  uint32_t layers_done = 0;
  // The layer whose blocks are being verified: each block's record and bytes as published to
  // the verify queue (sized once per layer: the helpers read entries while later ones are added),
  // whether its digest failed, and whether on_block had it. Blocks are checked on verify_threads
  // threads. on_block gets a block only once its whole layer is in (so that a caller may treat a
  // layer's blocks as one unit): a block checked after that, on the thread that checked it; one
  // checked while the layer was still arriving, in a second pass at the layer's end.
  struct Pending {
    bool begun = false;
    uint16_t layer = 0;
    size_t published = 0;
    std::atomic<bool> complete{false};  // every block of the layer is in
    std::vector<BlockRecord> records;
    std::vector<ByteSpan> data;
    std::vector<uint8_t> bad;
    std::vector<uint8_t> handed;  // on_block had it
  } pending;
  if (!verify) verify = std::make_unique<VerifyQueue>(verify_threads - 1);
  // Declared after everything the verification reads: on every way out, no block is still being
  // checked when the decoder's buffers or the shared buffer's records go away.
  struct AbandonOnExit {
    VerifyQueue* q;
    ~AbandonOnExit() { q->Abandon(); }
  } abandon_on_exit{verify.get()};
  const size_t block_count = request.block_keys.size();
  // Hands block i to on_block if it is present and verified.
  auto hand = [&pending, &on_block](size_t i) {
    const BlockRecord& r = pending.records[i];
    if (!on_block || pending.bad[i] || r.status != BlockStatus::kPresent) return;
    on_block(pending.layer, static_cast<uint32_t>(i),
             DeliveredBlock{r.status, r.k_len, r.v_len, pending.data[i]});
    pending.handed[i] = 1;
  };
  auto begin_layer = [&](uint16_t layer) {
    pending.begun = true;
    pending.layer = layer;
    pending.published = 0;
    pending.complete = false;
    pending.records.assign(block_count, BlockRecord{});
    pending.data.assign(block_count, ByteSpan{});
    pending.bad.assign(block_count, 0);
    pending.handed.assign(block_count, 0);
    verify->Begin(block_count, [&pending, &hand](size_t i) {
      pending.bad[i] = !VerifyBlockBytes(pending.records[i], pending.data[i]).ok();
      if (pending.complete.load(std::memory_order_acquire)) hand(i);
    });
  };
  // Ends the layer's verification: every block checked and, once, handed to on_block.
  auto finish_layer = [&] {
    verify->Finish();
    pending.begun = false;
    if (!on_block) return;
    bool late = false;
    for (size_t i = 0; i < block_count && !late; ++i)
      late = !pending.handed[i] && !pending.bad[i] &&
             pending.records[i].status == BlockStatus::kPresent;
    if (!late) return;
    verify->Begin(block_count, [&pending, &hand](size_t i) {
      if (!pending.handed[i]) hand(i);
    });
    verify->Finish();
  };
  // Hands blocks [pending.published, upto) of the layer to the verify queue.
  auto publish = [&](const std::vector<LayerBlock>& blocks, size_t upto) -> Status {
    if (upto > block_count || blocks.size() < upto)
      return Internal("aggregate: more blocks than the request's");
    for (size_t i = pending.published; i < upto; ++i) {
      const LayerBlock& b = blocks[i];
      pending.records[i] = b.record;
      if (b.record.status != BlockStatus::kPresent) continue;
      pending.data[i] = b.data;
      if (shm) {  // in the shared buffer; the decoder bounded the lengths, not the offset
        const uint64_t len = b.record.k_len + b.record.v_len, size = shm_buffer->size();
        if (b.shm_offset > size || len > size - b.shm_offset)
          return InvalidArgument("aggregate: block bytes outside the shared buffer");
        pending.data[i] = ByteSpan(shm_buffer->data() + b.shm_offset, len);
      }
    }
    pending.published = std::max(pending.published, upto);
    verify->Publish(pending.published);
    return Status::Ok();
  };
  auto fail = [&](Status st) {
    verify->Abandon();
    Close();
    if (shm) ShmTell(ShmMessageType::kCancel, 0);  // the store stops writing into the buffer
    return st;
  };
  // Chunked bodies (what the server sends): the parser hands each piece of chunk data straight
  // from the receive buffer to the decoder, so the bytes are copied once (into the block buffers
  // the callback sees). A Content-Length body (not sent by our server) goes through `chunk`.
  auto on_chunk_body = [&](std::uint64_t, beast::string_view body, beast::error_code&) {
    if (feed_status.ok()) {
      stats.body_bytes += body.size();
      feed_status = decoder.Feed(
          ByteSpan(reinterpret_cast<const uint8_t*>(body.data()), body.size()), &events);
    }
    return body.size();
  };
  p.on_chunk_body(on_chunk_body);
  p.eager(true);
  Bytes chunk(kPlainBodyChunk);
  beast::flat_buffer& in = buffer;
  bool need_more = false;  // the buffer ends inside a chunk header or line
  while (!p.is_done()) {
    if (in.size() == 0 || need_more) {
      // One large receive per step: Beast's own read loop would receive at most 64 KiB (and only
      // max(512, free capacity) with a small buffer: 514-byte recv calls were the bottleneck).
      // A line that never ends would grow the buffer; kMaxSmallResponse bounds it.
      if (in.size() > kMaxSmallResponse)
        return fail(InvalidArgument("aggregate: chunk line too long"));
      size_t n = stream.read_some(in.prepare(kReadChunk), ec);
      if (ec == asio::error::eof) {
        p.put_eof(ec);
        if (ec) return fail(Transport(ec, "read body"));
        continue;
      }
      if (ec) return fail(Transport(ec, "read body"));
      in.commit(n);
      need_more = false;
    }
    p.get().body().data = chunk.data();
    p.get().body().size = chunk.size();
    size_t used = p.put(in.data(), ec);
    in.consume(used);
    if (ec == http::error::need_more) {
      // Receive more, but only after handing over what this step completed: a same-host store
      // waits for the release of a delivered layer before it sends the next.
      ec = {};
      need_more = true;
    } else if (ec == http::error::need_buffer) {
      ec = {};  // `chunk` is full: decode it and go on
    }
    if (ec) return fail(Transport(ec, "read body"));
    if (size_t n = chunk.size() - p.get().body().size; n > 0 && feed_status.ok()) {
      stats.body_bytes += n;
      feed_status = decoder.Feed(ByteSpan(chunk.data(), n), &events);
    }
    // Deliver whatever completed before reporting an error (layers are independent).
    for (auto& ev : events) {
      if (auto* h = std::get_if<StreamHeader>(&ev)) {
        if (h->compat_id != request.compat_id || h->scope_id != request.scope_id ||
            h->codec != request.codec || h->layer_first != request.layer_first ||
            h->layer_count != request.layer_count || h->block_count != request.block_keys.size() ||
            h->components != request.components ||
            h->delivery != (shm ? Delivery::kShm : Delivery::kInline))
          return fail(InvalidArgument("aggregate: stream header does not match the request"));
        header_seen = true;
      } else if (auto* l = std::get_if<LayerEvent>(&ev)) {
        if (!pending.begun) {
          begin_layer(l->layer);
        } else if (pending.layer != l->layer) {
          return fail(Internal("aggregate: verified blocks of another layer"));
        }
        pending.complete.store(true, std::memory_order_release);
        if (Status bs = publish(l->blocks, l->blocks.size()); !bs.ok()) return fail(bs);
        finish_layer();
        DeliveredLayer dl;
        dl.layer = l->layer;
        dl.blocks.resize(l->blocks.size());
        for (size_t i = 0; i < l->blocks.size(); ++i) {
          const BlockRecord& r = pending.records[i];
          DeliveredBlock& db = dl.blocks[i];
          db.status = r.status;
          if (r.status != BlockStatus::kPresent) continue;
          if (pending.bad[i]) {  // handed over as corrupt with no data
            db.status = BlockStatus::kCorrupt;
            ++stats.corrupt_blocks;
            continue;
          }
          db.k_len = r.k_len;
          db.v_len = r.v_len;
          db.data = pending.data[i];
          stats.payload_bytes += db.data.size();
        }
        Status cb = on_layer(dl);
        double t = Since(t0);
        if (stats.layer_seconds.empty()) stats.first_layer_seconds = t;
        stats.layer_seconds.push_back(t);
        if (!cb.ok()) return fail(cb);
        if (shm) ShmTell(ShmMessageType::kRelease, ++layers_done);
        decoder.Recycle(std::move(*l));
      }
    }
    events.clear();
    if (!feed_status.ok()) return fail(feed_status);
    // Inline delivery: the blocks of the layer still arriving that are complete go to the
    // helpers now, so that hashing overlaps the receive of the rest.
    if (const size_t n = shm ? 0 : decoder.complete_blocks(); n > 0) {
      const LayerEvent& partial = decoder.partial_layer();
      if (!pending.begun) begin_layer(partial.layer);
      if (pending.layer != partial.layer)
        return fail(Internal("aggregate: verified blocks of another layer"));
      if (Status bs = publish(partial.blocks, n); !bs.ok()) return fail(bs);
    }
  }
  Status fin = decoder.Finish();
  if (!fin.ok() || !header_seen) return fail(fin.ok() ? InvalidArgument("no header") : fin);
  if (!p.keep_alive()) Close();
  stats.total_seconds = Since(t0);
  return stats;
}

Result<AggregatePutResult> Client::AggregatePut(const std::string& bucket, const Digest& scope_id,
                                                const std::vector<ByteSpan>& containers,
                                                bool prefix_record) {
  if (containers.empty() || containers.size() > kMaxPutContainers)
    return InvalidArgument("aggregate put: 1..kMaxPutContainers containers");
  KVCS_RETURN_IF_ERROR(impl_->Connect());
  Bytes header;
  EncodePutHeader(PutHeader{static_cast<uint8_t>(prefix_record ? kPutFlagPrefixRecord : 0),
                            scope_id, static_cast<uint32_t>(containers.size())},
                  &header);
  uint64_t total = header.size();
  for (ByteSpan c : containers) total += 8 + c.size();
  auto head = impl_->Head("POST", "/" + bucket, "kvcs-aggregate-put", s3::kUnsignedPayload, total,
                          true, {{"Content-Type", "application/vnd.kvcs.aggregate-put-v1"}});
  Status s = impl_->SendHead(head);
  if (s.ok()) s = impl_->SendRaw(header);
  for (size_t i = 0; s.ok() && i < containers.size(); ++i) {
    uint8_t len[8];
    StoreBe64(len, containers[i].size());
    s = impl_->SendRaw(ByteSpan(len, 8));
    if (s.ok()) s = impl_->SendRaw(containers[i]);
  }
  if (!s.ok()) {
    impl_->Close();
    return s;
  }
  KVCS_ASSIGN_OR_RETURN(HttpResult r, impl_->ReadSmall(false));
  if (r.status != 200)
    return Status(Code::kInvalidArgument, "aggregate put: HTTP " + std::to_string(r.status) + ": " +
                                              std::string(AsStringView(r.body)));
  auto j = nlohmann::json::parse(AsStringView(r.body), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("blocks") || !j["blocks"].is_array())
    return InvalidArgument("aggregate put: malformed JSON answer");
  AggregatePutResult out;
  out.stored = j.value("stored", 0u);
  for (const auto& b : j["blocks"]) {
    PutBlockResult pr;
    pr.ok = b.value("status", "") == "ok";
    pr.key = b.value("key", "");
    pr.message = b.value("message", "");
    out.blocks.push_back(pr);
  }
  out.prefix_record = j.value("prefix_record", "");
  return out;
}

}  // namespace kvcs::objcache
