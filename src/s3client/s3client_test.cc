// Unit tests of the S3 client's pure parts (signing, error and XML decoding, backoff) and of its
// retry behaviour against a scripted in-process HTTP server on 127.0.0.1 (no Ceph needed; the
// radosgw tests are in tests/ceph/).
#include "common/asio.h"

#include <gtest/gtest.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "s3/server.h"
#include "s3/sigv4.h"
#include "s3client/errors.h"
#include "s3client/http_headers.h"
#include "s3client/s3_client.h"
#include "s3client/signer.h"
#include "s3client/store_factory.h"
#include "s3client/xml_responses.h"
#include "store/local_store.h"

namespace kvcs::s3client {
namespace {

// AWS's published SigV4 example for S3 ("GET Object" with a Range header, examplebucket).
TEST(Signer, AwsGetObjectExample) {
  Credentials c{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "us-east-1"};
  SignableRequest r;
  r.method = "GET";
  r.path = "/test.txt";
  r.headers = {{"host", "examplebucket.s3.amazonaws.com"}, {"range", "bytes=0-9"}};
  Sign(c, 1369353600, s3::kEmptySha256Hex, &r);  // 2013-05-24T00:00:00Z
  ASSERT_EQ(r.headers.back().first, "authorization");
  EXPECT_EQ(r.headers.back().second,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  EXPECT_EQ(FormatAmzDate(1369353600), "20130524T000000Z");
}

// What the signer produces, the server's verifier accepts (one canonical-request implementation),
// including keys and query values that need encoding; a changed byte is refused.
TEST(Signer, ServerVerifierAcceptsAndRejects) {
  Credentials c{"AKID", "secret", "us-east-1"};
  SignableRequest r;
  r.method = "PUT";
  r.path = "/bucket/dir/a b+c~d";
  r.query = {{"partNumber", "3"}, {"uploadId", "x/y=z"}};
  r.headers = {{"host", "127.0.0.1:8000"}, {"content-md5", "abc=="}};
  Sign(c, 1700000000, "UNSIGNED-PAYLOAD", &r);
  EXPECT_EQ(RequestTarget(r), "/bucket/dir/a%20b%2Bc~d?partNumber=3&uploadId=x%2Fy%3Dz");
  std::map<std::string, std::string> secrets = {{"AKID", "secret"}};
  s3::SigV4Input in{r.method, r.path, &r.query, &r.headers};
  auto ok = s3::VerifySigV4(in, secrets, 1700000000);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->access_key, "AKID");
  std::string other_path = "/bucket/dir/a b+c~e";
  s3::SigV4Input in2{r.method, other_path, &r.query, &r.headers};
  EXPECT_FALSE(s3::VerifySigV4(in2, secrets, 1700000000).ok());
}

// A header value with inner runs of spaces: the signer signs it in the same canonical form the
// server's verifier rebuilds (trimmed, runs collapsed), whether the value arrives as sent or with
// its runs already collapsed by a proxy; another value is refused.
TEST(Signer, InnerSpacesInAHeaderValueVerify) {
  Credentials c{"AKID", "secret", "us-east-1"};
  SignableRequest r;
  r.method = "PUT";
  r.path = "/bucket/key";
  r.headers = {{"host", "127.0.0.1:8000"}, {"x-amz-meta-a", "  \"a   b    c\" "}};
  Sign(c, 1700000000, s3::kEmptySha256Hex, &r);
  const std::map<std::string, std::string> secrets = {{"AKID", "secret"}};
  s3::SigV4Input in{r.method, r.path, &r.query, &r.headers};
  auto ok = s3::VerifySigV4(in, secrets, 1700000000);
  EXPECT_TRUE(ok.ok()) << ok.status().ToString();
  s3::HeaderPairs collapsed = r.headers;  // what a proxy that normalizes whitespace forwards
  collapsed[1].second = "\"a b c\"";
  s3::SigV4Input in2{r.method, r.path, &r.query, &collapsed};
  auto ok2 = s3::VerifySigV4(in2, secrets, 1700000000);
  EXPECT_TRUE(ok2.ok()) << ok2.status().ToString();
  s3::HeaderPairs other = r.headers;
  other[1].second = "\"abc\"";
  s3::SigV4Input in3{r.method, r.path, &r.query, &other};
  EXPECT_FALSE(s3::VerifySigV4(in3, secrets, 1700000000).ok());
}

TEST(Endpoint, Parse) {
  auto a = ParseEndpoint("http://127.0.0.1:8000/");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 8000);
  auto b = ParseEndpoint("http://rgw.local");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->port, 80);
  auto c = ParseEndpoint("http://[::1]:9000");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->host, "::1");
  EXPECT_FALSE(c->tls);
  auto d = ParseEndpoint("https://s3.amazonaws.com");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->host, "s3.amazonaws.com");
  EXPECT_EQ(d->port, 443);
  EXPECT_TRUE(d->tls);
  auto e = ParseEndpoint("https://[::1]:9443/");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->host, "::1");
  EXPECT_EQ(e->port, 9443);
  EXPECT_TRUE(e->tls);
  for (const char* bad :
       {"", "127.0.0.1:80", "http://", "http://h:0", "http://h:70000", "http://h:12x",
        "http://h/path", "https://", "https://h/p", "ftp://h", "HTTPS://h", "https:/h"}) {
    EXPECT_FALSE(ParseEndpoint(bad).ok()) << bad;
  }
}

