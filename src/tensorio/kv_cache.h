// KV caches in safetensors <-> KVSP containers (docs/formats/safetensors-kv.md).
//
// ReadKvCache checks a safetensors file against the KV convention (per layer `layers.{l}.k` and
// `layers.{l}.v` shaped [T][kv_heads][head_dim] in the descriptor dtype, `token_ids` [T], the
// descriptor in __metadata__["kvsp.descriptor"]) and returns views of its tensors. Cutting makes
// one KVSP container per FULL block (all layers); the tail of T mod B tokens is reported by
// tail_tokens(), never dropped silently. KvCacheAssembler writes verified containers back into a
// safetensors file, one block at a time.
//
// PackDirectory / UnpackDirectory implement the packed directory of the format doc (containers
// named by block key plus index.json); the kvcs pack/unpack commands are thin wrappers.
// PackedKvCache reads such a directory into memory, verified, for kvcs publish.
//
// KvCacheView borrows the SafetensorsView's bytes (keep the file mapped). Functions are pure apart
// from the named files they write; nothing here is shared between threads.
#ifndef KVCS_TENSORIO_KV_CACHE_H_
#define KVCS_TENSORIO_KV_CACHE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/crypto.h"
#include "common/status.h"
#include "kvsp/codec.h"
#include "kvsp/descriptor.h"
#include "kvsp/ids.h"
#include "tensorio/safetensors.h"

namespace kvcs::tensorio {

inline constexpr std::string_view kDescriptorMetadataKey = "kvsp.descriptor";
inline constexpr std::string_view kTokenIdsTensor = "token_ids";
inline constexpr std::string_view kIndexFileName = "index.json";
inline constexpr std::string_view kContainerSuffix = ".kvsp";
// index.json lists token ids and block keys: 16 Mi tokens of ~11 characters plus the keys.
inline constexpr size_t kMaxIndexBytes = size_t{256} << 20;
// A packed block's container: L layers x (K + V) sections, each at most kvsp::kMaxSectionBytes;
// 4 GiB bounds what unpack reads into memory for one file.
inline constexpr uint64_t kMaxContainerFileBytes = uint64_t{4} << 30;

enum class KvCacheError {
  kNone = 0,
  kNoDescriptor,      // __metadata__ lacks "kvsp.descriptor"
  kBadDescriptor,     // the descriptor fails KVSP parsing
  kMissingTensor,     // a layers.{l}.k / .v or token_ids tensor is absent
  kUnexpectedTensor,  // a tensor outside the convention (or .v for MLA)
  kWrongDtype,        // K/V not in the descriptor dtype, token_ids not an integer dtype
  kWrongShape,        // not [T][kv_heads][head_dim], token_ids not [T], T differs
  kTokenOutOfRange,   // a token id outside 0..2^32-1
  kNoFullBlock,       // fewer than block_tokens tokens: nothing to cut
  kBadIndex,          // index.json malformed or inconsistent
  kKeyChainMismatch,  // Block Keys recomputed from token_ids differ from the index's
};

std::string_view KvCacheErrorName(KvCacheError e);

// The safetensors dtype of a descriptor kv_dtype ("bf16" -> BF16); nullopt if unknown.
std::optional<Dtype> SafetensorsDtypeFor(std::string_view kv_dtype);

struct KvCacheView {
  kvsp::Descriptor descriptor;
  std::vector<uint32_t> token_ids;
  std::vector<ByteSpan> k, v;  // per layer, T·H·D elements; v spans are empty for MLA

  uint64_t tokens() const { return token_ids.size(); }
  uint64_t full_blocks() const { return tokens() / descriptor.block_tokens; }
  uint64_t tail_tokens() const { return tokens() % descriptor.block_tokens; }
  // The raw K/V section of block `block` (1-based, <= full_blocks()) in `layer`.
  ByteSpan KSection(uint32_t layer, uint64_t block) const;
  ByteSpan VSection(uint32_t layer, uint64_t block) const;
};

Result<KvCacheView> ReadKvCache(const SafetensorsView& file);

// Block Keys K_1..K_n of the cache's full blocks in the given scope.
std::vector<Digest> CacheBlockKeys(const KvCacheView& cache, const kvsp::ScopeKey& scope_key);

// The container of full block `block` (1-based): all layers, sections encoded with `codec`.
Result<Bytes> EncodeBlockContainer(const KvCacheView& cache, uint64_t block,
                                   const Digest& compat_id, const Digest& block_key,
                                   kvsp::Codec codec);

// Writes a cache of `token_ids.size()` tokens (a multiple of block_tokens) from verified
// containers. REQUIRES: ValidateDescriptor(descriptor).ok().
class KvCacheAssembler {
 public:
  static Result<KvCacheAssembler> Create(const std::string& path,
                                         const kvsp::Descriptor& descriptor,
                                         std::vector<uint32_t> token_ids);
  // Decodes and verifies `container` as block `block` (1-based) with the given keys (compat_id,
  // block key, block index, layers 0..L-1, digests, codec checks) and writes its sections.
  Status AddBlock(uint64_t block, ByteSpan container, const Digest& block_key);
  // Fails unless every block was added; then renames the file into place.
  Status Finish();

