#include "auth/token.h"

#include <gtest/gtest.h>
#include <jwt.h>
#include <openssl/evp.h>

#include "common/pem_key.h"

namespace kvcs::auth {
namespace {

// RFC 7515 Appendix A.3: an ES256 JWS and its P-256 public key (x, y of the JWK as SPKI PEM).
constexpr const char* kRfcPublicPem =
    "-----BEGIN PUBLIC KEY-----\n"
    "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEf83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEXH8UTNG72bfocs"
    "3+257rn0s2ldbqkLJK2KRiMohYjlrQ==\n"
    "-----END PUBLIC KEY-----\n";
constexpr const char* kRfcToken =
    "eyJhbGciOiJFUzI1NiJ9."
    "eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVl"
    "fQ."
    "DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q";

const std::string kScopeHex(64, 'a');

struct KeyPair {
  std::string priv, pub;
};
KeyPair NewKey(const char* type = "EC") {
  EVP_PKEY* k = std::string_view(type) == "EC" ? EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256")
                                               : EVP_PKEY_Q_keygen(nullptr, nullptr, type);
  auto owned = OwnKey(k);
  return {PrivatePemOf(k), PublicPemOf(k)};
}

Claims Sample() {
  Claims c;
  c.sub = "store-1";
  c.iat = 1000;
  c.nbf = 1000;
  c.exp = 2000;
  c.grants.push_back({{Action::kLookup, Action::kRegister}, {{"kvcs-1", kScopeHex}}});
  c.grants.push_back({{Action::kSubscribe}, {{"kvcs-1"}}});
  return c;
}

class TokenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(ring_.Add("k1", key_.pub).ok());
    ASSERT_TRUE(ring_.Add("other", other_.pub).ok());
  }
  Status VerifyAt(const std::string& token, int64_t now) {
    return Verifier(ring_).Verify(token, now).status();
  }
  KeyPair key_ = NewKey(), other_ = NewKey();
  Keyring ring_;
};

TEST(TokenFormat, LibjwtVerifiesTheRfc7515Es256Example) {
  jwt_t* jwt = nullptr;
  std::string pem = kRfcPublicPem;
  ASSERT_EQ(jwt_decode(&jwt, kRfcToken, reinterpret_cast<const unsigned char*>(pem.data()),
                       int(pem.size())),
            0);
  EXPECT_EQ(jwt_get_alg(jwt), JWT_ALG_ES256);
  EXPECT_STREQ(jwt_get_grant(jwt, "iss"), "joe");
  jwt_free(jwt);
  // One flipped signature bit fails.
  std::string bad = kRfcToken;
  bad[bad.size() - 3] = bad[bad.size() - 3] == 'N' ? 'M' : 'N';
  jwt = nullptr;
  EXPECT_NE(jwt_decode(&jwt, bad.c_str(), reinterpret_cast<const unsigned char*>(pem.data()),
                       int(pem.size())),
            0);
  jwt_free(jwt);
  // Our verifier refuses it anyway: no kid.
  Keyring ring;
  ASSERT_TRUE(ring.Add("rfc", kRfcPublicPem).ok());
  EXPECT_TRUE(Verifier(ring).Verify(kRfcToken, 0).status().Is(TokenError::kMalformed));
}

TEST(TokenFormat, Base64Url) {
  EXPECT_EQ(Base64UrlEncode("{\"alg\":\"ES256\"}"), "eyJhbGciOiJFUzI1NiJ9");
  EXPECT_EQ(*Base64UrlDecode("eyJhbGciOiJFUzI1NiJ9"), "{\"alg\":\"ES256\"}");
  for (std::string s : {"", "f", "fo", "foo", "foob", "\xff\xfe\xfd"}) {
    EXPECT_EQ(*Base64UrlDecode(Base64UrlEncode(s)), s);
  }
  EXPECT_FALSE(Base64UrlDecode("eyJ=").ok());
  EXPECT_FALSE(Base64UrlDecode("ey+/").ok());
  EXPECT_FALSE(Base64UrlDecode("a").ok());
  EXPECT_FALSE(Base64UrlDecode("Zh").ok());  // "f" is "Zg": non-zero trailing bits
}