TEST(Errors, ClassifyAndParse) {
  struct Case {
    const char* code;
    int http;
    ClientError want;
  };
  for (Case c :
       {Case{"NoSuchKey", 404, ClientError::kNoSuchKey},
        Case{"NoSuchBucket", 404, ClientError::kNoSuchBucket},
        Case{"SignatureDoesNotMatch", 403, ClientError::kSignatureDoesNotMatch},
        Case{"SlowDown", 503, ClientError::kServerError},
        Case{"SlowDown", 400, ClientError::kServerError},
        Case{"RequestTimeout", 400, ClientError::kServerError},
        Case{"InternalError", 500, ClientError::kServerError},
        Case{"", 404, ClientError::kNoSuchKey}, Case{"", 412, ClientError::kPreconditionFailed},
        Case{"Whatever", 400, ClientError::kOtherClientError}}) {
    EXPECT_EQ(ClassifyS3Code(c.code, c.http), c.want) << c.code << " " << c.http;
  }
  EXPECT_TRUE(IsRetryable(ClientError::kServerError));
  EXPECT_TRUE(IsRetryable(ClientError::kConnect));
  EXPECT_FALSE(IsRetryable(ClientError::kNoSuchKey));
  auto e = ParseErrorBody(
      "<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Message>gone</Message>"
      "<RequestId>r1</RequestId></Error>");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->code, "NoSuchKey");
  EXPECT_EQ(e->message, "gone");
  EXPECT_EQ(e->request_id, "r1");
  for (const char* bad : {"", "<Error>", "<NotError><Code>x</Code></NotError>", "<Error/>",
                          "<!DOCTYPE x><Error><Code>a</Code></Error>"}) {
    auto r = ParseErrorBody(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_TRUE(r.status().Is(ClientError::kMalformedXml));
  }
}

TEST(Retry, BackoffIsBoundedExponentialWithJitter) {
  RetryPolicy p;
  p.base_backoff = std::chrono::milliseconds(100);
  p.max_backoff = std::chrono::milliseconds(1000);
  EXPECT_EQ(BackoffDelay(p, 1, 0.0).count(), 50);
  EXPECT_EQ(BackoffDelay(p, 1, 1.0).count(), 100);
  EXPECT_EQ(BackoffDelay(p, 2, 0.0).count(), 100);
  EXPECT_EQ(BackoffDelay(p, 3, 0.999).count(), 399);
  EXPECT_EQ(BackoffDelay(p, 5, 1.0).count(), 1000);  // capped
  EXPECT_EQ(BackoffDelay(p, 60, 0.0).count(), 500);  // huge retry counts stay capped
  EXPECT_EQ(BackoffDelay(p, -3, 0.0).count(), 50);   // clamped to the first retry
}

// One table for Content-Range: accepted values with their decoding, and refused ones.
struct ContentRangeVector {
  std::string_view text;
  std::optional<ContentRange> want;
};
const ContentRangeVector kContentRangeVectors[] = {
    {"bytes 0-0/1", ContentRange{0, 0, 1}},
    {"bytes 0-4095/65536", ContentRange{0, 4095, 65536}},
    {"bytes 65536-131071/2097152", ContentRange{65536, 131071, 2097152}},
    {"bytes 18446744073709551613-18446744073709551614/18446744073709551615",
     ContentRange{18446744073709551613ull, 18446744073709551614ull, 18446744073709551615ull}},
    {"bytes */100", std::nullopt},                     // unsatisfied range: no bytes to use
    {"bytes 0-9/*", std::nullopt},                     // unknown total: the size is required
    {"bytes 5-4/10", std::nullopt},                    // first > last
    {"bytes 0-10/10", std::nullopt},                   // last >= total
    {"bytes 0-18446744073709551616/1", std::nullopt},  // overflow
    {"bytes -1-2/3", std::nullopt},
    {"bytes +0-2/3", std::nullopt},
    {"bytes 0 -2/3", std::nullopt},
    {"bytes 0-2/3 ", std::nullopt},
    {"Bytes 0-2/3", std::nullopt},
    {"items 0-2/3", std::nullopt},
    {"bytes 0/2-3", std::nullopt},  // separators out of order
    {"", std::nullopt},
};

