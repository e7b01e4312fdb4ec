#include "s3/sigv4.h"

#include <algorithm>

#include "common/hex.h"
#include "common/strings.h"
#include "s3/http_util.h"
#include "s3/s3_error.h"

namespace kvcs::s3 {
namespace {

std::optional<std::string_view> Find(const HeaderPairs* pairs, std::string_view name,
                                     bool case_insensitive) {
  if (!pairs) return std::nullopt;
  for (const auto& [k, v] : *pairs) {
    if (case_insensitive ? AsciiIEquals(k, name) : k == name) return std::string_view(v);
  }
  return std::nullopt;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  while (true) {
    size_t p = s.find(sep);
    out.push_back(s.substr(0, p));
    if (p == std::string_view::npos) break;
    s = s.substr(p + 1);
  }
  return out;
}

struct Parsed {
  std::string access_key, date, region, service;
  std::string scope;
  std::vector<std::string> signed_headers;
  std::string signature;
  std::string amz_date;
};

// "AKID/20130524/us-east-1/s3/aws4_request"
Status ParseCredential(std::string_view cred, Parsed* p, S3Error malformed) {
  auto parts = Split(cred, '/');
  if (parts.size() != 5 || parts[0].empty() || parts[1].size() != 8 || parts[2].empty()) {
    return S3Status(malformed, "credential must be <key>/<date>/<region>/s3/aws4_request");
  }
  if (parts[3] != "s3" || parts[4] != "aws4_request") {
    return S3Status(malformed, "credential scope must name service s3 and aws4_request");
  }
  p->access_key = std::string(parts[0]);
  p->date = std::string(parts[1]);
  p->region = std::string(parts[2]);
  p->service = std::string(parts[3]);
  p->scope = p->date + "/" + p->region + "/s3/aws4_request";
  return Status::Ok();
}

Status ParseSignedHeaders(std::string_view s, Parsed* p, S3Error malformed) {
  auto names = Split(s, ';');
  if (names.empty() || names.size() > kMaxSignedHeaders) {
    return S3Status(malformed, "bad SignedHeaders");
  }
  for (auto n : names) {
    if (n.empty()) return S3Status(malformed, "empty name in SignedHeaders");
    p->signed_headers.push_back(AsciiLower(n));
  }
  if (std::find(p->signed_headers.begin(), p->signed_headers.end(), "host") ==
      p->signed_headers.end()) {
    return S3Status(malformed, "SignedHeaders must include host");
  }
  return Status::Ok();
}

Result<SigV4Result> Check(const SigV4Input& in, const Parsed& p, std::string payload_hash,
                          bool presigned, const std::map<std::string, std::string>& secrets) {
  auto secret = secrets.find(p.access_key);
  if (secret == secrets.end()) {
    return S3Status(S3Error::kInvalidAccessKeyId,
                    "The AWS Access Key Id you provided does not exist in our records.");
  }
  CanonicalHeaders ch = BuildCanonicalHeaders(*in.headers, p.signed_headers);
  if (!ch.missing.empty()) {
    return S3Status(presigned ? S3Error::kAuthorizationQueryParametersError
                              : S3Error::kAuthorizationHeaderMalformed,
                    "signed header missing from the request: " + ch.missing);
  }
  std::string cr = CanonicalRequest(in.method, UriEncode(in.path, false),
                                    CanonicalQueryString(*in.query, presigned), ch.canonical,
                                    ch.signed_headers, payload_hash);
  std::string sts = StringToSign(p.amz_date, p.scope, cr);
  Digest key = SigningKey(secret->second, p.date, p.region, "s3");
  std::string expected = SignHex(key, sts);
  if (!ConstantTimeEqual(AsBytes(expected), AsBytes(p.signature))) {
    return S3Status(S3Error::kSignatureDoesNotMatch,
                    "The request signature we calculated does not match the signature you "
                    "provided. Check your key and signing method.");
  }
  SigV4Result r;
  r.access_key = p.access_key;
  r.payload_hash = std::move(payload_hash);
  r.presigned = presigned;
  r.seed_signature = p.signature;
  r.amz_date = p.amz_date;
  r.scope = p.scope;
  r.signing_key = key;
  return r;
}

}  // namespace

bool HasSigV4(const SigV4Input& in) {
  auto auth = Find(in.headers, "authorization", true);
  if (auth && auth->substr(0, 16) == "AWS4-HMAC-SHA256") return true;
  return Find(in.query, "X-Amz-Algorithm", false).has_value();
}

Result<SigV4Result> VerifySigV4(const SigV4Input& in,
                                const std::map<std::string, std::string>& secrets,
                                int64_t now_unix) {
  auto auth = Find(in.headers, "authorization", true);
  Parsed p;
  if (auth) {
    constexpr std::string_view kAlg = "AWS4-HMAC-SHA256";
    if (auth->substr(0, kAlg.size()) != kAlg) {
      return S3Status(S3Error::kInvalidRequest,
                      "Only AWS4-HMAC-SHA256 (SigV4) authorization is supported");
    }
    std::string_view rest = auth->substr(kAlg.size());
    bool have_cred = false, have_sh = false, have_sig = false;
    for (std::string_view item : Split(rest, ',')) {
      while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
      while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
      size_t eq = item.find('=');
      if (eq == std::string_view::npos) continue;
      std::string_view k = item.substr(0, eq), v = item.substr(eq + 1);
      if (k == "Credential") {
        KVCS_RETURN_IF_ERROR(ParseCredential(v, &p, S3Error::kAuthorizationHeaderMalformed));
        have_cred = true;
      } else if (k == "SignedHeaders") {
        KVCS_RETURN_IF_ERROR(ParseSignedHeaders(v, &p, S3Error::kAuthorizationHeaderMalformed));
        have_sh = true;
      } else if (k == "Signature") {
        p.signature = std::string(v);
        have_sig = true;
      }
    }
    if (!have_cred || !have_sh || !have_sig || !IsLowerHex(p.signature, 64)) {
      return S3Status(S3Error::kAuthorizationHeaderMalformed,
                      "Authorization needs Credential, SignedHeaders and a 64-hex Signature");
    }
    auto date = Find(in.headers, "x-amz-date", true);
    if (!date) {
      return S3Status(S3Error::kAccessDenied, "AWS authentication requires a valid x-amz-date");
    }
    p.amz_date = std::string(*date);
    auto t = ParseAmzDate(p.amz_date);
    if (!t) return S3Status(S3Error::kAccessDenied, "x-amz-date is not YYYYMMDDTHHMMSSZ");
    if (p.amz_date.substr(0, 8) != p.date) {
      return S3Status(S3Error::kAuthorizationHeaderMalformed,
                      "credential date does not match x-amz-date");
    }
    if (*t > now_unix + kMaxClockSkewSeconds || *t < now_unix - kMaxClockSkewSeconds) {
      return S3Status(S3Error::kRequestTimeTooSkewed,
                      "The difference between the request time and the server's time is too "
                      "large.");
    }
    auto payload = Find(in.headers, "x-amz-content-sha256", true);
    if (!payload) {
      return S3Status(S3Error::kInvalidRequest,
                      "Missing required header for this request: x-amz-content-sha256");
    }
    std::string ph(*payload);
    if (ph != kUnsignedPayload && ph != kStreamingSignedPayload &&
        ph != kStreamingUnsignedTrailer && !IsLowerHex(ph, 64)) {
      return S3Status(S3Error::kInvalidArgument,
                      "x-amz-content-sha256 must be a SHA-256 hex "
                      "digest, UNSIGNED-PAYLOAD or a STREAMING value");
    }
    return Check(in, p, std::move(ph), false, secrets);
  }
  auto alg = Find(in.query, "X-Amz-Algorithm", false);
  if (!alg) return S3Status(S3Error::kAccessDenied, "Anonymous access is not allowed");
  constexpr S3Error kQ = S3Error::kAuthorizationQueryParametersError;
  if (*alg != "AWS4-HMAC-SHA256") return S3Status(kQ, "X-Amz-Algorithm must be AWS4-HMAC-SHA256");
  auto cred = Find(in.query, "X-Amz-Credential", false);
  auto date = Find(in.query, "X-Amz-Date", false);
  auto expires = Find(in.query, "X-Amz-Expires", false);
  auto sh = Find(in.query, "X-Amz-SignedHeaders", false);
  auto sig = Find(in.query, "X-Amz-Signature", false);
  if (!cred || !date || !expires || !sh || !sig) {
    return S3Status(kQ,
                    "presigned URL needs X-Amz-Credential, -Date, -Expires, -SignedHeaders "
                    "and -Signature");
  }
  KVCS_RETURN_IF_ERROR(ParseCredential(*cred, &p, kQ));
  KVCS_RETURN_IF_ERROR(ParseSignedHeaders(*sh, &p, kQ));
  p.signature = std::string(*sig);
  if (!IsLowerHex(p.signature, 64)) return S3Status(kQ, "X-Amz-Signature must be 64 hex digits");
  p.amz_date = std::string(*date);
  auto t = ParseAmzDate(p.amz_date);
  if (!t || p.amz_date.substr(0, 8) != p.date) return S3Status(kQ, "bad X-Amz-Date");
  int64_t exp = 0;
  if (expires->empty() || expires->size() > 7 ||
      !std::all_of(expires->begin(), expires->end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return S3Status(kQ, "X-Amz-Expires must be a number of seconds");
  }
  exp = std::stoll(std::string(*expires));
  if (exp < 1 || exp > kMaxPresignExpirySeconds) {
    return S3Status(kQ, "X-Amz-Expires must be between 1 and 604800 seconds");
  }
  if (*t > now_unix + kMaxClockSkewSeconds) {
    return S3Status(S3Error::kRequestTimeTooSkewed, "presigned URL is not valid yet");
  }
  if (now_unix > *t + exp) {
    return S3Status(S3Error::kExpiredPresignedRequest, "Request has expired");
  }
  auto qph = Find(in.query, "X-Amz-Content-Sha256", false);
  return Check(in, p, qph ? std::string(*qph) : std::string(kUnsignedPayload), true, secrets);
}

std::string CanonicalHeaderValue(std::string_view v) {
  std::string out;
  bool space = false;
  for (char c : v) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

CanonicalHeaders BuildCanonicalHeaders(const HeaderPairs& headers,
                                       const std::vector<std::string>& signed_names) {
  CanonicalHeaders out;
  for (const std::string& name : signed_names) {
    std::string joined;
    bool found = false;
    for (const auto& [k, v] : headers) {
      if (!AsciiIEquals(k, name)) continue;
      if (found) joined.push_back(',');
      joined += CanonicalHeaderValue(v);
      found = true;
    }
    if (!found && out.missing.empty()) out.missing = name;
    out.canonical += name + ":" + joined + "\n";
    if (!out.signed_headers.empty()) out.signed_headers.push_back(';');
    out.signed_headers += name;
  }
  return out;
}

std::vector<std::string> AllHeaderNames(const HeaderPairs& headers) {
  std::vector<std::string> names;
  names.reserve(headers.size());
  for (const auto& [k, v] : headers) names.push_back(AsciiLower(k));
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

std::string CanonicalQueryString(const HeaderPairs& query, bool skip_signature) {
  std::vector<std::pair<std::string, std::string>> enc;
  enc.reserve(query.size());
  for (const auto& [k, v] : query) {
    if (skip_signature && k == "X-Amz-Signature") continue;
    enc.emplace_back(UriEncode(k, true), UriEncode(v, true));
  }
  std::sort(enc.begin(), enc.end());
  std::string out;
  for (size_t i = 0; i < enc.size(); ++i) {
    if (i) out.push_back('&');
    out += enc[i].first + "=" + enc[i].second;
  }
  return out;
}

std::string CanonicalRequest(std::string_view method, std::string_view canonical_uri,
                             std::string_view canonical_query, std::string_view canonical_headers,
                             std::string_view signed_headers, std::string_view payload_hash) {
  std::string out;
  out.reserve(256 + canonical_headers.size());
  out.append(method).append("\n");
  out.append(canonical_uri.empty() ? "/" : canonical_uri).append("\n");
  out.append(canonical_query).append("\n");
  out.append(canonical_headers).append("\n");
  out.append(signed_headers).append("\n");
  out.append(payload_hash);
  return out;
}

std::string StringToSign(std::string_view amz_date, std::string_view scope,
                         std::string_view canonical_request) {
  std::string out = "AWS4-HMAC-SHA256\n";
  out.append(amz_date).append("\n").append(scope).append("\n");
  out += ToHex(Sha256::Hash(canonical_request));
  return out;
}

Digest SigningKey(std::string_view secret, std::string_view date, std::string_view region,
                  std::string_view service) {
  std::string k0 = "AWS4" + std::string(secret);
  Digest k1 = HmacSha256(AsBytes(k0), AsBytes(date));
  Digest k2 = HmacSha256(AsBytes(k1), AsBytes(region));
  Digest k3 = HmacSha256(AsBytes(k2), AsBytes(service));
  return HmacSha256(AsBytes(k3), AsBytes(std::string_view("aws4_request")));
}

std::string SignHex(const Digest& signing_key, std::string_view string_to_sign) {
  return ToHex(HmacSha256(AsBytes(signing_key), AsBytes(string_to_sign)));
}

std::string ChunkStringToSign(std::string_view amz_date, std::string_view scope,
                              std::string_view previous_signature, const Digest& chunk_sha256) {
  std::string out = "AWS4-HMAC-SHA256-PAYLOAD\n";
  out.append(amz_date).append("\n").append(scope).append("\n");
  out.append(previous_signature).append("\n").append(kEmptySha256Hex).append("\n");
  out += ToHex(chunk_sha256);
  return out;
}

}  // namespace kvcs::s3
