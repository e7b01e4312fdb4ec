#include "common/asio.h"  // first: fixes the Boost 1.74 + GCC 12 trap (shared/style.md §0)

#include "s3client/s3_client.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <random>
#include <thread>

#include "common/base64.h"
#include "common/crypto.h"
#include "common/hex.h"
#include "common/strings.h"
#include "s3/http_util.h"
#include "s3/user_metadata.h"
#include "s3client/connection_pool.h"
#include "s3client/http_connection.h"
#include "s3client/http_headers.h"

namespace kvcs::s3client {
namespace {

namespace http = boost::beast::http;
using Clock = HttpConnection::Clock;

// One logical request; signed afresh for every attempt.
struct RequestSpec {
  http::verb verb = http::verb::get;
  std::string path;  // decoded, "/bucket/key"
  HeaderPairs query;
  HeaderPairs headers;  // besides host and the signature headers
  ByteSpan body;
  bool send_length = false;   // PUT/POST always send Content-Length
  size_t body_limit = 0;      // largest successful response body expected
  bool error_in_200 = false;  // CopyObject/CompleteMultipartUpload may carry <Error> in a 200
  std::string payload_hash;   // hex SHA-256 of body
};

double Uniform01() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

void AddPutOptions(const PutObjectOptions& o, HeaderPairs* h) {
  h->emplace_back("content-type", o.content_type.empty() ? "binary/octet-stream" : o.content_type);
  if (!o.content_encoding.empty()) h->emplace_back("content-encoding", o.content_encoding);
  if (!o.content_disposition.empty()) h->emplace_back("content-disposition", o.content_disposition);
  if (!o.cache_control.empty()) h->emplace_back("cache-control", o.cache_control);
  if (!o.expires.empty()) h->emplace_back("expires", o.expires);
  for (const auto& [k, v] : o.user_meta) {
    h->emplace_back(std::string(s3::kUserMetaPrefix) + AsciiLower(k),
                    s3::EncodeUserMetadataValue(v));
  }
}

// The representation headers HEAD and GET share (size left to the caller).
ObjectHead HeadFromResponse(const HttpResponse& r) {
  ObjectHead h;
  h.etag = StripQuotes(r.Header("etag"));
  h.content_type = std::string(r.Header("content-type"));
  h.content_encoding = std::string(r.Header("content-encoding"));
  h.content_disposition = std::string(r.Header("content-disposition"));
  h.cache_control = std::string(r.Header("cache-control"));
  h.expires = std::string(r.Header("expires"));
  if (auto t = s3::ParseHttpDate(r.Header("last-modified"))) h.last_modified_ms = *t * 1000;
  constexpr std::string_view kMeta = s3::kUserMetaPrefix;
  for (const auto& [k, v] : r.headers) {
    if (k.size() > kMeta.size() && k.compare(0, kMeta.size(), kMeta) == 0) {
      h.user_meta.emplace_back(k.substr(kMeta.size()), s3::DecodeUserMetadataValue(v));
    }
  }
  std::sort(h.user_meta.begin(), h.user_meta.end());
  return h;
}

}  // namespace

Result<Endpoint> ParseEndpoint(std::string_view url) {
  constexpr std::string_view kHttp = "http://";
  constexpr std::string_view kHttps = "https://";
  Endpoint ep;
  std::string_view rest;
  if (url.substr(0, kHttp.size()) == kHttp) {
    rest = url.substr(kHttp.size());
  } else if (url.substr(0, kHttps.size()) == kHttps) {
    rest = url.substr(kHttps.size());
    ep.tls = true;
    ep.port = 443;
  } else {
    return InvalidArgument("S3 endpoint must look like http[s]://host[:port], got '" +
                           std::string(url) + "'");
  }
  while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.empty() || rest.find('/') != std::string_view::npos) {
    return InvalidArgument("S3 endpoint must be http[s]://host[:port] without a path");
  }
  size_t colon = rest.rfind(':');
  if (!rest.empty() && rest.front() == '[') {  // [v6]:port
    size_t close = rest.find(']');
    if (close == std::string_view::npos) return InvalidArgument("bad IPv6 endpoint");
    ep.host = std::string(rest.substr(1, close - 1));
    colon = rest.size() > close + 1 && rest[close + 1] == ':' ? close + 1 : std::string_view::npos;
  } else {
    ep.host = std::string(rest.substr(0, colon));
  }
  if (colon != std::string_view::npos) {
    auto port = ParseDecimal<uint16_t>(rest.substr(colon + 1));
    if (!port || *port == 0) {
      return InvalidArgument("bad port in S3 endpoint '" + std::string(url) + "'");
    }
    ep.port = *port;
  }
  if (ep.host.empty()) return InvalidArgument("S3 endpoint has no host");
  return ep;
}