TEST(HttpHeaders, ContentRangeVectors) {
  for (const auto& v : kContentRangeVectors) {
    EXPECT_EQ(ParseContentRange(v.text), v.want) << v.text;
    if (!v.want) continue;
    // Every strict prefix is refused (a truncated header is never read as a smaller range)...
    for (size_t n = 0; n < v.text.size(); ++n) {
      auto r = ParseContentRange(v.text.substr(0, n));
      EXPECT_TRUE(!r || *r != *v.want) << v.text.substr(0, n);
    }
    // ...and so is every single-character corruption that changes the meaning.
    for (size_t i = 0; i < v.text.size(); ++i) {
      std::string bad(v.text);
      bad[i] = 'x';
      EXPECT_FALSE(ParseContentRange(bad).has_value()) << bad;
    }
  }
}

TEST(Xml, ListObjectsV2AndFriends) {
  auto l = ParseListObjectsV2(
      "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>b</Name>"
      "<IsTruncated>true</IsTruncated><NextContinuationToken>tok</NextContinuationToken>"
      "<Contents><Key>a&amp;b</Key><LastModified>2009-10-12T17:50:30.000Z</LastModified>"
      "<ETag>&quot;abc&quot;</ETag><Size>42</Size></Contents>"
      "<CommonPrefixes><Prefix>p/</Prefix></CommonPrefixes></ListBucketResult>");
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  ASSERT_EQ(l->objects.size(), 1u);
  EXPECT_EQ(l->objects[0].key, "a&b");
  EXPECT_EQ(l->objects[0].etag, "abc");
  EXPECT_EQ(l->objects[0].size, 42u);
  EXPECT_EQ(l->objects[0].last_modified_ms, 1255369830000);
  EXPECT_EQ(l->common_prefixes, std::vector<std::string>{"p/"});
  EXPECT_TRUE(l->truncated);
  EXPECT_EQ(l->next_continuation_token, "tok");
  for (const char* bad :
       {"<ListBucketResult><Contents><Key>k</Key><Size>x</Size></Contents></ListBucketResult>",
        "<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>",
        "<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>", "<Other/>",
        "not xml"}) {
    EXPECT_TRUE(ParseListObjectsV2(bad).status().Is(ClientError::kMalformedXml)) << bad;
  }
  auto id = ParseInitiateMultipart(
      "<InitiateMultipartUploadResult><UploadId>u-1</UploadId></InitiateMultipartUploadResult>");
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, "u-1");
  EXPECT_FALSE(ParseInitiateMultipart("<InitiateMultipartUploadResult/>").ok());
  auto parts = ParseListParts(
      "<ListPartsResult><IsTruncated>false</IsTruncated><Part><PartNumber>2</PartNumber>"
      "<ETag>\"e\"</ETag><Size>5</Size></Part></ListPartsResult>");
  ASSERT_TRUE(parts.ok());
  ASSERT_EQ(parts->parts.size(), 1u);
  EXPECT_EQ(parts->parts[0].part_number, 2);
  EXPECT_FALSE(ParseListParts("<ListPartsResult><Part><PartNumber>0</PartNumber><Size>1</Size>"
                              "</Part></ListPartsResult>")
                   .ok());
  auto b = ParseListBuckets(
      "<ListAllMyBucketsResult><Buckets><Bucket><Name>x</Name><CreationDate>"
      "1970-01-01T00:00:01Z</CreationDate></Bucket></Buckets></ListAllMyBucketsResult>");
  ASSERT_TRUE(b.ok());
  ASSERT_EQ(b->size(), 1u);
  EXPECT_EQ((*b)[0].created_ms, 1000);
  EXPECT_EQ(ParseIsoDateMs("2024-02-29T12:00:00.5Z"), 1709208000500);
  EXPECT_FALSE(ParseIsoDateMs("2024-13-01T00:00:00Z").has_value());
  EXPECT_FALSE(ParseIsoDateMs("yesterday").has_value());
}

// A scripted HTTP server: answers the i-th request with script[i] ("CLOSE": drop the connection
// without answering; "HANG": read the request and never answer).
class FakeServer {
 public:
  explicit FakeServer(std::vector<std::string> script)
      : script_(std::move(script)),
        acceptor_(ioc_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    port_ = acceptor_.local_endpoint().port();
    thread_ = std::thread([this] { Serve(); });
  }
  ~FakeServer() {
    stop_ = true;
    boost::system::error_code ec;
    {  // a blocking accept() is not interrupted by close(): wake it with a connection
      boost::asio::io_context ioc;
      boost::asio::ip::tcp::socket s(ioc);
      s.connect({boost::asio::ip::make_address("127.0.0.1"), port_}, ec);
    }
    for (auto& s : held_) s->close(ec);
    thread_.join();
    acceptor_.close(ec);
  }
  uint16_t port() const { return port_; }
  int requests() const { return requests_.load(); }

