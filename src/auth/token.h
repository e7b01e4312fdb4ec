// The signed bearer token of kvcs services (the KVSP Index Service, the MOQT relay): a compact
// JWS (RFC 7515) in JWT form (RFC 7519), signed ES256 (ECDSA P-256 + SHA-256, JWA r||s) with the
// signer's key named by the "kid" header. libjwt (Debian's 1.10) signs and checks signatures;
// this file checks everything around them, strictly (docs/protocols/kvsp-index.md §Tokens).
//
//   header  {"alg":"ES256","kid":"<kid>","typ":"JWT"}          (typ optional; nothing else)
//   claims  {"sub":"<who>","exp":<s>,"nbf":<s>?,"iat":<s>?,"iss":"…"?,"jti":"…"?,
//            "grants":[{"actions":["lookup","register","publish","subscribe"],
//                       "prefixes":[["kvcs-1","<scope_id hex>"], …]}, …]}
//
// A grant allows each of its actions on every namespace that starts with one of its prefixes,
// field by field (MOQT namespace prefix matching); namespaces are written as text fields: the tag
// "kvcs-1", then lowercase hex of each binary field. Only ES256 is accepted: "none", HS*, RS*
// and every other alg are refused before any key is used (no alg confusion); libjwt 1.10 has no
// EdDSA. Times are NumericDate seconds; the verifier takes `now_s` and an optional leeway.
//
// Value types and an immutable Keyring/Verifier: thread-safe after construction.
#ifndef KVCS_AUTH_TOKEN_H_
#define KVCS_AUTH_TOKEN_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/crypto.h"
#include "common/status.h"

namespace kvcs::auth {

// A token is a few hundred bytes; 8 KiB (a common HTTP header line limit) bounds the work a
// peer's token can cause.
inline constexpr size_t kMaxTokenBytes = 8 * 1024;
inline constexpr size_t kMaxKidBytes = 256;
inline constexpr size_t kMaxSubjectBytes = 256;
// Grants and prefixes per token: a service lists its scopes, a tenant a few.
inline constexpr size_t kMaxGrants = 16;
inline constexpr size_t kMaxPrefixesPerGrant = 64;
// MOQT allows up to 32 namespace fields.
inline constexpr size_t kMaxPrefixFields = 32;
// A text field: the tag or the hex of a 32-byte id is 64 characters; 128 leaves room.
inline constexpr size_t kMaxFieldBytes = 128;

enum class Action : uint8_t { kLookup, kRegister, kPublish, kSubscribe };
std::string_view ActionName(Action a);
Result<Action> ActionFromName(std::string_view name);

// A namespace (or a prefix of one) as text fields.
using Namespace = std::vector<std::string>;
// ("kvcs-1", hex(scope_id)): the namespace of a scope, the unit of authorization.
Namespace ScopeNamespace(const Digest& scope_id);

struct Grant {
  std::vector<Action> actions;      // 1..4, distinct
  std::vector<Namespace> prefixes;  // 1..kMaxPrefixesPerGrant, each 1..kMaxPrefixFields fields
  bool operator==(const Grant&) const = default;
};

struct Claims {
  std::string sub;  // who holds the token (for logs): 1..kMaxSubjectBytes
  int64_t exp = 0;  // expiry, seconds since the Unix epoch
  std::optional<int64_t> nbf, iat;
  std::optional<std::string> iss, jti;  // carried, not checked
  std::vector<Grant> grants;            // 1..kMaxGrants
  bool operator==(const Claims&) const = default;

  // True if some grant has `action` and a prefix of `ns`.
  bool Allows(Action action, const Namespace& ns) const;
};

// Typed detail of a token Status (Status::Is(TokenError::k…)); values 300+.
enum class TokenError {
  kNone = 0,
  kMalformed = 300,  // not three base64url parts of strict JSON, or a header member we refuse
  kTooLarge,         // above kMaxTokenBytes
  kAlgNotAllowed,    // alg other than ES256 (none, HS256, RS256, EdDSA, …)
  kUnknownKid,       // no key with this kid in the keyring
  kBadSignature,     // the signature does not verify with the kid's key
  kExpired,          // now >= exp + leeway
  kNotYetValid,      // now + leeway < nbf
  kBadClaims,        // claims missing, of the wrong type, out of bounds, or unknown
  kBadKey,           // a PEM that is not an EC P-256 key
};
std::string_view TokenErrorName(TokenError e);

// Strict parse and canonical JSON of the claims (also used by Mint).
Result<Claims> ParseClaims(std::string_view json);
std::string ClaimsJson(const Claims& c);

// Signs `claims` with an EC P-256 private key (PEM; text before the PEM block is skipped).
// Errors: kBadKey, kBadClaims (claims that ParseClaims would refuse), kInternal.
Result<std::string> Mint(const Claims& claims, std::string_view kid, std::string_view private_pem);

// Public keys by kid.
class Keyring {
 public:
  // Errors: kBadKey (not an EC P-256 public key PEM, or a bad kid); kAlreadyExists.
  Status Add(std::string kid, std::string_view public_pem);
  const std::string* Find(std::string_view kid) const;  // the key's SPKI PEM
  size_t size() const { return keys_.size(); }

 private:
  std::map<std::string, std::string, std::less<>> keys_;
};

class Verifier {
 public:
  explicit Verifier(Keyring keys, int64_t leeway_s = 0)
      : keys_(std::move(keys)), leeway_s_(leeway_s) {}
  // The claims of a valid token at `now_s`. Errors: Code::kPermissionDenied (or
  // kInvalidArgument for kMalformed/kTooLarge/kBadClaims) with a TokenError detail.
  Result<Claims> Verify(std::string_view token, int64_t now_s) const;

 private:
  Keyring keys_;
  int64_t leeway_s_;
};

// Base64url without padding (RFC 7515 §2), exposed for tests.
std::string Base64UrlEncode(std::string_view bytes);
Result<std::string> Base64UrlDecode(std::string_view text);

}  // namespace kvcs::auth

#endif  // KVCS_AUTH_TOKEN_H_
