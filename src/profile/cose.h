// COSE_Sign1 (RFC 9052 §4.2) for "manifest.cose" (KVCS profile §3.6): the manifest JSON bytes
// as the payload, signed with the producer key using ES256 (ECDSA P-256 + SHA-256, signature as
// raw r||s, 64 bytes) or EdDSA (Ed25519), with "alg" (1) and "kid" (4) in the PROTECTED header.
//
//   COSE_Sign1 = #6.18([ protected: bstr .cbor {1: alg, 4: kid}, unprotected: {},
//                        payload: bstr, signature: bstr ])
//   Sig_structure = ["Signature1", protected, external_aad = h'', payload]
//
// Output is tagged (18); input may be tagged or untagged. Verification takes a KeySet (kid ->
// public key) and fails with a typed CoseError for: malformed structure, unknown kid, an alg that
// is not the key's, a bad signature. CBOR-level failures keep their CborError detail (1..99);
// CoseError values are 100+. Crypto is OpenSSL 3 (EVP_PKEY, EVP_DigestSign/Verify).
//
// SigningKey/VerifyKey share an immutable EVP_PKEY by reference count (copies are cheap). A KeySet
// is immutable after construction and safe to share across threads for Verify.
#ifndef KVCS_PROFILE_COSE_H_
#define KVCS_PROFILE_COSE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "common/bytes.h"
#include "common/status.h"
#include "profile/manifest.h"

typedef struct evp_pkey_st EVP_PKEY;

namespace kvcs::profile {

// COSE algorithm identifiers (RFC 9053).
enum class CoseAlg : int64_t { kES256 = -7, kEdDSA = -8 };
std::string_view CoseAlgName(CoseAlg a);  // "ES256", "EdDSA"

// A kid names a key within a scope; 256 bytes is far above any sensible identifier (a
// fingerprint is 32) and bounds what a peer can make us compare.
inline constexpr size_t kMaxKidSize = 256;
// A signed manifest is the manifest plus a few hundred bytes of COSE framing and signature.
inline constexpr size_t kMaxCoseSize = kMaxManifestBytes + 4096;
// COSE_Sign1 nests an array and a map; header parameter values may add a little. Deeper input is
// hostile.
inline constexpr size_t kMaxCoseDepth = 8;
inline constexpr uint64_t kCoseSign1Tag = 18;

enum class CoseError {
  kNone = 0,
  kTooLarge = 100,     // input above kMaxCoseSize
  kNotSign1,           // not a 4-element array (after an optional tag 18), or another tag
  kBadProtected,       // protected header is not a bstr holding a CBOR map (or empty)
  kBadUnprotected,     // unprotected header is not a map
  kMissingAlg,         // no alg in the protected header
  kUnsupportedAlg,     // alg other than ES256 / EdDSA
  kMissingKid,         // no kid (a non-empty bstr) in the protected header
  kKidTooLong,         // kid above kMaxKidSize
  kNotProtected,       // alg or kid (also) in the unprotected header
  kCriticalHeader,     // "crit" present: we understand no critical extensions
  kDetachedPayload,    // payload is nil or not a bstr
  kBadSignatureShape,  // signature not a 64-byte bstr
  kUnknownKid,         // no key with this kid in the key set
  kAlgMismatch,        // alg differs from the key's algorithm
  kBadSignature,       // the signature does not verify
  kBadKey,             // a PEM that is not a P-256 or Ed25519 key, or an unusable key
};
std::string_view CoseErrorName(CoseError e);

class VerifyKey;

// A producer's private key and its kid.
class SigningKey {
 public:
  static Result<SigningKey> Generate(CoseAlg alg, Bytes kid);
  // PKCS#8 or traditional PEM private key; the algorithm follows the key type.
  static Result<SigningKey> FromPrivatePem(std::string_view pem, Bytes kid);
  // Ed25519 from its 32-byte seed (deterministic keys for tests and fixtures).
  static Result<SigningKey> FromEd25519Seed(ByteSpan seed, Bytes kid);

  CoseAlg alg() const { return alg_; }
  const Bytes& kid() const { return kid_; }
  std::string PrivatePem() const;  // PKCS#8
  std::string PublicPem() const;   // SubjectPublicKeyInfo
  VerifyKey Public() const;

 private:
  SigningKey(std::shared_ptr<EVP_PKEY> key, CoseAlg alg, Bytes kid)
      : key_(std::move(key)), alg_(alg), kid_(std::move(kid)) {}
  friend Result<Bytes> SignCoseSign1(ByteSpan payload, const SigningKey& key);
  std::shared_ptr<EVP_PKEY> key_;
  CoseAlg alg_;
  Bytes kid_;
};

// A producer's public key and its kid.
class VerifyKey {
 public:
  static Result<VerifyKey> FromPublicPem(std::string_view pem, Bytes kid);

  CoseAlg alg() const { return alg_; }
  const Bytes& kid() const { return kid_; }
  EVP_PKEY* pkey() const { return key_.get(); }

 private:
  friend class SigningKey;
  VerifyKey(std::shared_ptr<EVP_PKEY> key, CoseAlg alg, Bytes kid)
      : key_(std::move(key)), alg_(alg), kid_(std::move(kid)) {}
  std::shared_ptr<EVP_PKEY> key_;
  CoseAlg alg_;
  Bytes kid_;
};

// The producer keys of a scope, by kid.
class KeySet {
 public:
  // Errors: kAlreadyExists for a second key with the same kid.
  Status Add(VerifyKey key);
  const VerifyKey* Find(ByteSpan kid) const;
  size_t size() const { return keys_.size(); }

 private:
  std::map<std::string, VerifyKey> keys_;  // kid bytes as a string
};

// The tagged COSE_Sign1 of `payload`. Errors: kResourceExhausted (kTooLarge) for a payload above
// kMaxManifestBytes; kInternal if OpenSSL fails.
Result<Bytes> SignCoseSign1(ByteSpan payload, const SigningKey& key);

// A structurally valid COSE_Sign1 (not yet verified); views into the input.
struct CoseSign1 {
  ByteSpan protected_header;  // the serialized protected map, as signed
  CoseAlg alg = CoseAlg::kEdDSA;
  ByteSpan kid;
  ByteSpan payload;
  ByteSpan signature;
};
// Structure only (for tools and the fuzzer); does not verify the signature.
Result<CoseSign1> DecodeCoseSign1(ByteSpan in);

// Decodes and verifies; on success returns the decoded message (payload is a view into `in`).
Result<CoseSign1> VerifyCoseSign1(ByteSpan in, const KeySet& keys);

// VerifyCoseSign1 and then ParseManifest of the payload.
Result<Manifest> VerifyManifestCose(ByteSpan in, const KeySet& keys);
// ManifestToJson and then SignCoseSign1.
Result<Bytes> SignManifestCose(const Manifest& m, const SigningKey& key);

}  // namespace kvcs::profile

#endif  // KVCS_PROFILE_COSE_H_