 private:
  void Serve() {
    while (!stop_) {
      auto sock = std::make_shared<boost::asio::ip::tcp::socket>(ioc_);
      boost::system::error_code ec;
      acceptor_.accept(*sock, ec);
      if (ec) return;
      while (!stop_) {
        std::string req;
        char c;
        while (req.find("\r\n\r\n") == std::string::npos) {
          if (boost::asio::read(*sock, boost::asio::buffer(&c, 1), ec) != 1 || ec) break;
          req.push_back(c);
        }
        if (ec) break;
        size_t cl = req.find("content-length: ");
        if (cl == std::string::npos) cl = req.find("Content-Length: ");
        if (cl != std::string::npos) {
          size_t n = std::stoul(req.substr(cl + 16));
          std::string body(n, '\0');
          boost::asio::read(*sock, boost::asio::buffer(body), ec);
        }
        int i = requests_++;
        const std::string& r = i < static_cast<int>(script_.size()) ? script_[i] : script_.back();
        if (r == "CLOSE") break;
        if (r == "HANG") {
          held_.push_back(sock);
          break;
        }
        boost::asio::write(*sock, boost::asio::buffer(r), ec);
        if (ec) break;
      }
    }
  }

  std::vector<std::string> script_;
  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::vector<std::shared_ptr<boost::asio::ip::tcp::socket>> held_;
  uint16_t port_ = 0;
  std::atomic<int> requests_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

std::string Http(int status, const std::string& body, const std::string& extra = "") {
  return "HTTP/1.1 " + std::to_string(status) +
         " X\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" + extra + "\r\n" + body;
}

std::unique_ptr<S3Client> ClientFor(uint16_t port, int attempts = 4) {
  ClientOptions o;
  o.endpoint = "http://127.0.0.1:" + std::to_string(port);
  o.credentials = {"AKID", "secret", "us-east-1"};
  o.retry.max_attempts = attempts;
  o.retry.base_backoff = std::chrono::milliseconds(1);
  o.retry.max_backoff = std::chrono::milliseconds(4);
  o.retry.attempt_timeout = std::chrono::milliseconds(300);
  o.retry.total_deadline = std::chrono::milliseconds(5000);
  auto c = S3Client::Create(o);
  EXPECT_TRUE(c.ok());
  return std::move(*c);
}

const std::string kSlowDown =
    "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>";

// 5xx and dropped connections are retried until an attempt succeeds.
TEST(Retry, ServerErrorsAndDropsAreRetried) {
  FakeServer srv({Http(503, kSlowDown), "CLOSE", Http(500, ""), Http(200, "", "ETag: \"e1\"\r\n")});
  auto c = ClientFor(srv.port());
  auto r = c->PutObject("b", "k", AsBytes("data"), {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "e1");
  EXPECT_EQ(srv.requests(), 4);
  EXPECT_EQ(c->stats().retries, 3u);
}

// Persistent 5xx: bounded attempts, then a typed kServerError (kUnavailable).
TEST(Retry, AttemptsAreBounded) {
  FakeServer srv({Http(500, "<Error><Code>InternalError</Code></Error>")});
  auto c = ClientFor(srv.port(), 3);
  auto r = c->ListBuckets();
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().Is(ClientError::kServerError)) << r.status().ToString();
  EXPECT_EQ(r.status().code(), Code::kUnavailable);
  EXPECT_EQ(srv.requests(), 3);
}

// 4xx are not retried and carry the S3 code.
TEST(Retry, ClientErrorsAreNotRetried) {
  FakeServer srv({Http(404, "<Error><Code>NoSuchBucket</Code><Message>m</Message></Error>")});
  auto c = ClientFor(srv.port());
  auto r = c->ListObjectsV2("b", "", "", "", "", 10);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().Is(ClientError::kNoSuchBucket));
  EXPECT_EQ(srv.requests(), 1);
}

// A server that never answers: each attempt times out, then the request fails (kTimeout).
TEST(Retry, TimeoutsAreRetriedThenFail) {
  FakeServer srv({"HANG"});
  auto c = ClientFor(srv.port(), 2);
  Bytes out(10);
  auto r = c->GetRange("b", "k", 0, out);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().Is(ClientError::kTimeout)) << r.status().ToString();
  EXPECT_EQ(srv.requests(), 2);
}

// Nothing listening: connection errors, bounded, kUnavailable.
TEST(Retry, ConnectionRefused) {
  uint16_t port;
  {
    boost::asio::io_context ioc;
    boost::asio::ip::tcp::acceptor a(ioc, {boost::asio::ip::make_address("127.0.0.1"), 0});
    port = a.local_endpoint().port();
  }
  auto c = ClientFor(port, 3);
  auto r = c->HeadBucket("b");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.Is(ClientError::kConnect)) << r.ToString();
  EXPECT_EQ(c->stats().attempts, 3u);
}

