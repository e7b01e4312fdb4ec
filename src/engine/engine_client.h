// The C++ side of the engine ABI (include/kvcs/kvcs.h): one client per engine and model, holding
// the descriptor, the scope's ids and a pool of store connections, answering lookups and handing
// connections to loads and saves. Thread-safe.
#ifndef KVCS_ENGINE_ENGINE_CLIENT_H_
#define KVCS_ENGINE_ENGINE_CLIENT_H_

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/crypto.h"
#include "common/status.h"
#include "engine/load_predictor.h"
#include "engine/paged_layout.h"
#include "kvsp/descriptor.h"
#include "kvsp/ids.h"
#include "objcache/client.h"
#include "profile/cose.h"

namespace kvcs::engine {

// Typed detail of the Statuses this folder returns; c_api.cc maps them to kvcs_status.
enum class EngineError {
  kNone = 0,
  kOutOfBounds,
  kUnknownLayer,
  kFinished,
  kCancelled,
  kTransport,
  kBlocksFailed,
  kState,
  kNotYet,
};

struct EngineClientOptions {
  std::string store_url;  // http://host:port; empty: no store (then relay_url is required)
  std::string bucket = "kvcache";
  std::string access_key, secret_key, region = "us-east-1";
  bool create_bucket = false;
  std::string shm_socket;  // empty: inline HTTP bodies
  uint64_t shm_buffer_bytes = 64ull << 20;
  kvsp::ScopeKey scope_key = kvsp::PublicScopeKey();
  kvsp::Descriptor descriptor;
  // Scheduling inputs of every load (µs; 0: not given).
  uint64_t compute_us_per_layer = 0, stall_target_us = 0;
  // The engine's cost of recomputing one token through one layer (ns; 0: not given): bounds a
  // MOQT load (load_deadline.h).
  uint64_t recompute_ns_per_token_layer = 0;
  // The MOQT path (moqt_link.h): moqt://HOST:PORT[/path]; empty: none.
  std::string relay_url, relay_ca_file;
  bool relay_insecure = false;
  std::string store_ca_file;  // an https store_url: its CA (empty: the system trust store)
  bool store_insecure = false;
  std::optional<profile::SigningKey> producer_key;
  std::string producer_key_pem;  // the PEM producer_key came from (names the shared link)
  // The KVSP Index Service (kvsp-index.md §7): http[s]://HOST:PORT; empty: none. Lookups ask it
  // first (the longest held prefix of the prompt's Block Keys, and who holds it).
  std::string index_url, index_token;
};

class MoqtLink;
class IndexLookup;

// The paths a load runs over, each with its own measured delivery rate (load_predictor.h).
enum class LoadPath : uint8_t { kHttp = 0, kSameHost = 1, kRelay = 2 };
inline constexpr size_t kLoadPaths = 3;
// "store HTTP", "same host", "MOQT relay".
std::string_view LoadPathName(LoadPath p);

class EngineClient;

// A store connection borrowed from the client's pool; returned when destroyed (dropped instead
// when marked broken).
class PooledConnection {
 public:
  PooledConnection(EngineClient* owner, std::unique_ptr<objcache::Client> c, bool reused)
      : owner_(owner), client_(std::move(c)), reused_(reused) {}
  ~PooledConnection();
  PooledConnection(PooledConnection&&) = default;
  // True when it served earlier requests: the store may have closed it while it was idle.
  bool reused() const { return reused_; }
  objcache::Client* operator->() { return client_.get(); }
  objcache::Client& operator*() { return *client_; }
  void MarkBroken() { broken_ = true; }

 private:
  EngineClient* owner_;
  std::unique_ptr<objcache::Client> client_;
  bool reused_ = false;
  bool broken_ = false;
};

class EngineClient {
 public:
  static Result<std::unique_ptr<EngineClient>> Create(EngineClientOptions options);
  ~EngineClient();

  const kvsp::Descriptor& descriptor() const { return options_.descriptor; }
  const std::string& bucket() const { return options_.bucket; }
  const EngineClientOptions& options() const { return options_; }
  const Digest& scope_id() const { return scope_id_; }
  const Digest& compat_id() const { return compat_id_; }
  // The shape of one block's K (and V) section.
  const SectionShape& shape() const { return shape_; }