TEST(TokenFormat, ClaimsCanonicalJsonAndStrictParse) {
  std::string j = ClaimsJson(Sample());
  EXPECT_EQ(
      j,
      R"({"sub":"store-1","iat":1000,"nbf":1000,"exp":2000,"grants":[{"actions":["lookup","register"],"prefixes":[["kvcs-1",")" +
          kScopeHex + R"("]]},{"actions":["subscribe"],"prefixes":[["kvcs-1"]]}]})");
  auto back = ParseClaims(j);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, Sample());
  const char* bad[] = {
      R"({"sub":"a","exp":1})",                                                  // no grants
      R"({"exp":1,"grants":[{"actions":["lookup"],"prefixes":[["kvcs-1"]]}]})",  // no sub
      R"({"sub":"a","exp":1.5,"grants":[{"actions":["lookup"],"prefixes":[["x"]]}]})",
      R"({"sub":"a","exp":-1,"grants":[{"actions":["lookup"],"prefixes":[["x"]]}]})",
      R"({"sub":"a","exp":"1","grants":[{"actions":["lookup"],"prefixes":[["x"]]}]})",
      R"({"sub":"a","exp":1,"grants":[{"actions":["admin"],"prefixes":[["x"]]}]})",
      R"({"sub":"a","exp":1,"grants":[{"actions":["lookup","lookup"],"prefixes":[["x"]]}]})",
      R"({"sub":"a","exp":1,"grants":[{"actions":["lookup"],"prefixes":[]}]})",
      R"({"sub":"a","exp":1,"grants":[{"actions":["lookup"],"prefixes":[[]]}]})",
      R"({"sub":"a","exp":1,"grants":[{"actions":["lookup"],"prefixes":[["a b"]]}]})",
      R"({"sub":"a","exp":1,"grants":[{"actions":["lookup"],"prefixes":[[""]]}]})",
      R"({"sub":"a","exp":1,"grants":[{"actions":["lookup"],"prefixes":[["x"]],"x":1}]})",
      R"({"sub":"a","exp":1,"admin":true,"grants":[{"actions":["lookup"],"prefixes":[["x"]]}]})",
      R"({"sub":"a","exp":1,"exp":2,"grants":[{"actions":["lookup"],"prefixes":[["x"]]}]})",
      R"({"sub":"a","exp":1,"grants":[]})",
      R"([])",
  };
  for (const char* b : bad) EXPECT_FALSE(ParseClaims(b).ok()) << b;
}

TEST(TokenFormat, AllowsMatchesActionAndNamespacePrefix) {
  Claims c = Sample();
  Namespace scope = {"kvcs-1", kScopeHex};
  Namespace deeper = {"kvcs-1", kScopeHex, std::string(64, 'c')};
  Namespace other = {"kvcs-1", std::string(64, 'b')};
  EXPECT_TRUE(c.Allows(Action::kLookup, scope));
  EXPECT_TRUE(c.Allows(Action::kRegister, deeper));
  EXPECT_FALSE(c.Allows(Action::kLookup, other));
  EXPECT_FALSE(c.Allows(Action::kPublish, scope));
  EXPECT_TRUE(c.Allows(Action::kSubscribe, other));     // the ["kvcs-1"] grant
  EXPECT_FALSE(c.Allows(Action::kLookup, {"kvcs-1"}));  // shorter than the prefix
  Digest id{};
  id.fill(0xaa);
  EXPECT_EQ(ScopeNamespace(id), scope);
}

