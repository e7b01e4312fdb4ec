#include "profile/cose.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <set>
#include <string>

#include "common/hex.h"
#include "profile/cbor.h"

namespace kvcs::profile {
namespace {

Bytes Hex(std::string_view h) { return *FromHex(h); }
Bytes B(std::string_view s) { return Bytes(s.begin(), s.end()); }

// RFC 8032 §7.1 TEST 1 secret key; its public key is d75a9801...511a.
constexpr char kEd25519Seed[] = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
constexpr char kPayload[] = R"({"kvcs":1})";
// The full COSE_Sign1 of kPayload with that key and kid "kvcs-test-key", computed independently
// (Python `cryptography` Ed25519 + hand-encoded CBOR). Ed25519 is deterministic, so encode must
// reproduce it byte for byte.
constexpr char kEd25519Cose[] =
    "d28452a20127044d6b7663732d746573742d6b6579a04a7b226b766373223a317d5840e63e9a581a9445aa2251"
    "0f3485d34bd6869ba5b532afaeb10d6bdbb50e760f1f1ee8789598b8e5e86def297dccc46ca1ca73be504f497b"
    "c737e80a79a3227209";
// An ES256 COSE_Sign1 of kPayload made by Python `cryptography` (key: RFC 6979 A.2.5 P-256
// private key), kid "es256-key": proves our r||s handling interoperates.
constexpr char kEs256Cose[] =
    "d2844ea20126044965733235362d6b6579a04a7b226b766373223a317d58403c3544ddf7285b8246a79c66ef68"
    "3faba95ed3df5a488eb456fc863aeaa85a4e0224da5351c7f1b350bbdfa6fcca09ed4b80685ca8aea53fba0c9f"
    "347f4b3998";
constexpr char kEs256PublicPem[] =
    "-----BEGIN PUBLIC KEY-----\n"
    "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEYP7UuiVanTHJYet0xjVtaMBJuJI7\n"
    "Yfps5mliLmDyn7Z5A/4QCLi8maQa6elWKLxk8vGyDC1+n1F3o8KU1EYimQ==\n"
    "-----END PUBLIC KEY-----\n";

std::string PemOf(EVP_PKEY* k, bool private_key) {
  BIO* bio = BIO_new(BIO_s_mem());
  if (private_key) {
    PEM_write_bio_PKCS8PrivateKey(bio, k, nullptr, nullptr, 0, nullptr, nullptr);
  } else {
    PEM_write_bio_PUBKEY(bio, k);
  }
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string pem(data, size_t(n));
  BIO_free(bio);
  return pem;
}

SigningKey TestKey() { return *SigningKey::FromEd25519Seed(Hex(kEd25519Seed), B("kvcs-test-key")); }
KeySet KeysOf(const SigningKey& k) {
  KeySet ks;
  EXPECT_TRUE(ks.Add(k.Public()).ok());
  return ks;
}

TEST(Cose, Ed25519VectorEncode) {
  SigningKey key = TestKey();
  EXPECT_EQ(key.alg(), CoseAlg::kEdDSA);
  auto cose = SignCoseSign1(AsBytes(kPayload), key);
  ASSERT_TRUE(cose.ok()) << cose.status().ToString();
  EXPECT_EQ(ToHex(*cose), kEd25519Cose);
}

TEST(Cose, Ed25519VectorDecodeTaggedAndUntagged) {
  KeySet keys = KeysOf(TestKey());
  Bytes in = Hex(kEd25519Cose);
  for (size_t skip : {0, 1}) {  // tagged, then without the 0xd2 tag byte
    ByteSpan s = ByteSpan(in).subspan(skip);
    auto v = VerifyCoseSign1(s, keys);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_EQ(v->alg, CoseAlg::kEdDSA);
    EXPECT_EQ(AsStringView(v->kid), "kvcs-test-key");
    EXPECT_EQ(AsStringView(v->payload), kPayload);
    EXPECT_GE(v->payload.data(), in.data());  // a view into the input
    EXPECT_LT(v->payload.data(), in.data() + in.size());
  }
}

TEST(Cose, EveryPrefixIsTruncated) {
  KeySet keys = KeysOf(TestKey());
  Bytes in = Hex(kEd25519Cose);
  for (size_t n = 0; n < in.size(); ++n) {
    auto v = VerifyCoseSign1(ByteSpan(in.data(), n), keys);
    ASSERT_FALSE(v.ok()) << n;
    EXPECT_TRUE(v.status().Is(cbor::CborError::kTruncated)) << n << ": " << v.status().ToString();
  }
}

TEST(Cose, EveryBitFlipIsRejected) {
  KeySet keys = KeysOf(TestKey());
  const Bytes good = Hex(kEd25519Cose);
  for (size_t bit = 0; bit < good.size() * 8; ++bit) {
    Bytes in = good;
    in[bit / 8] ^= uint8_t(1 << (bit % 8));
    auto v = VerifyCoseSign1(in, keys);
    ASSERT_FALSE(v.ok()) << "bit " << bit << " accepted";
    EXPECT_NE(v.status().detail(), 0) << "bit " << bit;
  }
  // Flips in the payload or signature reach the signature check.
  Bytes in = good;
  in[good.size() - 1] ^= 1;
  EXPECT_TRUE(VerifyCoseSign1(in, keys).status().Is(CoseError::kBadSignature));
  in = good;
  in[25] ^= 1;  // inside the payload bytes
  EXPECT_TRUE(VerifyCoseSign1(in, keys).status().Is(CoseError::kBadSignature));
}

TEST(Cose, Es256InteropVector) {
  KeySet keys;
  auto pub = VerifyKey::FromPublicPem(kEs256PublicPem, B("es256-key"));
  ASSERT_TRUE(pub.ok()) << pub.status().ToString();
  EXPECT_EQ(pub->alg(), CoseAlg::kES256);
  ASSERT_TRUE(keys.Add(*pub).ok());
  Bytes in = Hex(kEs256Cose);
  auto v = VerifyCoseSign1(in, keys);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(AsStringView(v->payload), kPayload);
  in[in.size() - 40] ^= 0x10;
  EXPECT_TRUE(VerifyCoseSign1(in, keys).status().Is(CoseError::kBadSignature));
}

TEST(Cose, Es256SignVerifyAndTamper) {
  auto key = SigningKey::Generate(CoseAlg::kES256, B("producer-1"));
  ASSERT_TRUE(key.ok());
  KeySet keys = KeysOf(*key);
  for (int i = 0; i < 8; ++i) {  // several signatures: r or s with leading zero bytes padded
    std::string payload = "manifest version " + std::to_string(i);
    auto cose = SignCoseSign1(AsBytes(payload), *key);
    ASSERT_TRUE(cose.ok());
    auto v = VerifyCoseSign1(*cose, keys);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_EQ(v->alg, CoseAlg::kES256);
    EXPECT_EQ(v->signature.size(), 64u);
    EXPECT_EQ(AsStringView(v->payload), payload);
    for (size_t at : {cose->size() - 1, cose->size() - 64, cose->size() - 70}) {
      Bytes t = *cose;
      t[at] ^= 0x01;
      EXPECT_TRUE(VerifyCoseSign1(t, keys).status().Is(CoseError::kBadSignature)) << at;
    }
  }
}

TEST(Cose, PemRoundTrip) {
  for (CoseAlg alg : {CoseAlg::kES256, CoseAlg::kEdDSA}) {
    auto key = SigningKey::Generate(alg, B("k"));
    ASSERT_TRUE(key.ok());
    std::string priv = key->PrivatePem(), pub = key->PublicPem();
    EXPECT_NE(priv.find("BEGIN PRIVATE KEY"), std::string::npos);
    EXPECT_NE(pub.find("BEGIN PUBLIC KEY"), std::string::npos);
    auto key2 = SigningKey::FromPrivatePem(priv, B("k"));
    ASSERT_TRUE(key2.ok()) << key2.status().ToString();
    EXPECT_EQ(key2->alg(), alg);
    auto vk = VerifyKey::FromPublicPem(pub, B("k"));
    ASSERT_TRUE(vk.ok());
    KeySet keys;
    ASSERT_TRUE(keys.Add(*vk).ok());
    auto cose = SignCoseSign1(AsBytes("x"), *key2);  // signed by the reloaded private key
    ASSERT_TRUE(cose.ok());
    EXPECT_TRUE(VerifyCoseSign1(*cose, keys).ok());
  }
  // The fixed Ed25519 key reloads to the same signatures.
  auto again = SigningKey::FromPrivatePem(TestKey().PrivatePem(), B("kvcs-test-key"));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(ToHex(*SignCoseSign1(AsBytes(kPayload), *again)), kEd25519Cose);
}

TEST(Cose, BadKeys) {
  EXPECT_TRUE(VerifyKey::FromPublicPem("not a pem", B("k")).status().Is(CoseError::kBadKey));
  EXPECT_TRUE(SigningKey::FromPrivatePem("", B("k")).status().Is(CoseError::kBadKey));
  EXPECT_TRUE(SigningKey::FromPrivatePem(kEs256PublicPem, B("k")).status().Is(CoseError::kBadKey));
  EXPECT_TRUE(SigningKey::FromEd25519Seed(Bytes(31), B("k")).status().Is(CoseError::kBadKey));
  EXPECT_TRUE(SigningKey::Generate(CoseAlg::kEdDSA, {}).status().Is(CoseError::kMissingKid));
  EXPECT_TRUE(
      SigningKey::Generate(CoseAlg::kEdDSA, Bytes(257, 1)).status().Is(CoseError::kKidTooLong));
  // Keys of other types or curves cannot be used for ES256/EdDSA.
  for (EVP_PKEY* other : {EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-384"),
                          EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", size_t{1024})}) {
    ASSERT_NE(other, nullptr);
    std::string pub = PemOf(other, false), priv = PemOf(other, true);
    EVP_PKEY_free(other);
    EXPECT_TRUE(VerifyKey::FromPublicPem(pub, B("k")).status().Is(CoseError::kBadKey));
    EXPECT_TRUE(SigningKey::FromPrivatePem(priv, B("k")).status().Is(CoseError::kBadKey));
  }
  KeySet ks;
  ASSERT_TRUE(ks.Add(TestKey().Public()).ok());
  EXPECT_EQ(ks.Add(TestKey().Public()).code(), Code::kAlreadyExists);
}

// Hand-built COSE_Sign1 messages, each wrong in one way.
struct Parts {
  Bytes protected_header;
  Bytes unprotected = {0xa0};
  Bytes payload_item;  // a full CBOR item
  Bytes signature_item;
  bool tagged = true;
};
Bytes Build(const Parts& p) {
  Bytes out;
  if (p.tagged) cbor::PutTag(&out, 18);
  cbor::PutArrayHeader(&out, 4);
  cbor::PutBytes(&out, p.protected_header);
  out.insert(out.end(), p.unprotected.begin(), p.unprotected.end());
  out.insert(out.end(), p.payload_item.begin(), p.payload_item.end());
  out.insert(out.end(), p.signature_item.begin(), p.signature_item.end());
  return out;
}
Bytes Prot(std::initializer_list<std::pair<int64_t, Bytes>> entries) {
  Bytes out;
  cbor::PutMapHeader(&out, entries.size());
  for (const auto& [label, item] : entries) {
    cbor::PutInt(&out, label);
    out.insert(out.end(), item.begin(), item.end());
  }
  return out;
}
Bytes IntItem(int64_t v) {
  Bytes out;
  cbor::PutInt(&out, v);
  return out;
}
Bytes BytesItem(ByteSpan b) {
  Bytes out;
  cbor::PutBytes(&out, b);
  return out;
}

TEST(Cose, StructureErrors) {
  KeySet keys = KeysOf(TestKey());
  const Bytes kid = BytesItem(B("kvcs-test-key"));
  const Bytes sig64 = BytesItem(Bytes(64, 7));
  const Bytes payload = BytesItem(B(kPayload));
  const Bytes good_prot = Prot({{1, IntItem(-8)}, {4, kid}});
  auto with = [&](auto mutate) {
    Parts p{good_prot, {0xa0}, payload, sig64};
    mutate(p);
    return Build(p);
  };
  auto concat = [](Bytes a, const Bytes& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  struct Case {
    const char* what;
    Bytes in;
    int want;
  };
  Bytes too_large(kMaxCoseSize + 1, 0);
  const Case cases[] = {
      {"well formed, wrong signature", with([](Parts&) {}), int(CoseError::kBadSignature)},
      {"untagged, wrong signature", with([](Parts& p) { p.tagged = false; }),
       int(CoseError::kBadSignature)},
      {"too large", too_large, int(CoseError::kTooLarge)},
      {"other tag", concat(Hex("d3"), with([](Parts& p) { p.tagged = false; })),
       int(CoseError::kNotSign1)},
      {"tag 18 twice", concat(Hex("d2"), with([](Parts&) {})), int(CoseError::kNotSign1)},
      {"not an array", Hex("a0"), int(CoseError::kNotSign1)},
      {"array of 3", Hex("83404040"), int(CoseError::kNotSign1)},
      {"array of 5", Hex("854040404040"), int(CoseError::kNotSign1)},
      {"protected is a map", Hex("84a0a04040"), int(CoseError::kBadProtected)},
      {"protected empty", with([](Parts& p) { p.protected_header = {}; }),
       int(CoseError::kMissingAlg)},
      {"protected not cbor", with([](Parts& p) { p.protected_header = {0xff}; }),
       int(CoseError::kBadProtected)},
      {"protected trailing bytes",
       with([&](Parts& p) { p.protected_header = concat(good_prot, {0x00}); }),
       int(CoseError::kBadProtected)},
      {"protected is an array", with([](Parts& p) { p.protected_header = {0x80}; }),
       int(CoseError::kBadProtected)},
      {"protected duplicate label", with([&](Parts& p) {
         p.protected_header = Prot({{1, IntItem(-8)}, {1, IntItem(-8)}});
       }),
       int(CoseError::kBadProtected)},
      {"unprotected not a map", with([](Parts& p) { p.unprotected = {0x40}; }),
       int(CoseError::kBadUnprotected)},
      {"no alg", with([&](Parts& p) {
         p.protected_header = Prot({{4, kid}});
       }),
       int(CoseError::kMissingAlg)},
      {"alg RS256", with([&](Parts& p) {
         p.protected_header = Prot({{1, IntItem(-257)}, {4, kid}});
       }),
       int(CoseError::kUnsupportedAlg)},
      {"alg ES384", with([&](Parts& p) {
         p.protected_header = Prot({{1, IntItem(-35)}, {4, kid}});
       }),
       int(CoseError::kUnsupportedAlg)},
      {"alg as text", with([&](Parts& p) {
         Bytes t;
         cbor::PutText(&t, "EdDSA");
         p.protected_header = Prot({{1, t}, {4, kid}});
       }),
       int(CoseError::kUnsupportedAlg)},
      {"no kid", with([&](Parts& p) {
         p.protected_header = Prot({{1, IntItem(-8)}});
       }),
       int(CoseError::kMissingKid)},
      {"empty kid", with([&](Parts& p) {
         p.protected_header = Prot({{1, IntItem(-8)}, {4, BytesItem({})}});
       }),
       int(CoseError::kMissingKid)},
      {"kid as text", with([&](Parts& p) {
         Bytes t;
         cbor::PutText(&t, "kvcs-test-key");
         p.protected_header = Prot({{1, IntItem(-8)}, {4, t}});
       }),
       int(CoseError::kMissingKid)},
      {"kid too long", with([&](Parts& p) {
         p.protected_header = Prot({{1, IntItem(-8)}, {4, BytesItem(Bytes(257, 'k'))}});
       }),
       int(CoseError::kKidTooLong)},
      {"kid only unprotected", with([&](Parts& p) {
         p.protected_header = Prot({{1, IntItem(-8)}});
         p.unprotected = Prot({{4, kid}});
       }),
       int(CoseError::kNotProtected)},
      {"kid in both buckets", with([&](Parts& p) {
         p.unprotected = Prot({{4, kid}});
       }),
       int(CoseError::kNotProtected)},
      {"alg unprotected", with([&](Parts& p) {
         p.unprotected = Prot({{1, IntItem(-8)}});
       }),
       int(CoseError::kNotProtected)},
      {"crit", with([&](Parts& p) {
         p.protected_header = Prot({{1, IntItem(-8)}, {2, Hex("8103")}, {4, kid}});
       }),
       int(CoseError::kCriticalHeader)},
      {"detached (nil) payload", with([](Parts& p) { p.payload_item = {0xf6}; }),
       int(cbor::CborError::kUnsupportedType)},
      {"text payload", with([](Parts& p) {
         p.payload_item = {0x61, 'x'};
       }),
       int(CoseError::kDetachedPayload)},
      {"signature 63 bytes", with([](Parts& p) { p.signature_item = BytesItem(Bytes(63)); }),
       int(CoseError::kBadSignatureShape)},
      {"signature 65 bytes", with([](Parts& p) { p.signature_item = BytesItem(Bytes(65)); }),
       int(CoseError::kBadSignatureShape)},
      {"signature DER-sized", with([](Parts& p) { p.signature_item = BytesItem(Bytes(72)); }),
       int(CoseError::kBadSignatureShape)},
      {"signature as array", with([](Parts& p) { p.signature_item = {0x80}; }),
       int(CoseError::kBadSignatureShape)},
      {"unknown kid", with([&](Parts& p) {
         p.protected_header = Prot({{1, IntItem(-8)}, {4, BytesItem(B("other"))}});
       }),
       int(CoseError::kUnknownKid)},
      {"ES256 header for an Ed25519 key", with([&](Parts& p) {
         p.protected_header = Prot({{1, IntItem(-7)}, {4, kid}});
       }),
       int(CoseError::kAlgMismatch)},
      {"extra unknown header labels are ignored, still wrong signature", with([&](Parts& p) {
         p.protected_header = Prot({{1, IntItem(-8)}, {3, IntItem(50)}, {4, kid}});
         p.unprotected = Prot({{33, BytesItem(B("x5chain"))}});
       }),
       int(CoseError::kBadSignature)},
  };
  for (const Case& c : cases) {
    auto v = VerifyCoseSign1(c.in, keys);
    ASSERT_FALSE(v.ok()) << c.what;
    EXPECT_EQ(v.status().detail(), c.want) << c.what << ": got " << v.status().ToString();
  }
}

TEST(Cose, AlgMismatchWithAValidSignatureFromAnotherKey) {
  // The kid names an ES256 key, the message is a genuine EdDSA signature.
  auto es = SigningKey::Generate(CoseAlg::kES256, B("kvcs-test-key"));
  KeySet keys = KeysOf(*es);
  auto cose = SignCoseSign1(AsBytes(kPayload), TestKey());
  EXPECT_TRUE(VerifyCoseSign1(*cose, keys).status().Is(CoseError::kAlgMismatch));
  // Same kid, same alg, different key: bad signature.
  auto other = SigningKey::Generate(CoseAlg::kEdDSA, B("kvcs-test-key"));
  KeySet others = KeysOf(*other);
  EXPECT_TRUE(VerifyCoseSign1(*cose, others).status().Is(CoseError::kBadSignature));
}

TEST(Cose, SignedManifest) {
  Manifest m;
  m.compat.model = "m";
  m.compat.model_rev = "r";
  m.compat.tokenizer_rev = "t";
  m.compat.attn = "mha";
  m.compat.layers = 4;
  m.compat.kv_heads = 2;
  m.compat.head_dim = 64;
  m.compat.kv_dtype = "fp16";
  m.compat.block_tokens = 8;
  m.compat.layout = "thd";
  m.layers = 4;
  m.block_tokens = 8;
  ManifestSegment s;
  s.blocks = 2;
  s.tracks = {DataTrack(Component::kK, "raw", 0), DataTrack(Component::kV, "raw", 0)};
  m.segments = {s};
  SigningKey key = TestKey();
  auto cose = SignManifestCose(m, key);
  ASSERT_TRUE(cose.ok()) << cose.status().ToString();
  KeySet keys = KeysOf(key);
  auto back = VerifyManifestCose(*cose, keys);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, m);
  // A valid signature over something that is not a manifest: the manifest error comes through.
  auto not_manifest = SignCoseSign1(AsBytes(kPayload), key);
  EXPECT_TRUE(VerifyManifestCose(*not_manifest, keys).status().Is(ManifestError::kMissingField));
  // An invalid manifest is refused before signing.
  m.layers = 5;
  EXPECT_TRUE(SignManifestCose(m, key).status().Is(ManifestError::kLayersMismatch));
}

}  // namespace
}  // namespace kvcs::profile

namespace kvcs::profile {
namespace {

// Every error value has its own name (catches an enum value added without one).
TEST(ErrorNames, AllDistinctAndKnown) {
  auto check = [](auto first, auto last, auto name_of) {
    std::set<std::string> seen;
    for (int v = int(first); v <= int(last); ++v) {
      std::string n(name_of(static_cast<decltype(first)>(v)));
      EXPECT_NE(n, "unknown") << v;
      EXPECT_TRUE(seen.insert(n).second) << n;
    }
  };
  check(ObjectError::kNone, ObjectError::kDigestMismatch, ObjectErrorName);
  check(ManifestError::kNone, ManifestError::kListedDigestMismatch, ManifestErrorName);
  check(NamespaceError::kNone, NamespaceError::kBadPubIdSize, NamespaceErrorName);
  check(TrackNameError::kNone, TrackNameError::kSegmentOverflow, TrackNameErrorName);
  check(cbor::CborError::kNone, cbor::CborError::kTooManyEntries, cbor::CborErrorName);
  check(CoseError::kTooLarge, CoseError::kBadKey, CoseErrorName);
  EXPECT_EQ(CoseErrorName(CoseError::kNone), "none");
}

}  // namespace
}  // namespace kvcs::profile