struct S3Client::Impl {
  ClientOptions options;
  std::string host_header;
  std::unique_ptr<ConnectionPool> pool;

  // ParallelGet workers.
  std::mutex work_mu;
  std::condition_variable work_cv;
  std::deque<std::function<void()>> work;
  bool stopping = false;
  std::vector<std::thread> workers;

  std::atomic<uint64_t> requests{0}, attempts{0}, retries{0};

  ~Impl() {
    {
      std::lock_guard lock(work_mu);
      stopping = true;
    }
    work_cv.notify_all();
    for (auto& t : workers) t.join();
  }

  void WorkerLoop() {
    while (true) {
      std::function<void()> task;
      {
        std::unique_lock lock(work_mu);
        work_cv.wait(lock, [&] { return stopping || !work.empty(); });
        if (work.empty()) return;
        task = std::move(work.front());
        work.pop_front();
      }
      task();
    }
  }

  Result<HttpResponse> Attempt(const RequestSpec& spec, Clock::time_point deadline) {
    SignableRequest sreq;
    auto verb_name = http::to_string(spec.verb);
    sreq.method = std::string(verb_name.data(), verb_name.size());
    sreq.path = spec.path;
    sreq.query = spec.query;
    sreq.headers.emplace_back("host", host_header);
    for (const auto& h : spec.headers) sreq.headers.push_back(h);
    if (spec.send_length)
      sreq.headers.emplace_back("content-length", std::to_string(spec.body.size()));
    Sign(options.credentials, options.now_unix(), spec.payload_hash, &sreq);

    http::request<http::buffer_body> req;
    req.method(spec.verb);
    req.target(RequestTarget(sreq));
    req.version(11);
    for (const auto& [k, v] : sreq.headers) req.set(k, v);
    req.keep_alive(true);
    req.body().data = const_cast<uint8_t*>(spec.body.data());
    req.body().size = spec.body.size();
    req.body().more = false;

    KVCS_ASSIGN_OR_RETURN(std::unique_ptr<HttpConnection> conn, pool->Acquire(deadline));
    HttpResponse res;
    Status s = conn->Exchange(req, spec.verb == http::verb::head,
                              std::max(spec.body_limit, size_t{64} << 10), deadline, &res);
    if (!s.ok()) {
      pool->Discard(std::move(conn));
      return s;
    }
    // A server answering 5xx may be going down; do not keep its socket.
    if (conn->reusable() && res.status < 500) {
      pool->Release(std::move(conn));
    } else {
      pool->Discard(std::move(conn));
    }
    return res;
  }

