#include "tensorio/kv_cache.h"

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/hex.h"
#include "kvsp/block_keys.h"
#include "kvsp/container.h"

namespace kvcs::tensorio {
namespace {

using KE = KvCacheError;
using nlohmann::json;
namespace fs = std::filesystem;

// A cache of more than 16 Mi tokens is beyond every context window in use (10 M at most).
constexpr uint64_t kMaxCacheTokens = uint64_t{16} << 20;

Status Bad(KE e, std::string msg) { return InvalidArgument(std::move(msg), int(e)); }

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

std::string LayerName(uint32_t l, char kv) {
  return "layers." + std::to_string(l) + "." + std::string(1, kv);
}

bool IsMla(const kvsp::Descriptor& d) { return d.attn == "mla"; }

Status CheckKvTensor(const TensorInfo* t, const std::string& name, Dtype want, uint64_t tokens,
                     const kvsp::Descriptor& d) {
  if (!t) return Bad(KE::kMissingTensor, "no tensor \"" + name + "\"");
  if (t->dtype != want) {
    return Bad(KE::kWrongDtype, "tensor \"" + name + "\" is " + std::string(DtypeName(t->dtype)) +
                                    " but the descriptor's kv_dtype " + d.kv_dtype + " needs " +
                                    std::string(DtypeName(want)));
  }
  std::vector<uint64_t> shape = {tokens, d.kv_heads, d.head_dim};
  if (t->shape != shape) {
    auto str = [](const std::vector<uint64_t>& s) {
      std::string r = "[";
      for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
      return r + "]";
    };
    return Bad(KE::kWrongShape, "tensor \"" + name + "\" has shape " + str(t->shape) +
                                    ", expected [tokens, kv_heads, head_dim] = " + str(shape));
  }
  return Status::Ok();
}

Result<std::vector<uint32_t>> ReadTokenIds(const SafetensorsView& file) {
  const TensorInfo* t = file.header().Find(kTokenIdsTensor);
  if (!t) return Bad(KE::kMissingTensor, "no tensor \"token_ids\"");
  if (t->shape.size() != 1) {
    return Bad(KE::kWrongShape, "tensor \"token_ids\" must have shape [tokens], it has rank " +
                                    std::to_string(t->shape.size()));
  }
  size_t width = 0;
  bool is_signed = false;
  switch (t->dtype) {
    case Dtype::kU32:
      width = 4;
      break;
    case Dtype::kI32:
      width = 4;
      is_signed = true;
      break;
    case Dtype::kU64:
      width = 8;
      break;
    case Dtype::kI64:
      width = 8;
      is_signed = true;
      break;
    default:
      return Bad(KE::kWrongDtype, "tensor \"token_ids\" is " + std::string(DtypeName(t->dtype)) +
                                      "; use I64, I32, U32 or U64");
  }
  if (t->shape[0] > kMaxCacheTokens) {
    return ResourceExhausted("token_ids has " + std::to_string(t->shape[0]) +
                             " tokens, more than the limit of " + std::to_string(kMaxCacheTokens));
  }
  ByteSpan b = file.data(*t);
  std::vector<uint32_t> out(t->shape[0]);
  for (size_t i = 0; i < out.size(); ++i) {
    uint64_t v = 0;
    for (size_t j = 0; j < width; ++j) v |= uint64_t(b[i * width + j]) << (8 * j);
    if (is_signed && width == 4) v = uint64_t(int64_t(int32_t(uint32_t(v))));
    if (v > UINT32_MAX) {  // negative signed values wrap far above this too
      return Bad(KE::kTokenOutOfRange,
                 "token_ids[" + std::to_string(i) +
                     "] = " + (is_signed ? std::to_string(int64_t(v)) : std::to_string(v)) +
                     " is outside 0..4294967295");
    }
    out[i] = uint32_t(v);
  }
  return out;
}

// Reads a whole file of at most `max` bytes.
Result<Bytes> ReadFile(const fs::path& p, uint64_t max) {
  std::error_code ec;
  uint64_t size = fs::file_size(p, ec);
  if (ec) return NotFound("cannot read " + p.string() + ": " + ec.message());
  if (size > max) {
    return ResourceExhausted(p.string() + " has " + std::to_string(size) + " bytes, above the " +
                             std::to_string(max) + "-byte limit");
  }
  std::ifstream in(p, std::ios::binary);
  Bytes b(size);
  if (!in.read(reinterpret_cast<char*>(b.data()), std::streamsize(size))) {
    return IoError("cannot read " + p.string());
  }
  return b;
}

// Writes `bytes` to p.tmp and renames it to p.
Status WriteFileAtomic(const fs::path& p, ByteSpan bytes) {
  fs::path tmp = p;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size())) ||
        !out.flush()) {
      std::error_code ec;
      fs::remove(tmp, ec);
      return IoError("cannot write " + tmp.string());
    }
  }
  std::error_code ec;
  fs::rename(tmp, p, ec);
  if (ec) return IoError("cannot rename " + tmp.string() + ": " + ec.message());
  return Status::Ok();
}

