#include "profile/cose.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>

#include <string>
#include <utility>

#include "common/pem_key.h"
#include "profile/cbor.h"

namespace kvcs::profile {
namespace {

// COSE header labels (RFC 9052 §3.1).
constexpr int64_t kLabelAlg = 1;
constexpr int64_t kLabelCrit = 2;
constexpr int64_t kLabelKid = 4;
constexpr size_t kSignatureSize = 64;  // ES256 r||s and Ed25519 are both 64 bytes
constexpr size_t kEs256ScalarSize = 32;

Status Err(CoseError e, std::string msg) {
  Code code = Code::kInvalidArgument;
  switch (e) {
    case CoseError::kTooLarge:
      code = Code::kResourceExhausted;
      break;
    case CoseError::kUnknownKid:
      code = Code::kNotFound;
      break;
    case CoseError::kBadSignature:
    case CoseError::kAlgMismatch:
      code = Code::kPermissionDenied;
      break;
    case CoseError::kUnsupportedAlg:
      code = Code::kUnsupported;
      break;
    default:
      break;
  }
  return Status(code, "cose: " + msg, static_cast<int>(e));
}

using MdCtx = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

CoseAlg AlgOf(KeyType t) { return t == KeyType::kP256 ? CoseAlg::kES256 : CoseAlg::kEdDSA; }

Status CheckKid(const Bytes& kid) {
  if (kid.empty()) return Err(CoseError::kMissingKid, "kid must not be empty");
  if (kid.size() > kMaxKidSize) return Err(CoseError::kKidTooLong, "kid longer than 256 bytes");
  return Status::Ok();
}

Bytes ProtectedHeader(CoseAlg alg, ByteSpan kid) {
  Bytes out;
  cbor::PutMapHeader(&out, 2);
  cbor::PutInt(&out, kLabelAlg);
  cbor::PutInt(&out, static_cast<int64_t>(alg));
  cbor::PutInt(&out, kLabelKid);
  cbor::PutBytes(&out, kid);
  return out;
}

Bytes SigStructure(ByteSpan protected_header, ByteSpan payload) {
  Bytes out;
  out.reserve(payload.size() + protected_header.size() + 32);
  cbor::PutArrayHeader(&out, 4);
  cbor::PutText(&out, "Signature1");
  cbor::PutBytes(&out, protected_header);
  cbor::PutBytes(&out, {});  // external_aad: empty
  cbor::PutBytes(&out, payload);
  return out;
}

Result<Bytes> RawSign(EVP_PKEY* key, CoseAlg alg, ByteSpan tbs) {
  MdCtx ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  const EVP_MD* md = alg == CoseAlg::kES256 ? EVP_sha256() : nullptr;  // Ed25519: no prehash
  size_t len = 0;
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, md, nullptr, key) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &len, tbs.data(), tbs.size()) != 1) {
    return Internal("cose: OpenSSL signing setup failed");
  }
  Bytes sig(len);
  if (EVP_DigestSign(ctx.get(), sig.data(), &len, tbs.data(), tbs.size()) != 1) {
    return Internal("cose: OpenSSL signing failed");
  }
  sig.resize(len);
  if (alg == CoseAlg::kEdDSA) return sig;
  // ES256: OpenSSL produces DER ECDSA-Sig-Value; COSE wants r||s, each left-padded to 32 bytes.
  const uint8_t* p = sig.data();
  std::unique_ptr<ECDSA_SIG, decltype(&ECDSA_SIG_free)> es(
      d2i_ECDSA_SIG(nullptr, &p, long(sig.size())), ECDSA_SIG_free);
  if (!es) return Internal("cose: cannot parse OpenSSL's ECDSA signature");
  Bytes raw(kSignatureSize);
  if (BN_bn2binpad(ECDSA_SIG_get0_r(es.get()), raw.data(), kEs256ScalarSize) < 0 ||
      BN_bn2binpad(ECDSA_SIG_get0_s(es.get()), raw.data() + kEs256ScalarSize, kEs256ScalarSize) <
          0) {
    return Internal("cose: ECDSA scalar does not fit 32 bytes");
  }
  return raw;
}

