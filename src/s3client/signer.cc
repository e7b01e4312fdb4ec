#include "s3client/signer.h"

#include <algorithm>
#include <ctime>

#include "s3/http_util.h"
#include "s3/sigv4.h"

namespace kvcs::s3client {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  }
  return out;
}

std::string_view Trim(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

}  // namespace

std::string FormatAmzDate(int64_t unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%dT%H%M%SZ", &tm);
  return buf;
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

  std::vector<std::pair<std::string, std::string>> canon;
  canon.reserve(req->headers.size());
  for (const auto& [k, v] : req->headers) canon.emplace_back(Lower(k), std::string(Trim(v)));
  std::sort(canon.begin(), canon.end());
  std::string canonical_headers, signed_headers;
  for (size_t i = 0; i < canon.size(); ++i) {
    // Repeated names are joined with ',' (SigV4); we never send duplicates, but stay correct.
    if (i > 0 && canon[i].first == canon[i - 1].first) {
      canonical_headers.pop_back();  // '\n'
      canonical_headers += "," + canon[i].second + "\n";
      continue;
    }
    canonical_headers += canon[i].first + ":" + canon[i].second + "\n";
    if (!signed_headers.empty()) signed_headers.push_back(';');
    signed_headers += canon[i].first;
  }
  const std::string scope = date + "/" + creds.region + "/s3/aws4_request";
  const std::string cr = s3::CanonicalRequest(
      req->method, s3::UriEncode(req->path.empty() ? "/" : req->path, false),
      s3::CanonicalQueryString(req->query, false), canonical_headers, signed_headers, payload_hash);
  const std::string sts = s3::StringToSign(amz_date, scope, cr);
  const std::string sig =
      s3::SignHex(s3::SigningKey(creds.secret_key, date, creds.region, "s3"), sts);
  req->headers.emplace_back("authorization", "AWS4-HMAC-SHA256 Credential=" + creds.access_key +
                                                 "/" + scope + ", SignedHeaders=" + signed_headers +
                                                 ", Signature=" + sig);
}

}  // namespace kvcs::s3client
