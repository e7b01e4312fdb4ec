// AWS Signature Version 4 verification for S3 (Authorization header and presigned URLs), plus
// the per-chunk signatures of STREAMING-AWS4-HMAC-SHA256-PAYLOAD bodies (see chunked.h).
//
// Pure logic: the request is passed in as decoded parts and the current time as an argument.
// Errors are Statuses carrying an S3Error (SignatureDoesNotMatch, InvalidAccessKeyId,
// RequestTimeTooSkewed, AuthorizationHeaderMalformed, ...). Thread-safe.
#ifndef KVCS_S3_SIGV4_H_
#define KVCS_S3_SIGV4_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/crypto.h"
#include "common/status.h"

namespace kvcs::s3 {

inline constexpr char kUnsignedPayload[] = "UNSIGNED-PAYLOAD";
inline constexpr char kStreamingSignedPayload[] = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD";
inline constexpr char kStreamingUnsignedTrailer[] = "STREAMING-UNSIGNED-PAYLOAD-TRAILER";
inline constexpr char kEmptySha256Hex[] =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
// AWS allows 15 minutes between the client's clock and the server's.
inline constexpr int64_t kMaxClockSkewSeconds = 15 * 60;
// Presigned URLs may live at most 7 days (AWS's limit).
inline constexpr int64_t kMaxPresignExpirySeconds = 7 * 24 * 3600;
// More signed headers than this is certainly not a real client.
inline constexpr size_t kMaxSignedHeaders = 64;

using HeaderPairs = std::vector<std::pair<std::string, std::string>>;

// What the verifier needs from one HTTP request.
struct SigV4Input {
  std::string_view method;
  std::string_view path;                 // percent-decoded path, e.g. "/bucket/my key"
  const HeaderPairs* query = nullptr;    // decoded query pairs in received order
  const HeaderPairs* headers = nullptr;  // headers as received (any case)
};

struct SigV4Result {
  std::string access_key;
  // The payload hash the signature covers: a lowercase hex SHA-256, UNSIGNED-PAYLOAD,
  // STREAMING-AWS4-HMAC-SHA256-PAYLOAD or STREAMING-UNSIGNED-PAYLOAD-TRAILER.
  std::string payload_hash;
  bool presigned = false;
  // For streaming signed payloads: the seed signature and what chunk signatures are made of.
  std::string seed_signature;  // hex
  std::string amz_date;        // "20130524T000000Z"
  std::string scope;           // "20130524/us-east-1/s3/aws4_request"
  Digest signing_key{};
};

// Verifies the request's SigV4 signature (header or presigned query). `secrets` maps access key
// ids to secret keys. `now_unix` is the server's current time in seconds.
// Fails with AccessDenied when the request carries no SigV4 credentials at all.
Result<SigV4Result> VerifySigV4(const SigV4Input& in,
                                const std::map<std::string, std::string>& secrets,
                                int64_t now_unix);

// True when the request carries SigV4 credentials (header or query).
bool HasSigV4(const SigV4Input& in);

// Building blocks (exposed for tests and for clients: the S3 client's signer,
// src/s3client/signer.h, builds its canonical request from these, so signer and verifier cannot
// disagree).

// A header value as SigV4 signs it (AWS's rule): leading and trailing whitespace trimmed, every
// inner run of whitespace collapsed to one space. Spaces and tabs count as whitespace.
std::string CanonicalHeaderValue(std::string_view value);

// The CanonicalHeaders and SignedHeaders parts of a canonical request.
struct CanonicalHeaders {
  std::string canonical;       // "name:value\n" for each signed name
  std::string signed_headers;  // "name;name;..."
  std::string missing;         // a signed name the request has no header for; empty when none
};
// Builds both for `signed_names` (lowercase, in the order given) from `headers` (names in any
// case). A name's value is CanonicalHeaderValue of each header of that name, in received order,
// joined with ','. When a name has no header, `missing` says which (the block is then useless).
CanonicalHeaders BuildCanonicalHeaders(const HeaderPairs& headers,
                                       const std::vector<std::string>& signed_names);
// Every header name in `headers`, lowercased, sorted, each once: what a signer that signs all of
// a request's headers passes to BuildCanonicalHeaders.
std::vector<std::string> AllHeaderNames(const HeaderPairs& headers);

std::string CanonicalQueryString(const HeaderPairs& query, bool skip_signature);
std::string CanonicalRequest(std::string_view method, std::string_view canonical_uri,
                             std::string_view canonical_query, std::string_view canonical_headers,
                             std::string_view signed_headers, std::string_view payload_hash);
std::string StringToSign(std::string_view amz_date, std::string_view scope,
                         std::string_view canonical_request);
Digest SigningKey(std::string_view secret, std::string_view date, std::string_view region,
                  std::string_view service);
std::string SignHex(const Digest& signing_key, std::string_view string_to_sign);
// The string to sign for one aws-chunked chunk.
std::string ChunkStringToSign(std::string_view amz_date, std::string_view scope,
                              std::string_view previous_signature, const Digest& chunk_sha256);

}  // namespace kvcs::s3

#endif  // KVCS_S3_SIGV4_H_