bool RawVerify(EVP_PKEY* key, CoseAlg alg, ByteSpan tbs, ByteSpan sig) {
  Bytes der;
  ByteSpan to_check = sig;
  if (alg == CoseAlg::kES256) {
    std::unique_ptr<ECDSA_SIG, decltype(&ECDSA_SIG_free)> es(ECDSA_SIG_new(), ECDSA_SIG_free);
    BIGNUM* r = BN_bin2bn(sig.data(), kEs256ScalarSize, nullptr);
    BIGNUM* s = BN_bin2bn(sig.data() + kEs256ScalarSize, kEs256ScalarSize, nullptr);
    if (!es || !r || !s || ECDSA_SIG_set0(es.get(), r, s) != 1) {
      BN_free(r);
      BN_free(s);
      return false;
    }
    int n = i2d_ECDSA_SIG(es.get(), nullptr);
    if (n <= 0) return false;
    der.resize(size_t(n));
    uint8_t* out = der.data();
    if (i2d_ECDSA_SIG(es.get(), &out) != n) return false;
    to_check = der;
  }
  MdCtx ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  const EVP_MD* md = alg == CoseAlg::kES256 ? EVP_sha256() : nullptr;
  return ctx && EVP_DigestVerifyInit(ctx.get(), nullptr, md, nullptr, key) == 1 &&
         EVP_DigestVerify(ctx.get(), to_check.data(), to_check.size(), tbs.data(), tbs.size()) == 1;
}

// The structure checks of DecodeCoseSign1, given the decoded top-level value.
Result<CoseSign1> Structure(const cbor::Value& top) {
  if (top.type != cbor::Type::kArray || top.items.size() != 4) {
    return Err(CoseError::kNotSign1, "COSE_Sign1 must be an array of 4 items");
  }
  const cbor::Value& prot = top.items[0];
  const cbor::Value& unprot = top.items[1];
  const cbor::Value& payload = top.items[2];
  const cbor::Value& sig = top.items[3];
  if (prot.type != cbor::Type::kBytes) {
    return Err(CoseError::kBadProtected, "protected header must be a byte string");
  }
  if (prot.str.empty()) return Err(CoseError::kMissingAlg, "protected header is empty");
  auto pmap = cbor::Decode(prot.str, kMaxCoseDepth - 1);
  if (!pmap.ok()) {
    return Err(CoseError::kBadProtected, "protected header: " + pmap.status().message());
  }
  if (pmap->type != cbor::Type::kMap) {
    return Err(CoseError::kBadProtected, "protected header is not a map");
  }
  if (unprot.type != cbor::Type::kMap) {
    return Err(CoseError::kBadUnprotected, "unprotected header must be a map");
  }
  if (pmap->Find(kLabelCrit) || unprot.Find(kLabelCrit)) {
    return Err(CoseError::kCriticalHeader, "critical header parameters are not supported");
  }
  if (unprot.Find(kLabelAlg) || unprot.Find(kLabelKid)) {
    return Err(CoseError::kNotProtected, "alg and kid must be in the protected header only");
  }
  CoseSign1 out;
  const cbor::Value* alg = pmap->Find(kLabelAlg);
  if (!alg) return Err(CoseError::kMissingAlg, "no alg in the protected header");
  auto alg_value = alg->AsInt();
  if (alg_value == static_cast<int64_t>(CoseAlg::kES256)) {
    out.alg = CoseAlg::kES256;
  } else if (alg_value == static_cast<int64_t>(CoseAlg::kEdDSA)) {
    out.alg = CoseAlg::kEdDSA;
  } else {
    return Err(CoseError::kUnsupportedAlg, "alg must be ES256 (-7) or EdDSA (-8)");
  }
  const cbor::Value* kid = pmap->Find(kLabelKid);
  if (!kid || kid->type != cbor::Type::kBytes || kid->str.empty()) {
    return Err(CoseError::kMissingKid, "no kid (non-empty byte string) in the protected header");
  }
  if (kid->str.size() > kMaxKidSize) return Err(CoseError::kKidTooLong, "kid too long");
  if (payload.type != cbor::Type::kBytes) {
    return Err(CoseError::kDetachedPayload, "payload must be an attached byte string");
  }
  if (sig.type != cbor::Type::kBytes || sig.str.size() != kSignatureSize) {
    return Err(CoseError::kBadSignatureShape, "signature must be a 64-byte byte string");
  }
  out.protected_header = prot.str;
  out.kid = kid->str;
  out.payload = payload.str;
  out.signature = sig.str;
  return out;
}

}  // namespace