TEST_F(TokenTest, MintThenVerify) {
  auto t = Mint(Sample(), "k1", key_.priv);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto c = Verifier(ring_).Verify(*t, 1500);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(*c, Sample());
  // The header is exactly alg, kid and typ.
  auto header = Base64UrlDecode(t->substr(0, t->find('.')));
  ASSERT_TRUE(header.ok());
  EXPECT_NE(header->find("\"kid\":\"k1\""), std::string::npos) << *header;
  EXPECT_NE(header->find("\"alg\":\"ES256\""), std::string::npos) << *header;
  // A "kid:" line before the PEM (kvcs keygen's files) is fine.
  EXPECT_TRUE(Mint(Sample(), "k1", "kid: k1\n" + key_.priv).ok());
}

TEST_F(TokenTest, TimeBounds) {
  std::string t = *Mint(Sample(), "k1", key_.priv);
  EXPECT_TRUE(VerifyAt(t, 1000).ok());
  EXPECT_TRUE(VerifyAt(t, 1999).ok());
  EXPECT_TRUE(VerifyAt(t, 2000).Is(TokenError::kExpired));
  EXPECT_TRUE(VerifyAt(t, 999).Is(TokenError::kNotYetValid));
  EXPECT_TRUE(Verifier(ring_, 30).Verify(t, 2029).ok());
  EXPECT_TRUE(Verifier(ring_, 30).Verify(t, 970).ok());
  EXPECT_EQ(VerifyAt(t, 2000).code(), Code::kPermissionDenied);
}