Result<Digest> HexDigest(const json& j, const std::string& what) {
  if (!j.is_string()) return Bad(KE::kBadIndex, "index: " + what + " is not a hex string");
  auto d = FromHexFixed<32>(j.get<std::string>());
  if (!d.ok()) return Bad(KE::kBadIndex, "index: " + what + ": " + d.status().message());
  return *d;
}

// Decodes `container` as block `block` (1-based) of a cache described by `d`: every digest and
// the structure first, then the header against what the caller expects (any codec is accepted:
// the container names it); then hands each layer's raw K (v = false) and V sections to `sink`.
using SectionSink = std::function<Status(uint32_t layer, bool v, ByteSpan raw)>;
Status DecodeBlock(const kvsp::Descriptor& d, const Digest& compat_id, uint64_t block,
                   ByteSpan container, const Digest& block_key, const SectionSink& sink) {
  KVCS_ASSIGN_OR_RETURN(kvsp::ContainerView view, kvsp::DecodeContainer(container));
  kvsp::Codec codec = view.header.codec;
  KVCS_RETURN_IF_ERROR(
      kvsp::CheckExpectation(view, kvsp::ExpectFor(d, compat_id, block_key, uint32_t(block), codec,
                                                   /*layer_first=*/0, uint16_t(d.layers))));
  kvsp::SectionShape ks = kvsp::KShape(d), vs = kvsp::VShape(d);
  Bytes raw(ks.raw_bytes());
  for (uint32_t l = 0; l < d.layers; ++l) {
    KVCS_ASSIGN_OR_RETURN(kvsp::LayerSections sec, kvsp::LayerBytes(view, container, l));
    KVCS_RETURN_IF_ERROR(kvsp::DecodeSection(codec, ks, sec.k, raw));
    KVCS_RETURN_IF_ERROR(sink(l, false, raw));
    if (!IsMla(d)) {
      KVCS_RETURN_IF_ERROR(kvsp::DecodeSection(codec, vs, sec.v, raw));
      KVCS_RETURN_IF_ERROR(sink(l, true, raw));
    }
  }
  return Status::Ok();
}

// Reads each container the index lists, in block order, and hands it to `fn`; adds up the bytes
// read and reports progress per block.
Status ForEachPackedContainer(const fs::path& dir, const PackIndex& idx,
                              const std::function<Status(uint64_t block, ByteSpan c)>& fn,
                              const Progress& progress, uint64_t* bytes) {
  const auto& keys = idx.block_keys;
  for (size_t i = 0; i < keys.size(); ++i) {
    fs::path p = dir / (ToHex(keys[i]) + std::string(kContainerSuffix));
    auto c = ReadFile(p, kMaxContainerFileBytes);
    if (!c.ok()) return c.status().WithContext("block " + std::to_string(i + 1));
    Status s = fn(i + 1, *c);
    if (!s.ok()) {
      return s.WithContext(p.filename().string() + " (block " + std::to_string(i + 1) + ")");
    }
    *bytes += c->size();
    if (progress) progress(i + 1, keys.size());
  }
  return Status::Ok();
}

}  // namespace

