#include "secure_objects/cipher_suite.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <climits>
#include <utility>

#include "secure_objects/secure_object_error.h"

namespace kvcs::secure {
namespace {

constexpr SuiteParams kSuites[] = {
    {CipherSuite::kAes128GcmSha256, SuiteHash::kSha256, 16, kNonceBytes, kTagBytes},
    {CipherSuite::kAes256GcmSha512, SuiteHash::kSha512, 32, kNonceBytes, kTagBytes},
};

Status CryptoFailure(const char* what) {
  return SecureStatus(Code::kInternal, SecureObjectError::kCryptoFailure, what);
}

}  // namespace

Result<SuiteParams> LookupSuite(uint16_t value) {
  for (const SuiteParams& p : kSuites) {
    if (static_cast<uint16_t>(p.suite) == value) return p;
  }
  return SecureStatus(Code::kUnsupported, SecureObjectError::kUnsupportedSuite,
                      "cipher suite " + std::to_string(value) + " is not implemented");
}

const SuiteParams& ParamsOf(CipherSuite suite) {
  return suite == CipherSuite::kAes128GcmSha256 ? kSuites[0] : kSuites[1];
}

struct AeadKey::Ctx {
  EVP_CIPHER_CTX* enc = nullptr;
  EVP_CIPHER_CTX* dec = nullptr;
  ~Ctx() {
    EVP_CIPHER_CTX_free(enc);
    EVP_CIPHER_CTX_free(dec);
  }
};

AeadKey::AeadKey(CipherSuite suite, std::unique_ptr<Ctx> ctx)
    : suite_(suite), ctx_(std::move(ctx)) {}
AeadKey::~AeadKey() = default;
AeadKey::AeadKey(AeadKey&&) noexcept = default;
AeadKey& AeadKey::operator=(AeadKey&&) noexcept = default;

Result<AeadKey> AeadKey::Create(CipherSuite suite, ByteSpan key) {
  auto params = LookupSuite(static_cast<uint16_t>(suite));
  if (!params.ok()) return params.status();
  if (key.size() != params->nk) {
    return SecureStatus(Code::kInvalidArgument, SecureObjectError::kBadKey,
                        "key of " + std::to_string(key.size()) + " bytes, the suite needs " +
                            std::to_string(params->nk));
  }
  const EVP_CIPHER* c =
      suite == CipherSuite::kAes128GcmSha256 ? EVP_aes_128_gcm() : EVP_aes_256_gcm();
  auto ctx = std::make_unique<Ctx>();
  ctx->enc = EVP_CIPHER_CTX_new();
  ctx->dec = EVP_CIPHER_CTX_new();
  if (ctx->enc == nullptr || ctx->dec == nullptr) return CryptoFailure("EVP_CIPHER_CTX_new");
  // The key schedule is computed once here; each operation only sets the nonce.
  if (EVP_EncryptInit_ex(ctx->enc, c, nullptr, key.data(), nullptr) != 1 ||
      EVP_DecryptInit_ex(ctx->dec, c, nullptr, key.data(), nullptr) != 1) {
    return CryptoFailure("EVP_*Init_ex (key)");
  }
  return AeadKey(suite, std::move(ctx));
}

Status AeadKey::Seal(ByteSpan nonce, ByteSpan aad, std::initializer_list<ByteSpan> pt_parts,
                     Bytes* out) {
  size_t total = 0;
  for (ByteSpan p : pt_parts) total += p.size();
  if (nonce.size() != kNonceBytes || total > INT_MAX || aad.size() > INT_MAX) {
    return CryptoFailure("Seal: nonce or length");
  }
  EVP_CIPHER_CTX* c = ctx_->enc;
  int len = 0;
  if (EVP_EncryptInit_ex(c, nullptr, nullptr, nullptr, nonce.data()) != 1) {
    return CryptoFailure("EVP_EncryptInit_ex (nonce)");
  }
  if (!aad.empty() &&
      EVP_EncryptUpdate(c, nullptr, &len, aad.data(), static_cast<int>(aad.size())) != 1) {
    return CryptoFailure("EVP_EncryptUpdate (aad)");
  }
  const size_t base = out->size();
  out->resize(base + total + kTagBytes);
  uint8_t* dst = out->data() + base;
  size_t done = 0;
  for (ByteSpan p : pt_parts) {
    int n = 0;
    if (!p.empty() &&
        EVP_EncryptUpdate(c, dst + done, &n, p.data(), static_cast<int>(p.size())) != 1) {
      return CryptoFailure("EVP_EncryptUpdate");
    }
    done += static_cast<size_t>(n);
  }
  int fin = 0;
  if (EVP_EncryptFinal_ex(c, dst + done, &fin) != 1 || done + fin != total) {
    return CryptoFailure("EVP_EncryptFinal_ex");
  }
  if (EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, static_cast<int>(kTagBytes), dst + total) != 1) {
    return CryptoFailure("EVP_CTRL_GCM_GET_TAG");
  }
  return Status::Ok();
}

Status AeadKey::Open(ByteSpan nonce, ByteSpan aad, ByteSpan ct_and_tag, Bytes* out) {
  out->clear();
  if (ct_and_tag.size() < kTagBytes) {
    return SecureStatus(
        Code::kCorruption, SecureObjectError::kTooShort,
        "payload of " + std::to_string(ct_and_tag.size()) + " bytes is shorter than the tag");
  }
  if (nonce.size() != kNonceBytes || ct_and_tag.size() > INT_MAX || aad.size() > INT_MAX) {
    return CryptoFailure("Open: nonce or length");
  }
  const size_t n_ct = ct_and_tag.size() - kTagBytes;
  EVP_CIPHER_CTX* c = ctx_->dec;
  int len = 0;
  if (EVP_DecryptInit_ex(c, nullptr, nullptr, nullptr, nonce.data()) != 1) {
    return CryptoFailure("EVP_DecryptInit_ex (nonce)");
  }
  if (!aad.empty() &&
      EVP_DecryptUpdate(c, nullptr, &len, aad.data(), static_cast<int>(aad.size())) != 1) {
    return CryptoFailure("EVP_DecryptUpdate (aad)");
  }
  Bytes pt(n_ct);
  int n = 0;
  if (n_ct > 0 &&
      EVP_DecryptUpdate(c, pt.data(), &n, ct_and_tag.data(), static_cast<int>(n_ct)) != 1) {
    return CryptoFailure("EVP_DecryptUpdate");
  }
  // The tag is set after the ciphertext: the const_cast is OpenSSL's signature only.
  if (EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, static_cast<int>(kTagBytes),
                          const_cast<uint8_t*>(ct_and_tag.data() + n_ct)) != 1) {
    return CryptoFailure("EVP_CTRL_GCM_SET_TAG");
  }
  int fin = 0;
  if (EVP_DecryptFinal_ex(c, pt.data() + n, &fin) != 1) {
    // Decrypted bytes of a forgery are never released (open point 6 of the summary).
    OPENSSL_cleanse(pt.data(), pt.size());
    return SecureStatus(Code::kPermissionDenied, SecureObjectError::kAuthFailed,
                        "the AEAD tag does not verify");
  }
  *out = std::move(pt);
  return Status::Ok();
}

}  // namespace kvcs::secure
