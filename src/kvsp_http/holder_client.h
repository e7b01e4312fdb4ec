// HolderClient: the KVSP §8 HTTP client (shared/specs/kvsp.md §8). It fetches the container of one
// block for a layer range from a holder, over the project's keep-alive HTTP/1.1 client
// (s3client::ConnectionPool / HttpConnection; http or https):
//
//   GET {holder}/blocks/{compat_id}/{block_key}?codec=<codec>&layers=a-b
//   KVSP-Scope-ID: <scope_id hex>
//
// and verifies it before returning it: the status (404 not held, 406 codec not available, 416
// layer range not held: typed), the Content-Type, the size bound, then the whole container
// (kvsp::VerifyContainer: compat_id, block_key, block_tokens, codec, exactly layers a..b, section
// lengths against the descriptor's shapes, every layer digest). A holder URL is
// "http[s]://host[:port][/base]"; without a path the base is "/_kvsp" (what `kvcs store` serves).
//
// Blocking, with a deadline per call. Thread-safe: calls may run concurrently (the pool hands
// each its own socket).
#ifndef KVCS_KVSP_HTTP_HOLDER_CLIENT_H_
#define KVCS_KVSP_HTTP_HOLDER_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/bytes.h"
#include "common/status.h"
#include "kvsp/codec.h"
#include "kvsp/container.h"
#include "kvsp/descriptor.h"

namespace kvcs::s3client {
class ConnectionPool;
}

namespace kvcs::kvsp_http {

// Typed errors (Status detail) of the HolderClient.
enum class HolderError {
  kNone = 0,
  kBadUrl = 1,        // the holder URL is not http[s]://host[:port][/base]
  kConnect,           // no connection (refused, unresolvable, TLS)
  kTimeout,           // the deadline passed
  kNotHeld,           // 404
  kCodecUnavailable,  // 406
  kRangeNotHeld,      // 416
  kHttpStatus,        // any other non-200 status
  kBadResponse,       // wrong Content-Type, or a body over the bound
  kBadContainer,      // the container failed verification (digest, lengths, names, layers)
};
std::string_view HolderErrorName(HolderError e);

// Bytes of one container the client accepts (a 32-layer, 16-token block of an 8B model is 4 MiB).
inline constexpr uint64_t kDefaultMaxContainerBytes = uint64_t{256} << 20;

struct HolderOptions {
  std::string ca_file;    // https only; empty: the system trust store
  bool insecure = false;  // https only: no certificate verification
  int max_connections = 4;
  uint64_t max_container_bytes = kDefaultMaxContainerBytes;
};

// What to fetch: one block of a cache and a layer range.
struct HolderBlockRequest {
  Digest compat_id{};
  Digest scope_id{};
  Digest block_key{};
  uint32_t block_index = 0;  // 1-based; the container must carry the same
  kvsp::Codec codec = kvsp::Codec::kRaw;
  uint32_t layer_first = 0;
  uint32_t layer_last = 0;  // inclusive
};

// A verified container and its parsed view (ranges into `bytes`).
struct HolderContainer {
  Bytes bytes;
  kvsp::ContainerView view;
};

class HolderClient {
 public:
  using Clock = std::chrono::steady_clock;
  // Parses the URL and resolves the host (kBadUrl, kConnect).
  static Result<std::unique_ptr<HolderClient>> Create(std::string_view url, HolderOptions options);
  ~HolderClient();
  HolderClient(const HolderClient&) = delete;
  HolderClient& operator=(const HolderClient&) = delete;

  // Fetches and verifies one container shaped by `d`. Errors: the HolderErrors above.
  Result<HolderContainer> FetchBlock(const kvsp::Descriptor& d, const HolderBlockRequest& req,
                                     Clock::time_point deadline);
  // HEAD: whether the holder has the block in that codec and layer range (kNotHeld etc. otherwise).
  Status HasBlock(const HolderBlockRequest& req, Clock::time_point deadline);

  const std::string& url() const { return url_; }

 private:
  HolderClient() = default;
  struct Response;
  Status Exchange(bool head, const HolderBlockRequest& req, Clock::time_point deadline,
                  Response* out);

  std::string url_, base_path_, host_header_;
  HolderOptions options_;
  std::unique_ptr<s3client::ConnectionPool> pool_;
};

}  // namespace kvcs::kvsp_http

#endif  // KVCS_KVSP_HTTP_HOLDER_CLIENT_H_
