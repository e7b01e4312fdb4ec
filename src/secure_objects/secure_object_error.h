// Typed errors of the secure-objects folder (draft-ietf-moq-secure-objects): why an object could
// not be protected or was discarded on receipt. Every failure is a Status whose detail is a
// SecureObjectError, so callers (the KVCS consumer) can report the exact reason.
#ifndef KVCS_SECURE_OBJECTS_SECURE_OBJECT_ERROR_H_
#define KVCS_SECURE_OBJECTS_SECURE_OBJECT_ERROR_H_

#include <string>
#include <string_view>

#include "common/status.h"

namespace kvcs::secure {

enum class SecureObjectError {
  kNone = 0,
  kUnsupportedSuite = 1,  // a cipher suite value we do not implement or do not accept
  kBadKey,                // a base key or derived key of the wrong length
  kNoKeyId,               // the object carries no Key ID (not protected, or stripped)
  kMalformedKeyId,        // the Immutable Properties or the Key ID do not parse
  kUnknownKeyId,          // the Key ID is not in the receiver's keyring
  kObjectIdTooLarge,      // Object ID >= 2^32: no nonce for it (draft §4)
  kTooShort,              // the payload is shorter than the tag
  kTooLarge,              // a payload above kMaxPlaintextBytes
  kAuthFailed,            // the AEAD tag does not verify (tampered, wrong key, wrong location)
  kMalformedPlaintext,    // the decrypted bytes are not varint(len) ‖ payload ‖ [EPL]
  kCryptoFailure,         // OpenSSL refused an operation (should not happen)
};
std::string_view SecureObjectErrorName(SecureObjectError e);

inline Status SecureStatus(Code code, SecureObjectError e, std::string message) {
  return {code,
          "secure objects: " + std::string(SecureObjectErrorName(e)) + ": " + std::move(message),
          static_cast<int>(e)};
}

}  // namespace kvcs::secure

#endif  // KVCS_SECURE_OBJECTS_SECURE_OBJECT_ERROR_H_