std::string_view KvCacheErrorName(KvCacheError e) {
  switch (e) {
    case KE::kNone:
      return "none";
    case KE::kNoDescriptor:
      return "no_descriptor";
    case KE::kBadDescriptor:
      return "bad_descriptor";
    case KE::kMissingTensor:
      return "missing_tensor";
    case KE::kUnexpectedTensor:
      return "unexpected_tensor";
    case KE::kWrongDtype:
      return "wrong_dtype";
    case KE::kWrongShape:
      return "wrong_shape";
    case KE::kTokenOutOfRange:
      return "token_out_of_range";
    case KE::kNoFullBlock:
      return "no_full_block";
    case KE::kBadIndex:
      return "bad_index";
    case KE::kKeyChainMismatch:
      return "key_chain_mismatch";
  }
  return "unknown";
}

std::optional<Dtype> SafetensorsDtypeFor(std::string_view kv_dtype) {
  if (kv_dtype == "bf16") return Dtype::kBF16;
  if (kv_dtype == "fp16") return Dtype::kF16;
  if (kv_dtype == "fp32") return Dtype::kF32;
  if (kv_dtype == "fp8_e4m3") return Dtype::kF8E4M3;
  if (kv_dtype == "fp8_e5m2") return Dtype::kF8E5M2;
  return std::nullopt;
}

ByteSpan KvCacheView::KSection(uint32_t layer, uint64_t block) const {
  uint64_t n = kvsp::KSectionBytes(descriptor);
  return k[layer].subspan((block - 1) * n, n);
}

ByteSpan KvCacheView::VSection(uint32_t layer, uint64_t block) const {
  uint64_t n = kvsp::VSectionBytes(descriptor);
  if (n == 0) return {};
  return v[layer].subspan((block - 1) * n, n);
}

Result<KvCacheView> ReadKvCache(const SafetensorsView& file) {
  const auto& meta = file.header().metadata;
  auto it = meta.find(std::string(kDescriptorMetadataKey));
  if (it == meta.end()) {
    return Bad(KE::kNoDescriptor,
               "no __metadata__[\"kvsp.descriptor\"]: the file does not say which model it is");
  }
  auto d = kvsp::ParseDescriptor(it->second);
  if (!d.ok()) return Bad(KE::kBadDescriptor, "kvsp.descriptor: " + d.status().message());
  KvCacheView c;
  c.descriptor = *d;
  KVCS_ASSIGN_OR_RETURN(c.token_ids, ReadTokenIds(file));
  auto dtype = SafetensorsDtypeFor(c.descriptor.kv_dtype);
  if (!dtype) return Bad(KE::kBadDescriptor, "kv_dtype " + c.descriptor.kv_dtype + " unknown");
  uint64_t tokens = c.token_ids.size();
  bool mla = IsMla(c.descriptor);
  for (uint32_t l = 0; l < c.descriptor.layers; ++l) {
    std::string kn = LayerName(l, 'k');
    const TensorInfo* kt = file.header().Find(kn);
    KVCS_RETURN_IF_ERROR(CheckKvTensor(kt, kn, *dtype, tokens, c.descriptor));
    c.k.push_back(file.data(*kt));
    std::string vn = LayerName(l, 'v');
    const TensorInfo* vt = file.header().Find(vn);
    if (mla) {
      if (vt) return Bad(KE::kUnexpectedTensor, "tensor \"" + vn + "\": MLA caches carry no V");
      c.v.push_back({});
    } else {
      KVCS_RETURN_IF_ERROR(CheckKvTensor(vt, vn, *dtype, tokens, c.descriptor));
      c.v.push_back(file.data(*vt));
    }
  }
  size_t expected = size_t(c.descriptor.layers) * (mla ? 1 : 2) + 1;
  if (file.header().tensors.size() != expected) {
    for (auto& t : file.header().tensors) {
      bool known = t.name == kTokenIdsTensor;
      for (uint32_t l = 0; !known && l < c.descriptor.layers; ++l) {
        known = t.name == LayerName(l, 'k') || (!mla && t.name == LayerName(l, 'v'));
      }
      if (!known) {
        return Bad(KE::kUnexpectedTensor,
                   "tensor \"" + t.name + "\" is not part of the KV convention (layers.{0.." +
                       std::to_string(c.descriptor.layers - 1) + "}.k/.v and token_ids)");
      }
    }
  }
  return c;
}

std::vector<Digest> CacheBlockKeys(const KvCacheView& cache, const kvsp::ScopeKey& scope_key) {
  Digest chain = kvsp::ChainKey(scope_key, kvsp::CompatId(cache.descriptor));
  return kvsp::BlockKeys(chain, cache.descriptor.block_tokens, cache.token_ids);
}

