#include "engine/engine_client.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <utility>

#include "common/strings.h"
#include "engine/index_lookup.h"
#include "engine/moqt_link.h"
#include "kvcs_stream/cache_identity.h"
#include "kvsp/block_keys.h"
#include "kvsp/codec.h"
#include "objcache/aggregate_wire.h"
#include "objcache/block_layout.h"
#include "profile/namespace.h"

namespace kvcs::engine {
namespace {

// A lookup waits this long for the index before asking the relay or the store instead.
constexpr uint64_t kIndexTimeoutMs = 2000;

// Pooled connections kept idle at most (loads in flight beyond this get fresh ones).
constexpr size_t kMaxIdleConnections = 8;

Status ParseStoreUrl(const std::string& url, std::string* host, uint16_t* port, bool* tls) {
  std::string_view s = url;
  *tls = s.substr(0, 8) == "https://";
  if (!*tls && s.substr(0, 7) != "http://") {
    return Status(Code::kInvalidArgument,
                  "store_url must be http://HOST:PORT or https://HOST:PORT, got '" + url + "'");
  }
  s.remove_prefix(*tls ? 8 : 7);
  if (!s.empty() && s.back() == '/') s.remove_suffix(1);
  size_t colon = s.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return Status(Code::kInvalidArgument, "store_url must name HOST:PORT, got '" + url + "'");
  }
  auto p = ParseDecimal<uint16_t>(s.substr(colon + 1));
  if (!p || *p == 0) return Status(Code::kInvalidArgument, "store_url: bad port in '" + url + "'");
  *host = std::string(s.substr(0, colon));
  *port = *p;
  return Status::Ok();
}

// One MoqtLink per relay URL, TLS settings and producer key in the process: the clients of an
// engine (a scheduler's and a worker's) share its session and what it remembers, so a lookup
// finds what a save of another client published.
Result<std::shared_ptr<MoqtLink>> SharedLink(MoqtLinkOptions o, const std::string& pem) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<MoqtLink>> links;
  const std::string name =
      o.relay_url + '\n' + o.ca_file + '\n' + (o.insecure ? "1" : "0") + '\n' + pem;
  std::lock_guard<std::mutex> l(mu);
  std::erase_if(links, [](const auto& e) { return e.second.expired(); });
  if (auto it = links.find(name); it != links.end()) {
    if (auto link = it->second.lock()) return link;
  }
  KVCS_ASSIGN_OR_RETURN(std::unique_ptr<MoqtLink> made, MoqtLink::Start(std::move(o)));
  std::shared_ptr<MoqtLink> link(std::move(made));
  links[name] = link;
  return link;
}

}  // namespace

Status EngineStatus(Code code, EngineError e, std::string message) {
  return Status(code, std::move(message), static_cast<int>(e));
}

PooledConnection::~PooledConnection() {
  if (client_ && !broken_) owner_->Return(std::move(client_));
}

EngineClient::EngineClient(EngineClientOptions options) : options_(std::move(options)) {}
EngineClient::~EngineClient() = default;

Result<std::unique_ptr<EngineClient>> EngineClient::Create(EngineClientOptions options) {
  KVCS_RETURN_IF_ERROR(kvsp::ValidateDescriptor(options.descriptor).WithContext("descriptor"));
  const kvsp::Descriptor& d = options.descriptor;
  if (d.attn == "mla") {
    return Status(Code::kUnsupported,
                  "descriptor: mla (K only) is not supported by the engine API");
  }
  if (d.kv_dtype != "fp32" && d.kv_dtype != "fp16" && d.kv_dtype != "bf16") {
    return Status(Code::kUnsupported, "descriptor: kv_dtype " + d.kv_dtype +
                                          " is not supported by the engine API (fp32, fp16, bf16)");
  }
  if (options.bucket.empty()) return Status(Code::kInvalidArgument, "bucket is empty");
  if (!options.store_url.empty() && (options.access_key.empty() || options.secret_key.empty())) {
    return Status(Code::kInvalidArgument, "access_key and secret_key are required");
  }
  if (options.store_url.empty() && options.relay_url.empty()) {
    return Status(Code::kInvalidArgument, "store_url and relay_url are both NULL: nothing to use");
  }
  std::unique_ptr<EngineClient> c(new EngineClient(std::move(options)));
  objcache::ClientOptions& co = c->connection_options_;
  if (c->has_store()) {
    KVCS_RETURN_IF_ERROR(ParseStoreUrl(c->options_.store_url, &co.host, &co.port, &co.tls));
    co.ca_file = c->options_.store_ca_file;
    co.insecure = c->options_.store_insecure;
  }
  co.access_key = c->options_.access_key;
  co.secret_key = c->options_.secret_key;
  co.region = c->options_.region;
  co.shm_socket = c->options_.shm_socket;
  co.shm_buffer_bytes = c->options_.shm_buffer_bytes;
  co.shm_slots = 2;
  co.verify_threads = 0;  // one per core (at most objcache::kMaxVerifyThreads)
  c->scope_id_ = kvsp::ScopeId(c->options_.scope_key);
  c->compat_id_ = kvsp::CompatId(c->options_.descriptor);
  c->chain_key_ = kvsp::ChainKey(c->options_.scope_key, c->compat_id_);
  const kvsp::Descriptor& cd = c->options_.descriptor;
  c->shape_ = SectionShape{cd.block_tokens, cd.kv_heads, cd.head_dim,
                           static_cast<uint32_t>(kvsp::DtypeBytes(cd.kv_dtype))};
  if (!c->options_.relay_url.empty()) {
    MoqtLinkOptions mo;
    mo.relay_url = c->options_.relay_url;
    mo.ca_file = c->options_.relay_ca_file;
    mo.insecure = c->options_.relay_insecure;
    mo.producer_key = c->options_.producer_key;
    KVCS_ASSIGN_OR_RETURN(c->moqt_, SharedLink(std::move(mo), c->options_.producer_key_pem));
  }
  if (!c->options_.index_url.empty()) {
    auto ic = IndexLookup::Create(c->options_.index_url, c->options_.index_token, kIndexTimeoutMs);
    if (!ic.ok()) return Status(Code::kInvalidArgument, "index_url: " + ic.status().message());
    c->index_ = std::move(*ic);
  }
  if (c->options_.create_bucket && c->has_store()) {
    PooledConnection conn = c->Borrow();
    Status s = conn->CreateBucket(c->options_.bucket);
    if (!s.ok()) {
      conn.MarkBroken();
      return EngineStatus(Code::kUnavailable, EngineError::kTransport, s.message());
    }
  }
  return c;
}

