// ObjectCache client. See client.h.
#include "objcache/client.h"

#include <chrono>
#include <ctime>
#include <limits>

#include <nlohmann/json.hpp>

#include "common/asio.h"
#include "common/hex.h"
#include "s3/http_util.h"
#include "s3/sigv4.h"

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

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

std::string AmzDate(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

Status Transport(const beast::error_code& ec, const char* what) {
  return Status(Code::kUnavailable, std::string("objcache client: ") + what + ": " + ec.message());
}

}  // namespace

std::optional<std::string> HttpResult::Header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (s3::IEquals(k, name)) return v;
  return std::nullopt;
}

struct Client::Impl {
  explicit Impl(ClientOptions o) : options(std::move(o)), socket(io) {}
  ClientOptions options;
  asio::io_context io;
  tcp::socket socket;
  beast::flat_buffer buffer;
  bool connected = false;

  std::string HostHeader() const { return options.host + ":" + std::to_string(options.port); }

  Status Connect() {
    if (connected) return Status::Ok();
    beast::error_code ec;
    tcp::resolver resolver(io);
    auto eps = resolver.resolve(options.host, std::to_string(options.port), ec);
    if (ec) return Transport(ec, "resolve");
    socket = tcp::socket(io);
    asio::connect(socket, eps, ec);
    if (ec) return Transport(ec, "connect");
    socket.set_option(tcp::no_delay(true), ec);
    buffer.clear();
    buffer.reserve(kReadChunk);
    connected = true;
    return Status::Ok();
  }
  void Close() {
    beast::error_code ec;
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
    http::write_header(socket, sr, ec);
    if (ec) return Transport(ec, "write");
    return Status::Ok();
  }
  Status SendRaw(ByteSpan data) {
    beast::error_code ec;
    asio::write(socket, asio::buffer(data.data(), data.size()), ec);
    if (ec) return Transport(ec, "write");
    return Status::Ok();
  }

  // Reads a whole (small) response.
  Result<HttpResult> ReadSmall(bool head_request) {
    beast::error_code ec;
    http::response_parser<http::vector_body<uint8_t>> p;
    p.body_limit(kMaxSmallResponse);
    p.skip(head_request);
    http::read(socket, buffer, p, ec);
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
  auto req =
      impl_->Head(method, path, query, ToHex(Sha256::Hash(body)), body.size(), sign, headers);
  Status s = impl_->SendHead(req);
  if (s.ok() && !body.empty()) s = impl_->SendRaw(body);
  if (!s.ok()) {
    impl_->Close();
    return s;
  }
  return impl_->ReadSmall(method == "HEAD");
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
                                            const LayerCallback& on_layer) {
  KVCS_RETURN_IF_ERROR(impl_->Connect());
  std::string json = SerializeAggregateRequest(request);
  auto t0 = std::chrono::steady_clock::now();
  auto head = impl_->Head("POST", "/" + bucket, "kvcs-aggregate", ToHex(Sha256::Hash(json)),
                          json.size(), true, {{"Content-Type", "application/json"}});
  Status s = impl_->SendHead(head);
  if (s.ok()) s = impl_->SendRaw(AsBytes(json));
  if (!s.ok()) {
    impl_->Close();
    return s;
  }
  beast::error_code ec;
  http::response_parser<http::buffer_body> p;
  // Not boost::none: Beast 1.74 compares Content-Length > an empty optional, which is always true.
  p.body_limit(std::numeric_limits<std::uint64_t>::max());
  http::read_header(impl_->socket, impl_->buffer, p, ec);
  if (ec) {
    impl_->Close();
    return Transport(ec, "read response head");
  }
  if (p.get().result_int() != 200) {
    // Read the (small) error body.
    std::string err;
    Bytes chunk(64 * 1024);
    while (!p.is_done() && err.size() < kMaxSmallResponse) {
      p.get().body().data = chunk.data();
      p.get().body().size = chunk.size();
      http::read(impl_->socket, impl_->buffer, p, ec);
      if (ec == http::error::need_buffer) ec = {};
      if (ec) break;
      err.append(reinterpret_cast<char*>(chunk.data()), chunk.size() - p.get().body().size);
    }
    int code = static_cast<int>(p.get().result_int());
    impl_->Close();
    return Status(code == 404 ? Code::kNotFound
                              : (code == 403 ? Code::kPermissionDenied : Code::kInvalidArgument),
                  "aggregate: HTTP " + std::to_string(code) + ": " + err);
  }
  AggregateStats stats;
  StreamDecoder decoder;
  std::vector<StreamEvent> events;
  Status feed_status;
  bool header_seen = false;
  auto fail = [&](Status st) {
    impl_->Close();
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
  beast::flat_buffer& in = impl_->buffer;
  while (!p.is_done()) {
    if (in.size() == 0) {
      // One large receive per step: Beast's own read loop would receive at most 64 KiB (and only
      // max(512, free capacity) with a small buffer: 514-byte recv calls were the bottleneck).
      size_t n = impl_->socket.read_some(in.prepare(kReadChunk), ec);
      if (ec == asio::error::eof) {
        p.put_eof(ec);
        if (ec) return fail(Transport(ec, "read body"));
        continue;
      }
      if (ec) return fail(Transport(ec, "read body"));
      in.commit(n);
    }
    p.get().body().data = chunk.data();
    p.get().body().size = chunk.size();
    size_t used = p.put(in.data(), ec);
    in.consume(used);
    if (ec == http::error::need_more) {
      // The buffer ends inside a chunk header or line: receive more after it. A line that never
      // ends would grow the buffer; kMaxSmallResponse bounds it.
      ec = {};
      if (in.size() > kMaxSmallResponse)
        return fail(InvalidArgument("aggregate: chunk line too long"));
      if (in.size() > 0) {
        size_t n = impl_->socket.read_some(in.prepare(kReadChunk), ec);
        if (ec) return fail(Transport(ec, "read body"));
        in.commit(n);
      }
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
            h->components != request.components)
          return fail(InvalidArgument("aggregate: stream header does not match the request"));
        header_seen = true;
      } else if (auto* l = std::get_if<LayerEvent>(&ev)) {
        DeliveredLayer dl;
        dl.layer = l->layer;
        dl.blocks.reserve(l->blocks.size());
        for (const LayerBlock& b : l->blocks) {
          DeliveredBlock db;
          db.status = b.record.status;
          if (b.record.status == BlockStatus::kPresent) {
            if (VerifyBlock(b).ok()) {
              db.k_len = b.record.k_len;
              db.v_len = b.record.v_len;
              db.data = b.data;
              stats.payload_bytes += b.data.size();
            } else {
              db.status = BlockStatus::kCorrupt;
              ++stats.corrupt_blocks;
            }
          }
          dl.blocks.push_back(db);
        }
        Status cb = on_layer(dl);
        double t = Since(t0);
        if (stats.layer_seconds.empty()) stats.first_layer_seconds = t;
        stats.layer_seconds.push_back(t);
        if (!cb.ok()) return fail(cb);
        decoder.Recycle(std::move(*l));
      }
    }
    events.clear();
    if (!feed_status.ok()) return fail(feed_status);
  }
  Status fin = decoder.Finish();
  if (!fin.ok() || !header_seen) return fail(fin.ok() ? InvalidArgument("no header") : fin);
  if (!p.keep_alive()) impl_->Close();
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
