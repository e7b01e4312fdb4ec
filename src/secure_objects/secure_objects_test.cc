// Secure objects: the draft's vectors (shared/specs/moq-secure-objects.md §9, suites 4 and 5,
// which reproduce there and here), and the KVCS format table (secure_object_vectors, computed
// independently with Python's `cryptography`): encode, decode, byte-at-a-time truncation and
// every single-bit flip rejected; the scope key schedule and rotation.
#include <gtest/gtest.h>

#include "common/hex.h"
#include "secure_objects/cipher_suite.h"
#include "secure_objects/key_schedule.h"
#include "secure_objects/scope_keys.h"
#include "secure_objects/secure_object.h"
#include "secure_objects/secure_object_error.h"
#include "secure_objects/track_crypto.h"

namespace kvcs::secure {
namespace {

Bytes H(std::string_view hex) {
  auto b = FromHex(hex);
  EXPECT_TRUE(b.ok()) << hex;
  return b.ok() ? *b : Bytes{};
}
std::string X(ByteSpan b) { return ToHex(b); }
std::string X(const Nonce& n) { return ToHex(n); }
Bytes S(std::string_view s) { return Bytes(s.begin(), s.end()); }

moqt::FullTrackName Ftn(std::vector<std::string> ns, std::string name) {
  moqt::FullTrackName f;
  f.track_namespace = std::move(ns);
  f.name = std::move(name);
  return f;
}

// ---------------------------------------------------------------- the draft's vectors

TEST(DraftVectors, FullTrackNames) {
  EXPECT_EQ(X(SerializeFullTrackName(Ftn({"example.com"}, "audio"))),
            "010b6578616d706c652e636f6d05617564696f");
  EXPECT_EQ(X(SerializeFullTrackName(Ftn({"example.com", "meeting-123"}, "video"))),
            "020b6578616d706c652e636f6d0b6d656574696e672d31323305766964656f");
  EXPECT_EQ(X(SerializeFullTrackName(Ftn({"example.com", "meeting-123", "floor-1"}, "slides"))),
            "030b6578616d706c652e636f6d0b6d656574696e672d31323307666c6f6f722d3106736c69646573");
}

struct DraftSuite {
  CipherSuite suite;
  const char* base_key;
  const char* secret;
  const char* key;
  const char* salt;
  const char* nonce_42_1;
  const char* ct;
};
const DraftSuite kDraftSuites[] = {
    {CipherSuite::kAes128GcmSha256, "7369787465656e2062797465206b6579",
     "e5e76a372058231c56eedca06436c94e6f6bab38d759687367c92048faf93f18",
     "eb3b95606d7c4775688c121e8f06832c", "dc11a8d516c299f44b24be8d", "dc11a8d516c299de4b24be8c",
     "facafee5c450bd140759bdffa6eef6948ae6dbfdb7ba87cf3e161a641b27f952eb4f13b18e351d4e7e344675f0dc9"
     "6e0cd5e"},
    {CipherSuite::kAes256GcmSha512,
     "615d3235362d6269742d626173652d6b65792d666f722d746573742121212121",
     "f633519ec99705bae4bcc7fe0f88ccd3c0301355d97d2265773d8b80ccf23ca39d500bc2d5399315bf78bfc5ed69"
     "f8be7b6799cfb35691ffe2db6126ab9e897d",
     "03a7b0a238bde6d398c0c8de14538c31c8f84a4356a01f5ca00d9a46d4046953", "2c82451648c8d25e94b8dbdc",
     "2c82451648c8d27494b8dbdd",
     "09399b821a1452a320a8bf927c004c71f8fd34449070f99746ff6ab0ef67a4f93b7f889e64d194a7b18a7a946184f"
     "ed15386"},
};
// The draft's immutable properties: its own u16-type encoding (Key ID 7, then "relay-ok").
constexpr char kDraftImmutable[] = "0002010700040872656c61792d6f6b";
constexpr char kDraftPt[] = "0e68656c6c6f2066726f6d206d6f71000a1001000d666f722d657965732d6f6e6c79";
constexpr char kDraftAad[] = "000000000000002a00000001800002010700040872656c61792d6f6b";

TEST(DraftVectors, KeyScheduleEncryptionAndDecryptionForSuites4And5) {
  const Bytes ftn = SerializeFullTrackName(Ftn({"example.com", "meeting-123"}, "video"));
  for (const DraftSuite& v : kDraftSuites) {
    SCOPED_TRACE(static_cast<int>(v.suite));
    const SuiteParams& p = ParamsOf(v.suite);
    auto secret = HkdfExtract(p.hash, {}, H(v.base_key));
    ASSERT_TRUE(secret.ok());
    EXPECT_EQ(X(*secret), v.secret);
    auto m = DeriveObjectKey(v.suite, H(v.base_key), ftn, 7);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_EQ(X(m->key), v.key);
    EXPECT_EQ(X(m->salt), v.salt);
    auto nonce = MakeNonce(m->salt, 42, 1);
    ASSERT_TRUE(nonce.ok());
    EXPECT_EQ(X(*nonce), v.nonce_42_1);
    const Bytes aad = BuildAad({42, 1, 128}, H(kDraftImmutable));
    EXPECT_EQ(X(aad), kDraftAad);
    auto key = AeadKey::Create(v.suite, m->key);
    ASSERT_TRUE(key.ok());
    Bytes ct;
    ASSERT_TRUE(key->Seal(*nonce, aad, H(kDraftPt), &ct).ok());
    EXPECT_EQ(X(ct), v.ct);
    // The receiver path: the draft's pt carries an EPL after the payload, which is accepted.
    auto opened = OpenPayload(*key, m->salt, {42, 1, 128}, H(kDraftImmutable), H(v.ct));
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    EXPECT_EQ(Bytes(opened->payload().begin(), opened->payload().end()), S("hello from moq"));
  }
}

TEST(DraftVectors, NonceAndAad) {
  Nonce salt{};
  Bytes s = H("dc11a8d516c299f44b24be8d");
  std::copy(s.begin(), s.end(), salt.begin());
  struct Row {
    uint64_t g, o;
    uint8_t prio;
    const char *nonce, *aad;
  };
  for (const Row& r :
       {Row{0, 0, 0, "dc11a8d516c299f44b24be8d", "0000000000000000000000000000020107"},
        Row{42, 1, 128, "dc11a8d516c299de4b24be8c", "000000000000002a000000018000020107"},
        Row{UINT64_MAX, 0xFFFFFFFFu, 255, "23ee572ae93d660bb4db4172",
            "ffffffffffffffffffffffffff00020107"}}) {
    EXPECT_EQ(X(*MakeNonce(salt, r.g, r.o)), r.nonce);
    EXPECT_EQ(X(BuildAad({r.g, r.o, r.prio}, H("00020107"))), r.aad);
  }
  auto too_large = MakeNonce(salt, 0, uint64_t{1} << 32);
  EXPECT_TRUE(too_large.status().Is(SecureObjectError::kObjectIdTooLarge));
}

TEST(CipherSuites, OnlyTheGcmSuitesAreImplemented) {
  EXPECT_TRUE(LookupSuite(4).ok());
  EXPECT_TRUE(LookupSuite(5).ok());
  for (uint16_t v : {0, 1, 2, 3, 6, 0xF000}) {
    EXPECT_TRUE(LookupSuite(v).status().Is(SecureObjectError::kUnsupportedSuite)) << v;
  }
  EXPECT_TRUE(AeadKey::Create(CipherSuite::kAes128GcmSha256, Bytes(32))
                  .status()
                  .Is(SecureObjectError::kBadKey));
}

// ---------------------------------------------------------------- the KVCS format table

const std::vector<std::string> kNs = {"kvcs-1", "scope", "compat", "anchor", "pub"};
Bytes ScopeSecret() {
  Bytes s(32);
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<uint8_t>(i + 1);
  return s;
}

struct FormatVector {
  const char* name;
  CipherSuite suite;
  uint64_t key_id;
  const char* track;
  ObjectPosition pos;
  std::string_view payload;
  const char* base_key;   // DeriveTrackBaseKey(ScopeSecret(), kNs, key_id)
  const char* immutable;  // the Immutable Properties (0x0B) value
  const char* ct;         // the object's payload on the wire
};
// Computed with Python `cryptography` (HKDF, AESGCM) from the definitions, not from this code.
const FormatVector kFormatVectors[] = {
    {"aes128 layer 3 block 1",
     CipherSuite::kAes128GcmSha256,
     0,
     "k.raw.s0",
     {3, 1, 12},
     "KVO1 sixteen+ bytes of KV",
     "fcfdd431f4e4bb1e0cc53a7516cfbd37e05ef6db842b07101abc8a0597163fcb",
     "7800",
     "e2aaa0299f96e82cbb2dcd13ee181d5ad91bcfcaa3dc36576e8597e8f50719a5cb53b42dd8d8e5d5a2b2"},
    {"aes256 key id 9 manifest",
     CipherSuite::kAes256GcmSha512,
     9,
     "manifest",
     {0, 0, 0},
     "{\"kvcs\":1}",
     "0161c8907741e8c8ec4b27b267d110f1a9da28e2d86ff689f4f5f07916ab91e2",
     "78090205",
     "b50c369404e8908e09b6c613db9516da699b873741cd0d3eda72fd"},
    {"aes128 empty payload",
     CipherSuite::kAes128GcmSha256,
     200,
     "v.raw.s0",
     {31, 0, 124},
     "",
     "4b7fffdf50880377c6d47fed570a1265bc178485c10535cd033d53235609eb99",
     "7880c8",
     "f87b47ca9bf7765cd4b69b7d8bad8b8178"},
};

ScopeKeyring Keyring(uint64_t key_id) {
  ScopeKeyring k;
  EXPECT_TRUE(k.Add(key_id, ScopeSecret()).ok());
  return k;
}

TEST(FormatVectors, Encode) {
  for (const FormatVector& v : kFormatVectors) {
    SCOPED_TRACE(v.name);
    auto base = DeriveTrackBaseKey(ScopeSecret(), Ftn(kNs, v.track).track_namespace, v.key_id);
    ASSERT_TRUE(base.ok());
    EXPECT_EQ(X(*base), v.base_key);
    EXPECT_EQ(X(EncodeImmutable(v.suite, v.key_id)), v.immutable);
    ObjectSealer sealer(Keyring(v.key_id), v.suite, v.key_id);
    auto sealed = sealer.Seal(Ftn(kNs, v.track), v.pos, AsBytes(v.payload));
    ASSERT_TRUE(sealed.ok()) << sealed.status().ToString();
    EXPECT_EQ(X(sealed->payload), v.ct);
    ASSERT_EQ(sealed->properties.size(), 1u);
    EXPECT_EQ(sealed->properties[0].type, 0x0Bu);
    EXPECT_EQ(X(AsBytes(sealed->properties[0].bytes)), v.immutable);
  }
}

moqt::Properties Props(const char* immutable_hex) {
  Bytes b = H(immutable_hex);
  return {moqt::KeyValuePair::Blob(0x0B, std::string(b.begin(), b.end()))};
}

TEST(FormatVectors, Decode) {
  for (const FormatVector& v : kFormatVectors) {
    SCOPED_TRACE(v.name);
    ObjectOpener opener(Keyring(v.key_id));
    moqt::Properties props = Props(v.immutable);
    auto ref = ParseKeyRef(&props);
    ASSERT_TRUE(ref.ok());
    EXPECT_EQ(ref->key_id, v.key_id);
    EXPECT_EQ(ref->suite, v.suite);
    auto o = opener.Open(Ftn(kNs, v.track), v.pos, &props, H(v.ct));
    ASSERT_TRUE(o.ok()) << o.status().ToString();
    EXPECT_EQ(Bytes(o->payload().begin(), o->payload().end()), S(v.payload));
  }
}

TEST(FormatVectors, EveryTruncationIsRejected) {
  for (const FormatVector& v : kFormatVectors) {
    SCOPED_TRACE(v.name);
    ObjectOpener opener(Keyring(v.key_id));
    moqt::Properties props = Props(v.immutable);
    const Bytes ct = H(v.ct);
    for (size_t n = 0; n < ct.size(); ++n) {
      auto o = opener.Open(Ftn(kNs, v.track), v.pos, &props, ByteSpan(ct).first(n));
      ASSERT_FALSE(o.ok()) << n;
      EXPECT_TRUE(o.status().Is(n < kTagBytes ? SecureObjectError::kTooShort
                                              : SecureObjectError::kAuthFailed))
          << n << " " << o.status().ToString();
    }
    // The immutable properties cut byte by byte: each prefix either fails to parse or fails
    // authentication.
    const Bytes imm = H(v.immutable);
    for (size_t n = 0; n < imm.size(); ++n) {
      moqt::Properties cut = {
          moqt::KeyValuePair::Blob(0x0B, std::string(imm.begin(), imm.begin() + n))};
      EXPECT_FALSE(opener.Open(Ftn(kNs, v.track), v.pos, &cut, ct).ok()) << n;
    }
  }
}

TEST(FormatVectors, EveryBitFlipIsRejected) {
  for (const FormatVector& v : kFormatVectors) {
    SCOPED_TRACE(v.name);
    ObjectOpener opener(Keyring(v.key_id));
    // Hold many Key IDs, so that most flips of the Key ID reach the AEAD rather than the keyring.
    for (uint64_t k = 0; k + 1 < kMaxScopeEpochs; ++k) (void)opener.AddKey(k, ScopeSecret());
    const Bytes ct = H(v.ct);
    const Bytes imm = H(v.immutable);
    const moqt::Properties props = Props(v.immutable);
    for (size_t bit = 0; bit < ct.size() * 8; ++bit) {
      Bytes c = ct;
      c[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
      auto o = opener.Open(Ftn(kNs, v.track), v.pos, &props, c);
      EXPECT_TRUE(o.status().Is(SecureObjectError::kAuthFailed)) << "ct bit " << bit;
    }
    for (size_t bit = 0; bit < imm.size() * 8; ++bit) {
      Bytes i = imm;
      i[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
      moqt::Properties p = {moqt::KeyValuePair::Blob(0x0B, std::string(i.begin(), i.end()))};
      EXPECT_FALSE(opener.Open(Ftn(kNs, v.track), v.pos, &p, ct).ok()) << "immutable bit " << bit;
    }
    // Every header field the AAD or the KDF binds: group, object, priority, track, namespace.
    for (int bit = 0; bit < 64; ++bit) {
      ObjectPosition p = v.pos;
      p.group ^= uint64_t{1} << bit;
      EXPECT_FALSE(opener.Open(Ftn(kNs, v.track), p, &props, ct).ok()) << "group bit " << bit;
    }
    for (int bit = 0; bit < 32; ++bit) {
      ObjectPosition p = v.pos;
      p.object ^= uint64_t{1} << bit;
      EXPECT_FALSE(opener.Open(Ftn(kNs, v.track), p, &props, ct).ok()) << "object bit " << bit;
    }
    for (int bit = 0; bit < 8; ++bit) {
      ObjectPosition p = v.pos;
      p.publisher_priority ^= static_cast<uint8_t>(1u << bit);
      EXPECT_FALSE(opener.Open(Ftn(kNs, v.track), p, &props, ct).ok()) << "prio bit " << bit;
    }
    std::string other = v.track;
    other[0] ^= 1;
    EXPECT_TRUE(opener.Open(Ftn(kNs, other), v.pos, &props, ct)
                    .status()
                    .Is(SecureObjectError::kAuthFailed));
    std::vector<std::string> ns = kNs;
    ns[4] = "pub2";  // another publication of the same content
    EXPECT_TRUE(opener.Open(Ftn(ns, v.track), v.pos, &props, ct)
                    .status()
                    .Is(SecureObjectError::kAuthFailed));
  }
}

TEST(SecureObject, KeyRefErrorsAreTyped) {
  EXPECT_TRUE(ParseKeyRef(nullptr).status().Is(SecureObjectError::kNoKeyId));
  moqt::Properties none;
  EXPECT_TRUE(ParseKeyRef(&none).status().Is(SecureObjectError::kNoKeyId));
  moqt::Properties no_key = Props("0205");  // type 2 only
  EXPECT_TRUE(ParseKeyRef(&no_key).status().Is(SecureObjectError::kNoKeyId));
  moqt::Properties bad = Props("78");  // a value missing
  EXPECT_TRUE(ParseKeyRef(&bad).status().Is(SecureObjectError::kMalformedKeyId));
  moqt::Properties twice = Props("78070007");  // Key ID, then the same type again
  EXPECT_TRUE(ParseKeyRef(&twice).status().Is(SecureObjectError::kMalformedKeyId));
  moqt::Properties suite1 = Props("78070201");  // suite 1 (CTR-HMAC): not implemented
  EXPECT_TRUE(ParseKeyRef(&suite1).status().Is(SecureObjectError::kUnsupportedSuite));
  ObjectOpener opener(Keyring(3));
  moqt::Properties other = Props("7804");
  auto o = opener.Open(Ftn(kNs, "k.raw.s0"), {0, 0, 0}, &other, Bytes(40));
  EXPECT_TRUE(o.status().Is(SecureObjectError::kUnknownKeyId));
  EXPECT_NE(o.status().message().find("Key ID 4"), std::string::npos) << o.status().ToString();
  EXPECT_EQ(opener.failed(), 1u);
}

TEST(SecureObject, PlaintextFraming) {
  EXPECT_EQ(X(*EncodePlaintext(S("ab"))), "026162");
  EXPECT_TRUE(DecodePlaintext(H("026162")).ok());
  EXPECT_TRUE(DecodePlaintext(H("0261626363")).status().Is(SecureObjectError::kMalformedPlaintext));
  EXPECT_TRUE(DecodePlaintext(H("036162")).status().Is(SecureObjectError::kMalformedPlaintext));
  EXPECT_TRUE(DecodePlaintext(H("026162000a00")).ok());  // an empty EPL
  EXPECT_TRUE(DecodePlaintext(H("026162000a0200"))
                  .status()
                  .Is(SecureObjectError::kMalformedPlaintext));  // EPL length past the end
  EXPECT_TRUE(DecodePlaintext({}).status().Is(SecureObjectError::kMalformedPlaintext));
}

TEST(ScopeKeys, PublicationsAndEpochsGetDistinctBaseKeysAndRotationKeepsOldObjectsReadable) {
  moqt::TrackNamespace a = kNs, b = kNs;
  b[4] = "other";
  auto ka0 = DeriveTrackBaseKey(ScopeSecret(), a, 0), kb0 = DeriveTrackBaseKey(ScopeSecret(), b, 0),
       ka1 = DeriveTrackBaseKey(ScopeSecret(), a, 1);
  ASSERT_TRUE(ka0.ok() && kb0.ok() && ka1.ok());
  EXPECT_NE(*ka0, *kb0);
  EXPECT_NE(*ka0, *ka1);
  EXPECT_TRUE(DeriveTrackBaseKey(Bytes(8), a, 0).status().Is(SecureObjectError::kBadKey));

  Bytes epoch1(32, 0x5A);
  ObjectSealer sealer(Keyring(0), CipherSuite::kAes128GcmSha256, 0);
  auto before = sealer.Seal(Ftn(kNs, "k.raw.s0"), {0, 0, 0}, S("old"));
  EXPECT_TRUE(sealer.SetKeyId(1).Is(SecureObjectError::kUnknownKeyId));
  ASSERT_TRUE(sealer.AddKey(1, epoch1).ok());
  ASSERT_TRUE(sealer.SetKeyId(1).ok());
  auto after = sealer.Seal(Ftn(kNs, "k.raw.s0"), {1, 0, 0}, S("new"));
  ASSERT_TRUE(before.ok() && after.ok());
  ObjectOpener both(Keyring(0));
  ASSERT_TRUE(both.AddKey(1, epoch1).ok());
  EXPECT_TRUE(
      both.Open(Ftn(kNs, "k.raw.s0"), {0, 0, 0}, &before->properties, before->payload).ok());
  EXPECT_TRUE(both.Open(Ftn(kNs, "k.raw.s0"), {1, 0, 0}, &after->properties, after->payload).ok());
  ObjectOpener old_only(Keyring(0));
  EXPECT_TRUE(old_only.Open(Ftn(kNs, "k.raw.s0"), {1, 0, 0}, &after->properties, after->payload)
                  .status()
                  .Is(SecureObjectError::kUnknownKeyId));
  // Another scope's secret under the same Key ID: authentication fails.
  ScopeKeyring stranger;
  ASSERT_TRUE(stranger.Add(0, Bytes(32, 0x77)).ok());
  ObjectOpener s(stranger);
  EXPECT_TRUE(s.Open(Ftn(kNs, "k.raw.s0"), {0, 0, 0}, &before->properties, before->payload)
                  .status()
                  .Is(SecureObjectError::kAuthFailed));
}

}  // namespace
}  // namespace kvcs::secure