// Responses that contradict the request are refused, never handed over as data.
TEST(Responses, BadRangeAnswersAreRefused) {
  Bytes out(4);
  {  // Content-Range for other bytes
    FakeServer srv({Http(206, "abcd", "Content-Range: bytes 1-4/10\r\nETag: \"e\"\r\n")});
    auto r = ClientFor(srv.port())->GetRange("b", "k", 0, out);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(r.status().Is(ClientError::kProtocol)) << r.status().ToString();
  }
  {  // longer body than asked
    FakeServer srv({Http(206, "abcdef", "Content-Range: bytes 0-5/10\r\n")});
    auto r = ClientFor(srv.port())->GetRange("b", "k", 0, out);
    ASSERT_FALSE(r.ok());
  }
  {  // another version than the pinned ETag
    FakeServer srv({Http(206, "abcd", "Content-Range: bytes 0-3/10\r\nETag: \"other\"\r\n")});
    auto r = ClientFor(srv.port())->GetRange("b", "k", 0, out, "pinned");
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(r.status().Is(ClientError::kPreconditionFailed));
  }
  {  // header block over kMaxResponseHeaderBytes
    FakeServer srv({Http(200, "", "X-Big: " + std::string(kMaxResponseHeaderBytes, 'a') + "\r\n")});
    auto r = ClientFor(srv.port())->HeadBucket("b");
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(r.Is(ClientError::kResponseTooLarge)) << r.ToString();
  }
  {  // a 200 CompleteMultipartUpload that carries an <Error> is an error (retried, then fails)
    FakeServer srv({Http(200, "<Error><Code>InternalError</Code></Error>")});
    auto r = ClientFor(srv.port(), 2)->CompleteMultipartUpload("b", "k", "u", {});
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(r.status().Is(ClientError::kServerError));
    EXPECT_EQ(srv.requests(), 2);
  }
  {  // good answer
    FakeServer srv({Http(206, "abcd", "Content-Range: bytes 0-3/10\r\nETag: \"e\"\r\n")});
    auto r = ClientFor(srv.port())->GetRange("b", "k", 0, out, "e");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(*r, 4u);
    EXPECT_EQ(std::string(out.begin(), out.end()), "abcd");
  }
}

}  // namespace
}  // namespace kvcs::s3client

namespace kvcs::s3client {
namespace {

TEST(StoreFactory, ParsesStrictConfig) {
  BackendConfig c;
  ASSERT_TRUE(ParseBackendConfig(R"({"backend":"s3","endpoint":"http://127.0.0.1:8000",
      "access_key":"ak","secret_key":"sk","bucket_prefix":"kv-","parallel_gets":48,
      "max_attempts":3,"attempt_timeout_ms":2000,"total_deadline_ms":9000,
      "part_bytes":8388608,"multipart_threshold_bytes":16777216,"open_prefix_bytes":0,
      "read_ahead_factor":5,"read_ahead_budget_bytes":1048576})",
                                 &c)
                  .ok());
  EXPECT_EQ(c.s3.open_prefix_bytes, 0u);
  EXPECT_EQ(c.s3.read_ahead_factor, 5u);
  EXPECT_EQ(c.s3.read_ahead_budget, 1048576u);
  EXPECT_EQ(c.backend, "s3");
  EXPECT_EQ(c.s3.client.parallel_gets, 48);
  EXPECT_EQ(c.s3.client.retry.max_attempts, 3);
  EXPECT_EQ(c.s3.client.retry.total_deadline.count(), 9000);
  EXPECT_EQ(c.s3.bucket_prefix, "kv-");
  EXPECT_TRUE(FinishBackendConfig(&c).ok());
  for (const char* bad :
       {"[]", "{", R"({"backend":"ceph"})", R"({"endpont":"x"})", R"({"parallel_gets":0})",
        R"({"parallel_gets":"8"})", R"({"part_bytes":1024})", R"({"max_attempts":100})",
        R"({"read_ahead_factor":17})", R"({"open_prefix_bytes":1048577})",
        R"({"read_ahead_budget_bytes":-1})"}) {
    BackendConfig d;
    EXPECT_FALSE(ParseBackendConfig(bad, &d).ok()) << bad;
  }
  BackendConfig tls;
  ASSERT_TRUE(ParseBackendConfig(R"({"backend":"s3","endpoint":"https://s3.test",
      "access_key":"ak","secret_key":"sk","ca_file":"/etc/ca.pem"})",
                                 &tls)
                  .ok());
  EXPECT_EQ(tls.s3.client.ca_file, "/etc/ca.pem");
  EXPECT_FALSE(tls.s3.client.insecure);
  EXPECT_TRUE(FinishBackendConfig(&tls).ok());
  BackendConfig dev;
  ASSERT_TRUE(ParseBackendConfig(R"({"backend":"s3","endpoint":"https://s3.test",
      "access_key":"ak","secret_key":"sk","insecure":true})",
                                 &dev)
                  .ok());
  EXPECT_TRUE(dev.s3.client.insecure);
  EXPECT_TRUE(FinishBackendConfig(&dev).ok());
  EXPECT_FALSE(dev.s3.conditional_writes);  // off unless the config says the service evaluates
  BackendConfig cond;
  ASSERT_TRUE(ParseBackendConfig(R"({"conditional_writes":true})", &cond).ok());
  EXPECT_TRUE(cond.s3.conditional_writes);
  for (const char* bad : {R"({"insecure":"yes"})", R"({"insecure":1})", R"({"ca_file":3})",
                          R"({"conditional_writes":"on"})"}) {
    BackendConfig d;
    EXPECT_FALSE(ParseBackendConfig(bad, &d).ok()) << bad;
  }
  for (
      const char* contradictory :
      {R"({"backend":"s3","endpoint":"http://h","access_key":"a","secret_key":"s","insecure":true})",
       R"({"backend":"s3","endpoint":"http://h","access_key":"a","secret_key":"s","ca_file":"c"})",
       R"({"backend":"s3","endpoint":"https://h","access_key":"a","secret_key":"s","ca_file":"c",
            "insecure":true})"}) {
    BackendConfig d;
    ASSERT_TRUE(ParseBackendConfig(contradictory, &d).ok()) << contradictory;
    EXPECT_FALSE(FinishBackendConfig(&d).ok()) << contradictory;
  }
  BackendConfig no_endpoint;
  no_endpoint.backend = "s3";
  EXPECT_FALSE(FinishBackendConfig(&no_endpoint).ok());
  BackendConfig local;
  EXPECT_TRUE(FinishBackendConfig(&local).ok());  // local needs nothing
}

}  // namespace
}  // namespace kvcs::s3client

