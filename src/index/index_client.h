// IndexClient: the client side of the KVSP Index Service (KVSP v1 as defined by the project,
// spec §7): lookup, anchors, register and withdraw over HTTP/1.1 with a bearer token, as holders
// (kvcs store, kvcs publish) and consumers (kvcs lookup, kvcs get) call it.
//
// Each call is one blocking exchange over a keep-alive connection of a small pool (s3client's
// ConnectionPool and HttpConnection: plain http:// or https:// with TLS 1.2+, the certificate
// verified against `ca_file` or the system trust store unless `insecure`), bounded by `timeout`
// (connect, handshake, send and the whole response) and by `max_response_bytes`. A pooled
// connection the index closed meanwhile is replaced once (every §7 call is idempotent). Errors
// are typed:
//   - the index answered an error: the §7 body's IndexError (Status::Is(IndexError::kForbidden),
//     kUnknownCompat, …) with the index's message, and the Code that IndexStatus gives it;
//   - no answer: Code::kUnavailable with IndexClientError::kUnreachable (connect, reset),
//     kTimeout, or kTls (the certificate or the handshake failed);
//   - an answer that is not §7: kBadResponse.
//
// Copies share the pool (made at the first call, so Create does no I/O). Thread-safe.
#ifndef KVCS_INDEX_INDEX_CLIENT_H_
#define KVCS_INDEX_INDEX_CLIENT_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "common/status.h"
#include "index/index_wire.h"

namespace kvcs::index {

// Typed detail of a failure to talk to the index (values 500+, apart from IndexError's).
enum class IndexClientError {
  kNone = 0,
  kBadUrl = 500,  // the index URL is not http://HOST:PORT[/base]
  kUnreachable,   // connect refused, reset, name not resolved
  kTimeout,       // no complete answer within the timeout
  kBadResponse,   // an answer that is not a §7 response (status or body)
  kTls,           // https: the certificate failed verification, or the handshake failed
};
std::string_view IndexClientErrorName(IndexClientError e);

// The IndexError named `name` in a §7 error body; kNone for an unknown name.
IndexError IndexErrorFromName(std::string_view name);

struct IndexClientOptions {
  std::string url;     // http[s]://HOST:PORT, optionally with a base path before /kvsp/v1
  std::string bearer;  // the token (kvcs token), without "Bearer "; empty: none sent
  std::chrono::milliseconds timeout{5000};
  size_t max_response_bytes = kMaxResponseBytes;
  std::string ca_file;    // https: trust this PEM CA (or self-signed certificate); empty: system
  bool insecure = false;  // https: DEVELOPMENT ONLY, no certificate or name verification
  int max_connections = 4;
};

class IndexClient {
 public:
  // Errors: kInvalidArgument with kBadUrl.
  static Result<IndexClient> Create(IndexClientOptions options);

  Result<LookupResponse> Lookup(const LookupRequest& r) const;
  // The longest held prefix of any number of `keys`: asks kMaxKeysPerRequest at a time while
  // every key of a chunk is held, and returns the entries of all of them (matched counts them
  // all). An unknown compat on the first chunk is the error; on a later one (it expired
  // meanwhile) the prefix found so far is returned.
  Result<LookupResponse> LookupPrefix(const Digest& compat_id, const Digest& scope_id,
                                      std::span<const Digest> keys,
                                      uint32_t max_replicas = kDefaultMaxReplicas) const;
  Result<AnchorsResponse> Anchors(const AnchorsRequest& r) const;
  Status Register(const RegisterRequest& r) const;
  Status Withdraw(const WithdrawRequest& r) const;

  const std::string& url() const { return options_.url; }

 private:
  struct Transport;  // the pool, made at the first exchange
  explicit IndexClient(IndexClientOptions o);
  struct Answer {
    unsigned status = 0;
    std::string body;
  };
  Result<Answer> Exchange(std::string_view method, const std::string& target,
                          std::string body) const;
  // An OK answer of `want` status, or the typed error of any other.
  Status Check(const Answer& a, unsigned want) const;

  IndexClientOptions options_;
  std::string host_, base_, host_header_;
  uint16_t port_ = 0;
  bool tls_ = false;
  std::shared_ptr<Transport> transport_;
};

}  // namespace kvcs::index

#endif  // KVCS_INDEX_INDEX_CLIENT_H_
