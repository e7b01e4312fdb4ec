// SigV4 request signing for the S3 client: composes the s3 module's canonical-request building
// blocks (s3/sigv4.h: BuildCanonicalHeaders, CanonicalQueryString, CanonicalRequest, StringToSign,
// SigningKey, SignHex), so the server's verifier and this signer share one canonical-request
// implementation.
//
// Pure logic: the request is passed in as decoded parts and the current time as an argument.
// Every header present when Sign is called is signed (names lowercased and sorted, values in
// s3::CanonicalHeaderValue's form: trimmed, inner runs of spaces collapsed, exactly as the server
// verifies them); the caller adds host and any content headers first. Thread-safe.
#ifndef KVCS_S3CLIENT_SIGNER_H_
#define KVCS_S3CLIENT_SIGNER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kvcs::s3client {

using HeaderPairs = std::vector<std::pair<std::string, std::string>>;

struct Credentials {
  std::string access_key;
  std::string secret_key;
  std::string region = "us-east-1";
};

// One request to sign. `path` is the decoded path ("/bucket/my key"); `query` holds decoded pairs.
struct SignableRequest {
  std::string method;
  std::string path;
  HeaderPairs query;
  HeaderPairs headers;  // must contain "host"; Sign appends x-amz-date, x-amz-content-sha256 and
                        // authorization
};

// "20130524T000000Z" for Unix seconds.
std::string FormatAmzDate(int64_t unix_seconds);

// The request target as sent on the wire: SigV4-encoded path, then '?' and the canonical query
// (sorted, encoded) when there is one. Using the canonical encoding on the wire means the server
// decodes exactly what was signed.
std::string RequestTarget(const SignableRequest& req);

// Signs `req` in place. `payload_hash` is the lowercase hex SHA-256 of the body or
// UNSIGNED-PAYLOAD.
void Sign(const Credentials& creds, int64_t now_unix, std::string_view payload_hash,
          SignableRequest* req);

}  // namespace kvcs::s3client

#endif  // KVCS_S3CLIENT_SIGNER_H_
