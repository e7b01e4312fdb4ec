#include "common/crypto.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace kvcs {
namespace {

const EVP_MD* Sha256Md() {
  // Fetched once: EVP_sha256() through the default provider; cached by OpenSSL.
  static const EVP_MD* md = EVP_sha256();
  return md;
}

[[noreturn]] void CryptoFailure(const char* what) {
  std::fprintf(stderr, "kvcs: OpenSSL failure in %s\n", what);
  std::abort();
}

}  // namespace

struct Sha256::Ctx {
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  ~Ctx() { EVP_MD_CTX_free(md); }
};

Sha256::Sha256() : ctx_(std::make_unique<Ctx>()) {
  if (!ctx_->md || EVP_DigestInit_ex(ctx_->md, Sha256Md(), nullptr) != 1) {
    CryptoFailure("EVP_DigestInit_ex");
  }
}
Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

Sha256& Sha256::Update(ByteSpan data) {
  if (!data.empty() && EVP_DigestUpdate(ctx_->md, data.data(), data.size()) != 1) {
    CryptoFailure("EVP_DigestUpdate");
  }
  return *this;
}

Digest Sha256::Finish() {
  Digest d;
  unsigned int n = 0;
  if (EVP_DigestFinal_ex(ctx_->md, d.data(), &n) != 1 || n != kDigestSize) {
    CryptoFailure("EVP_DigestFinal_ex");
  }
  if (EVP_DigestInit_ex(ctx_->md, Sha256Md(), nullptr) != 1) CryptoFailure("EVP_DigestInit_ex");
  return d;
}

Digest Sha256::Hash(ByteSpan data) {
  Digest d;
  unsigned int n = 0;
  if (EVP_Digest(data.data(), data.size(), d.data(), &n, Sha256Md(), nullptr) != 1) {
    CryptoFailure("EVP_Digest");
  }
  return d;
}

// HMAC(K, m) = H((K' ^ opad) || H((K' ^ ipad) || m)); the two pad blocks are absorbed here once,
// and each Mac() copies the absorbed contexts instead of rehashing the pads.
struct HmacSha256Key::State {
  EVP_MD_CTX* inner = EVP_MD_CTX_new();
  EVP_MD_CTX* outer = EVP_MD_CTX_new();
  EVP_MD_CTX* work = EVP_MD_CTX_new();
  ~State() {
    EVP_MD_CTX_free(inner);
    EVP_MD_CTX_free(outer);
    EVP_MD_CTX_free(work);
  }
};

HmacSha256Key::HmacSha256Key(ByteSpan key) : state_(std::make_unique<State>()) {
  constexpr size_t kBlock = 64;  // SHA-256 block size
  uint8_t k[kBlock] = {};
  if (key.size() > kBlock) {
    Digest d = Sha256::Hash(key);
    std::memcpy(k, d.data(), d.size());
  } else if (!key.empty()) {
    std::memcpy(k, key.data(), key.size());
  }
  uint8_t ipad[kBlock], opad[kBlock];
  for (size_t i = 0; i < kBlock; ++i) {
    ipad[i] = k[i] ^ 0x36;
    opad[i] = k[i] ^ 0x5c;
  }
  if (EVP_DigestInit_ex(state_->inner, Sha256Md(), nullptr) != 1 ||
      EVP_DigestUpdate(state_->inner, ipad, kBlock) != 1 ||
      EVP_DigestInit_ex(state_->outer, Sha256Md(), nullptr) != 1 ||
      EVP_DigestUpdate(state_->outer, opad, kBlock) != 1) {
    CryptoFailure("HMAC key setup");
  }
  OPENSSL_cleanse(k, sizeof k);
  OPENSSL_cleanse(ipad, sizeof ipad);
  OPENSSL_cleanse(opad, sizeof opad);
}
HmacSha256Key::~HmacSha256Key() = default;
HmacSha256Key::HmacSha256Key(HmacSha256Key&&) noexcept = default;

Digest HmacSha256Key::Mac(std::initializer_list<ByteSpan> parts) const {
  EVP_MD_CTX* w = state_->work;
  Digest inner;
  unsigned int n = 0;
  if (EVP_MD_CTX_copy_ex(w, state_->inner) != 1) CryptoFailure("EVP_MD_CTX_copy_ex");
  for (ByteSpan p : parts) {
    if (!p.empty() && EVP_DigestUpdate(w, p.data(), p.size()) != 1) {
      CryptoFailure("EVP_DigestUpdate");
    }
  }
  if (EVP_DigestFinal_ex(w, inner.data(), &n) != 1) CryptoFailure("EVP_DigestFinal_ex");
  Digest out;
  if (EVP_MD_CTX_copy_ex(w, state_->outer) != 1 ||
      EVP_DigestUpdate(w, inner.data(), inner.size()) != 1 ||
      EVP_DigestFinal_ex(w, out.data(), &n) != 1) {
    CryptoFailure("HMAC outer");
  }
  return out;
}

Digest HmacSha256(ByteSpan key, ByteSpan data) { return HmacSha256Key(key).Mac(data); }

bool ConstantTimeEqual(ByteSpan a, ByteSpan b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

void RandomBytes(uint8_t* out, size_t n) {
  if (RAND_bytes(out, static_cast<int>(n)) != 1) CryptoFailure("RAND_bytes");
}

}  // namespace kvcs