 private:
  KvCacheAssembler(SafetensorsWriter w) : writer_(std::move(w)) {}
  SafetensorsWriter writer_;
  kvsp::Descriptor descriptor_;
  Digest compat_id_{};
  std::vector<bool> added_;
};

struct PackReport {
  Digest compat_id{}, scope_id{};
  kvsp::Codec codec = kvsp::Codec::kRaw;
  uint64_t tokens = 0, blocks = 0, tail_tokens = 0;
  std::vector<Digest> block_keys;
  uint64_t raw_bytes = 0;        // K/V bytes packed (as in the safetensors file)
  uint64_t container_bytes = 0;  // bytes written in containers
  double keys_seconds = 0, pack_seconds = 0;
  // With want_section_digests: per block, per layer, SHA-256 of the K and of the V section as
  // carried (the Data Digests of KVCS k/v objects, for a manifest's object_digests).
  std::vector<std::vector<std::pair<Digest, Digest>>> section_digests;
};
using Progress = std::function<void(uint64_t done, uint64_t total)>;

// Writes one container per full block plus index.json into `dir` (created if absent).
Result<PackReport> PackDirectory(const KvCacheView& cache, const kvsp::ScopeKey& scope_key,
                                 bool public_scope, kvsp::Codec codec, const std::string& dir,
                                 const Progress& progress = {}, bool want_section_digests = false);

// A packed directory's index.json, checked against itself: the descriptor and its compat_id, the
// token ids of the packed blocks, each block's key and file name (derived from the key, never
// taken from the index). With the scope key (always for a public scope) the Block Keys are
// re-derived from the token ids and must match.
struct PackIndex {
  kvsp::Descriptor descriptor;
  Digest compat_id{}, scope_id{};
  bool public_scope = false;
  std::vector<uint32_t> token_ids;  // blocks x block_tokens
  std::vector<Digest> block_keys;   // K_1..K_n
  uint64_t tail_tokens_not_packed = 0;
  bool keys_rederived = false;
};
Result<PackIndex> ReadPackIndex(const std::string& dir,
                                const std::optional<kvsp::ScopeKey>& scope_key);

// The most K/V bytes PackedKvCache holds in memory: it assembles the whole cache (layer-major,
// as a safetensors file lays it out) before anything is published; beyond this, unpack to
// safetensors (kvcs unpack), which is mapped, not read. 16 GiB holds a Llama-3.1-8B cache of
// 128K tokens in bf16.
inline constexpr uint64_t kMaxPackedCacheBytesInMemory = uint64_t{16} << 30;

// A KV cache read from a packed directory into memory: every container verified (digests,
// structure, header against the index) and decoded to raw sections before view() exists.
// view() borrows this object's buffers (moving the object keeps them). What `kvcs publish`
// sends when given a directory.
class PackedKvCache {
 public:
  static Result<PackedKvCache> Load(const std::string& dir,
                                    const std::optional<kvsp::ScopeKey>& scope_key,
                                    const Progress& progress = {});
  PackedKvCache(PackedKvCache&&) noexcept = default;
  PackedKvCache& operator=(PackedKvCache&&) noexcept = default;
  PackedKvCache(const PackedKvCache&) = delete;
  PackedKvCache& operator=(const PackedKvCache&) = delete;

  const KvCacheView& view() const { return view_; }
  const PackIndex& index() const { return index_; }
  uint64_t container_bytes() const { return container_bytes_; }

 private:
  PackedKvCache() = default;
  PackIndex index_;
  std::vector<Bytes> k_, v_;  // per layer, T·H·D elements
  KvCacheView view_;
  uint64_t container_bytes_ = 0;
};

struct UnpackReport {
  Digest compat_id{};
  uint64_t blocks = 0, tokens = 0, tail_tokens_not_packed = 0;
  bool keys_rederived = false;  // Block Keys recomputed from token_ids and matched
  uint64_t container_bytes = 0;
};
// Verifies every container of `dir` and writes the cache to `out_path`. `scope_key` is needed to
// re-derive Block Keys of a private scope (public scopes are re-derived always).
Result<UnpackReport> UnpackDirectory(const std::string& dir, const std::string& out_path,
                                     const std::optional<kvsp::ScopeKey>& scope_key,
                                     const Progress& progress = {});

}  // namespace kvcs::tensorio

#endif  // KVCS_TENSORIO_KV_CACHE_H_
