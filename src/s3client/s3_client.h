// S3Client: a small, bounded S3 client over Boost.Beast HTTP/1.1 (path-style addressing, SigV4).
//
// What it does: bucket create/delete/head/list; object HEAD, GET (with Range and If-Match), PUT
// (signed payload SHA-256 and Content-MD5), DELETE, server-side copy; ListObjectsV2; multipart
// upload (create, upload part, list parts, complete, abort, list uploads); GetPrefix, an object's
// metadata and first bytes in one range GET (what HEAD says, without the extra round trip);
// ParallelGet and ForEachParallel, many requests with bounded concurrency on the client's own
// worker threads.
//
// Connections: a keep-alive pool (ConnectionPool, connection_pool.h: at most
// options.max_connections sockets; callers beyond that wait for one to be returned) of
// HttpConnections (http_connection.h), each with its own io_context, so a blocking call drives
// exactly one socket and timeouts are socket expiries (no extra timer threads). https endpoints
// use TLS 1.2+ (OpenSSL) with SNI, and verify the server's certificate chain (system trust store,
// or options.ca_file) and its name or address, unless options.insecure; a TLS connection is
// pooled like a plain one (one handshake per pooled socket). This class signs each attempt
// (signer.h), runs the retry loop and turns responses into results.
//
// Failures (docs/protocols/s3-backend.md "Retry policy"): connection errors, timeouts, 5xx and
// S3's SlowDown/RequestTimeout are retried with exponential backoff and jitter, at most
// retry.max_attempts times and never past retry.total_deadline; 4xx are returned at once as a
// Status whose detail is the ClientError parsed from S3's <Error><Code>. When a pooled
// connection fails, every idle connection is dropped (a restarted server has closed them all).
//
// Thread-safety: every method is thread-safe and blocking. Lifetime: ParallelGet's ranges and
// buffers must outlive the call (it returns when all are done).
#ifndef KVCS_S3CLIENT_S3_CLIENT_H_
#define KVCS_S3CLIENT_S3_CLIENT_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/bytes.h"
#include "common/status.h"
#include "s3client/errors.h"
#include "s3client/signer.h"
#include "s3client/xml_responses.h"

namespace kvcs::s3client {

// Response header block: S3 headers are small (user metadata is capped at 2 KiB); 64 KiB is
// far above any legitimate response and bounds what a misbehaving peer can make us buffer.
inline constexpr size_t kMaxResponseHeaderBytes = 64 << 10;
// XML response bodies (listings of 1,000 keys of up to 1 KiB each fit); s3::ParseXml refuses
// more than this anyway.
inline constexpr size_t kMaxXmlBodyBytes = 4 << 20;
// One range GET transfers at most this much; larger reads are split (bounds one buffer and
// keeps a retry's wasted transfer small).
inline constexpr size_t kMaxRangeGetBytes = 16 << 20;
// One PUT or UploadPart body held in memory (callers stream larger objects as multipart).
inline constexpr size_t kMaxPutBodyBytes = 512ull << 20;
// Sockets in the pool: a few per parallel GET worker plus writers; more than this would only
// queue inside the server.
inline constexpr int kMaxConnections = 256;
// ParallelGet worker threads.
inline constexpr int kMaxParallelGets = 128;
// Page size the client asks for when listing (S3's maximum).
inline constexpr int kMaxListPage = 1000;

struct Endpoint {
  std::string host;  // name or address, without brackets
  uint16_t port = 80;
  bool tls = false;  // https
};
// "http://host[:port]" (port 80 by default) or "https://host[:port]" (port 443 by default); a
// trailing '/' is allowed, a path is not. IPv6 addresses go in brackets.
Result<Endpoint> ParseEndpoint(std::string_view url);

struct ClientOptions {
  std::string endpoint;  // "http://127.0.0.1:8000" or "https://s3.example.com"
  // https only. PEM file of the CA certificate(s) to trust instead of the system trust store
  // (a private CA, or a self-signed server certificate itself). Empty: the system store.
  std::string ca_file;
  // https only. DEVELOPMENT ONLY: skip certificate and name verification (anyone on the path
  // can read and alter the traffic, including the signed requests' payloads). Never the default.
  bool insecure = false;
  Credentials credentials;
  RetryPolicy retry;
  int max_connections = 64;  // clamped to [1, kMaxConnections]
  int parallel_gets = 16;    // clamped to [1, kMaxParallelGets]
  // Wall clock in Unix seconds for signing (tests inject a fixed one).
  std::function<int64_t()> now_unix;
};

using Md5Digest = std::array<uint8_t, 16>;

// What HEAD returns about an object.
struct ObjectHead {
  uint64_t size = 0;
  std::string etag;  // no quotes
  std::string content_type;
  std::string content_encoding;
  std::string content_disposition;
  std::string cache_control;
  std::string expires;
  // x-amz-meta-* pairs: names lowercased without the prefix, sorted by name.
  std::vector<std::pair<std::string, std::string>> user_meta;
  int64_t last_modified_ms = 0;
};

struct PutObjectOptions {
  std::string content_type;
  std::string content_encoding;
  std::string content_disposition;
  std::string cache_control;
  std::string expires;
  std::vector<std::pair<std::string, std::string>> user_meta;  // names without x-amz-meta-
  // PutObject only: sent as If-Match (an ETag without quotes, or "*") and If-None-Match (only
  // "*" is meaningful on a PUT) when not empty; a failed condition is kPreconditionFailed.
  std::string if_match;
  std::string if_none_match;
};

// One range of a ParallelGet. The caller owns every field; on return `result` holds the byte
// count (short only at the end of the object) or the error.
struct RangeGet {
  std::string_view bucket;
  std::string_view key;
  uint64_t offset = 0;
  std::span<uint8_t> out;
  std::string_view if_match;  // ETag (no quotes) the object must still have; empty: any
  Result<size_t> result = Status(Code::kInternal, "not run");
};

// What GetPrefix returns: the object's metadata (size from Content-Range's total) and how many of
// its first bytes were written to the caller's buffer (min(buffer, size)).
struct ObjectPrefix {
  ObjectHead head;
  size_t bytes = 0;
};

struct CompletedPart {
  int part_number = 0;
  std::string etag;
};

// Counters for tests and benchmarks (monotonic; relaxed atomics).
struct ClientStats {
  uint64_t requests = 0;     // logical requests
  uint64_t attempts = 0;     // HTTP exchanges started
  uint64_t retries = 0;      // attempts after the first
  uint64_t connections = 0;  // sockets opened
};

class S3Client {
 public:
  static Result<std::unique_ptr<S3Client>> Create(ClientOptions options);
  ~S3Client();
  S3Client(const S3Client&) = delete;
  S3Client& operator=(const S3Client&) = delete;

