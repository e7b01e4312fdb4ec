// Secure objects on KVCS tracks (issue 17; docs/protocols/secure-objects.md): the publisher's
// option to encrypt every data object and every manifest version, and the consumer's decryption
// step, applied to each Normal object before §3.5 / §3.6 verification.
//
// Keys come from the scope (secure_objects/scope_keys.h): the publisher seals with the Key ID it
// is told (default: the newest epoch of its keyring; a keyring defaults to epoch 0 = the scope
// key); the consumer opens with the Key ID each object names. An object that does not open
// (tampered, moved to another location or track, unknown Key ID, another scope's key) is
// discarded and reported, and so is treated as missing: recovery takes over. Objects without a
// Key ID are passed through as plaintext unless encryption is required.
// THREADING: single-threaded (as the Publisher and the Retrieval).
#ifndef KVCS_KVCS_STREAM_OBJECT_PROTECTION_H_
#define KVCS_KVCS_STREAM_OBJECT_PROTECTION_H_

#include <cstdint>
#include <optional>

#include "common/bytes.h"
#include "common/status.h"
#include "moqt_session/moqt_session.h"
#include "secure_objects/cipher_suite.h"
#include "secure_objects/scope_keys.h"
#include "secure_objects/track_crypto.h"

namespace kvcs::stream {

// Publisher: encrypt every object of the publication.
struct ObjectEncryption {
  secure::CipherSuite suite = secure::CipherSuite::kAes128GcmSha256;
  // Empty: epoch 0 = the publisher's scope key.
  secure::ScopeKeyring keyring;
  std::optional<uint64_t> key_id;  // default: keyring.newest()
};

// Consumer: decrypt what is encrypted.
struct ObjectDecryption {
  // The scope's epochs: at least secure::ScopeKeyring::FromScopeKey(scope key) (epoch 0).
  secure::ScopeKeyring keyring;
  // Refuse objects that carry no Key ID (kNotEncrypted) instead of verifying them as plaintext.
  bool require_encryption = false;
};

// The consumer's step in front of the verifier.
class PayloadDecryptor {
 public:
  explicit PayloadDecryptor(ObjectDecryption options);

  // The payload to verify for a Normal object `o` of `track`: o.payload itself when it is not
  // encrypted (and that is allowed), else the decrypted payload in *storage. Errors (the object
  // is discarded): kUnknownKeyId, kUndecryptable (authentication or format), kNotEncrypted.
  Result<ByteSpan> Open(const moqt::FullTrackName& track, const moqt::ReceivedObject& o,
                        secure::OpenedPayload* storage);

  uint64_t opened() const { return opener_.opened(); }
  uint64_t failed() const { return opener_.failed(); }

 private:
  secure::ObjectOpener opener_;
  bool require_encryption_;
};

}  // namespace kvcs::stream

#endif  // KVCS_KVCS_STREAM_OBJECT_PROTECTION_H_
