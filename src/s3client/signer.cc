#include "s3client/signer.h"

#include "common/utc_time.h"
#include "s3/http_util.h"
#include "s3/sigv4.h"

namespace kvcs::s3client {

std::string FormatAmzDate(int64_t unix_seconds) {
  return FormatUtc(unix_seconds, "%Y%m%dT%H%M%SZ");
}

std::string RequestTarget(const SignableRequest& req) {
  std::string target = s3::UriEncode(req.path.empty() ? "/" : req.path, false);
  if (!req.query.empty()) target += "?" + s3::CanonicalQueryString(req.query, false);
  return target;
}

void Sign(const Credentials& creds, int64_t now_unix, std::string_view payload_hash,
          SignableRequest* req) {
  const std::string amz_date = FormatAmzDate(now_unix);
  const std::string date = amz_date.substr(0, 8);
  req->headers.emplace_back("x-amz-date", amz_date);
  req->headers.emplace_back("x-amz-content-sha256", std::string(payload_hash));

  // Every header is signed, with the verifier's own canonical form (s3/sigv4.h).
  const s3::CanonicalHeaders ch =
      s3::BuildCanonicalHeaders(req->headers, s3::AllHeaderNames(req->headers));
  const std::string scope = date + "/" + creds.region + "/s3/aws4_request";
  const std::string cr = s3::CanonicalRequest(
      req->method, s3::UriEncode(req->path.empty() ? "/" : req->path, false),
      s3::CanonicalQueryString(req->query, false), ch.canonical, ch.signed_headers, payload_hash);
  const std::string sts = s3::StringToSign(amz_date, scope, cr);
  const std::string sig =
      s3::SignHex(s3::SigningKey(creds.secret_key, date, creds.region, "s3"), sts);
  req->headers.emplace_back("authorization",
                            "AWS4-HMAC-SHA256 Credential=" + creds.access_key + "/" + scope +
                                ", SignedHeaders=" + ch.signed_headers + ", Signature=" + sig);
}

}  // namespace kvcs::s3client