Result<Bytes> EncodeBlockContainer(const KvCacheView& cache, uint64_t block,
                                   const Digest& compat_id, const Digest& block_key,
                                   kvsp::Codec codec) {
  if (block == 0 || block > cache.full_blocks()) {
    return Status(Code::kOutOfRange, "block " + std::to_string(block) + " is not a full block");
  }
  std::vector<kvsp::LayerSections> layers;
  layers.reserve(cache.descriptor.layers);
  for (uint32_t l = 0; l < cache.descriptor.layers; ++l) {
    layers.push_back({cache.KSection(l, block), cache.VSection(l, block)});
  }
  return kvsp::EncodeContainerFromRaw(cache.descriptor, compat_id, block_key, uint32_t(block),
                                      codec,
                                      /*layer_first=*/0, layers);
}

// ---- KvCacheAssembler -------------------------------------------------------------------------

Result<KvCacheAssembler> KvCacheAssembler::Create(const std::string& path,
                                                  const kvsp::Descriptor& d,
                                                  std::vector<uint32_t> token_ids) {
  KVCS_RETURN_IF_ERROR(kvsp::ValidateDescriptor(d));
  if (token_ids.empty() || token_ids.size() % d.block_tokens != 0) {
    return InvalidArgument("assembler: token count must be a positive multiple of block_tokens");
  }
  auto dtype = SafetensorsDtypeFor(d.kv_dtype);
  uint64_t t = token_ids.size();
  std::vector<TensorSpec> specs;
  // Layer-major: layers.0.k, layers.0.v, layers.1.k, ... (readers find tensors by name).
  for (uint32_t l = 0; l < d.layers; ++l) {
    specs.push_back({LayerName(l, 'k'), *dtype, {t, d.kv_heads, d.head_dim}});
    if (!IsMla(d)) specs.push_back({LayerName(l, 'v'), *dtype, {t, d.kv_heads, d.head_dim}});
  }
  specs.push_back({std::string(kTokenIdsTensor), Dtype::kI64, {t}});
  std::map<std::string, std::string> meta = {
      {std::string(kDescriptorMetadataKey), kvsp::CanonicalJson(d)}, {"format", "pt"}};
  KVCS_ASSIGN_OR_RETURN(SafetensorsWriter w, SafetensorsWriter::Create(path, specs, meta));
  Bytes ids(t * 8);
  for (size_t i = 0; i < t; ++i) {
    for (int j = 0; j < 8; ++j) ids[i * 8 + j] = uint8_t(uint64_t(token_ids[i]) >> (8 * j));
  }
  KVCS_RETURN_IF_ERROR(w.Write(specs.size() - 1, 0, ids));
  KvCacheAssembler a(std::move(w));
  a.descriptor_ = d;
  a.compat_id_ = kvsp::CompatId(d);
  a.added_.assign(t / d.block_tokens, false);
  return a;
}

Status KvCacheAssembler::AddBlock(uint64_t block, ByteSpan container, const Digest& block_key) {
  if (block == 0 || block > added_.size()) {
    return Status(Code::kOutOfRange, "block " + std::to_string(block) + " out of range");
  }
  const size_t per_layer = IsMla(descriptor_) ? 1 : 2;
  KVCS_RETURN_IF_ERROR(DecodeBlock(
      descriptor_, compat_id_, block, container, block_key, [&](uint32_t l, bool v, ByteSpan raw) {
        return writer_.Write(l * per_layer + (v ? 1 : 0), (block - 1) * raw.size(), raw);
      }));
  added_[block - 1] = true;
  return Status::Ok();
}

Status KvCacheAssembler::Finish() {
  for (size_t i = 0; i < added_.size(); ++i) {
    if (!added_[i]) {
      return Status(Code::kFailedPrecondition, "block " + std::to_string(i + 1) + " is missing");
    }
  }
  return writer_.Finish();
}

// ---- Packed directories -------------------------------------------------------------------

