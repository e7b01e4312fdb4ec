// A C++ client for the ObjectCache extension: aggregated layer-major GET with a per-layer callback
// of verified blocks, aggregated PUT, and the few plain S3 calls the tests, bench and demo need.
// Requests are signed with AWS SigV4 built from s3/sigv4.h's building blocks.
//
// Synchronous (Boost.Beast over one keep-alive TCP connection, reconnected on demand).
// AggregateGet decodes the stream incrementally (StreamDecoder) and, for each layer, verifies
// every present block's digest before calling the callback: a block whose bytes do not match is
// handed over as kCorrupt with no data, never as data. The callback runs on the calling thread
// before the next layer is read from the socket; the spans it sees are valid only during the call.
// Digests are checked on verify_threads threads; with inline delivery a block is checked as soon
// as its bytes are in, while the rest of its layer is still received. An optional block callback
// gets each verified block once its whole layer is in, before the layer callback: on the thread
// that checked it when that was after the layer was in (to use its bytes while they are in that
// core's cache: a same-host layer, or the blocks checked last), else spread over the threads.
//
// Not thread-safe: one Client per thread.
#ifndef KVCS_OBJCACHE_CLIENT_H_
#define KVCS_OBJCACHE_CLIENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/status.h"
#include "objcache/aggregate_wire.h"

namespace kvcs::objcache {

struct ClientOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 9000;
  // An https store: TLS 1.2+ on every connection, the certificate checked against `ca_file`
  // (PEM; empty: the system trust store) for `host` (name or address), or not at all when
  // `insecure` (development only).
  bool tls = false;
  std::string ca_file;
  bool insecure = false;
  std::string access_key;
  std::string secret_key;
  std::string region = "us-east-1";
  // Same-host delivery (docs/protocols/objectcache-aggregated.md §8). When shm_socket names the
  // store's Unix socket, AggregateGet registers a shared buffer of shm_buffer_bytes there (once,
  // on first use; again if the store forgot it) and the store writes the block bytes into it
  // instead of the HTTP body: the callback's spans then point into that buffer, verified in place.
  std::string shm_socket;
  // Must hold shm_slots layers of a request (the store says how much it needs if not).
  uint64_t shm_buffer_bytes = 256ull << 20;
  // Layers in the buffer at once: with 2 the store fills layer l+1 while the engine uses layer l.
  uint32_t shm_slots = 2;
  // Threads that verify a delivered layer's digests (the calling thread is one of them; the
  // others are started by the first AggregateGet); 0 = one per core, at most kMaxVerifyThreads.
  // SHA-256 runs at ~1.4 GB/s per core with SHA-NI, so one thread caps a same-host delivery at
  // that rate.
  uint32_t verify_threads = 0;
};
inline constexpr uint32_t kMaxVerifyThreads = 8;

// One block of a delivered layer. data holds the carried bytes (K then V, per the components)
// when status == kPresent and the digest verified; empty otherwise. With same-host delivery it
// points into the shared buffer (the store does not touch that layer's slot until the callback
// has returned).
struct DeliveredBlock {
  BlockStatus status = BlockStatus::kMissing;
  uint64_t k_len = 0, v_len = 0;
  ByteSpan data;
};
struct DeliveredLayer {
  uint16_t layer = 0;
  std::vector<DeliveredBlock> blocks;  // request order
};
// Return non-OK to stop the transfer (the connection is then closed).
using LayerCallback = std::function<Status(const DeliveredLayer&)>;
// A present block of `layer` whose digest verified (block: its index in the request), once every
// block of the layer was received and before that layer's LayerCallback (so the calls of one
// layer take CPU time only, never a wait for the network); its data is valid only during the
// call. Runs on any of the verify threads, concurrently for different blocks of the layer; must
// not throw.
using BlockCallback =
    std::function<void(uint16_t layer, uint32_t block, const DeliveredBlock& verified)>;

struct AggregateStats {
  uint64_t body_bytes = 0;         // response body bytes received
  uint64_t payload_bytes = 0;      // verified block bytes handed to the callback
  uint32_t corrupt_blocks = 0;     // (layer, block) pairs that failed verification
  double first_layer_seconds = 0;  // request sent -> first layer handed to the callback
  double total_seconds = 0;
  std::vector<double> layer_seconds;  // per layer: request sent -> handed to the callback
};

struct PutBlockResult {
  bool ok = false;
  std::string key;
  std::string message;
};
struct AggregatePutResult {
  uint32_t stored = 0;
  std::vector<PutBlockResult> blocks;
  std::string prefix_record;  // key of the prefix record, if one was written
};

struct HttpResult {
  int status = 0;
  Bytes body;
  std::vector<std::pair<std::string, std::string>> headers;
  std::optional<std::string> Header(std::string_view name) const;
};

class Client {
 public:
  explicit Client(ClientOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // POST /<bucket>?kvcs-aggregate. Fails on transport errors, a non-200 answer (message holds the
  // S3 error), a malformed or truncated stream, a header that does not match the request, or a
  // callback error. Corrupt blocks do not fail the call; they are counted and reported.
  // Delivered through the shared buffer when options.shm_socket is set (request.shm is ignored:
  // the client fills it in).
  // on_block, when given, also gets every verified block (see BlockCallback).
  Result<AggregateStats> AggregateGet(const std::string& bucket, const AggregateRequest& request,
                                      const LayerCallback& on_layer,
                                      const BlockCallback& on_block = {});

  // POST /<bucket>?kvcs-aggregate-put with the given containers (each one KVSP container).
  // The body is streamed (UNSIGNED-PAYLOAD: the server verifies every container's digests).
  Result<AggregatePutResult> AggregatePut(const std::string& bucket, const Digest& scope_id,
                                          const std::vector<ByteSpan>& containers,
                                          bool prefix_record);

  // POST /<bucket>?kvcs-aggregate-exists (§3a): the status of every block of `request` (its
  // layers and codec; request.shm must be unset) and how many leading ones are held, in one
  // round trip. Fails on transport errors, a non-200 answer, or a malformed answer.
  struct ExistsResult {
    uint64_t leading = 0;
    std::vector<BlockStatus> status;  // per block of the request
  };
  Result<ExistsResult> AggregateExists(const std::string& bucket, const AggregateRequest& request);

  // A signed request with a small body; the whole response body is returned.
  // `query` is the raw query string without '?' (keys and values already URI-encoded). The
  // payload is signed by its SHA-256 unless `headers` names x-amz-content-sha256 (e.g.
  // UNSIGNED-PAYLOAD).
  Result<HttpResult> Request(const std::string& method, const std::string& path,
                             const std::string& query, ByteSpan body,
                             const std::vector<std::pair<std::string, std::string>>& headers = {},
                             bool sign = true);
  Status CreateBucket(const std::string& bucket);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvcs::objcache

#endif  // KVCS_OBJCACHE_CLIENT_H_