  Result<HttpResponse> Execute(const RequestSpec& spec) {
    requests.fetch_add(1, std::memory_order_relaxed);
    const RetryPolicy& rp = options.retry;
    const Clock::time_point deadline = Clock::now() + rp.total_deadline;
    const int max_attempts = std::clamp(rp.max_attempts, 1, kMaxAttempts);
    auto verb_name = http::to_string(spec.verb);
    const std::string what = std::string(verb_name.data(), verb_name.size()) + " " + spec.path;
    Status last;
    for (int attempt = 1; attempt <= max_attempts; ++attempt) {
      if (attempt > 1) {
        auto delay = BackoffDelay(rp, attempt - 1, Uniform01());
        if (Clock::now() + delay >= deadline) {
          return ClientStatus(ClientError::kDeadlineExceeded,
                              what + ": deadline exceeded after " + std::to_string(attempt - 1) +
                                  " attempts; last error: " + last.message());
        }
        std::this_thread::sleep_for(delay);
        retries.fetch_add(1, std::memory_order_relaxed);
      }
      attempts.fetch_add(1, std::memory_order_relaxed);
      const Clock::time_point attempt_deadline =
          std::min(deadline, Clock::now() + rp.attempt_timeout);
      Result<HttpResponse> r = Attempt(spec, attempt_deadline);
      if (!r.ok()) {
        last = r.status();
        if (!IsRetryable(static_cast<ClientError>(last.detail()))) {
          return Status(last.code(), what + ": " + last.message(), last.detail());
        }
        continue;
      }
      const unsigned st = r->status;
      std::string_view body = AsStringView(r->body);
      if (st >= 200 && st < 300) {
        if (!spec.error_in_200 || body.find("<Error>") == std::string_view::npos) return r;
      }
      S3ErrorBody eb;
      if (!body.empty()) {
        auto parsed = ParseErrorBody(body);
        if (parsed.ok()) eb = std::move(parsed).value();
      }
      ClientError ce = ClassifyS3Code(eb.code, static_cast<int>(st < 300 ? 500 : st));
      // radosgw 16.2 answers NoSuchKey for an upload id it does not know; S3 says NoSuchUpload.
      if (ce == ClientError::kNoSuchKey &&
          std::any_of(spec.query.begin(), spec.query.end(),
                      [](const auto& kv) { return kv.first == "uploadId"; })) {
        ce = ClientError::kNoSuchUpload;
      }
      Status s = ClientStatus(ce, what + ": S3 " + (eb.code.empty() ? "error" : eb.code) +
                                      " (HTTP " + std::to_string(st) + ")" +
                                      (eb.message.empty() ? "" : ": " + eb.message));
      if (!IsRetryable(ce)) return s;
      last = s;
    }
    return Status(last.code(),
                  what + ": gave up after " + std::to_string(max_attempts) +
                      " attempts; last error: " + last.message(),
                  last.detail());
  }

  static std::string ObjectPath(std::string_view bucket, std::string_view key) {
    std::string p = "/";
    p.append(bucket).append("/").append(key);
    return p;
  }

  RequestSpec Spec(http::verb verb, std::string path) {
    RequestSpec s;
    s.verb = verb;
    s.path = std::move(path);
    s.payload_hash = kEmptyHashHex();
    s.send_length = verb == http::verb::put || verb == http::verb::post;
    s.body_limit = kMaxXmlBodyBytes;
    return s;
  }
  static std::string kEmptyHashHex() {
    return "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
  }
  static void SetBody(RequestSpec* s, ByteSpan body) {
    s->body = body;
    s->payload_hash = ToHex(Sha256::Hash(body));
  }

  Result<size_t> GetChunk(std::string_view bucket, std::string_view key, uint64_t offset,
                          std::span<uint8_t> out, std::string_view if_match) {
    RequestSpec s = Spec(http::verb::get, ObjectPath(bucket, key));
    const uint64_t last = offset + out.size() - 1;
    s.headers.emplace_back("range", "bytes=" + std::to_string(offset) + "-" + std::to_string(last));
    if (!if_match.empty()) s.headers.emplace_back("if-match", "\"" + std::string(if_match) + "\"");
    s.body_limit = out.size();
    auto r = Execute(s);
    if (!r.ok()) {
      if (r.status().Is(ClientError::kInvalidRange)) return size_t{0};  // offset >= size
      return r.status();
    }
    const std::string what = "GET " + s.path;
    if (!if_match.empty() && StripQuotes(r->Header("etag")) != if_match) {
      return ClientStatus(ClientError::kPreconditionFailed,
                          what + ": ETag changed under a pinned reader");
    }
    if (r->status == 200) {
      // The server ignored Range: acceptable only when the whole object is what we asked for.
      if (offset != 0 || r->body.size() > out.size()) {
        return ClientStatus(ClientError::kProtocol, what + ": range ignored by the server");
      }
    } else {
      std::string_view cr = r->Header("content-range");
      std::optional<ContentRange> range = ParseContentRange(cr);
      if (!range || range->first != offset || range->last > last ||
          range->last - range->first + 1 != r->body.size()) {
        return ClientStatus(ClientError::kProtocol, what + ": Content-Range '" + std::string(cr) +
                                                        "' does not match the request or the body");
      }
    }
    std::copy(r->body.begin(), r->body.end(), out.begin());
    return r->body.size();
  }
};