// HTTPS against the in-process kvcs S3 server (src/s3) with a self-signed certificate made here.
namespace kvcs::s3client {
namespace {

// A self-signed ECDSA P-256 certificate (PEM) for subjectAltName DNS:kvcs-s3.test and
// IP:127.0.0.1, and its key, made with OpenSSL's APIs.
struct PemPair {
  std::string cert;
  std::string key;
};

std::string BioString(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(n));
}

PemPair MakeSelfSignedCert() {
  PemPair out;
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* x = X509_new();
  BIO* cert_bio = BIO_new(BIO_s_mem());
  BIO* key_bio = BIO_new(BIO_s_mem());
  bool ok = key != nullptr && x != nullptr && cert_bio != nullptr && key_bio != nullptr;
  ok = ok && X509_set_version(x, 2) == 1 && ASN1_INTEGER_set(X509_get_serialNumber(x), 7) == 1 &&
       X509_gmtime_adj(X509_getm_notBefore(x), -3600) != nullptr &&
       X509_gmtime_adj(X509_getm_notAfter(x), 7 * 86400) != nullptr && X509_set_pubkey(x, key) == 1;
  X509_NAME* name = ok ? X509_get_subject_name(x) : nullptr;
  ok = ok &&
       X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                  reinterpret_cast<const unsigned char*>("kvcs-s3.test"), -1, -1,
                                  0) == 1 &&
       X509_set_issuer_name(x, name) == 1;
  if (ok) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, x, x, nullptr, nullptr, 0);
    const std::pair<int, const char*> exts[] = {
        {NID_subject_alt_name, "DNS:kvcs-s3.test,IP:127.0.0.1"},
        {NID_basic_constraints, "critical,CA:TRUE"},
        {NID_key_usage, "critical,digitalSignature,keyCertSign"}};
    for (const auto& [nid, value] : exts) {
      X509_EXTENSION* e = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
      ok = ok && e != nullptr && X509_add_ext(x, e, -1) == 1;
      X509_EXTENSION_free(e);
    }
  }
  ok = ok && X509_sign(x, key, EVP_sha256()) > 0 && PEM_write_bio_X509(cert_bio, x) == 1 &&
       PEM_write_bio_PrivateKey(key_bio, key, nullptr, nullptr, 0, nullptr, nullptr) == 1;
  if (ok) {
    out.cert = BioString(cert_bio);
    out.key = BioString(key_bio);
  }
  BIO_free(cert_bio);
  BIO_free(key_bio);
  X509_free(x);
  EVP_PKEY_free(key);
  return out;
}

void WriteFile(const std::filesystem::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
}