  Status CreateBucket(std::string_view bucket);
  Status DeleteBucket(std::string_view bucket);
  Status HeadBucket(std::string_view bucket);  // kNoSuchBucket when absent
  Result<std::vector<BucketEntry>> ListBuckets();

  Result<ObjectHead> HeadObject(std::string_view bucket, std::string_view key);
  // Reads up to out.size() bytes at `offset` (split into kMaxRangeGetBytes GETs). Returns the
  // count; short only at the end of the object; 0 when offset >= size. With `if_match`, fails
  // with kPreconditionFailed if the object's ETag changed.
  Result<size_t> GetRange(std::string_view bucket, std::string_view key, uint64_t offset,
                          std::span<uint8_t> out, std::string_view if_match = {});
  // One GET with Range: bytes=0-(out.size()-1): the object's metadata (as HeadObject returns it,
  // the size taken from Content-Range) and its first bytes, from the same version (one response).
  // An empty object (416 to any range) falls back to HEAD. REQUIRES: !out.empty(),
  // out.size() <= kMaxRangeGetBytes.
  Result<ObjectPrefix> GetPrefix(std::string_view bucket, std::string_view key,
                                 std::span<uint8_t> out);
  // The whole object, at most `max_bytes` (kResponseTooLarge beyond).
  Result<Bytes> GetObject(std::string_view bucket, std::string_view key, size_t max_bytes);
  // Returns the ETag. The body's SHA-256 is signed (the server rejects altered bytes) and, when
  // given, Content-MD5 is sent.
  Result<std::string> PutObject(std::string_view bucket, std::string_view key, ByteSpan body,
                                const PutObjectOptions& options,
                                const std::optional<Md5Digest>& content_md5 = std::nullopt);
  Status DeleteObject(std::string_view bucket, std::string_view key);
  // `replace`: new metadata (x-amz-metadata-directive REPLACE); nullopt copies the source's.
  Result<CopyResult> CopyObject(std::string_view src_bucket, std::string_view src_key,
                                std::string_view dst_bucket, std::string_view dst_key,
                                const std::optional<PutObjectOptions>& replace);
  Result<ListObjectsPage> ListObjectsV2(std::string_view bucket, std::string_view prefix,
                                        std::string_view delimiter, std::string_view start_after,
                                        std::string_view continuation_token, int max_keys);

  Result<std::string> CreateMultipartUpload(std::string_view bucket, std::string_view key,
                                            const PutObjectOptions& options);
  Result<std::string> UploadPart(std::string_view bucket, std::string_view key,
                                 std::string_view upload_id, int part_number, ByteSpan body,
                                 const std::optional<Md5Digest>& content_md5 = std::nullopt);
  // Returns the ETag, or "" when the service does not say (HEAD the object for it).
  Result<std::string> CompleteMultipartUpload(std::string_view bucket, std::string_view key,
                                              std::string_view upload_id,
                                              std::span<const CompletedPart> parts);
  Status AbortMultipartUpload(std::string_view bucket, std::string_view key,
                              std::string_view upload_id);
  Result<ListPartsPage> ListParts(std::string_view bucket, std::string_view key,
                                  std::string_view upload_id, int part_number_marker);
  Result<ListUploadsPage> ListMultipartUploads(std::string_view bucket, std::string_view prefix,
                                               std::string_view key_marker,
                                               std::string_view upload_id_marker);

  // Runs every range on the client's worker threads (at most parallel_gets at once) and
  // returns when all are done. Per-range errors are in RangeGet::result.
  void ParallelGet(std::span<RangeGet> ranges);
  // Runs fn(0) .. fn(n-1) on the same worker threads (at most parallel_gets at once) and returns
  // when all are done. fn may call the blocking methods above but must not call ParallelGet or
  // ForEachParallel (a worker would wait on the pool it occupies).
  void ForEachParallel(size_t n, const std::function<void(size_t)>& fn);

  ClientStats stats() const;
  const ClientOptions& options() const;

  struct Impl;

 private:
  explicit S3Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvcs::s3client

#endif  // KVCS_S3CLIENT_S3_CLIENT_H_