TEST_F(TokenTest, ForgedTokensFail) {
  std::string t = *Mint(Sample(), "k1", key_.priv);
  size_t d1 = t.find('.'), d2 = t.rfind('.');
  std::string header = t.substr(0, d1), payload = t.substr(d1 + 1, d2 - d1 - 1),
              sig = t.substr(d2 + 1);
  // Signed by another key, under k1's kid.
  std::string by_other = *Mint(Sample(), "k1", other_.priv);
  EXPECT_TRUE(VerifyAt(by_other, 1500).Is(TokenError::kBadSignature));
  // A payload granting more, with the original signature.
  Claims more = Sample();
  more.grants[0].prefixes.push_back({"kvcs-1"});
  std::string swapped = header + "." + Base64UrlEncode(ClaimsJson(more)) + "." + sig;
  EXPECT_TRUE(VerifyAt(swapped, 1500).Is(TokenError::kBadSignature));
  // A flipped signature character.
  std::string flipped = t;
  flipped[d2 + 5] = flipped[d2 + 5] == 'A' ? 'B' : 'A';
  EXPECT_TRUE(VerifyAt(flipped, 1500).Is(TokenError::kBadSignature));
  // alg none (unsigned), with and without an empty signature part.
  std::string none_h = Base64UrlEncode(R"({"alg":"none","kid":"k1"})");
  EXPECT_TRUE(VerifyAt(none_h + "." + payload + ".", 1500).Is(TokenError::kMalformed));
  EXPECT_TRUE(VerifyAt(none_h + "." + payload + "." + sig, 1500).Is(TokenError::kAlgNotAllowed));
  // HS256 keyed with the public key PEM (the classic alg confusion).
  jwt_t* hs = nullptr;
  ASSERT_EQ(jwt_new(&hs), 0);
  ASSERT_EQ(jwt_set_alg(hs, JWT_ALG_HS256, reinterpret_cast<const unsigned char*>(key_.pub.data()),
                        int(key_.pub.size())),
            0);
  jwt_add_header(hs, "kid", "k1");
  jwt_add_grants_json(hs, ClaimsJson(Sample()).c_str());
  char* hs_token = jwt_encode_str(hs);
  ASSERT_NE(hs_token, nullptr);
  EXPECT_TRUE(VerifyAt(hs_token, 1500).Is(TokenError::kAlgNotAllowed));
  free(hs_token);
  jwt_free(hs);
  for (const char* alg : {"RS256", "EdDSA", "ES384", "es256"}) {
    std::string h = Base64UrlEncode(std::string(R"({"alg":")") + alg + R"(","kid":"k1"})");
    EXPECT_TRUE(VerifyAt(h + "." + payload + "." + sig, 1500).Is(TokenError::kAlgNotAllowed))
        << alg;
  }
  // Unknown kid; a kid whose key is another one.
  std::string unknown = *Mint(Sample(), "nobody", key_.priv);
  EXPECT_TRUE(VerifyAt(unknown, 1500).Is(TokenError::kUnknownKid));
  std::string wrong_kid = *Mint(Sample(), "other", key_.priv);
  EXPECT_TRUE(VerifyAt(wrong_kid, 1500).Is(TokenError::kBadSignature));
}

TEST_F(TokenTest, MalformedTokensFail) {
  std::string t = *Mint(Sample(), "k1", key_.priv);
  size_t d1 = t.find('.'), d2 = t.rfind('.');
  std::string payload = t.substr(d1 + 1, d2 - d1 - 1), sig = t.substr(d2 + 1);
  auto with_header = [&](const std::string& h) {
    return Base64UrlEncode(h) + "." + payload + "." + sig;
  };
  EXPECT_TRUE(VerifyAt("", 1500).Is(TokenError::kMalformed));
  EXPECT_TRUE(VerifyAt("a.b", 1500).Is(TokenError::kMalformed));
  EXPECT_TRUE(VerifyAt(t + ".x", 1500).Is(TokenError::kMalformed));
  EXPECT_TRUE(VerifyAt("Bearer " + t, 1500).Is(TokenError::kMalformed));
  EXPECT_TRUE(
      VerifyAt(t.substr(0, d1) + "=." + payload + "." + sig, 1500).Is(TokenError::kMalformed));
  EXPECT_TRUE(VerifyAt(with_header("not json"), 1500).Is(TokenError::kMalformed));
  EXPECT_TRUE(VerifyAt(with_header(R"({"alg":"ES256"})"), 1500).Is(TokenError::kMalformed));
  EXPECT_TRUE(VerifyAt(with_header(R"({"alg":"ES256","kid":"k1","kid":"other"})"), 1500)
                  .Is(TokenError::kMalformed));
  EXPECT_TRUE(VerifyAt(with_header(R"({"alg":"ES256","kid":"k1","crit":["x"]})"), 1500)
                  .Is(TokenError::kMalformed));
  EXPECT_TRUE(VerifyAt(with_header(R"({"alg":"ES256","kid":"k1","jku":"https://x"})"), 1500)
                  .Is(TokenError::kMalformed));
  EXPECT_TRUE(VerifyAt(with_header(R"({"alg":"ES256","kid":"k1","typ":"at+jwt"})"), 1500)
                  .Is(TokenError::kMalformed));
  EXPECT_TRUE(VerifyAt(std::string(kMaxTokenBytes + 1, 'a'), 1500).Is(TokenError::kTooLarge));
  // Every truncation of a valid token fails.
  for (size_t n = 0; n < t.size(); ++n) EXPECT_FALSE(VerifyAt(t.substr(0, n), 1500).ok()) << n;
}

TEST(TokenKeyring, RefusesKeysThatAreNotP256) {
  Keyring ring;
  EXPECT_TRUE(ring.Add("e", NewKey("ED25519").pub).Is(TokenError::kBadKey));
  EXPECT_TRUE(ring.Add("x", "not a pem").Is(TokenError::kBadKey));
  EXPECT_TRUE(ring.Add("", NewKey().pub).Is(TokenError::kBadKey));
  KeyPair k = NewKey();
  EXPECT_TRUE(ring.Add("k", "kid: k\n" + k.pub).ok());
  EXPECT_EQ(ring.Add("k", k.pub).code(), Code::kAlreadyExists);
  EXPECT_TRUE(Mint(Sample(), "k", NewKey("ED25519").priv).status().Is(TokenError::kBadKey));
  EXPECT_TRUE(Mint(Sample(), "k", k.pub).status().Is(TokenError::kBadKey));
}

}  // namespace
}  // namespace kvcs::auth