// An S3 server on 127.0.0.1 (port 0) over a LocalStore in a fresh directory; with `tls`, it
// serves https with a new self-signed certificate whose PEM is at ca_file().
class LiveServer {
 public:
  explicit LiveServer(bool tls) {
    static std::atomic<int> seq{0};
    root_ = std::filesystem::temp_directory_path() /
            ("kvcs-s3client-tls-" + std::to_string(::getpid()) + "-" + std::to_string(seq++));
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
    store_ = std::move(
        *store::LocalStore::Open((root_ / "store").string(), {.read_threads = 2, .sync = false}));
    s3::ServerConfig cfg;
    cfg.port = 0;
    cfg.io_threads = 2;
    cfg.secrets["AKID"] = "secret";
    if (tls) {
      PemPair pem = MakeSelfSignedCert();
      EXPECT_FALSE(pem.cert.empty());
      WriteFile(root_ / "cert.pem", pem.cert);
      WriteFile(root_ / "key.pem", pem.key);
      cfg.tls_cert_file = (root_ / "cert.pem").string();
      cfg.tls_key_file = (root_ / "key.pem").string();
    }
    server_ = std::make_unique<s3::Server>(cfg, *store_);
    Status s = server_->Start();
    EXPECT_TRUE(s.ok()) << s.ToString();
    thread_ = std::thread([this] { server_->Run(false); });
  }
  ~LiveServer() {
    server_->Stop();
    thread_.join();
    server_.reset();
    store_.reset();
    std::filesystem::remove_all(root_);
  }
  uint16_t port() const { return server_->port(); }
  std::string ca_file() const { return (root_ / "cert.pem").string(); }
  std::string root() const { return root_.string(); }

 private:
  std::filesystem::path root_;
  std::unique_ptr<store::LocalStore> store_;
  std::unique_ptr<s3::Server> server_;
  std::thread thread_;
};

// Options for the server at `scheme_host` (e.g. "https://127.0.0.1") and srv's port.
ClientOptions LiveOptions(const LiveServer& srv, const std::string& scheme_host) {
  ClientOptions o;
  o.endpoint = scheme_host + ":" + std::to_string(srv.port());
  o.credentials = {"AKID", "secret", "us-east-1"};
  o.retry.max_attempts = 3;
  o.retry.base_backoff = std::chrono::milliseconds(1);
  o.retry.max_backoff = std::chrono::milliseconds(4);
  o.retry.attempt_timeout = std::chrono::milliseconds(5000);
  o.retry.total_deadline = std::chrono::milliseconds(10000);
  return o;
}

// PUT, GET, HEAD, range GET and list on one client; bytes compared. Sequential requests reuse
// one pooled connection; then a ParallelGet opens more.
void RoundTrip(const ClientOptions& o) {
  auto created = S3Client::Create(o);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  S3Client& c = **created;
  ASSERT_TRUE(c.CreateBucket("tls").ok());
  Bytes data(100000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 131 + (i >> 9));
  auto etag = c.PutObject("tls", "dir/obj", data, {});
  ASSERT_TRUE(etag.ok()) << etag.status().ToString();
  auto got = c.GetObject("tls", "dir/obj", 1 << 20);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, data);
  auto head = c.HeadObject("tls", "dir/obj");
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  EXPECT_EQ(head->size, data.size());
  EXPECT_EQ(head->etag, *etag);
  Bytes part(5000);
  auto n = c.GetRange("tls", "dir/obj", 1234, part, *etag);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  ASSERT_EQ(*n, part.size());
  EXPECT_TRUE(std::equal(part.begin(), part.end(), data.begin() + 1234));
  auto list = c.ListObjectsV2("tls", "dir/", "", "", "", 100);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->objects.size(), 1u);
  EXPECT_EQ(list->objects[0].key, "dir/obj");
  EXPECT_EQ(list->objects[0].size, data.size());
  EXPECT_EQ(c.stats().connections, 1u);
  // Ten concurrent range GETs of 10,000 bytes each cover the object.
  Bytes parallel(data.size());
  std::vector<RangeGet> ranges(10);
  for (size_t i = 0; i < ranges.size(); ++i) {
    ranges[i].bucket = "tls";
    ranges[i].key = "dir/obj";
    ranges[i].offset = i * 10000;
    ranges[i].out = std::span<uint8_t>(parallel).subspan(i * 10000, 10000);
  }
  c.ParallelGet(ranges);
  for (const auto& r : ranges) ASSERT_TRUE(r.result.ok()) << r.result.status().ToString();
  EXPECT_EQ(parallel, data);
  EXPECT_EQ(c.stats().retries, 0u);
}

