// The KVCS Track Namespace (KVCS profile §3.1): the five MOQT Track Namespace Fields that name one
// publication of one KV cache, ("kvcs-1", scope_id, compat_id, anchor_key, pub_id).
//
// Fields 1..4 are raw octets (not hex). Fields 0..3 identify content and can be computed by any
// consumer that knows the prompt prefix, the scope key and the Compatibility Descriptor (KVSP v1
// as defined by the project); field 4 is a random Publication ID chosen per production.
//
// BuildNamespace/ParseNamespace convert between the typed struct and the wire tuple. Parsing is
// strict: exactly five fields, field 0 exactly "kvcs-1", every other field exactly its size; any
// other input is a typed NamespaceError. Value types; thread-compatible.
#ifndef KVCS_PROFILE_NAMESPACE_H_
#define KVCS_PROFILE_NAMESPACE_H_

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/bytes.h"
#include "common/crypto.h"
#include "common/status.h"

namespace kvcs::profile {

// Field 0, the profile tag and version.
inline constexpr std::string_view kNamespaceTag = "kvcs-1";
inline constexpr size_t kNamespaceFieldCount = 5;
inline constexpr size_t kPubIdSize = 16;  // 128 random bits: collisions are negligible
using PubId = std::array<uint8_t, kPubIdSize>;

// A MOQT Track Namespace as a list of byte strings (one per field).
using TrackNamespace = std::vector<Bytes>;

struct Namespace {
  Digest scope_id{};    // HMAC-SHA-256(scope_key, "kvsp-scope-id-v1")
  Digest compat_id{};   // SHA-256 of the canonical Compatibility Descriptor
  Digest anchor_key{};  // the Block Key of the prefix's last block
  PubId pub_id{};       // random per production of the cache
  bool operator==(const Namespace&) const = default;
};

enum class NamespaceError {
  kNone = 0,
  kWrongFieldCount = 1,  // not exactly 5 fields
  kBadTag,               // field 0 is not "kvcs-1"
  kBadScopeIdSize,       // field 1 is not 32 bytes
  kBadCompatIdSize,      // field 2 is not 32 bytes
  kBadAnchorKeySize,     // field 3 is not 32 bytes
  kBadPubIdSize,         // field 4 is not 16 bytes
  kBadHex,               // text form: a field is not lowercase or uppercase hex
};
std::string_view NamespaceErrorName(NamespaceError e);

// The five-field tuple.
TrackNamespace BuildNamespace(const Namespace& ns);

// Strict parse of a full namespace tuple. Errors: Code::kInvalidArgument with a NamespaceError
// detail.
Result<Namespace> ParseNamespace(std::span<const ByteSpan> fields);
Result<Namespace> ParseNamespace(const TrackNamespace& fields);

// ("kvcs-1", scope_id): all publications of a scope; the unit of authorization.
TrackNamespace ScopePrefix(const Digest& scope_id);
// ("kvcs-1", scope_id, compat_id, anchor_key): all publications of one token prefix; what a
// consumer sends in SUBSCRIBE_NAMESPACE (§5.1).
TrackNamespace AnchorPrefix(const Digest& scope_id, const Digest& compat_id,
                            const Digest& anchor_key);
// True if `prefix` is a field-wise prefix of `ns` (MOQT namespace prefix matching).
bool HasPrefix(const TrackNamespace& ns, const TrackNamespace& prefix);

// A fresh random Publication ID (OpenSSL RAND_bytes).
PubId NewPubId();

// "kvcs-1/<scope hex>/<compat hex>/<anchor hex>/<pub hex>", for logs and the CLI.
std::string ToString(const Namespace& ns);

// The text form of a KVCS namespace or of a prefix of it (the CLI, holder URIs): "kvcs-1", then
// each further field in hex, '/' between fields — "kvcs-1/<scope>/<compat>/<anchor>/<pub_id>",
// or 1..4 of its first fields ("kvcs-1/<scope>": every publication of a scope). Strict: field 0
// exactly "kvcs-1", at most 5 fields, each further field the hex (either case) of exactly its
// size (32, 32, 32, 16 bytes). Errors: kInvalidArgument with a NamespaceError naming the field.
Result<TrackNamespace> ParseNamespaceText(std::string_view text);
// The text form of `fields` when they are a KVCS namespace or prefix as ParseNamespaceText
// accepts (nullopt otherwise): ParseNamespaceText(*NamespaceText(f)) == f.
std::optional<std::string> NamespaceText(const TrackNamespace& fields);

}  // namespace kvcs::profile

#endif  // KVCS_PROFILE_NAMESPACE_H_
