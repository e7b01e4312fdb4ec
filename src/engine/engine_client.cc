#include "engine/engine_client.h"

#include <utility>

#include "common/strings.h"
#include "kvsp/block_keys.h"
#include "kvsp/codec.h"
#include "objcache/block_layout.h"

namespace kvcs::engine {
namespace {

// Pooled connections kept idle at most (loads in flight beyond this get fresh ones).
constexpr size_t kMaxIdleConnections = 8;

Status ParseStoreUrl(const std::string& url, std::string* host, uint16_t* port) {
  constexpr std::string_view kScheme = "http://";
  std::string_view s = url;
  if (s.substr(0, kScheme.size()) != kScheme) {
    if (s.substr(0, 8) == "https://") {
      return EngineStatus(Code::kUnsupported, EngineError::kNotYet,
                          "store_url: https is not supported by the engine client yet");
    }
    return Status(Code::kInvalidArgument, "store_url must be http://HOST:PORT, got '" + url + "'");
  }
  s.remove_prefix(kScheme.size());
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

}  // namespace

Status EngineStatus(Code code, EngineError e, std::string message) {
  return Status(code, std::move(message), static_cast<int>(e));
}

PooledConnection::~PooledConnection() {
  if (client_ && !broken_) owner_->Return(std::move(client_));
}

EngineClient::EngineClient(EngineClientOptions options) : options_(std::move(options)) {}

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
  if (options.access_key.empty() || options.secret_key.empty()) {
    return Status(Code::kInvalidArgument, "access_key and secret_key are required");
  }
  std::unique_ptr<EngineClient> c(new EngineClient(std::move(options)));
  objcache::ClientOptions& co = c->connection_options_;
  KVCS_RETURN_IF_ERROR(ParseStoreUrl(c->options_.store_url, &co.host, &co.port));
  co.access_key = c->options_.access_key;
  co.secret_key = c->options_.secret_key;
  co.region = c->options_.region;
  co.shm_socket = c->options_.shm_socket;
  co.shm_buffer_bytes = c->options_.shm_buffer_bytes;
  co.shm_slots = 2;
  co.verify_threads = 1;
  c->scope_id_ = kvsp::ScopeId(c->options_.scope_key);
  c->compat_id_ = kvsp::CompatId(c->options_.descriptor);
  c->chain_key_ = kvsp::ChainKey(c->options_.scope_key, c->compat_id_);
  const kvsp::Descriptor& cd = c->options_.descriptor;
  c->shape_ = SectionShape{cd.block_tokens, cd.kv_heads, cd.head_dim,
                           static_cast<uint32_t>(kvsp::DtypeBytes(cd.kv_dtype))};
  if (c->options_.create_bucket) {
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

Result<size_t> EngineClient::Lookup(std::span<const uint32_t> tokens, size_t first_block) {
  std::vector<Digest> keys = Keys(tokens);
  if (first_block > keys.size()) {
    return Status(Code::kInvalidArgument, "first_block " + std::to_string(first_block) +
                                              " is beyond the prompt's " +
                                              std::to_string(keys.size()) + " full blocks");
  }
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
