// User metadata (x-amz-meta-*) as S3 handles it: how a received header becomes the stored text,
// how the stored text becomes a response header, and the 2 KiB bound. docs/protocols/s3-api.md
// "User metadata" has the rules and what AWS S3 and Ceph radosgw do.
//
// The stored form is UTF-8 text. Received values are decoded (AWS's rule: "character decoded as
// per RFC 2047 before storing"): a value made only of RFC 2047 encoded-words (UTF-8, US-ASCII or
// ISO-8859-1; B or Q) becomes the text it encodes; any other value is taken as HTTP defines field
// bytes, ISO-8859-1 (ASCII stays as it is; a byte 0x80..0xFF becomes that Latin-1 character).
// Responses carry printable ASCII as it is and anything else RFC 2047-encoded in UTF-8 (Q, or B
// when the text holds control characters), as AWS S3 answers.
//
// Pure; thread-safe. Used by the S3 handlers (requests and responses) and by the S3 client
// (src/s3client: what it sends to a backend and reads back).
#ifndef KVCS_S3_USER_METADATA_H_
#define KVCS_S3_USER_METADATA_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "http/headers.h"

namespace kvcs::s3 {

inline constexpr std::string_view kUserMetaPrefix = "x-amz-meta-";

using UserMetadata = std::vector<std::pair<std::string, std::string>>;

// The stored (UTF-8) text of a received x-amz-meta-* value. Never fails: a value that is not a
// well-formed encoded-word sequence is kept as its Latin-1 characters.
std::string DecodeUserMetadataValue(std::string_view header_value);

// The response header value of a stored value (the inverse of DecodeUserMetadataValue for text
// that DecodeUserMetadataValue produced).
std::string EncodeUserMetadataValue(std::string_view stored);

// The user metadata of a request's headers: names after "x-amz-meta-" lowercased (S3 stores
// them so), a name received more than once joined with "," in received order (as HTTP folds
// repeated fields), values decoded. More than store::kMaxUserMetadataBytes (names plus values,
// UTF-8 bytes, as S3 measures) → MetadataTooLarge.
Result<UserMetadata> UserMetadataFromHeaders(const http::HeaderList& headers);

}  // namespace kvcs::s3

#endif  // KVCS_S3_USER_METADATA_H_