Result<PackReport> PackDirectory(const KvCacheView& cache, const kvsp::ScopeKey& scope_key,
                                 bool public_scope, kvsp::Codec codec, const std::string& dir,
                                 const Progress& progress, bool want_section_digests) {
  const kvsp::Descriptor& d = cache.descriptor;
  PackReport r;
  r.codec = codec;
  r.tokens = cache.tokens();
  r.blocks = cache.full_blocks();
  r.tail_tokens = cache.tail_tokens();
  if (r.blocks == 0) {
    return Bad(KE::kNoFullBlock, "the cache has " + std::to_string(r.tokens) +
                                     " tokens, fewer than one block of " +
                                     std::to_string(d.block_tokens) + ": nothing to pack");
  }
  fs::path out(dir);
  std::error_code ec;
  if (fs::exists(out / kIndexFileName, ec)) {
    return Status(Code::kAlreadyExists, (out / kIndexFileName).string() + " already exists");
  }
  fs::create_directories(out, ec);
  if (ec) return IoError("cannot create " + dir + ": " + ec.message());

  r.compat_id = kvsp::CompatId(d);
  r.scope_id = kvsp::ScopeId(scope_key);
  auto t0 = std::chrono::steady_clock::now();
  r.block_keys = CacheBlockKeys(cache, scope_key);
  r.keys_seconds = Seconds(t0);

  json blocks = json::array();
  t0 = std::chrono::steady_clock::now();
  for (uint64_t i = 1; i <= r.blocks; ++i) {
    const Digest& key = r.block_keys[i - 1];
    KVCS_ASSIGN_OR_RETURN(Bytes c, EncodeBlockContainer(cache, i, r.compat_id, key, codec));
    std::string name = ToHex(key) + std::string(kContainerSuffix);
    KVCS_RETURN_IF_ERROR(WriteFileAtomic(out / name, c));
    if (want_section_digests) {
      KVCS_ASSIGN_OR_RETURN(kvsp::ContainerView view, kvsp::ParseContainerHeader(c));
      auto& per_layer = r.section_digests.emplace_back();
      for (uint32_t l = 0; l < d.layers; ++l) {
        KVCS_ASSIGN_OR_RETURN(kvsp::LayerSections sec, kvsp::LayerBytes(view, c, l));
        per_layer.emplace_back(Sha256::Hash(sec.k), Sha256::Hash(sec.v));
      }
    }
    r.container_bytes += c.size();
    r.raw_bytes += d.layers * (kvsp::KSectionBytes(d) + kvsp::VSectionBytes(d));
    blocks.push_back(
        {{"index", i}, {"block_key", ToHex(key)}, {"file", name}, {"bytes", c.size()}});
    if (progress) progress(i, r.blocks);
  }
  r.pack_seconds = Seconds(t0);

  json index;
  index["kvcs_pack"] = 1;
  index["descriptor"] = json::parse(kvsp::CanonicalJson(d));
  index["compat_id"] = ToHex(r.compat_id);
  index["scope"] = public_scope ? "public" : "private";
  index["scope_id"] = ToHex(r.scope_id);
  index["codec"] = std::string(kvsp::CodecName(codec));
  index["block_tokens"] = d.block_tokens;
  index["tokens"] = r.tokens;
  index["tail_tokens"] = r.tail_tokens;
  index["anchor"] = ToHex(r.block_keys.back());
  index["blocks"] = std::move(blocks);
  index["token_ids"] = std::vector<uint32_t>(cache.token_ids.begin(),
                                             cache.token_ids.begin() + r.blocks * d.block_tokens);
  std::string text = index.dump(1) + "\n";
  KVCS_RETURN_IF_ERROR(WriteFileAtomic(out / kIndexFileName, AsBytes(text)));
  return r;
}

