#include "secure_objects/key_schedule.h"

#include <openssl/core_names.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

#include <openssl/crypto.h>

#include <algorithm>
#include <cstdio>
#include <memory>

#include "moqt/moqt_fields.h"
#include "moqt/moqt_wire_io.h"
#include "secure_objects/secure_object_error.h"

namespace kvcs::secure {
namespace {

Status CryptoFailure(const char* what) {
  return SecureStatus(Code::kInternal, SecureObjectError::kCryptoFailure, what);
}

using KdfCtx = std::unique_ptr<EVP_KDF_CTX, decltype(&EVP_KDF_CTX_free)>;

// One EVP_KDF "HKDF" run in `mode` (EXTRACT_ONLY or EXPAND_ONLY).
Result<Bytes> RunHkdf(SuiteHash hash, int mode, ByteSpan key, ByteSpan salt, ByteSpan info,
                      size_t length) {
  EVP_KDF* kdf = EVP_KDF_fetch(nullptr, "HKDF", nullptr);
  if (kdf == nullptr) return CryptoFailure("EVP_KDF_fetch HKDF");
  KdfCtx ctx(EVP_KDF_CTX_new(kdf), EVP_KDF_CTX_free);
  EVP_KDF_free(kdf);
  if (!ctx) return CryptoFailure("EVP_KDF_CTX_new");
  char digest[16];
  std::snprintf(digest, sizeof(digest), "%s", hash == SuiteHash::kSha256 ? "SHA256" : "SHA512");
  OSSL_PARAM params[6];
  size_t n = 0;
  params[n++] = OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode);
  params[n++] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0);
  params[n++] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY,
                                                  const_cast<uint8_t*>(key.data()), key.size());
  if (!salt.empty()) {
    params[n++] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT,
                                                    const_cast<uint8_t*>(salt.data()), salt.size());
  }
  if (mode == EVP_KDF_HKDF_MODE_EXPAND_ONLY) {
    params[n++] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO,
                                                    const_cast<uint8_t*>(info.data()), info.size());
  }
  params[n] = OSSL_PARAM_construct_end();
  if (EVP_KDF_CTX_set_params(ctx.get(), params) != 1)
    return CryptoFailure("EVP_KDF_CTX_set_params");
  // Extract: the PRK is HashLen bytes (known once the digest is set).
  if (mode == EVP_KDF_HKDF_MODE_EXTRACT_ONLY) length = EVP_KDF_CTX_get_kdf_size(ctx.get());
  if (length == 0 || length > 255 * 64) return CryptoFailure("HKDF output length");
  Bytes out(length);
  if (EVP_KDF_derive(ctx.get(), out.data(), out.size(), nullptr) != 1) {
    return CryptoFailure("EVP_KDF_derive");
  }
  return out;
}

void AppendBigEndian(Bytes* out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out->push_back(static_cast<uint8_t>(v >> (8 * i)));
}

Bytes Label(std::string_view prefix, ByteSpan ftn, CipherSuite suite, uint64_t key_id) {
  Bytes info(prefix.begin(), prefix.end());
  info.insert(info.end(), ftn.begin(), ftn.end());
  AppendBigEndian(&info, static_cast<uint16_t>(suite), 2);
  AppendBigEndian(&info, key_id, 8);
  return info;
}

}  // namespace

Result<Bytes> HkdfExtract(SuiteHash hash, ByteSpan salt, ByteSpan ikm) {
  return RunHkdf(hash, EVP_KDF_HKDF_MODE_EXTRACT_ONLY, ikm, salt, {}, 0);
}

Result<Bytes> HkdfExpand(SuiteHash hash, ByteSpan prk, ByteSpan info, size_t length) {
  return RunHkdf(hash, EVP_KDF_HKDF_MODE_EXPAND_ONLY, prk, {}, info, length);
}

Bytes SerializeFullTrackName(const moqt::FullTrackName& ftn) {
  Bytes out;
  moqt::WireWriter w(&out);
  moqt::WriteFullTrackName(w, ftn);
  return out;
}

Result<ObjectKeyMaterial> DeriveObjectKey(CipherSuite suite, ByteSpan track_base_key,
                                          ByteSpan serialized_ftn, uint64_t key_id) {
  KVCS_ASSIGN_OR_RETURN(SuiteParams p, LookupSuite(static_cast<uint16_t>(suite)));
  if (track_base_key.empty() || track_base_key.size() > kMaxBaseKeyBytes) {
    return SecureStatus(Code::kInvalidArgument, SecureObjectError::kBadKey,
                        "a track base key of " + std::to_string(track_base_key.size()) +
                            " bytes (1.." + std::to_string(kMaxBaseKeyBytes) + ")");
  }
  KVCS_ASSIGN_OR_RETURN(Bytes secret, HkdfExtract(p.hash, {}, track_base_key));
  ObjectKeyMaterial m;
  KVCS_ASSIGN_OR_RETURN(
      m.key, HkdfExpand(p.hash, secret, Label(kKeyLabel, serialized_ftn, suite, key_id), p.nk));
  KVCS_ASSIGN_OR_RETURN(
      Bytes salt,
      HkdfExpand(p.hash, secret, Label(kSaltLabel, serialized_ftn, suite, key_id), p.nn));
  std::copy(salt.begin(), salt.end(), m.salt.begin());
  OPENSSL_cleanse(secret.data(), secret.size());
  return m;
}

Result<Nonce> MakeNonce(const Nonce& salt, uint64_t group, uint64_t object) {
  if (object > kMaxObjectId) {
    return SecureStatus(Code::kOutOfRange, SecureObjectError::kObjectIdTooLarge,
                        "Object ID " + std::to_string(object) + " >= 2^32");
  }
  Nonce n = salt;
  for (int i = 0; i < 8; ++i) n[i] ^= static_cast<uint8_t>(group >> (56 - 8 * i));
  for (int i = 0; i < 4; ++i) n[8 + i] ^= static_cast<uint8_t>(object >> (24 - 8 * i));
  return n;
}

}  // namespace kvcs::secure
