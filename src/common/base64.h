// Base64 (RFC 4648 §4, padded: S3's Content-MD5) and base64url (§5, unpadded: JWS/JWT), strict:
// one text per byte string. Decoding refuses characters outside the alphabet, wrong or missing
// padding, impossible lengths and non-zero trailing bits (no malleable encodings). Pure.
#ifndef KVCS_COMMON_BASE64_H_
#define KVCS_COMMON_BASE64_H_

#include <string>
#include <string_view>

#include "common/bytes.h"
#include "common/status.h"

namespace kvcs {

enum class Base64Alphabet {
  kStandard,  // A-Z a-z 0-9 + /, padded with '=' to a multiple of 4
  kUrl,       // A-Z a-z 0-9 - _, no padding
};

std::string Base64Encode(ByteSpan bytes, Base64Alphabet alphabet = Base64Alphabet::kStandard);
// kInvalidArgument with the reason on any deviation from the canonical text.
Result<Bytes> Base64Decode(std::string_view text,
                           Base64Alphabet alphabet = Base64Alphabet::kStandard);

}  // namespace kvcs

#endif  // KVCS_COMMON_BASE64_H_