std::string_view CoseAlgName(CoseAlg a) { return a == CoseAlg::kES256 ? "ES256" : "EdDSA"; }

std::string_view CoseErrorName(CoseError e) {
  switch (e) {
    case CoseError::kNone:
      return "none";
    case CoseError::kTooLarge:
      return "too_large";
    case CoseError::kNotSign1:
      return "not_sign1";
    case CoseError::kBadProtected:
      return "bad_protected";
    case CoseError::kBadUnprotected:
      return "bad_unprotected";
    case CoseError::kMissingAlg:
      return "missing_alg";
    case CoseError::kUnsupportedAlg:
      return "unsupported_alg";
    case CoseError::kMissingKid:
      return "missing_kid";
    case CoseError::kKidTooLong:
      return "kid_too_long";
    case CoseError::kNotProtected:
      return "not_protected";
    case CoseError::kCriticalHeader:
      return "critical_header";
    case CoseError::kDetachedPayload:
      return "detached_payload";
    case CoseError::kBadSignatureShape:
      return "bad_signature_shape";
    case CoseError::kUnknownKid:
      return "unknown_kid";
    case CoseError::kAlgMismatch:
      return "alg_mismatch";
    case CoseError::kBadSignature:
      return "bad_signature";
    case CoseError::kBadKey:
      return "bad_key";
  }
  return "unknown";
}

Result<SigningKey> SigningKey::Generate(CoseAlg alg, Bytes kid) {
  KVCS_RETURN_IF_ERROR(CheckKid(kid));
  EVP_PKEY* k = alg == CoseAlg::kES256 ? EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256")
                                       : EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
  if (!k) return Internal("cose: key generation failed");
  return SigningKey(OwnKey(k), alg, std::move(kid));
}

Result<SigningKey> SigningKey::FromPrivatePem(std::string_view pem, Bytes kid) {
  KVCS_RETURN_IF_ERROR(CheckKid(kid));
  auto key = ReadPrivatePem(pem);
  if (!key.ok()) return Err(CoseError::kBadKey, key.status().message());
  return SigningKey(std::move(key->pkey), AlgOf(key->type), std::move(kid));
}

Result<SigningKey> SigningKey::FromEd25519Seed(ByteSpan seed, Bytes kid) {
  KVCS_RETURN_IF_ERROR(CheckKid(kid));
  if (seed.size() != 32) return Err(CoseError::kBadKey, "Ed25519 seed must be 32 bytes");
  EVP_PKEY* k = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr, seed.data(), seed.size());
  if (!k) return Err(CoseError::kBadKey, "OpenSSL rejected the Ed25519 seed");
  return SigningKey(OwnKey(k), CoseAlg::kEdDSA, std::move(kid));
}

std::string SigningKey::PrivatePem() const { return PrivatePemOf(key_.get()); }
std::string SigningKey::PublicPem() const { return PublicPemOf(key_.get()); }
VerifyKey SigningKey::Public() const { return VerifyKey(key_, alg_, kid_); }

