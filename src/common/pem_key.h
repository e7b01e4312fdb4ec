// Reading and writing the signing keys kvcs uses (PEM, OpenSSL 3 EVP_PKEY): ECDSA P-256 (ES256)
// and Ed25519 (EdDSA). Shared by COSE manifests (profile) and bearer tokens (auth). Keys are
// immutable EVP_PKEYs shared by reference count. Thread-safe.
#ifndef KVCS_COMMON_PEM_KEY_H_
#define KVCS_COMMON_PEM_KEY_H_

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

typedef struct evp_pkey_st EVP_PKEY;

namespace kvcs {

enum class KeyType { kP256, kEd25519 };

struct PemKey {
  std::shared_ptr<EVP_PKEY> pkey;
  KeyType type = KeyType::kP256;
};

// Text before the PEM block (kvcs keygen writes a "kid: …" line there) is skipped. Errors:
// kInvalidArgument for a text that is not a PEM key, or a key that is neither P-256 nor Ed25519.
Result<PemKey> ReadPrivatePem(std::string_view pem);  // PKCS#8 or traditional
Result<PemKey> ReadPublicPem(std::string_view pem);   // SubjectPublicKeyInfo
// The type of a key, or kInvalidArgument for any other key.
Result<KeyType> KeyTypeOf(EVP_PKEY* key);
// PKCS#8 private / SPKI public PEM of a key; empty if OpenSSL fails.
std::string PrivatePemOf(EVP_PKEY* key);
std::string PublicPemOf(EVP_PKEY* key);
// Takes ownership of an EVP_PKEY.
std::shared_ptr<EVP_PKEY> OwnKey(EVP_PKEY* key);

}  // namespace kvcs

#endif  // KVCS_COMMON_PEM_KEY_H_