S3Client::S3Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
S3Client::~S3Client() = default;

Result<std::unique_ptr<S3Client>> S3Client::Create(ClientOptions options) {
  KVCS_ASSIGN_OR_RETURN(Endpoint ep, ParseEndpoint(options.endpoint));
  if (options.credentials.access_key.empty() || options.credentials.secret_key.empty()) {
    return InvalidArgument("S3 client needs an access key and a secret key");
  }
  if (options.credentials.region.empty()) options.credentials.region = "us-east-1";
  options.max_connections = std::clamp(options.max_connections, 1, kMaxConnections);
  options.parallel_gets = std::clamp(options.parallel_gets, 1, kMaxParallelGets);
  if (!options.now_unix) {
    options.now_unix = [] {
      return std::chrono::duration_cast<std::chrono::seconds>(
                 std::chrono::system_clock::now().time_since_epoch())
          .count();
    };
  }
  auto impl = std::make_unique<Impl>();
  const uint16_t default_port = ep.tls ? 443 : 80;
  impl->host_header = (ep.host.find(':') != std::string::npos ? "[" + ep.host + "]" : ep.host) +
                      (ep.port == default_port ? "" : ":" + std::to_string(ep.port));
  KVCS_ASSIGN_OR_RETURN(impl->pool,
                        ConnectionPool::Create({.host = ep.host,
                                                .port = ep.port,
                                                .tls = ep.tls,
                                                .ca_file = options.ca_file,
                                                .insecure = options.insecure,
                                                .max_connections = options.max_connections}));
  impl->options = std::move(options);
  for (int i = 0; i < impl->options.parallel_gets; ++i) {
    impl->workers.emplace_back([p = impl.get()] { p->WorkerLoop(); });
  }
  return std::unique_ptr<S3Client>(new S3Client(std::move(impl)));
}

const ClientOptions& S3Client::options() const { return impl_->options; }

ClientStats S3Client::stats() const {
  ClientStats s;
  s.requests = impl_->requests.load(std::memory_order_relaxed);
  s.attempts = impl_->attempts.load(std::memory_order_relaxed);
  s.retries = impl_->retries.load(std::memory_order_relaxed);
  s.connections = impl_->pool->opened();
  return s;
}

Status S3Client::CreateBucket(std::string_view bucket) {
  auto r = impl_->Execute(impl_->Spec(http::verb::put, "/" + std::string(bucket)));
  return r.status();
}

Status S3Client::DeleteBucket(std::string_view bucket) {
  return impl_->Execute(impl_->Spec(http::verb::delete_, "/" + std::string(bucket))).status();
}

Status S3Client::HeadBucket(std::string_view bucket) {
  auto r = impl_->Execute(impl_->Spec(http::verb::head, "/" + std::string(bucket)));
  if (!r.ok() && r.status().Is(ClientError::kNoSuchKey)) {
    return ClientStatus(ClientError::kNoSuchBucket,
                        "HEAD /" + std::string(bucket) + ": no such bucket");
  }
  return r.status();
}

Result<std::vector<BucketEntry>> S3Client::ListBuckets() {
  KVCS_ASSIGN_OR_RETURN(HttpResponse r, impl_->Execute(impl_->Spec(http::verb::get, "/")));
  return ParseListBuckets(AsStringView(r.body));
}

