// TestSigner: a token issuer for relay tests. It makes a fresh ES256 key pair (kid "k1"), gives
// the Verifier a relay checks setup tokens with, and mints AUTHORIZATION TOKENs (auth/token.h)
// granting actions on one namespace prefix until an expiry, or forged ones (a valid token with
// its signature altered).
// THREADING: immutable after construction.
#ifndef KVCS_RELAY_TEST_TOOLS_TEST_SIGNER_H_
#define KVCS_RELAY_TEST_TOOLS_TEST_SIGNER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "auth/token.h"
#include "moqt/moqt_messages.h"

namespace kvcs::relay::test {

class TestSigner {
 public:
  TestSigner();
  // Verifies what this signer mints (RelayOptions::verifier).
  std::shared_ptr<const auth::Verifier> verifier() const { return verifier_; }
  // One AUTHORIZATION TOKEN (type 1, the compact JWT) granting `actions` on namespaces starting
  // with `prefix` (token fields: text, KVCS binary fields as hex) until `exp` (seconds).
  std::vector<moqt::AuthToken> Token(std::vector<auth::Action> actions,
                                     std::vector<std::string> prefix, int64_t exp) const;
  // The same token with one character of its signature changed: fails to verify (forged).
  std::vector<moqt::AuthToken> Forged(std::vector<auth::Action> actions,
                                      std::vector<std::string> prefix, int64_t exp) const;

 private:
  std::string private_pem_;
  std::shared_ptr<const auth::Verifier> verifier_;
};

}  // namespace kvcs::relay::test

#endif  // KVCS_RELAY_TEST_TOOLS_TEST_SIGNER_H_
