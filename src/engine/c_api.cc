// The extern "C" surface of include/kvcs/kvcs.h over EngineClient, LoadJob and SaveJob: argument
// checks, Status -> kvcs_status, the per-thread last error, and a catch-all at every entry so no
// C++ exception crosses the ABI.
#include <kvcs/kvcs.h>

#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/pem_key.h"
#include "engine/engine_client.h"
#include "engine/load_job.h"
#include "engine/save_job.h"
#include "profile/cose.h"

struct kvcs_client {
  std::unique_ptr<kvcs::engine::EngineClient> impl;
};
struct kvcs_load {
  std::unique_ptr<kvcs::engine::LoadJob> impl;
};
struct kvcs_save {
  std::unique_ptr<kvcs::engine::SaveJob> impl;
};

namespace kvcs::engine {
namespace {

thread_local std::string last_error;
// The kid of the client's producer key in signed manifests.
constexpr std::string_view kProducerKid = "kvcs-engine";

kvcs_status Fail(kvcs_status code, std::string message) {
  last_error = std::move(message);
  return code;
}

kvcs_status ToCode(const Status& s) {
  if (s.ok()) return KVCS_OK;
  switch (static_cast<EngineError>(s.detail())) {
    case EngineError::kOutOfBounds:
      return KVCS_ERR_OUT_OF_BOUNDS;
    case EngineError::kUnknownLayer:
      return KVCS_ERR_UNKNOWN_LAYER;
    case EngineError::kFinished:
      return KVCS_ERR_FINISHED;
    case EngineError::kCancelled:
      return KVCS_ERR_CANCELLED;
    case EngineError::kTransport:
      return KVCS_ERR_TRANSPORT;
    case EngineError::kBlocksFailed:
      return KVCS_ERR_BLOCKS_FAILED;
    case EngineError::kState:
      return KVCS_ERR_STATE;
    case EngineError::kNotYet:
      return KVCS_ERR_NOT_YET;
    case EngineError::kNone:
      break;
  }
  switch (s.code()) {
    case Code::kOutOfRange:
      return KVCS_ERR_OUT_OF_BOUNDS;
    case Code::kUnavailable:
    case Code::kIoError:
      return KVCS_ERR_TRANSPORT;
    case Code::kInternal:
    case Code::kResourceExhausted:
      return KVCS_ERR_INTERNAL;
    default:
      return KVCS_ERR_INVALID_ARGUMENT;
  }
}

kvcs_status FromStatus(const Status& s) {
  if (s.ok()) return KVCS_OK;
  return Fail(ToCode(s), s.message());
}

// Runs `body` (returning kvcs_status) with every exception turned into a status.
template <typename F>
kvcs_status Guard(F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return Fail(KVCS_ERR_INTERNAL, "out of memory");
  } catch (const std::exception& e) {
    return Fail(KVCS_ERR_INTERNAL, std::string("internal error: ") + e.what());
  } catch (...) {
    return Fail(KVCS_ERR_INTERNAL, "internal error");
  }
}

void SetStatus(int* out, kvcs_status s) {
  if (out) *out = s;
}

// Tokens may be NULL only when there are none.
bool TokensOk(const uint32_t* tokens, size_t n) { return tokens || n == 0; }

Result<kvsp::Descriptor> ToDescriptor(const kvcs_descriptor& c) {
  for (const char* s : {c.model, c.model_rev, c.tokenizer_rev, c.attn, c.kv_dtype}) {
    if (!s) return Status(Code::kInvalidArgument, "descriptor: a required string is NULL");
  }
  kvsp::Descriptor d;
  d.model = c.model;
  d.model_rev = c.model_rev;
  d.tokenizer_rev = c.tokenizer_rev;
  if (c.adapter) d.adapter = std::string(c.adapter);
  d.attn = c.attn;
  d.layers = c.layers;
  d.kv_heads = c.kv_heads;
  d.head_dim = c.head_dim;
  d.kv_dtype = c.kv_dtype;
  d.block_tokens = c.block_tokens;
  d.layout = "thd";
  return d;
}

std::vector<LayerTarget> ToTargets(const kvcs_layer_buffers* layers, size_t n) {
  std::vector<LayerTarget> out(n);
  for (size_t i = 0; i < n; ++i) {
    out[i] = LayerTarget{static_cast<uint8_t*>(layers[i].k), layers[i].k_bytes,
                         static_cast<uint8_t*>(layers[i].v), layers[i].v_bytes};
  }
  return out;
}

PagedLayout ToLayout(const kvcs_paged_layout& l) {
  return PagedLayout{l.block_stride, l.token_stride, l.head_stride};
}

}  // namespace
}  // namespace kvcs::engine