Result<ObjectHead> S3Client::HeadObject(std::string_view bucket, std::string_view key) {
  KVCS_ASSIGN_OR_RETURN(
      HttpResponse r, impl_->Execute(impl_->Spec(http::verb::head, Impl::ObjectPath(bucket, key))));
  ObjectHead h = HeadFromResponse(r);
  auto size = ParseDecimal<uint64_t>(r.Header("content-length"));
  if (!size) return ClientStatus(ClientError::kProtocol, "HEAD without a valid Content-Length");
  h.size = *size;
  return h;
}

Result<ObjectPrefix> S3Client::GetPrefix(std::string_view bucket, std::string_view key,
                                         std::span<uint8_t> out) {
  if (out.empty() || out.size() > kMaxRangeGetBytes) {
    return InvalidArgument("GetPrefix needs a buffer of 1 byte to kMaxRangeGetBytes");
  }
  RequestSpec s = impl_->Spec(http::verb::get, Impl::ObjectPath(bucket, key));
  s.headers.emplace_back("range", "bytes=0-" + std::to_string(out.size() - 1));
  s.body_limit = out.size();
  auto r = impl_->Execute(s);
  if (!r.ok()) {
    // 416: an empty object (no byte 0); too large: a server that ignores Range. HEAD says what
    // the object is, without bytes.
    if (!r.status().Is(ClientError::kInvalidRange) &&
        !r.status().Is(ClientError::kResponseTooLarge)) {
      return r.status();
    }
    KVCS_ASSIGN_OR_RETURN(ObjectHead h, HeadObject(bucket, key));
    return ObjectPrefix{std::move(h), 0};
  }
  const std::string what = "GET " + s.path;
  ObjectPrefix p{HeadFromResponse(*r), std::min(r->body.size(), out.size())};
  if (r->status == 200) {  // Range ignored: the body is the whole (small) object.
    p.head.size = r->body.size();
  } else {
    std::optional<ContentRange> range = ParseContentRange(r->Header("content-range"));
    if (range) p.head.size = range->total;
    if (!range || range->first != 0 || range->last + 1 != r->body.size() ||
        range->last >= out.size() ||
        r->body.size() != std::min<uint64_t>(out.size(), p.head.size)) {
      return ClientStatus(ClientError::kProtocol, what + ": Content-Range '" +
                                                      std::string(r->Header("content-range")) +
                                                      "' does not match the request or the body");
    }
  }
  std::copy_n(r->body.begin(), p.bytes, out.begin());
  return p;
}

Result<size_t> S3Client::GetRange(std::string_view bucket, std::string_view key, uint64_t offset,
                                  std::span<uint8_t> out, std::string_view if_match) {
  size_t done = 0;
  while (done < out.size()) {
    const size_t want = std::min(out.size() - done, kMaxRangeGetBytes);
    KVCS_ASSIGN_OR_RETURN(
        size_t n, impl_->GetChunk(bucket, key, offset + done, out.subspan(done, want), if_match));
    done += n;
    if (n < want) break;  // end of object
  }
  return done;
}

Result<Bytes> S3Client::GetObject(std::string_view bucket, std::string_view key, size_t max_bytes) {
  RequestSpec s = impl_->Spec(http::verb::get, Impl::ObjectPath(bucket, key));
  s.body_limit = max_bytes;
  KVCS_ASSIGN_OR_RETURN(HttpResponse r, impl_->Execute(s));
  return std::move(r.body);
}

Result<std::string> S3Client::PutObject(std::string_view bucket, std::string_view key,
                                        ByteSpan body, const PutObjectOptions& options,
                                        const std::optional<Md5Digest>& content_md5) {
  if (body.size() > kMaxPutBodyBytes) {
    return ClientStatus(ClientError::kEntityTooLarge, "PUT body over kMaxPutBodyBytes");
  }
  RequestSpec s = impl_->Spec(http::verb::put, Impl::ObjectPath(bucket, key));
  Impl::SetBody(&s, body);
  AddPutOptions(options, &s.headers);
  if (!options.if_match.empty()) s.headers.emplace_back("if-match", options.if_match);
  if (!options.if_none_match.empty())
    s.headers.emplace_back("if-none-match", options.if_none_match);
  if (content_md5) s.headers.emplace_back("content-md5", Base64Encode(*content_md5));
  KVCS_ASSIGN_OR_RETURN(HttpResponse r, impl_->Execute(s));
  return StripQuotes(r.Header("etag"));
}