  // Block Keys of every full block of tokens.
  std::vector<Digest> Keys(std::span<const uint32_t> tokens) const;
  // The keys of blocks [first_block, full blocks) of tokens, the blocks one load or save moves:
  // checks that there is at least one, at most max_blocks, and one engine block id each.
  // `what` ("load", "save") names the operation in messages.
  Result<std::vector<Digest>> RangeKeys(std::span<const uint32_t> tokens, size_t first_block,
                                        size_t n_block_ids, size_t max_blocks,
                                        std::string_view what) const;
  // The store object key of a block.
  std::string ObjectKey(const Digest& block_key) const;
  // Leading loadable tokens (see kvcs_lookup): from the index when one is configured and
  // answers, else from the relay when one is configured, else the store. *where (when non-null)
  // gets where they are (kvcs_lookup_source): "index URL holder H", "relay URL publication
  // NAMESPACE", "store URL bucket B", or "" when nothing beyond first_block is.
  Result<size_t> Lookup(std::span<const uint32_t> tokens, size_t first_block,
                        std::string* where = nullptr);

  bool has_store() const { return !options_.store_url.empty(); }
  // The MOQT path; null without a relay_url.
  MoqtLink* moqt() { return moqt_.get(); }
  // The KVSP HTTP holders the index lists for blocks [first_block, full blocks) of tokens
  // (IndexLookup::Holders), the store's own KVSP endpoint left out (a load asks it already):
  // recovery sources of a MOQT load. Empty without an index_url or when the index cannot answer.
  std::vector<std::string> IndexHolders(std::span<const uint32_t> tokens, size_t first_block);

  PooledConnection Borrow();

  // The store path of this client's loads: same host with a shm_socket, else HTTP.
  LoadPath StorePath() const {
    return options_.shm_socket.empty() ? LoadPath::kHttp : LoadPath::kSameHost;
  }
  // Whether a load of `bytes` over `path` is worth starting against recompute_ns (0: not given),
  // from the rate recent loads over the path measured (LoadPredictor::Decide, now).
  LoadDecision DecideLoad(LoadPath path, uint64_t bytes, uint64_t recompute_ns);
  // A load over `path` that ended now, having delivered `bytes` verified bytes in elapsed_us.
  void RecordLoad(LoadPath path, uint64_t bytes, uint64_t elapsed_us);

  // Runs call(objcache::Client&) -> Result/Status on a pooled connection. A failure on a reused
  // connection (one the store may have closed while it sat idle: the request dies with a broken
  // pipe or a reset) is retried once on a fresh connection when may_retry() says the call had no
  // effect the caller saw yet. The connection is dropped after any failure.
  template <typename Call, typename MayRetry>
  auto WithConnection(Call&& call, MayRetry&& may_retry) {
    PooledConnection conn = Borrow();
    auto r = call(*conn);
    if (!r.ok()) {
      conn.MarkBroken();
      if (conn.reused() && may_retry()) {
        PooledConnection fresh(this, std::make_unique<objcache::Client>(connection_options_),
                               /*reused=*/false);
        r = call(*fresh);
        if (!r.ok()) fresh.MarkBroken();
      }
    }
    return r;
  }

 private:
  friend class PooledConnection;
  explicit EngineClient(EngineClientOptions options);
  void Return(std::unique_ptr<objcache::Client> c);
  Result<size_t> LookupStore(const std::vector<Digest>& keys, size_t first_block);
  // One HEAD per block: for a store without the existence query.
  Result<size_t> LookupByHead(const std::vector<Digest>& keys, size_t first_block);
  Result<size_t> LookupRelay(std::span<const uint32_t> tokens, size_t first_block,
                             std::string* where);

  EngineClientOptions options_;
  objcache::ClientOptions connection_options_;
  Digest scope_id_{}, compat_id_{}, chain_key_{};
  SectionShape shape_;
  std::mutex mu_;
  std::vector<std::unique_ptr<objcache::Client>> idle_;  // guarded by mu_
  std::shared_ptr<MoqtLink> moqt_;      // shared with the process's other clients of the relay
  std::unique_ptr<IndexLookup> index_;  // null without an index_url
  std::mutex predict_mu_;
  std::array<LoadPredictor, kLoadPaths> predictors_;  // guarded by predict_mu_; by LoadPath
};

// A Status with an EngineError detail.
Status EngineStatus(Code code, EngineError e, std::string message);

}  // namespace kvcs::engine

#endif  // KVCS_ENGINE_ENGINE_CLIENT_H_