std::vector<Digest> EngineClient::Keys(std::span<const uint32_t> tokens) const {
  return kvsp::BlockKeys(chain_key_, options_.descriptor.block_tokens, tokens);
}

Result<std::vector<Digest>> EngineClient::RangeKeys(std::span<const uint32_t> tokens,
                                                    size_t first_block, size_t n_block_ids,
                                                    size_t max_blocks,
                                                    std::string_view what) const {
  std::vector<Digest> keys = Keys(tokens);
  const std::string op(what);
  if (first_block >= keys.size()) {
    return Status(Code::kInvalidArgument, "nothing to " + op + ": first_block " +
                                              std::to_string(first_block) + " of " +
                                              std::to_string(keys.size()) + " full blocks");
  }
  const size_t n = keys.size() - first_block;
  if (n > max_blocks) {
    return Status(Code::kInvalidArgument,
                  "more than " + std::to_string(max_blocks) + " blocks in one " + op);
  }
  if (n_block_ids != n) {
    return Status(Code::kInvalidArgument, "block_ids has " + std::to_string(n_block_ids) +
                                              " entries, the " + op + " " + std::to_string(n) +
                                              " blocks");
  }
  keys.erase(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(first_block));
  return keys;
}

std::string EngineClient::ObjectKey(const Digest& block_key) const {
  return objcache::BlockObjectKey(scope_id_, compat_id_, block_key,
                                  kvsp::CodecName(kvsp::Codec::kRaw));
}

Result<size_t> EngineClient::Lookup(std::span<const uint32_t> tokens, size_t first_block,
                                    std::string* where) {
  std::string unused;
  if (!where) where = &unused;
  where->clear();
  std::vector<Digest> keys = Keys(tokens);
  if (first_block > keys.size()) {
    return Status(Code::kInvalidArgument, "first_block " + std::to_string(first_block) +
                                              " is beyond the prompt's " +
                                              std::to_string(keys.size()) + " full blocks");
  }
  if (index_) {
    // The index's answer (kvcs get does the same); one it cannot give only means asking the
    // relay or the store.
    auto r = index_->LongestPrefix(compat_id_, scope_id_, keys);
    if (r.ok()) {
      const size_t matched = static_cast<size_t>(r->matched);
      if (matched > first_block && !r->holder.empty()) {
        *where = "index " + index_->url() + " holder " + r->holder;
      }
      return std::max(matched, first_block) * options_.descriptor.block_tokens;
    }
  }
  if (moqt_) return LookupRelay(tokens, first_block, where);
  KVCS_ASSIGN_OR_RETURN(size_t held, LookupStore(keys, first_block));
  if (held > first_block * options_.descriptor.block_tokens) {
    *where = "store " + options_.store_url + " bucket " + options_.bucket;
  }
  return held;
}

std::vector<std::string> EngineClient::IndexHolders(std::span<const uint32_t> tokens,
                                                    size_t first_block) {
  if (!index_) return {};
  auto r = index_->Holders(compat_id_, scope_id_, Keys(tokens), first_block);
  if (!r.ok()) return {};  // no holders to recover from: the load goes on without them
  std::string store = options_.store_url;
  while (!store.empty() && store.back() == '/') store.pop_back();
  std::erase_if(*r, [&](const std::string& h) {
    std::string_view v = h;
    while (!v.empty() && v.back() == '/') v.remove_suffix(1);
    return !store.empty() && (v == store || v == store + "/_kvsp");
  });
  return std::move(*r);
}