Result<PackIndex> ReadPackIndex(const std::string& dir,
                                const std::optional<kvsp::ScopeKey>& scope_key) {
  fs::path in(dir);
  KVCS_ASSIGN_OR_RETURN(Bytes text, ReadFile(in / kIndexFileName, kMaxIndexBytes));
  json idx = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (idx.is_discarded() || !idx.is_object()) {
    return Bad(KE::kBadIndex, "index.json is not a JSON object");
  }
  auto field = [&](const char* name) -> const json* {
    auto it = idx.find(name);
    return it == idx.end() ? nullptr : &*it;
  };
  for (const char* f : {"kvcs_pack", "descriptor", "compat_id", "scope", "scope_id", "blocks",
                        "token_ids", "tail_tokens"}) {
    if (!field(f)) return Bad(KE::kBadIndex, std::string("index.json lacks \"") + f + "\"");
  }
  if (*field("kvcs_pack") != 1) return Bad(KE::kBadIndex, "index.json: kvcs_pack is not 1");
  auto d = kvsp::DescriptorFromJson(*field("descriptor"));
  if (!d.ok()) return Bad(KE::kBadIndex, "index.json descriptor: " + d.status().message());
  PackIndex r;
  r.descriptor = *d;
  r.compat_id = kvsp::CompatId(*d);
  KVCS_ASSIGN_OR_RETURN(Digest compat, HexDigest(*field("compat_id"), "compat_id"));
  if (compat != r.compat_id) {
    return Bad(KE::kBadIndex,
               "index.json: compat_id is not the descriptor's (" + ToHex(r.compat_id) + ")");
  }
  KVCS_ASSIGN_OR_RETURN(Digest scope_id, HexDigest(*field("scope_id"), "scope_id"));
  const json& blocks = *field("blocks");
  const json& ids = *field("token_ids");
  if (!blocks.is_array() || blocks.empty()) {
    return Bad(KE::kBadIndex, "index.json: blocks is not a non-empty array");
  }
  if (!field("tail_tokens")->is_number_unsigned()) {
    return Bad(KE::kBadIndex, "index.json: tail_tokens is not a count");
  }
  r.tail_tokens_not_packed = field("tail_tokens")->get<uint64_t>();
  r.scope_id = scope_id;
  const uint64_t n_tokens = uint64_t(blocks.size()) * d->block_tokens;
  if (n_tokens > kMaxCacheTokens || !ids.is_array() || ids.size() != n_tokens) {
    return Bad(KE::kBadIndex, "index.json: token_ids must hold blocks x block_tokens = " +
                                  std::to_string(n_tokens) + " ids (at most " +
                                  std::to_string(kMaxCacheTokens) + ")");
  }
  std::vector<uint32_t> tokens;
  tokens.reserve(n_tokens);
  for (auto& t : ids) {
    if (!t.is_number_unsigned() || t.get<uint64_t>() > UINT32_MAX) {
      return Bad(KE::kBadIndex, "index.json: token_ids holds a value outside 0..4294967295");
    }
    tokens.push_back(uint32_t(t.get<uint64_t>()));
  }
  std::vector<Digest> keys;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const json& b = blocks[i];
    std::string where = "index.json blocks[" + std::to_string(i) + "]";
    if (!b.is_object() || !b.contains("index") || !b.contains("block_key") || !b.contains("file")) {
      return Bad(KE::kBadIndex, where + " needs index, block_key and file");
    }
    if (b["index"] != i + 1)
      return Bad(KE::kBadIndex, where + ": index is not " + std::to_string(i + 1));
    KVCS_ASSIGN_OR_RETURN(Digest key, HexDigest(b["block_key"], where + ".block_key"));
    // The file name is derived, never taken from the index (no path traversal).
    if (b["file"] != ToHex(key) + std::string(kContainerSuffix)) {
      return Bad(KE::kBadIndex, where + ": file is not <block_key>.kvsp");
    }
    keys.push_back(key);
  }
  std::string scope = field("scope")->is_string() ? field("scope")->get<std::string>() : "";
  std::optional<kvsp::ScopeKey> sk;
  if (scope == "public") {
    r.public_scope = true;
    sk = kvsp::PublicScopeKey();
  } else if (scope == "private") {
    sk = scope_key;
  } else {
    return Bad(KE::kBadIndex, "index.json: scope is neither \"public\" nor \"private\"");
  }
  if (sk) {
    if (kvsp::ScopeId(*sk) != scope_id) {
      return Bad(KE::kKeyChainMismatch, scope == "public"
                                            ? "index.json: scope_id is not the public scope's"
                                            : "the scope key does not match the index's scope_id");
    }
    Digest chain = kvsp::ChainKey(*sk, r.compat_id);
    std::vector<Digest> derived = kvsp::BlockKeys(chain, d->block_tokens, tokens);
    for (size_t i = 0; i < keys.size(); ++i) {
      if (derived[i] != keys[i]) {
        return Bad(KE::kKeyChainMismatch,
                   "block " + std::to_string(i + 1) + ": the Block Key computed from token_ids (" +
                       ToHex(derived[i]) + ") differs from the index's (" + ToHex(keys[i]) + ")");
      }
    }
    r.keys_rederived = true;
  }
  r.token_ids = std::move(tokens);
  r.block_keys = std::move(keys);
  return r;
}

