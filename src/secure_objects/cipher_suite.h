// The AEAD cipher suites of draft-ietf-moq-secure-objects (§2 of
// shared/specs/moq-secure-objects.md): their registry values and sizes, and AeadKey, one suite's
// AEAD with its key schedule set up once (OpenSSL EVP).
//
// Implemented: 0x0004 AES_128_GCM_SHA256_128 (the draft's MUST) and 0x0005
// AES_256_GCM_SHA512_128. The AES-CTR-HMAC suites 0x0001..0x0003 are not (the draft's own vectors
// disagree with RFC 9605 on their tag), nor ChaCha20 (the draft defines no suite for it).
// Seal output is ct ‖ tag (Nt = 16). Open releases plaintext only after the tag verified
// (EVP_DecryptFinal_ex), so a forgery never yields bytes.
// THREADING: an AeadKey is not thread-safe (one EVP context); distinct keys may be used from
// different threads.
#ifndef KVCS_SECURE_OBJECTS_CIPHER_SUITE_H_
#define KVCS_SECURE_OBJECTS_CIPHER_SUITE_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>

#include "common/bytes.h"
#include "common/status.h"

namespace kvcs::secure {

// u16 registry values (draft §2; big-endian on the wire, in the KDF labels).
enum class CipherSuite : uint16_t {
  kAes128GcmSha256 = 0x0004,
  kAes256GcmSha512 = 0x0005,
};

enum class SuiteHash { kSha256, kSha512 };

struct SuiteParams {
  CipherSuite suite;
  SuiteHash hash;
  size_t nk;  // key bytes
  size_t nn;  // nonce (and salt) bytes
  size_t nt;  // tag bytes
};

inline constexpr size_t kNonceBytes = 12;
inline constexpr size_t kTagBytes = 16;
inline constexpr size_t kMaxKeyBytes = 32;

// The parameters of an implemented suite; kUnsupportedSuite otherwise.
Result<SuiteParams> LookupSuite(uint16_t value);
const SuiteParams& ParamsOf(CipherSuite suite);  // REQUIRES an implemented suite

class AeadKey {
 public:
  // kBadKey unless key.size() == ParamsOf(suite).nk.
  static Result<AeadKey> Create(CipherSuite suite, ByteSpan key);
  ~AeadKey();
  AeadKey(AeadKey&&) noexcept;
  AeadKey& operator=(AeadKey&&) noexcept;
  AeadKey(const AeadKey&) = delete;

  CipherSuite suite() const { return suite_; }
  // Appends ct ‖ tag (pt.size() + 16 bytes) to *out. REQUIRES nonce.size() == 12.
  Status Seal(ByteSpan nonce, ByteSpan aad, ByteSpan pt, Bytes* out) {
    return Seal(nonce, aad, {pt}, out);
  }
  // The same for pt = the concatenation of `pt_parts` (no copy into one buffer first).
  Status Seal(ByteSpan nonce, ByteSpan aad, std::initializer_list<ByteSpan> pt_parts, Bytes* out);
  // Writes the plaintext of ct ‖ tag into *out (replaced) only if the tag verifies: else
  // kAuthFailed (and *out is cleared) or kTooShort.
  Status Open(ByteSpan nonce, ByteSpan aad, ByteSpan ct_and_tag, Bytes* out);

 private:
  struct Ctx;
  AeadKey(CipherSuite suite, std::unique_ptr<Ctx> ctx);
  CipherSuite suite_;
  std::unique_ptr<Ctx> ctx_;
};

}  // namespace kvcs::secure

#endif  // KVCS_SECURE_OBJECTS_CIPHER_SUITE_H_
