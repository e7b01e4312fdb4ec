#include "secure_objects/secure_object_error.h"

namespace kvcs::secure {

std::string_view SecureObjectErrorName(SecureObjectError e) {
  switch (e) {
    case SecureObjectError::kNone:
      return "none";
    case SecureObjectError::kUnsupportedSuite:
      return "unsupported cipher suite";
    case SecureObjectError::kBadKey:
      return "bad key";
    case SecureObjectError::kNoKeyId:
      return "no key id";
    case SecureObjectError::kMalformedKeyId:
      return "malformed key id";
    case SecureObjectError::kUnknownKeyId:
      return "unknown key id";
    case SecureObjectError::kObjectIdTooLarge:
      return "object id too large";
    case SecureObjectError::kTooShort:
      return "too short";
    case SecureObjectError::kTooLarge:
      return "too large";
    case SecureObjectError::kAuthFailed:
      return "authentication failed";
    case SecureObjectError::kMalformedPlaintext:
      return "malformed plaintext";
    case SecureObjectError::kCryptoFailure:
      return "crypto failure";
  }
  return "unknown";
}

}  // namespace kvcs::secure
