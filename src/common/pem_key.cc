#include "common/pem_key.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <algorithm>
#include <cstdint>

namespace kvcs {
namespace {

using Bio = std::unique_ptr<BIO, decltype(&BIO_free)>;

Bio MemBio(std::string_view pem) {
  return Bio(BIO_new_mem_buf(pem.data(), int(std::min<size_t>(pem.size(), INT32_MAX))), BIO_free);
}

Result<PemKey> Typed(EVP_PKEY* k, const char* what) {
  if (!k) return InvalidArgument(std::string("not a PEM ") + what);
  PemKey out{OwnKey(k)};
  KVCS_ASSIGN_OR_RETURN(out.type, KeyTypeOf(k));
  return out;
}

std::string PemOf(bool private_key, EVP_PKEY* key) {
  Bio bio(BIO_new(BIO_s_mem()), BIO_free);
  if (!bio) return "";
  int ok = private_key ? PEM_write_bio_PKCS8PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr,
                                                       nullptr)
                       : PEM_write_bio_PUBKEY(bio.get(), key);
  if (ok != 1) return "";
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, size_t(n));
}

}  // namespace

std::shared_ptr<EVP_PKEY> OwnKey(EVP_PKEY* key) {
  return std::shared_ptr<EVP_PKEY>(key, [](EVP_PKEY* k) { EVP_PKEY_free(k); });
}

Result<KeyType> KeyTypeOf(EVP_PKEY* k) {
  if (EVP_PKEY_is_a(k, "ED25519")) return KeyType::kEd25519;
  if (EVP_PKEY_is_a(k, "EC")) {
    char group[64] = {0};
    size_t len = 0;
    if (EVP_PKEY_get_group_name(k, group, sizeof(group), &len) == 1 &&
        std::string_view(group, len) == "prime256v1") {
      return KeyType::kP256;
    }
    return InvalidArgument("EC key is not on P-256 (ES256 needs P-256)");
  }
  return InvalidArgument("key is neither Ed25519 nor EC P-256");
}

Result<PemKey> ReadPrivatePem(std::string_view pem) {
  Bio bio = MemBio(pem);
  return Typed(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr,
               "private key");
}

Result<PemKey> ReadPublicPem(std::string_view pem) {
  Bio bio = MemBio(pem);
  return Typed(bio ? PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr) : nullptr,
               "public key");
}

std::string PrivatePemOf(EVP_PKEY* key) { return PemOf(true, key); }
std::string PublicPemOf(EVP_PKEY* key) { return PemOf(false, key); }

}  // namespace kvcs