Status S3Client::DeleteObject(std::string_view bucket, std::string_view key) {
  return impl_->Execute(impl_->Spec(http::verb::delete_, Impl::ObjectPath(bucket, key))).status();
}

Result<CopyResult> S3Client::CopyObject(std::string_view src_bucket, std::string_view src_key,
                                        std::string_view dst_bucket, std::string_view dst_key,
                                        const std::optional<PutObjectOptions>& replace) {
  RequestSpec s = impl_->Spec(http::verb::put, Impl::ObjectPath(dst_bucket, dst_key));
  s.headers.emplace_back("x-amz-copy-source",
                         s3::UriEncode(Impl::ObjectPath(src_bucket, src_key), false));
  if (replace) {
    s.headers.emplace_back("x-amz-metadata-directive", "REPLACE");
    AddPutOptions(*replace, &s.headers);
  }
  s.error_in_200 = true;
  KVCS_ASSIGN_OR_RETURN(HttpResponse r, impl_->Execute(s));
  return ParseCopyObject(AsStringView(r.body));
}

Result<ListObjectsPage> S3Client::ListObjectsV2(std::string_view bucket, std::string_view prefix,
                                                std::string_view delimiter,
                                                std::string_view start_after,
                                                std::string_view continuation_token, int max_keys) {
  RequestSpec s = impl_->Spec(http::verb::get, "/" + std::string(bucket));
  s.query.emplace_back("list-type", "2");
  s.query.emplace_back("max-keys", std::to_string(std::clamp(max_keys, 0, kMaxListPage)));
  if (!prefix.empty()) s.query.emplace_back("prefix", std::string(prefix));
  if (!delimiter.empty()) s.query.emplace_back("delimiter", std::string(delimiter));
  if (!start_after.empty()) s.query.emplace_back("start-after", std::string(start_after));
  if (!continuation_token.empty()) {
    s.query.emplace_back("continuation-token", std::string(continuation_token));
  }
  KVCS_ASSIGN_OR_RETURN(HttpResponse r, impl_->Execute(s));
  return ParseListObjectsV2(AsStringView(r.body));
}

Result<std::string> S3Client::CreateMultipartUpload(std::string_view bucket, std::string_view key,
                                                    const PutObjectOptions& options) {
  RequestSpec s = impl_->Spec(http::verb::post, Impl::ObjectPath(bucket, key));
  s.query.emplace_back("uploads", "");
  AddPutOptions(options, &s.headers);
  KVCS_ASSIGN_OR_RETURN(HttpResponse r, impl_->Execute(s));
  return ParseInitiateMultipart(AsStringView(r.body));
}

Result<std::string> S3Client::UploadPart(std::string_view bucket, std::string_view key,
                                         std::string_view upload_id, int part_number, ByteSpan body,
                                         const std::optional<Md5Digest>& content_md5) {
  if (body.size() > kMaxPutBodyBytes) {
    return ClientStatus(ClientError::kEntityTooLarge, "part body over kMaxPutBodyBytes");
  }
  RequestSpec s = impl_->Spec(http::verb::put, Impl::ObjectPath(bucket, key));
  s.query.emplace_back("partNumber", std::to_string(part_number));
  s.query.emplace_back("uploadId", std::string(upload_id));
  Impl::SetBody(&s, body);
  if (content_md5) s.headers.emplace_back("content-md5", Base64Encode(*content_md5));
  KVCS_ASSIGN_OR_RETURN(HttpResponse r, impl_->Execute(s));
  return StripQuotes(r.Header("etag"));
}

