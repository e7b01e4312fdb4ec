// Where KV blocks live in the store (docs/protocols/objectcache-aggregated.md §2).
//
// A block is one KVSP container (KVSP v1 as defined by the project, shared/specs/kvsp.md §5)
// holding all its layers, stored as an ordinary S3 object at a predictable key in one bucket:
//
//   kvsp/<scope_id hex>/<compat_id hex>/<block_key hex>.<codec name>
//
// so any S3 client can GET a whole block, and layer l is one byte range computed from the
// container's header and layer table (kvsp::ContainerView::Find(l)->both()).
// A prefix record names the chain of a prefix by its anchor (the last Block Key):
//
//   kvsp/<scope_id hex>/<compat_id hex>/prefix/<anchor_key hex>   (JSON, see PrefixRecord)
//
// written by an aggregated PUT with the prefix flag (or by anyone, with a plain PUT).
// Pure functions except ReadContainerView (one or two reads through an ObjectReader).
// Thread-safe.
#ifndef KVCS_OBJCACHE_BLOCK_LAYOUT_H_
#define KVCS_OBJCACHE_BLOCK_LAYOUT_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/crypto.h"
#include "common/status.h"
#include "kvsp/container.h"
#include "store/object_store.h"

namespace kvcs::objcache {

// The bucket the KVSP endpoints read and the demo writes; any bucket works for aggregated
// requests (they name it in the path).
inline constexpr char kDefaultKvBucket[] = "kvcache";
// Content-Type of a stored block (and of one served by the KVSP endpoints): one KVSP container.
inline constexpr char kContainerContentType[] = "application/vnd.kvsp.container";
// A prefix record lists at most this many keys (the aggregated request's block bound).
inline constexpr size_t kMaxPrefixRecordKeys = 16384;
// Prefix records are ~67 bytes per key.
inline constexpr size_t kMaxPrefixRecordBytes = 2 << 20;
// First read of a container: header + table of a 32-layer container is 92 + 32·52 = 1,756 bytes;
// 4 KiB covers up to 77 layers in one read (a second read fetches the rest).
inline constexpr size_t kContainerProbeBytes = 4096;

std::string BlockObjectKey(const Digest& scope_id, const Digest& compat_id, const Digest& block_key,
                           std::string_view codec_name);
// "kvsp/<scope>/<compat>/<block_key>." — lists the codecs held for a block.
std::string BlockObjectKeyPrefix(const Digest& scope_id, const Digest& compat_id,
                                 const Digest& block_key);
// The parts of a block object key, the inverse of BlockObjectKey: nullopt for any other key
// (a prefix record, a codec name not in the registry, uppercase hex, extra path parts).
struct BlockObjectName {
  Digest scope_id{};
  Digest compat_id{};
  Digest block_key{};
  kvsp::Codec codec = kvsp::Codec::kRaw;
};
std::optional<BlockObjectName> ParseBlockObjectKey(std::string_view key);
std::string PrefixRecordKey(const Digest& scope_id, const Digest& compat_id,
                            const Digest& anchor_key);

// {"kvsp_prefix":1,"compat_id":"..","anchor_key":"..","block_keys":["..",...]} with
// block_keys = K_1..K_n in order and anchor_key == K_n.
struct PrefixRecord {
  Digest compat_id{};
  Digest anchor_key{};
  std::vector<Digest> block_keys;
};
std::string EncodePrefixRecord(const PrefixRecord& r);
Result<PrefixRecord> ParsePrefixRecord(std::string_view json);

// Reads and parses the header and layer table of a stored container (no digest checks).
// Fails with kCorruption if the object is not a well-formed container prefix or if its declared
// total size differs from the object size.
Result<kvsp::ContainerView> ReadContainerView(const store::ObjectReader& reader);
// Parses a view from the first bytes of an object (probe), or says how many bytes are needed.
// Returns the view, or kNeedMoreData with *need set to the header+table size.
Result<kvsp::ContainerView> ParseViewFromProbe(ByteSpan probe, uint64_t object_size,
                                               uint64_t* need);

}  // namespace kvcs::objcache

#endif  // KVCS_OBJCACHE_BLOCK_LAYOUT_H_
