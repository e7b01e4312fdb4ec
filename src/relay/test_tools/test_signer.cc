// TestSigner: an ES256 key pair and tokens for relay tests (test_signer.h).
#include "relay/test_tools/test_signer.h"

#include <openssl/evp.h>

#include <cstdlib>
#include <iostream>

#include "common/pem_key.h"

namespace kvcs::relay::test {

namespace {
constexpr char kKid[] = "k1";

[[noreturn]] void Die(const std::string& what) {
  std::cerr << "TestSigner: " << what << "\n";
  std::abort();
}
}  // namespace

TestSigner::TestSigner() {
  std::shared_ptr<EVP_PKEY> key = OwnKey(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  if (!key) Die("cannot make a P-256 key");
  private_pem_ = PrivatePemOf(key.get());
  auth::Keyring ring;
  Status st = ring.Add(kKid, PublicPemOf(key.get()));
  if (!st.ok()) Die(st.message());
  verifier_ = std::make_shared<auth::Verifier>(std::move(ring));
}

std::vector<moqt::AuthToken> TestSigner::Token(std::vector<auth::Action> actions,
                                               std::vector<std::string> prefix, int64_t exp) const {
  auth::Claims c;
  c.sub = "tester";
  c.exp = exp;
  c.grants.push_back({std::move(actions), {std::move(prefix)}});
  auto t = auth::Mint(c, kKid, private_pem_);
  if (!t.ok()) Die(t.status().message());
  moqt::AuthToken a;
  a.token_type = 1;
  a.value = *t;
  return {a};
}

std::vector<moqt::AuthToken> TestSigner::Forged(std::vector<auth::Action> actions,
                                                std::vector<std::string> prefix,
                                                int64_t exp) const {
  std::vector<moqt::AuthToken> t = Token(std::move(actions), std::move(prefix), exp);
  // Inside the signature (its last character also carries padding bits that may be ignored).
  char& c = t[0].value[t[0].value.size() - 10];
  c = c == 'A' ? 'B' : 'A';
  return t;
}

}  // namespace kvcs::relay::test