// HEAD bucket with a fresh client for `o` must fail with `want` after `attempts` attempts;
// returns the status (the client is gone, its sockets closed).
Status FailsWith(const ClientOptions& o, ClientError want, uint64_t attempts) {
  auto c = S3Client::Create(o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  if (!c.ok()) return c.status();
  Status s = (*c)->HeadBucket("tls");
  EXPECT_TRUE(s.Is(want)) << s.ToString();
  EXPECT_EQ((*c)->stats().attempts, attempts);
  return s;
}

TEST(Https, RoundTripWithCaFile) {
  LiveServer srv(true);
  ClientOptions o = LiveOptions(srv, "https://127.0.0.1");
  o.ca_file = srv.ca_file();
  RoundTrip(o);
}

// End to end over 127.0.0.1: the client signs a PUT whose user metadata has inner runs of
// spaces, the S3 server `kvcs store` runs verifies it, and HEAD returns the value.
TEST(Signer, InnerSpacesVerifyOnALiveServer) {
  LiveServer srv(false);
  auto created = S3Client::Create(LiveOptions(srv, "http://127.0.0.1"));
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  S3Client& c = **created;
  ASSERT_TRUE(c.CreateBucket("sig").ok());
  PutObjectOptions o;
  o.user_meta = {{"a", "\"a   b    c\""}};
  auto etag = c.PutObject("sig", "obj", AsBytes(std::string_view("x")), o);
  ASSERT_TRUE(etag.ok()) << etag.status().ToString();
  auto head = c.HeadObject("sig", "obj");
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  ASSERT_EQ(head->user_meta.size(), 1u);
  EXPECT_EQ(head->user_meta[0].first, "a");
  EXPECT_EQ(head->user_meta[0].second, "\"a   b    c\"");
}

// The self-signed certificate is not in the system store: a typed, non-retried certificate
// error that says what to do.
TEST(Https, SystemTrustStoreRefusesSelfSigned) {
  LiveServer srv(true);
  Status s = FailsWith(LiveOptions(srv, "https://127.0.0.1"), ClientError::kTlsCertificate, 1);
  EXPECT_EQ(s.code(), Code::kPermissionDenied);
  for (const char* part : {"certificate verification failed", "self-signed", "system trust store",
                           "ca_file", "insecure"}) {
    EXPECT_NE(s.message().find(part), std::string::npos) << part << " in " << s.message();
  }
}

// Trusted certificate, wrong name: "localhost" is not among its names.
TEST(Https, WrongHostnameIsRefused) {
  LiveServer srv(true);
  ClientOptions o = LiveOptions(srv, "https://localhost");
  o.ca_file = srv.ca_file();
  Status s = FailsWith(o, ClientError::kTlsCertificate, 1);
  EXPECT_NE(s.message().find("hostname mismatch"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("'localhost'"), std::string::npos) << s.message();
}

// Development mode: no verification at all (untrusted certificate, wrong name).
TEST(Https, InsecureSkipsVerification) {
  LiveServer srv(true);
  ClientOptions o = LiveOptions(srv, "https://localhost");
  o.insecure = true;
  RoundTrip(o);
}

TEST(Https, PlainHttpStillWorks) {
  LiveServer srv(false);
  RoundTrip(LiveOptions(srv, "http://127.0.0.1"));
}

// https to a server that does not speak TLS (the kvcs server closes the connection on the
// ClientHello): like any connection closed mid-handshake, retried, then a kConnect that says so.
TEST(Https, PlainServerFailsTheHandshake) {
  LiveServer srv(false);
  ClientOptions o = LiveOptions(srv, "https://127.0.0.1");
  o.insecure = true;
  Status s = FailsWith(o, ClientError::kConnect, 3);
  EXPECT_NE(s.message().find("TLS handshake"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("really https"), std::string::npos) << s.message();
}

// A peer that answers the ClientHello with plain HTTP (what most HTTP servers do): a typed
// kTlsHandshake, not retried.
TEST(Https, HttpAnswerIsAHandshakeError) {
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::acceptor acceptor(ioc, {boost::asio::ip::make_address("127.0.0.1"), 0});
  const uint16_t port = acceptor.local_endpoint().port();
  std::thread peer([&] {
    boost::asio::ip::tcp::socket sock(ioc);
    boost::system::error_code ec;
    acceptor.accept(sock, ec);
    if (ec) return;
    const std::string answer = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
    boost::asio::write(sock, boost::asio::buffer(answer), ec);
    char buf[512];
    while (!ec) sock.read_some(boost::asio::buffer(buf), ec);  // until the client closes
  });
  ClientOptions o;
  o.endpoint = "https://127.0.0.1:" + std::to_string(port);
  o.credentials = {"AKID", "secret", "us-east-1"};
  o.insecure = true;
  Status s = FailsWith(o, ClientError::kTlsHandshake, 1);  // its socket is closed: the peer ends
  EXPECT_NE(s.message().find("really https"), std::string::npos) << s.message();
  peer.join();
}

TEST(Https, UnreadableCaFileFailsCreate) {
  ClientOptions o;
  o.endpoint = "https://127.0.0.1:1";
  o.credentials = {"AKID", "secret", "us-east-1"};
  o.ca_file = "/nonexistent/kvcs-ca.pem";
  auto c = S3Client::Create(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kInvalidArgument);
  EXPECT_NE(c.status().message().find("ca_file"), std::string::npos);
}

}  // namespace
}  // namespace kvcs::s3client
