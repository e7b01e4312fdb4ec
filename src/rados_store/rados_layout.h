// How the RADOS backend lays a bucket store out in one pool (and namespace): the names of its
// RADOS objects, the shard a key's index entry lives in, and the JSON records kept in omap values
// and xattrs. docs/protocols/rados-backend.md is the specification; this file is its code. Pure
// (except NewId, which draws random bytes); thread-safe.
//
//   kvcs.buckets                     omap: bucket name -> BucketRecord (the bucket registry)
//   b.<bucket id>.idx.<shard>        omap: key -> ObjectRecord (the bucket index, `shards` objects;
//                                    a key lives in shard ShardOf(key, shards))
//   b.<bucket id>.mpu                omap: "u/<upload id>" -> UploadRecord,
//                                          "p/<upload id>/<part, 5 digits>" -> PartRecord
//   b.<bucket id>.d.<version>.<n>    stripe n (0, 1, ...) of one written version: the bytes
//                                    [n * stripe_bytes, (n + 1) * stripe_bytes) of it; stripe 0
//                                    also carries the xattrs kvcs.key and kvcs.meta (ObjectRecord)
//
// A bucket id and a version are random (16 and 32 hex digits), never reused, so a version's
// objects are immutable once written: a reader that holds a version never sees other bytes.
#ifndef KVCS_RADOS_STORE_RADOS_LAYOUT_H_
#define KVCS_RADOS_STORE_RADOS_LAYOUT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/crypto.h"
#include "common/status.h"
#include "store/object_store.h"

namespace kvcs::rados_store {

inline constexpr char kBucketRegistryObject[] = "kvcs.buckets";
inline constexpr char kKeyXattr[] = "kvcs.key";
inline constexpr char kMetaXattr[] = "kvcs.meta";
// Index shards of a new bucket: bounds, default.
inline constexpr uint32_t kMaxIndexShards = 1024;
inline constexpr uint32_t kDefaultIndexShards = 8;

std::string IndexShardObject(std::string_view bucket_id, uint32_t shard);
std::string UploadsObject(std::string_view bucket_id);
std::string StripeObject(std::string_view bucket_id, std::string_view version, uint64_t stripe);
// A RADOS object name this layout makes, taken apart: `b.<bucket id>.<rest>`, and for a stripe
// (`b.<bucket id>.d.<version>.<n>`) its version and number. nullopt for any other name.
struct ObjectName {
  std::string bucket_id;
  bool stripe = false;
  std::string version;  // stripes only
  uint64_t stripe_index = 0;
};
std::optional<ObjectName> ParseObjectName(std::string_view oid);
// The index shard of `key`: the first four bytes of SHA-256(key), big-endian, modulo `shards`.
uint32_t ShardOf(std::string_view key, uint32_t shards);
// `bytes` random bytes in lowercase hex.
std::string NewId(size_t bytes);

struct BucketRecord {
  std::string id;
  int64_t created_ms = 0;
  std::string owner;
  uint32_t shards = kDefaultIndexShards;
  std::string acl;  // store::BucketInfo::acl (absent from the JSON when empty)
};
std::string EncodeBucket(const BucketRecord& b);
Result<BucketRecord> DecodeBucket(std::string_view text);

// A run of an object's bytes written as one version (one PUT, or one multipart part).
struct Segment {
  std::string version;
  uint64_t size = 0;
  uint64_t stripe_bytes = 0;
};
// Every stripe object of `segments`.
std::vector<std::string> StripeObjects(std::string_view bucket_id,
                                       const std::vector<Segment>& segments);

// What the index holds for a key: its metadata and where its bytes are (one segment for a PUT,
// one per part for a completed multipart upload: parts are never copied).
struct ObjectRecord {
  store::ObjectMeta meta;  // meta.key is not encoded (the omap key is the key)
  std::vector<Segment> segments;
};
std::string EncodeObject(const ObjectRecord& r);
Result<ObjectRecord> DecodeObject(std::string_view key, std::string_view text);

struct UploadRecord {
  std::string key;
  store::PutOptions options;  // the representation, user metadata and ACL only
  int64_t initiated_ms = 0;
  // Set by CompleteMultipart before it publishes: the upload is finished (its parts now belong
  // to the object) and is no longer listed, written or aborted.
  bool done = false;
};
std::string EncodeUpload(const UploadRecord& u);
Result<UploadRecord> DecodeUpload(std::string_view text);
std::string UploadKey(std::string_view upload_id);                 // "u/<id>"
std::string PartKey(std::string_view upload_id, int part_number);  // "p/<id>/00001"
std::string PartPrefix(std::string_view upload_id);                // "p/<id>/"

struct PartRecord {
  store::PartInfo info;
  store::Md5 md5{};
  std::optional<Digest> sha256;
  Segment segment;
};
std::string EncodePart(const PartRecord& p);
Result<PartRecord> DecodePart(std::string_view text);

}  // namespace kvcs::rados_store

#endif  // KVCS_RADOS_STORE_RADOS_LAYOUT_H_