Result<size_t> EngineClient::LookupRelay(std::span<const uint32_t> tokens, size_t first_block,
                                         std::string* where) {
  const uint32_t b = options_.descriptor.block_tokens;
  const size_t full = tokens.size() / b;
  if (first_block >= full) return first_block * b;
  auto id = stream::CacheIdentity::Compute(options_.descriptor, options_.scope_key,
                                           tokens.subspan(0, full * b));
  if (!id.ok()) return id.status();
  auto p = moqt_->FindPublication(*id, first_block + 1);
  if (!p.ok()) {
    return EngineStatus(Code::kUnavailable, EngineError::kTransport,
                        "lookup: " + p.status().message());
  }
  const size_t held = *p ? std::min<size_t>((*p)->blocks, full) : 0;
  if (held > first_block) {
    *where = "relay " + options_.relay_url + " publication " + profile::ToString((*p)->ns);
  }
  return std::max(held, first_block) * b;
}

Result<size_t> EngineClient::LookupStore(const std::vector<Digest>& keys, size_t first_block) {
  // One existence query per kMaxBlocks blocks (objectcache-aggregated.md §3a), from the first not
  // held locally, until the first hole.
  size_t held = first_block;
  objcache::AggregateRequest req;
  req.scope_id = scope_id_;
  req.compat_id = compat_id_;
  req.codec = kvsp::CodecValue(kvsp::Codec::kRaw);
  req.layer_first = 0;
  req.layer_count = options_.descriptor.layers;
  req.components = objcache::Components::kKV;
  while (held < keys.size()) {
    const size_t n = std::min<size_t>(keys.size() - held, objcache::kMaxBlocks);
    req.block_keys.assign(keys.begin() + static_cast<std::ptrdiff_t>(held),
                          keys.begin() + static_cast<std::ptrdiff_t>(held + n));
    auto r =
        WithConnection([&](objcache::Client& c) { return c.AggregateExists(options_.bucket, req); },
                       [] { return true; });
    if (!r.ok()) {
      if (r.status().message().find("HTTP 4") != std::string::npos &&
          r.status().message().find("HTTP 403") == std::string::npos) {
        return LookupByHead(keys, held);  // a store without the existence query
      }
      return EngineStatus(Code::kUnavailable, EngineError::kTransport,
                          "lookup: " + r.status().message());
    }
    held += r->leading;
    if (r->leading < n) break;
  }
  return held * options_.descriptor.block_tokens;
}

Result<size_t> EngineClient::LookupByHead(const std::vector<Digest>& keys, size_t first_block) {
  size_t held = first_block;
  // One HEAD per block, in order, until the first the store lacks: a prefix is loadable only up
  // to its first hole.
  for (; held < keys.size(); ++held) {
    const std::string path = "/" + options_.bucket + "/" + ObjectKey(keys[held]);
    auto r = WithConnection([&](objcache::Client& c) { return c.Request("HEAD", path, "", {}); },
                            [] { return true; });
    if (!r.ok()) {
      return EngineStatus(Code::kUnavailable, EngineError::kTransport,
                          "lookup: " + r.status().message());
    }
    if (r->status == 404) break;
    if (r->status != 200) {
      return EngineStatus(Code::kUnavailable, EngineError::kTransport,
                          "lookup: HEAD answered HTTP " + std::to_string(r->status));
    }
  }
  return held * options_.descriptor.block_tokens;
}

std::string_view LoadPathName(LoadPath p) {
  switch (p) {
    case LoadPath::kHttp:
      return "store HTTP";
    case LoadPath::kSameHost:
      return "same host";
    case LoadPath::kRelay:
      return "MOQT relay";
  }
  return "unknown path";
}

namespace {
uint64_t SteadyNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

LoadDecision EngineClient::DecideLoad(LoadPath path, uint64_t bytes, uint64_t recompute_ns) {
  std::lock_guard<std::mutex> l(predict_mu_);
  return predictors_[static_cast<size_t>(path)].Decide(SteadyNowMs(), bytes, recompute_ns);
}

void EngineClient::RecordLoad(LoadPath path, uint64_t bytes, uint64_t elapsed_us) {
  std::lock_guard<std::mutex> l(predict_mu_);
  predictors_[static_cast<size_t>(path)].Record(SteadyNowMs(), bytes, elapsed_us);
}

PooledConnection EngineClient::Borrow() {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      return PooledConnection(this, std::move(c), /*reused=*/true);
    }
  }
  return PooledConnection(this, std::make_unique<objcache::Client>(connection_options_),
                          /*reused=*/false);
}

void EngineClient::Return(std::unique_ptr<objcache::Client> c) {
  std::lock_guard<std::mutex> l(mu_);
  if (idle_.size() < kMaxIdleConnections) idle_.push_back(std::move(c));
}

}  // namespace kvcs::engine