using namespace kvcs;          // NOLINT: the C entry points below are thin wrappers
using namespace kvcs::engine;  // NOLINT

extern "C" {

const char* kvcs_status_name(int status) {
  switch (status) {
    case KVCS_OK:
      return "KVCS_OK";
    case KVCS_ERR_INVALID_ARGUMENT:
      return "KVCS_ERR_INVALID_ARGUMENT";
    case KVCS_ERR_OUT_OF_BOUNDS:
      return "KVCS_ERR_OUT_OF_BOUNDS";
    case KVCS_ERR_UNKNOWN_LAYER:
      return "KVCS_ERR_UNKNOWN_LAYER";
    case KVCS_ERR_FINISHED:
      return "KVCS_ERR_FINISHED";
    case KVCS_ERR_CANCELLED:
      return "KVCS_ERR_CANCELLED";
    case KVCS_ERR_TRANSPORT:
      return "KVCS_ERR_TRANSPORT";
    case KVCS_ERR_BLOCKS_FAILED:
      return "KVCS_ERR_BLOCKS_FAILED";
    case KVCS_ERR_STATE:
      return "KVCS_ERR_STATE";
    case KVCS_ERR_NOT_YET:
      return "KVCS_ERR_NOT_YET";
    case KVCS_ERR_INTERNAL:
      return "KVCS_ERR_INTERNAL";
    default:
      return "KVCS_UNKNOWN";
  }
}

const char* kvcs_last_error(void) { return last_error.c_str(); }

kvcs_client* kvcs_client_create(const kvcs_client_config* config, int* status) {
  kvcs_client* out = nullptr;
  kvcs_status s = Guard([&]() -> kvcs_status {
    if (!config) return Fail(KVCS_ERR_INVALID_ARGUMENT, "config is NULL");
    if (!config->store_url && !config->relay_url) {
      return Fail(KVCS_ERR_INVALID_ARGUMENT, "store_url and relay_url are both NULL");
    }
    EngineClientOptions o;
    if (config->store_url) o.store_url = config->store_url;
    if (config->relay_url) o.relay_url = config->relay_url;
    if (config->index_url) o.index_url = config->index_url;
    if (config->index_token) o.index_token = config->index_token;
    if (config->relay_ca_file) o.relay_ca_file = config->relay_ca_file;
    o.relay_insecure = config->relay_insecure != 0;
    if (config->bucket) o.bucket = config->bucket;
    if (config->access_key) o.access_key = config->access_key;
    if (config->secret_key) o.secret_key = config->secret_key;
    if (config->region) o.region = config->region;
    o.create_bucket = config->create_bucket != 0;
    if (config->shm_socket) o.shm_socket = config->shm_socket;
    if (config->shm_buffer_bytes) o.shm_buffer_bytes = config->shm_buffer_bytes;
    o.compute_us_per_layer = config->compute_us_per_layer;
    o.stall_target_us = config->stall_target_us;
    o.recompute_ns_per_token_layer = config->recompute_ns_per_token_layer;
    if (config->store_ca_file) o.store_ca_file = config->store_ca_file;
    o.store_insecure = config->store_insecure != 0;
    if (config->scope_key) std::memcpy(o.scope_key.data(), config->scope_key, o.scope_key.size());
    if (config->producer_key_pem) {
      auto key = ReadPrivatePem(config->producer_key_pem);
      if (!key.ok())
        return Fail(KVCS_ERR_INVALID_ARGUMENT, "producer_key_pem: " + key.status().message());
      // One producer per client: a fixed kid names it in manifest.cose.
      auto signer = profile::SigningKey::FromPrivatePem(
          config->producer_key_pem, Bytes(kProducerKid.begin(), kProducerKid.end()));
      if (!signer.ok()) {
        return Fail(KVCS_ERR_INVALID_ARGUMENT, "producer_key_pem: " + signer.status().message());
      }
      o.producer_key = std::move(*signer);
      o.producer_key_pem = config->producer_key_pem;
    }
    auto d = ToDescriptor(config->descriptor);
    if (!d.ok()) return FromStatus(d.status());
    o.descriptor = std::move(*d);
    auto c = EngineClient::Create(std::move(o));
    if (!c.ok()) return FromStatus(c.status());
    out = new kvcs_client{std::move(*c)};
    return KVCS_OK;
  });
  SetStatus(status, s);
  return out;
}

void kvcs_client_free(kvcs_client* client) {
  Guard([&] {
    delete client;
    return KVCS_OK;
  });
}

kvcs_status kvcs_block_count(const kvcs_client* client, size_t n_tokens, size_t* out) {
  return Guard([&] {
    if (!client || !out) return Fail(KVCS_ERR_INVALID_ARGUMENT, "NULL argument");
    *out = n_tokens / client->impl->descriptor().block_tokens;
    return KVCS_OK;
  });
}

kvcs_status kvcs_block_key(const kvcs_client* client, const uint32_t* tokens, size_t n_tokens,
                           size_t index, uint8_t key[32], char* key_out, size_t key_out_len) {
  return Guard([&] {
    if (!client || !key || !TokensOk(tokens, n_tokens)) {
      return Fail(KVCS_ERR_INVALID_ARGUMENT, "NULL argument");
    }
    const uint32_t b = client->impl->descriptor().block_tokens;
    if (index >= n_tokens / b) {
      return Fail(KVCS_ERR_INVALID_ARGUMENT,
                  "block " + std::to_string(index) + " is not a full block of the tokens");
    }
    auto keys = client->impl->Keys(std::span<const uint32_t>(tokens, (index + 1) * b));
    std::memcpy(key, keys.back().data(), 32);
    if (key_out) {
      std::string k = client->impl->ObjectKey(keys.back());
      if (key_out_len < k.size() + 1) {
        return Fail(KVCS_ERR_OUT_OF_BOUNDS,
                    "key_out needs " + std::to_string(k.size() + 1) + " bytes");
      }
      std::memcpy(key_out, k.c_str(), k.size() + 1);
    }
    return KVCS_OK;
  });
}

kvcs_status kvcs_lookup(kvcs_client* client, const uint32_t* tokens, size_t n_tokens,
                        size_t first_block, size_t* loadable_tokens) {
  return Guard([&] {
    if (!client || !loadable_tokens || !TokensOk(tokens, n_tokens)) {
      return Fail(KVCS_ERR_INVALID_ARGUMENT, "NULL argument");
    }
    auto r = client->impl->Lookup(std::span<const uint32_t>(tokens, n_tokens), first_block);
    if (!r.ok()) return FromStatus(r.status());
    *loadable_tokens = *r;
    return KVCS_OK;
  });
}

kvcs_status kvcs_lookup_source(kvcs_client* client, const uint32_t* tokens, size_t n_tokens,
                               size_t first_block, size_t* loadable_tokens, char* where,
                               size_t where_len) {
  return Guard([&] {
    if (!client || !loadable_tokens || !TokensOk(tokens, n_tokens) || (!where && where_len)) {
      return Fail(KVCS_ERR_INVALID_ARGUMENT, "NULL argument");
    }
    std::string w;
    auto r = client->impl->Lookup(std::span<const uint32_t>(tokens, n_tokens), first_block, &w);
    if (!r.ok()) return FromStatus(r.status());
    *loadable_tokens = *r;
    if (where_len) {
      const size_t n = std::min(w.size(), where_len - 1);
      std::memcpy(where, w.data(), n);
      where[n] = 0;
    }
    return KVCS_OK;
  });
}

kvcs_load* kvcs_load_start(kvcs_client* client, const uint32_t* tokens, size_t n_tokens,
                           size_t first_block, const uint32_t* block_ids, size_t n_block_ids,
                           const kvcs_layer_buffers* layers, size_t n_layers,
                           const kvcs_paged_layout* layout, int* status) {
  kvcs_load* out = nullptr;
  kvcs_status s = Guard([&] {
    if (!client || !block_ids || !layers || !layout || !TokensOk(tokens, n_tokens)) {
      return Fail(KVCS_ERR_INVALID_ARGUMENT, "NULL argument");
    }
    auto targets = ToTargets(layers, n_layers);
    auto job = LoadJob::Start(client->impl.get(), std::span<const uint32_t>(tokens, n_tokens),
                              first_block, std::span<const uint32_t>(block_ids, n_block_ids),
                              targets, ToLayout(*layout));
    if (!job.ok()) return FromStatus(job.status());
    out = new kvcs_load{std::move(*job)};
    return KVCS_OK;
  });
  SetStatus(status, s);
  return out;
}

kvcs_status kvcs_load_wait_layer(kvcs_load* load, uint32_t layer, uint32_t* failed,
                                 size_t failed_cap, size_t* n_failed) {
  return Guard([&] {
    if (!load || (!failed && failed_cap)) return Fail(KVCS_ERR_INVALID_ARGUMENT, "NULL argument");
    std::vector<uint32_t> f;
    Status s = load->impl->WaitLayer(layer, &f);
    if (n_failed) *n_failed = f.size();
    if (failed) std::memcpy(failed, f.data(), std::min(f.size(), failed_cap) * sizeof(uint32_t));
    return FromStatus(s);
  });
}

kvcs_status kvcs_load_block_sources(kvcs_load* load, uint32_t layer, uint8_t* sources,
                                    size_t sources_cap, size_t* n_sources) {
  return Guard([&] {
    if (!load || (!sources && sources_cap)) {
      return Fail(KVCS_ERR_INVALID_ARGUMENT, "NULL argument");
    }
    std::vector<kvcs::engine::LoadSource> got;
    Status s = load->impl->BlockSources(layer, &got);
    if (!s.ok()) return FromStatus(s);
    if (n_sources) *n_sources = got.size();
    for (size_t i = 0; i < got.size() && i < sources_cap; ++i) {
      sources[i] = static_cast<uint8_t>(got[i]);
    }
    return KVCS_OK;
  });
}

kvcs_status kvcs_load_cancel(kvcs_load* load) {
  return Guard([&] {
    if (!load) return Fail(KVCS_ERR_INVALID_ARGUMENT, "NULL argument");
    load->impl->Cancel();
    return KVCS_OK;
  });
}

kvcs_status kvcs_load_finish(kvcs_load* load) {
  return Guard([&] {
    if (!load) return Fail(KVCS_ERR_INVALID_ARGUMENT, "NULL argument");
    return FromStatus(load->impl->Finish());
  });
}

void kvcs_load_free(kvcs_load* load) {
  Guard([&] {
    delete load;
    return KVCS_OK;
  });
}

kvcs_save* kvcs_save_begin(kvcs_client* client, const uint32_t* tokens, size_t n_tokens,
                           size_t first_block, const uint32_t* block_ids, size_t n_block_ids,
                           const kvcs_paged_layout* layout, int* status) {
  kvcs_save* out = nullptr;
  kvcs_status s = Guard([&] {
    if (!client || !block_ids || !layout || !TokensOk(tokens, n_tokens)) {
      return Fail(KVCS_ERR_INVALID_ARGUMENT, "NULL argument");
    }
    auto job =
        SaveJob::Begin(client->impl.get(), std::span<const uint32_t>(tokens, n_tokens), first_block,
                       std::span<const uint32_t>(block_ids, n_block_ids), ToLayout(*layout));
    if (!job.ok()) return FromStatus(job.status());
    out = new kvcs_save{std::move(*job)};
    return KVCS_OK;
  });
  SetStatus(status, s);
  return out;
}

kvcs_status kvcs_save_layer(kvcs_save* save, uint32_t layer, const kvcs_layer_buffers* buffers) {
  return Guard([&] {
    if (!save || !buffers) return Fail(KVCS_ERR_INVALID_ARGUMENT, "NULL argument");
    return FromStatus(save->impl->SaveLayer(layer, ToTargets(buffers, 1)[0]));
  });
}

kvcs_status kvcs_save_finish(kvcs_save* save, size_t* stored) {
  return Guard([&] {
    if (!save) return Fail(KVCS_ERR_INVALID_ARGUMENT, "NULL argument");
    auto r = save->impl->Finish();
    if (!r.ok()) return FromStatus(r.status());
    if (stored) *stored = *r;
    return KVCS_OK;
  });
}

void kvcs_save_free(kvcs_save* save) {
  Guard([&] {
    delete save;
    return KVCS_OK;
  });
}

}  // extern "C"