Result<VerifyKey> VerifyKey::FromPublicPem(std::string_view pem, Bytes kid) {
  KVCS_RETURN_IF_ERROR(CheckKid(kid));
  auto key = ReadPublicPem(pem);
  if (!key.ok()) return Err(CoseError::kBadKey, key.status().message());
  return VerifyKey(std::move(key->pkey), AlgOf(key->type), std::move(kid));
}

Status KeySet::Add(VerifyKey key) {
  std::string kid(AsStringView(key.kid()));
  if (!keys_.emplace(std::move(kid), std::move(key)).second) {
    return Status(Code::kAlreadyExists, "cose: a key with this kid is already in the set");
  }
  return Status::Ok();
}

const VerifyKey* KeySet::Find(ByteSpan kid) const {
  auto it = keys_.find(std::string(AsStringView(kid)));
  return it == keys_.end() ? nullptr : &it->second;
}

Result<Bytes> SignCoseSign1(ByteSpan payload, const SigningKey& key) {
  if (payload.size() > kMaxManifestBytes) {
    return Err(CoseError::kTooLarge, "payload above the manifest bound");
  }
  Bytes prot = ProtectedHeader(key.alg_, key.kid_);
  KVCS_ASSIGN_OR_RETURN(Bytes sig, RawSign(key.key_.get(), key.alg_, SigStructure(prot, payload)));
  Bytes out;
  out.reserve(payload.size() + prot.size() + sig.size() + 16);
  cbor::PutTag(&out, kCoseSign1Tag);
  cbor::PutArrayHeader(&out, 4);
  cbor::PutBytes(&out, prot);
  cbor::PutMapHeader(&out, 0);
  cbor::PutBytes(&out, payload);
  cbor::PutBytes(&out, sig);
  return out;
}

Result<CoseSign1> DecodeCoseSign1(ByteSpan in) {
  if (in.size() > kMaxCoseSize) return Err(CoseError::kTooLarge, "input above the bound");
  // Tag 18 in its preferred one-byte form (0xd2); any other tag is not a COSE_Sign1.
  if (!in.empty() && in[0] == 0xd2) in = in.subspan(1);
  if (!in.empty() && (in[0] >> 5) == 6) {
    return Err(CoseError::kNotSign1, "tagged with a tag other than 18 (COSE_Sign1)");
  }
  KVCS_ASSIGN_OR_RETURN(cbor::Value top, cbor::Decode(in, kMaxCoseDepth));
  return Structure(top);
}

Result<CoseSign1> VerifyCoseSign1(ByteSpan in, const KeySet& keys) {
  KVCS_ASSIGN_OR_RETURN(CoseSign1 msg, DecodeCoseSign1(in));
  const VerifyKey* key = keys.Find(msg.kid);
  if (!key) return Err(CoseError::kUnknownKid, "no producer key with this kid");
  if (key->alg() != msg.alg) {
    return Err(CoseError::kAlgMismatch, std::string("message says ") +
                                            std::string(CoseAlgName(msg.alg)) + " but the key is " +
                                            std::string(CoseAlgName(key->alg())));
  }
  if (!RawVerify(key->pkey(), msg.alg, SigStructure(msg.protected_header, msg.payload),
                 msg.signature)) {
    return Err(CoseError::kBadSignature, "signature does not verify");
  }
  return msg;
}

Result<Manifest> VerifyManifestCose(ByteSpan in, const KeySet& keys) {
  KVCS_ASSIGN_OR_RETURN(CoseSign1 msg, VerifyCoseSign1(in, keys));
  return ParseManifest(AsStringView(msg.payload));
}

Result<Bytes> SignManifestCose(const Manifest& m, const SigningKey& key) {
  KVCS_ASSIGN_OR_RETURN(std::string json, ManifestToJson(m));
  return SignCoseSign1(AsBytes(json), key);
}

}  // namespace kvcs::profile
