// SigV4 against AWS's published examples (docs.aws.amazon.com/AmazonS3/latest/API/
// sig-v4-header-based-auth.html "Example: GET Object", sigv4-query-string-auth.html, and
// sigv4-streaming.html), with the example key pair AKIAIOSFODNN7EXAMPLE.
#include "s3/sigv4.h"

#include <gtest/gtest.h>

#include "common/hex.h"
#include "s3/chunked.h"
#include "s3/s3_error.h"

namespace kvcs::s3 {
namespace {

const std::map<std::string, std::string> kSecrets = {
    {"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}};
constexpr int64_t kExampleTime = 1369353600;  // 2013-05-24T00:00:00Z

TEST(SigV4, PublishedGetObjectExample) {
  HeaderPairs query;
  HeaderPairs headers = {
      {"Host", "examplebucket.s3.amazonaws.com"},
      {"Range", "bytes=0-9"},
      {"x-amz-content-sha256", kEmptySha256Hex},
      {"x-amz-date", "20130524T000000Z"},
      {"Authorization",
       "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
       "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
       "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"}};
  // The published canonical request hashes to 7344ae5b...
  std::string cr = CanonicalRequest(
      "GET", "/test.txt", "",
      "host:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\nx-amz-content-sha256:" +
          std::string(kEmptySha256Hex) + "\nx-amz-date:20130524T000000Z\n",
      "host;range;x-amz-content-sha256;x-amz-date", kEmptySha256Hex);
  EXPECT_EQ(ToHex(Sha256::Hash(cr)),
            "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
  SigV4Input in{"GET", "/test.txt", &query, &headers};
  auto r = VerifySigV4(in, kSecrets, kExampleTime);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->access_key, "AKIAIOSFODNN7EXAMPLE");
  EXPECT_EQ(r->payload_hash, kEmptySha256Hex);

  // One byte changed anywhere signed -> SignatureDoesNotMatch.
  HeaderPairs tampered = headers;
  tampered[1].second = "bytes=0-8";
  SigV4Input bad{"GET", "/test.txt", &query, &tampered};
  EXPECT_TRUE(
      VerifySigV4(bad, kSecrets, kExampleTime).status().Is(S3Error::kSignatureDoesNotMatch));
  SigV4Input bad_path{"GET", "/test.txx", &query, &headers};
  EXPECT_TRUE(
      VerifySigV4(bad_path, kSecrets, kExampleTime).status().Is(S3Error::kSignatureDoesNotMatch));
  // Wrong secret, unknown key, clock skew.
  std::map<std::string, std::string> other = {{"AKIAIOSFODNN7EXAMPLE", "nope"}};
  EXPECT_TRUE(VerifySigV4(in, other, kExampleTime).status().Is(S3Error::kSignatureDoesNotMatch));
  std::map<std::string, std::string> none = {{"SOMEONEELSE", "x"}};
  EXPECT_TRUE(VerifySigV4(in, none, kExampleTime).status().Is(S3Error::kInvalidAccessKeyId));
  EXPECT_TRUE(VerifySigV4(in, kSecrets, kExampleTime + kMaxClockSkewSeconds + 1)
                  .status()
                  .Is(S3Error::kRequestTimeTooSkewed));
  EXPECT_TRUE(VerifySigV4(in, kSecrets, kExampleTime + kMaxClockSkewSeconds).ok());
  // No credentials at all.
  HeaderPairs anon = {{"Host", "x"}};
  SigV4Input a{"GET", "/", &query, &anon};
  EXPECT_FALSE(HasSigV4(a));
  EXPECT_TRUE(VerifySigV4(a, kSecrets, kExampleTime).status().Is(S3Error::kAccessDenied));
}

// AWS's rule for canonical header values: trim, collapse each inner run of whitespace to one
// space (the AWS SDKs' `' '.join(value.split())`).
TEST(SigV4, CanonicalHeaderValueTrimsAndCollapses) {
  EXPECT_EQ(CanonicalHeaderValue("abc"), "abc");
  EXPECT_EQ(CanonicalHeaderValue("  a   b    c  "), "a b c");
  EXPECT_EQ(CanonicalHeaderValue("\"a   b    c\""), "\"a b c\"");
  EXPECT_EQ(CanonicalHeaderValue("\ta \t b\t"), "a b");
  EXPECT_EQ(CanonicalHeaderValue("   "), "");
  EXPECT_EQ(CanonicalHeaderValue(""), "");
}

// The block both the verifier and the client's signer build: names in the order given, values
// found case-insensitively, repeated headers joined with ',' in received order.
TEST(SigV4, BuildCanonicalHeaders) {
  HeaderPairs headers = {{"Host", "h:1"},
                         {"X-Amz-Meta-A", "  a   b  "},
                         {"x-amz-date", "20130524T000000Z"},
                         {"x-amz-meta-a", "c"}};
  EXPECT_EQ(AllHeaderNames(headers),
            (std::vector<std::string>{"host", "x-amz-date", "x-amz-meta-a"}));
  CanonicalHeaders ch = BuildCanonicalHeaders(headers, AllHeaderNames(headers));
  EXPECT_EQ(ch.canonical, "host:h:1\nx-amz-date:20130524T000000Z\nx-amz-meta-a:a b,c\n");
  EXPECT_EQ(ch.signed_headers, "host;x-amz-date;x-amz-meta-a");
  EXPECT_EQ(ch.missing, "");
  CanonicalHeaders partial = BuildCanonicalHeaders(headers, {"host", "range"});
  EXPECT_EQ(partial.missing, "range");
}

TEST(SigV4, PublishedPresignedUrlExample) {
  HeaderPairs query = {
      {"X-Amz-Algorithm", "AWS4-HMAC-SHA256"},
      {"X-Amz-Credential", "AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request"},
      {"X-Amz-Date", "20130524T000000Z"},
      {"X-Amz-Expires", "86400"},
      {"X-Amz-SignedHeaders", "host"},
      {"X-Amz-Signature", "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"}};
  HeaderPairs headers = {{"Host", "examplebucket.s3.amazonaws.com"}};
  SigV4Input in{"GET", "/test.txt", &query, &headers};
  EXPECT_TRUE(HasSigV4(in));
  auto r = VerifySigV4(in, kSecrets, kExampleTime + 100);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->presigned);
  EXPECT_EQ(r->payload_hash, kUnsignedPayload);
  // Expired one second after X-Amz-Date + X-Amz-Expires.
  EXPECT_TRUE(VerifySigV4(in, kSecrets, kExampleTime + 86401)
                  .status()
                  .Is(S3Error::kExpiredPresignedRequest));
  EXPECT_TRUE(VerifySigV4(in, kSecrets, kExampleTime + 86400).ok());
  HeaderPairs q2 = query;
  q2[3].second = "86401";  // expiry changed after signing
  SigV4Input in2{"GET", "/test.txt", &q2, &headers};
  EXPECT_TRUE(
      VerifySigV4(in2, kSecrets, kExampleTime).status().Is(S3Error::kSignatureDoesNotMatch));
  q2[3].second = "604801";
  EXPECT_TRUE(VerifySigV4(in2, kSecrets, kExampleTime)
                  .status()
                  .Is(S3Error::kAuthorizationQueryParametersError));
}

std::string Chunk(size_t n, const std::string& sig) {
  char hex[32];
  std::snprintf(hex, sizeof hex, "%zx", n);
  return std::string(hex) + ";chunk-signature=" + sig + "\r\n" + std::string(n, 'a') + "\r\n";
}

TEST(SigV4, PublishedStreamingExampleSeedAndChunks) {
  HeaderPairs query;
  HeaderPairs headers = {
      {"Host", "s3.amazonaws.com"},
      {"x-amz-date", "20130524T000000Z"},
      {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
      {"Authorization",
       "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
       "SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;"
       "x-amz-decoded-content-length;x-amz-storage-class,"
       "Signature=4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"},
      {"x-amz-content-sha256", kStreamingSignedPayload},
      {"Content-Encoding", "aws-chunked"},
      {"x-amz-decoded-content-length", "66560"},
      {"Content-Length", "66824"}};
  SigV4Input in{"PUT", "/examplebucket/chunkObject.txt", &query, &headers};
  auto r = VerifySigV4(in, kSecrets, kExampleTime);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->payload_hash, kStreamingSignedPayload);
  ChunkSigning cs{r->signing_key, r->amz_date, r->scope, r->seed_signature};

  std::string body =
      Chunk(65536, "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648") +
      Chunk(1024, "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497") +
      Chunk(0, "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9");
  ASSERT_EQ(body.size(), 66824u);
  // Whole, and one byte at a time: same payload, same verdict.
  for (size_t step : {body.size(), size_t{1}, size_t{7}, size_t{4096}}) {
    AwsChunkedDecoder d(cs);
    std::string out;
    Bytes buf(1000);
    for (size_t off = 0; off < body.size(); off += step) {
      ByteSpan in_bytes = AsBytes(std::string_view(body).substr(off, step));
      while (!in_bytes.empty()) {
        auto n = d.Decode(&in_bytes, buf);
        ASSERT_TRUE(n.ok()) << n.status().ToString() << " step " << step;
        out.append(reinterpret_cast<char*>(buf.data()), *n);
      }
    }
    EXPECT_TRUE(d.done());
    EXPECT_EQ(out, std::string(66560, 'a'));
    EXPECT_EQ(d.decoded_bytes(), 66560u);
  }
  // Any flipped payload byte, or a swapped signature, is caught before done().
  for (size_t pos : {size_t{100}, size_t{65636}, size_t{66000}}) {
    std::string bad = body;
    bad[pos] = 'b';
    AwsChunkedDecoder d(cs);
    Bytes buf(body.size());
    ByteSpan in_bytes = AsBytes(bad);
    Status last;
    while (!in_bytes.empty()) {
      auto n = d.Decode(&in_bytes, buf);
      if (!n.ok()) {
        last = n.status();
        break;
      }
    }
    EXPECT_TRUE(last.Is(S3Error::kSignatureDoesNotMatch)) << pos;
    EXPECT_FALSE(d.done());
  }
  // Every truncation leaves the decoder not done (the server answers IncompleteBody).
  for (size_t cut = 0; cut < body.size(); cut += 997) {
    AwsChunkedDecoder d(cs);
    Bytes buf(body.size());
    ByteSpan in_bytes = AsBytes(std::string_view(body).substr(0, cut));
    while (!in_bytes.empty()) {
      if (!d.Decode(&in_bytes, buf).ok()) break;
    }
    EXPECT_FALSE(d.done()) << cut;
  }
}

TEST(AwsChunked, UnsignedTrailer) {
  std::string body = "5\r\nhello\r\n0\r\nx-amz-checksum-crc32:NhCmhg==\r\n\r\n";
  AwsChunkedDecoder d(std::nullopt);
  Bytes buf(64);
  ByteSpan in = AsBytes(body);
  std::string out;
  while (!in.empty()) {
    auto n = d.Decode(&in, buf);
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    out.append(reinterpret_cast<char*>(buf.data()), *n);
  }
  EXPECT_TRUE(d.done());
  EXPECT_EQ(out, "hello");
  ASSERT_EQ(d.trailers().size(), 1u);
  for (std::string bad :
       {"zz\r\n", "5\r\nhelloX\r\n", "5\nhello\r\n", "5\r\nhello\r\n0\r\nnocolon\r\n"}) {
    AwsChunkedDecoder d2(std::nullopt);
    ByteSpan in2 = AsBytes(bad);
    bool failed = false;
    while (!in2.empty()) {
      if (!d2.Decode(&in2, buf).ok()) {
        failed = true;
        break;
      }
    }
    EXPECT_TRUE(failed) << bad;
  }
}

}  // namespace
}  // namespace kvcs::s3
