// The secure-relay part of `kvcs demo --encrypt` (cmd_demo.cc): a KVCS publication sealed with
// MOQT secure objects (docs/protocols/secure-objects.md) carried by a relay that cannot read it.
//
//   kvcs::cli::SecureRelayDemoOptions o;  // defaults: 16 blocks x 32 layers of Llama-3.1-8B
//   kvcs::Status s = kvcs::cli::RunSecureRelayDemo(o, std::cout);
//
// In process, over QUIC on 127.0.0.1: an encrypting Publisher announces its publication to a
// RelayServer (PUBLISH_NAMESPACE); a consumer of the scope retrieves the completed publication
// through the relay (which subscribes to the publisher, caches and serves the fetch), decrypts
// and verifies every block and layer; then every payload in the relay's cache is searched for
// samples of the plaintext KV, and a consumer holding another scope's key retrieves through the
// same cache and opens nothing. Prints what it found. Blocking; returns when done.
#ifndef KVCS_CLI_SECURE_RELAY_DEMO_H_
#define KVCS_CLI_SECURE_RELAY_DEMO_H_

#include <cstdint>
#include <ostream>

#include "common/status.h"
#include "secure_objects/cipher_suite.h"

namespace kvcs::cli {

struct SecureRelayDemoOptions {
  uint32_t blocks = 16;  // 16-token blocks; each block-layer section is 32 KiB per K and V
  secure::CipherSuite suite = secure::CipherSuite::kAes128GcmSha256;
};

// Errors: a step that failed (listen, connect, publish, retrieval incomplete, plaintext found).
Status RunSecureRelayDemo(const SecureRelayDemoOptions& options, std::ostream& out);

}  // namespace kvcs::cli

#endif  // KVCS_CLI_SECURE_RELAY_DEMO_H_