Result<UnpackReport> UnpackDirectory(const std::string& dir, const std::string& out_path,
                                     const std::optional<kvsp::ScopeKey>& scope_key,
                                     const Progress& progress) {
  KVCS_ASSIGN_OR_RETURN(PackIndex idx, ReadPackIndex(dir, scope_key));
  UnpackReport r;
  r.compat_id = idx.compat_id;
  r.blocks = idx.block_keys.size();
  r.tokens = idx.token_ids.size();
  r.tail_tokens_not_packed = idx.tail_tokens_not_packed;
  r.keys_rederived = idx.keys_rederived;
  KVCS_ASSIGN_OR_RETURN(KvCacheAssembler a,
                        KvCacheAssembler::Create(out_path, idx.descriptor, idx.token_ids));
  KVCS_RETURN_IF_ERROR(ForEachPackedContainer(
      dir, idx,
      [&](uint64_t block, ByteSpan c) { return a.AddBlock(block, c, idx.block_keys[block - 1]); },
      progress, &r.container_bytes));
  KVCS_RETURN_IF_ERROR(a.Finish());
  return r;
}

Result<PackedKvCache> PackedKvCache::Load(const std::string& dir,
                                          const std::optional<kvsp::ScopeKey>& scope_key,
                                          const Progress& progress) {
  PackedKvCache c;
  KVCS_ASSIGN_OR_RETURN(c.index_, ReadPackIndex(dir, scope_key));
  const kvsp::Descriptor& d = c.index_.descriptor;
  auto dtype = SafetensorsDtypeFor(d.kv_dtype);
  if (!dtype) return Bad(KE::kBadDescriptor, "kv_dtype " + d.kv_dtype + " unknown");
  const uint64_t tokens = c.index_.token_ids.size();
  const bool mla = IsMla(d);
  // Each factor is bounded on its own (tokens by kMaxCacheTokens, a section by the descriptor's
  // limits), not their product: a hostile index must not wrap the total past the bound, so the
  // whole cache's bytes are checked a factor at a time.
  uint64_t total = uint64_t{d.layers} * (mla ? 1 : 2);
  for (uint64_t f :
       {tokens, uint64_t{d.kv_heads}, uint64_t{d.head_dim}, uint64_t{DtypeSize(*dtype)}}) {
    if (f != 0 && total > kMaxPackedCacheBytesInMemory / f) {
      return ResourceExhausted(dir + " holds more than " +
                               std::to_string(kMaxPackedCacheBytesInMemory) +
                               " bytes of K/V, the limit for a cache read into memory; kvcs "
                               "unpack it to safetensors and use that file");
    }
    total *= f;
  }
  const uint64_t tensor_bytes = tokens * d.kv_heads * d.head_dim * DtypeSize(*dtype);
  c.k_.assign(d.layers, Bytes(tensor_bytes));
  c.v_.assign(d.layers, mla ? Bytes() : Bytes(tensor_bytes));
  KVCS_RETURN_IF_ERROR(ForEachPackedContainer(
      dir, c.index_,
      [&](uint64_t block, ByteSpan container) {
        return DecodeBlock(d, c.index_.compat_id, block, container, c.index_.block_keys[block - 1],
                           [&](uint32_t l, bool v, ByteSpan raw) {
                             Bytes& t = v ? c.v_[l] : c.k_[l];
                             const uint64_t at = (block - 1) * raw.size();
                             if (at + raw.size() > t.size()) {
                               return Status(Code::kInternal, "section outside the layer");
                             }
                             std::memcpy(t.data() + at, raw.data(), raw.size());
                             return Status::Ok();
                           });
      },
      progress, &c.container_bytes_));
  c.view_.descriptor = d;
  c.view_.token_ids = c.index_.token_ids;
  for (uint32_t l = 0; l < d.layers; ++l) {
    c.view_.k.push_back(c.k_[l]);
    c.view_.v.push_back(mla ? ByteSpan{} : ByteSpan(c.v_[l]));
  }
  return c;
}

}  // namespace kvcs::tensorio
