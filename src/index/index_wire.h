// The JSON messages of the KVSP Index Service (KVSP v1 as defined by the project, spec §7):
// strict parsing and canonical serialization of every request and response.
//
//   POST /kvsp/v1/lookup            LookupRequest   -> LookupResponse
//   GET  /kvsp/v1/anchors/{c}/{a}?scope_id=…         -> AnchorsResponse
//   POST /kvsp/v1/replicas          RegisterRequest -> 204
//   POST /kvsp/v1/replicas/withdraw WithdrawRequest -> 204
//   any error                       ErrorBody {"error": name, "message": text}
//
// Strict means: one JSON object of exactly the listed members (unknown members, duplicate
// members, nulls, floats and wrong types are refused), identifiers are exactly 64 lowercase hex
// characters, arrays and strings are bounded by the named constants below, and the input is at
// most kMaxRequestBytes. Every failure is Code::kInvalidArgument (or kResourceExhausted for a
// bound) with an IndexError detail; HttpStatusFor maps any Status to the §7 status code.
//
// Pure functions (no I/O, no Asio); thread-safe.
#ifndef KVCS_INDEX_INDEX_WIRE_H_
#define KVCS_INDEX_INDEX_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/crypto.h"
#include "common/status.h"
#include "index/replica.h"

namespace kvcs::index {

// Keys in one lookup, register or withdraw: 4,096 blocks are a 64 Ki-token prompt at B = 16
// (256 Ki tokens at B = 64). It bounds one request's work and response; longer prompts ask in
// chunks.
inline constexpr size_t kMaxKeysPerRequest = 4096;
// A request of kMaxKeysPerRequest keys is ~280 KB of hex; 512 KiB leaves room for the rest.
inline constexpr size_t kMaxRequestBytes = 512 * 1024;
// A response: a lookup of kMaxKeysPerRequest keys with kMaxReplicasPerKey replicas of
// kMaxHolderBytes holders is ~45 MB of JSON; the usual 4 replicas of short holders ~1 MB per
// 4,096 keys, above kMaxRequestBytes.
inline constexpr size_t kMaxResponseBytes = size_t{64} << 20;
// Replicas returned per key: a consumer uses one and keeps a few alternates; 16 bounds the
// response at 4,096 keys to a few MB.
inline constexpr uint32_t kMaxReplicasPerKey = 16;
// §7's example value, used when a lookup omits max_replicas.
inline constexpr uint32_t kDefaultMaxReplicas = 4;
// The registry has 7 codecs; a holder lists each at most once.
inline constexpr size_t kMaxCodecs = 8;
// A holder URI names a host and a path prefix or a full MOQT namespace (5 fields, ~200 hex
// characters): 512 bytes is ample and bounds what every record stores.
inline constexpr size_t kMaxHolderBytes = 512;
// Container layer numbers are u16 (§5): a range lies within 0..65535.
inline constexpr uint32_t kMaxLayerEnd = 65536;
// A lease lasts at most a day: holders renew; a crashed holder disappears within its lease.
inline constexpr uint64_t kMaxTtlMs = 24ull * 3600 * 1000;
// Nesting of the deepest valid message (response: object > entries > entry > replicas > replica
// > codecs) plus one; deeper input is refused while parsing.
inline constexpr int kMaxJsonDepth = 7;

// Typed detail of an Index Service Status (Status::Is(IndexError::k…)).
enum class IndexError {
  kNone = 0,
  kTooLarge,       // input above kMaxRequestBytes, or a string above its bound   (400)
  kSyntax,         // not JSON, trailing garbage, or nested deeper than kMaxJsonDepth (400)
  kNotObject,      // a value that must be an object is not                       (400)
  kDuplicateKey,   // the same member twice in one object                         (400)
  kUnknownField,   // a member name the message does not have                     (400)
  kMissingField,   // a required member is absent                                 (400)
  kWrongType,      // e.g. a string where an integer is required, null, a float  (400)
  kBadHex,         // not exactly 64 lowercase hex characters                     (400)
  kTooMany,        // an array above its bound (keys, codecs, replicas)          (400)
  kEmpty,          // an array that must not be empty is                          (400)
  kOutOfRange,     // an integer outside its range (ttl_ms, layers, max_replicas) (400)
  kBadHolder,      // holder is not an http(s):// or moqt:// URI of allowed bytes (400)
  kBadTier,        // tier is not a known name                                    (400)
  kBadCodec,       // a codec name not in the KVSP registry, or listed twice      (400)
  kForbidden,      // the bearer token does not grant this action on this scope   (403)
  kUnknownCompat,  // no live record under this compat_id in this scope           (404)
  kHolderFull,     // a holder has kMaxRecordsPerHolder records in the scope      (400)
  kKeyFull,        // a key has kMaxHoldersPerKey holders                         (400)
  kStoreFailed,    // the record store failed (disk, Redis)                       (503)
};
std::string_view IndexErrorName(IndexError e);

// Builds a Status with an IndexError detail (Code follows the error: kForbidden is
// kPermissionDenied, kUnknownCompat kNotFound, kStoreFailed kUnavailable, bounds
// kResourceExhausted, the rest kInvalidArgument).
Status IndexStatus(IndexError e, std::string message);

// The §7 HTTP status for a Status: 200 for OK, 400 malformed, 403 not authorized, 404 unknown
// compat_id, 503 when the store is unavailable, 500 otherwise.
int HttpStatusFor(const Status& s);

struct LookupRequest {
  Digest compat_id{};
  Digest scope_id{};
  std::vector<Digest> block_keys;               // 1..kMaxKeysPerRequest, in prompt order
  uint32_t max_replicas = kDefaultMaxReplicas;  // 1..kMaxReplicasPerKey
  bool operator==(const LookupRequest&) const = default;
};

struct LookupEntry {
  Digest block_key{};
  std::vector<Replica> replicas;  // 1..max_replicas, in ReplicaBefore order
  bool operator==(const LookupEntry&) const = default;
};

// entries holds one entry per matched key (entries.size() == matched), in request order.
struct LookupResponse {
  uint32_t matched = 0;
  std::vector<LookupEntry> entries;
  bool operator==(const LookupResponse&) const = default;
};

struct AnchorsRequest {
  Digest compat_id{};
  Digest anchor_key{};
  Digest scope_id{};
  bool operator==(const AnchorsRequest&) const = default;
};

struct AnchorsResponse {
  std::vector<Replica> replicas;  // holders of the whole prefix ending at the anchor
  bool operator==(const AnchorsResponse&) const = default;
};

struct RegisterRequest {
  Digest compat_id{};
  Digest scope_id{};
  ReplicaInfo replica;               // holder, tier, codecs (1..kMaxCodecs), layer range
  std::vector<Digest> block_keys;    // 1..kMaxKeysPerRequest
  std::optional<Digest> anchor_key;  // the holder also has the whole prefix ending here
  uint64_t ttl_ms = 0;               // 1..kMaxTtlMs
  bool operator==(const RegisterRequest&) const = default;
};

struct WithdrawRequest {
  Digest compat_id{};
  Digest scope_id{};
  std::string holder;
  std::vector<Digest> block_keys;  // 1..kMaxKeysPerRequest
  bool operator==(const WithdrawRequest&) const = default;
};

struct ErrorBody {
  std::string error;  // IndexErrorName
  std::string message;
  bool operator==(const ErrorBody&) const = default;
};

Result<LookupRequest> ParseLookupRequest(std::string_view json);
Result<RegisterRequest> ParseRegisterRequest(std::string_view json);
Result<WithdrawRequest> ParseWithdrawRequest(std::string_view json);
// The anchors endpoint's path segments and scope_id query value, each 64 lowercase hex.
Result<AnchorsRequest> ParseAnchorsRequest(std::string_view compat_hex, std::string_view anchor_hex,
                                           std::string_view scope_hex);
// Responses, for clients (a consumer, kvcs lookup) and round-trip tests.
Result<LookupResponse> ParseLookupResponse(std::string_view json);
Result<AnchorsResponse> ParseAnchorsResponse(std::string_view json);
Result<ErrorBody> ParseErrorBody(std::string_view json);

// Compact JSON, members in a fixed order, hex lowercase; max_replicas and anchor_key are written
// only when they differ from the default / are present.
std::string ToJson(const LookupRequest& r);
std::string ToJson(const LookupResponse& r);
std::string ToJson(const AnchorsResponse& r);
std::string ToJson(const RegisterRequest& r);
std::string ToJson(const WithdrawRequest& r);
std::string ToJson(const ErrorBody& e);
// The error body for a failed Status (its IndexError name, or the Code name, and its message).
std::string ErrorJson(const Status& s);
// The anchors endpoint path for a request, "/kvsp/v1/anchors/<c>/<a>?scope_id=<s>".
std::string AnchorsPath(const AnchorsRequest& r);

// Checks a holder URI: "http://", "https://" or "moqt://" followed by 1 or more bytes of
// printable ASCII other than space, quote, backslash, '<', '>'; at most kMaxHolderBytes.
Status CheckHolder(std::string_view holder);
// Checks a registration built in code against the parser's rules.
Status ValidateReplicaInfo(const ReplicaInfo& r);

}  // namespace kvcs::index

#endif  // KVCS_INDEX_INDEX_WIRE_H_