Result<std::string> S3Client::CompleteMultipartUpload(std::string_view bucket, std::string_view key,
                                                      std::string_view upload_id,
                                                      std::span<const CompletedPart> parts) {
  std::string xml = "<CompleteMultipartUpload>";
  for (const CompletedPart& p : parts) {
    xml += "<Part><PartNumber>" + std::to_string(p.part_number) + "</PartNumber><ETag>\"" +
           s3::XmlEscape(StripQuotes(p.etag)) + "\"</ETag></Part>";
  }
  xml += "</CompleteMultipartUpload>";
  RequestSpec s = impl_->Spec(http::verb::post, Impl::ObjectPath(bucket, key));
  s.query.emplace_back("uploadId", std::string(upload_id));
  Impl::SetBody(&s, AsBytes(xml));
  s.headers.emplace_back("content-type", "application/xml");
  s.error_in_200 = true;
  KVCS_ASSIGN_OR_RETURN(HttpResponse r, impl_->Execute(s));
  return ParseCompleteMultipart(AsStringView(r.body));
}

Status S3Client::AbortMultipartUpload(std::string_view bucket, std::string_view key,
                                      std::string_view upload_id) {
  RequestSpec s = impl_->Spec(http::verb::delete_, Impl::ObjectPath(bucket, key));
  s.query.emplace_back("uploadId", std::string(upload_id));
  return impl_->Execute(s).status();
}

Result<ListPartsPage> S3Client::ListParts(std::string_view bucket, std::string_view key,
                                          std::string_view upload_id, int part_number_marker) {
  RequestSpec s = impl_->Spec(http::verb::get, Impl::ObjectPath(bucket, key));
  s.query.emplace_back("uploadId", std::string(upload_id));
  s.query.emplace_back("max-parts", std::to_string(kMaxListPage));
  if (part_number_marker > 0) {
    s.query.emplace_back("part-number-marker", std::to_string(part_number_marker));
  }
  KVCS_ASSIGN_OR_RETURN(HttpResponse r, impl_->Execute(s));
  return ParseListParts(AsStringView(r.body));
}

Result<ListUploadsPage> S3Client::ListMultipartUploads(std::string_view bucket,
                                                       std::string_view prefix,
                                                       std::string_view key_marker,
                                                       std::string_view upload_id_marker) {
  RequestSpec s = impl_->Spec(http::verb::get, "/" + std::string(bucket));
  s.query.emplace_back("uploads", "");
  s.query.emplace_back("max-uploads", std::to_string(kMaxListPage));
  if (!prefix.empty()) s.query.emplace_back("prefix", std::string(prefix));
  if (!key_marker.empty()) s.query.emplace_back("key-marker", std::string(key_marker));
  if (!upload_id_marker.empty()) {
    s.query.emplace_back("upload-id-marker", std::string(upload_id_marker));
  }
  KVCS_ASSIGN_OR_RETURN(HttpResponse r, impl_->Execute(s));
  return ParseListUploads(AsStringView(r.body));
}

void S3Client::ParallelGet(std::span<RangeGet> ranges) {
  ForEachParallel(ranges.size(), [&](size_t i) {
    RangeGet& rg = ranges[i];
    rg.result = GetRange(rg.bucket, rg.key, rg.offset, rg.out, rg.if_match);
  });
}

void S3Client::ForEachParallel(size_t n, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  // Completion count guarded by a mutex: the last worker notifies while holding it, so this
  // frame (and `batch`) cannot go away before the worker is done touching it.
  struct Batch {
    std::mutex mu;
    std::condition_variable cv;
    size_t remaining = 0;
  } batch;
  batch.remaining = n;
  {
    std::lock_guard lock(impl_->work_mu);
    for (size_t i = 0; i < n; ++i) {
      impl_->work.emplace_back([i, &fn, &batch] {
        fn(i);
        std::lock_guard done(batch.mu);
        if (--batch.remaining == 0) batch.cv.notify_all();
      });
    }
  }
  impl_->work_cv.notify_all();
  std::unique_lock lock(batch.mu);
  batch.cv.wait(lock, [&] { return batch.remaining == 0; });
}

}  // namespace kvcs::s3client
