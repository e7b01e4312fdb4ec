// In-process tests of the server's extension hook over a real loopback socket: matching,
// authentication modes, bounded body reads and streamed (chunked) responses.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <ctime>
#include <filesystem>
#include <thread>

#include "s3/server.h"
#include "s3/sigv4.h"
#include "store/local_store.h"

namespace kvcs::s3 {
namespace {

constexpr char kAk[] = "testkey";
constexpr char kSk[] = "testsecret";

// Sends one raw HTTP/1.1 request (Connection: close) and returns the whole response.
std::string Exchange(uint16_t port, const std::string& request) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  for (size_t sent = 0; sent < request.size();) {
    ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, 0);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

std::string SignedHeaders(const std::string& method, const std::string& path,
                          const std::string& query_canonical, uint16_t port,
                          const std::string& payload_hash) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char date[32];
  std::strftime(date, sizeof date, "%Y%m%dT%H%M%SZ", &tm);
  std::string host = "127.0.0.1:" + std::to_string(port);
  std::string scope = std::string(date, 8) + "/us-east-1/s3/aws4_request";
  std::string ch =
      "host:" + host + "\nx-amz-content-sha256:" + payload_hash + "\nx-amz-date:" + date + "\n";
  std::string cr = CanonicalRequest(method, path, query_canonical, ch,
                                    "host;x-amz-content-sha256;x-amz-date", payload_hash);
  std::string sig = SignHex(SigningKey(kSk, std::string(date, 8), "us-east-1", "s3"),
                            StringToSign(date, scope, cr));
  return "Host: " + host + "\r\nx-amz-content-sha256: " + payload_hash + "\r\nx-amz-date: " + date +
         "\r\nAuthorization: AWS4-HMAC-SHA256 Credential=" + kAk + "/" + scope +
         ", SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=" + sig + "\r\n";
}

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("kvcs-s3-server-test-" + std::to_string(::getpid()));
    std::filesystem::remove_all(root_);
    store_ =
        std::move(*store::LocalStore::Open(root_.string(), {.read_threads = 2, .sync = false}));
    ServerConfig cfg;
    cfg.port = 0;
    cfg.io_threads = 2;
    cfg.secrets[kAk] = kSk;
    server_ = std::make_unique<Server>(cfg, *store_);
    // An unauthenticated echo under /_echo/: reads the body in 3-byte chunks, answers chunked.
    Extension echo;
    echo.name = "echo";
    echo.auth = ExtensionAuth::kNone;
    echo.matches = [](const ExtensionRequest& r) { return r.path.rfind("/_echo/", 0) == 0; };
    echo.handle = [](ExtensionContext& ctx) -> Awaitable<void> {
      std::string body;
      uint8_t buf[3];
      for (;;) {
        auto n = co_await ctx.body.Read(buf);
        if (!n.ok() || *n == 0) break;
        body.append(reinterpret_cast<char*>(buf), *n);
      }
      HeaderList h;
      h.emplace_back("x-echo-access-key",
                     ctx.request.access_key.empty() ? "-" : ctx.request.access_key);
      Status s = co_await ctx.response.Start(200, std::move(h), std::nullopt);
      for (size_t i = 0; s.ok() && i < body.size(); i += 4) {
        s = co_await ctx.response.Write(AsBytes(std::string_view(body).substr(i, 4)));
      }
      if (s.ok()) co_await ctx.response.Finish();
    };
    server_->AddExtension(std::move(echo));
    // A SigV4-authenticated extension selected by a query parameter; forgets to respond when
    // asked to (the server must answer 500 for it).
    Extension whoami;
    whoami.name = "whoami";
    whoami.auth = ExtensionAuth::kSigV4;
    whoami.matches = [](const ExtensionRequest& r) { return r.HasQuery("kvcs-whoami"); };
    whoami.handle = [](ExtensionContext& ctx) -> Awaitable<void> {
      if (ctx.request.HasQuery("silent")) co_return;
      std::string who = ctx.request.access_key + " " + ctx.request.bucket;
      Status s = co_await ctx.response.Start(200, {}, who.size());
      if (s.ok()) s = co_await ctx.response.Write(AsBytes(who));
      if (s.ok()) co_await ctx.response.Finish();
    };
    server_->AddExtension(std::move(whoami));
    ASSERT_TRUE(server_->Start().ok());
    thread_ = std::thread([this] { server_->Run(false); });
  }
  void TearDown() override {
    server_->Stop();
    thread_.join();
    server_.reset();
    store_.reset();
    std::filesystem::remove_all(root_);
  }

  std::filesystem::path root_;
  std::unique_ptr<store::LocalStore> store_;
  std::unique_ptr<Server> server_;
  std::thread thread_;
};

TEST_F(ServerTest, UnauthenticatedExtensionStreamsChunked) {
  std::string r = Exchange(server_->port(),
                           "POST /_echo/x HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n"
                           "Connection: close\r\n\r\n0123456789");
  EXPECT_NE(r.find("HTTP/1.1 200"), std::string::npos) << r;
  EXPECT_NE(r.find("Transfer-Encoding: chunked"), std::string::npos) << r;
  EXPECT_NE(r.find("x-echo-access-key: -"), std::string::npos) << r;
  // Three chunks of 4, 4 and 2 bytes, then the terminating chunk.
  EXPECT_NE(r.find("4\r\n0123\r\n4\r\n4567\r\n2\r\n89\r\n0\r\n\r\n"), std::string::npos) << r;
}

TEST_F(ServerTest, SigV4ExtensionSeesTheAccessKeyAndRefusesAnonymous) {
  uint16_t port = server_->port();
  std::string r =
      Exchange(port, "GET /bkt?kvcs-whoami HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
  EXPECT_NE(r.find("HTTP/1.1 403"), std::string::npos) << r;
  EXPECT_NE(r.find("<Code>AccessDenied</Code>"), std::string::npos) << r;
  std::string req = "GET /bkt?kvcs-whoami HTTP/1.1\r\n" +
                    SignedHeaders("GET", "/bkt", "kvcs-whoami=", port, kEmptySha256Hex) +
                    "Connection: close\r\n\r\n";
  r = Exchange(port, req);
  EXPECT_NE(r.find("HTTP/1.1 200"), std::string::npos) << r;
  EXPECT_NE(r.find("\r\n\r\ntestkey bkt"), std::string::npos) << r;
  req = "GET /bkt?kvcs-whoami&silent HTTP/1.1\r\n" +
        SignedHeaders("GET", "/bkt", "kvcs-whoami=&silent=", port, kEmptySha256Hex) +
        "Connection: close\r\n\r\n";
  r = Exchange(port, req);
  EXPECT_NE(r.find("HTTP/1.1 500"), std::string::npos) << r;
}

// An answer given while a request body too large to drain is still unread says "Connection:
// close" (the server closes the connection after it), rather than promising keep-alive.
TEST_F(ServerTest, EarlyAnswerToALargeUnreadBodySaysConnectionClose) {
  uint16_t port = server_->port();
  const std::string body(300 * 1024, 'x');  // over the 256 KiB the server drains
  std::string r =
      Exchange(port, "POST /bkt?kvcs-whoami HTTP/1.1\r\n" +
                         SignedHeaders("POST", "/bkt", "kvcs-whoami=", port, "UNSIGNED-PAYLOAD") +
                         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  ASSERT_EQ(r.rfind("HTTP/1.1 200", 0), 0u) << r.substr(0, 200);
  EXPECT_NE(r.find("Connection: close"), std::string::npos) << r.substr(0, 400);
}

TEST_F(ServerTest, OversizedHeadIsRefused) {
  std::string big(70 * 1024, 'a');
  std::string r = Exchange(server_->port(), "GET / HTTP/1.1\r\nHost: h\r\nX-Big: " + big +
                                                "\r\nConnection: close\r\n\r\n");
  EXPECT_NE(r.find("HTTP/1.1 400"), std::string::npos) << r.substr(0, 200);
}

TEST_F(ServerTest, PlainS3RoundTripOnOneKeepAliveConnection) {
  uint16_t port = server_->port();
  std::string req = "PUT /bkt HTTP/1.1\r\n" +
                    SignedHeaders("PUT", "/bkt", "", port, kEmptySha256Hex) +
                    "Content-Length: 0\r\n\r\n";
  std::string body = "hello";
  std::string put = "PUT /bkt/k HTTP/1.1\r\n" +
                    SignedHeaders("PUT", "/bkt/k", "", port, kUnsignedPayload) +
                    "Content-Length: 5\r\n\r\n" + body;
  std::string get = "GET /bkt/k HTTP/1.1\r\n" +
                    SignedHeaders("GET", "/bkt/k", "", port, kEmptySha256Hex) +
                    "Connection: close\r\n\r\n";
  std::string r = Exchange(port, req + put + get);  // pipelined on one connection
  size_t first = r.find("HTTP/1.1 200");
  size_t second = r.find("HTTP/1.1 200", first + 1);
  size_t third = r.find("HTTP/1.1 200", second + 1);
  EXPECT_NE(third, std::string::npos) << r;
  EXPECT_EQ(r.substr(r.size() - 5), "hello") << r;
}

}  // namespace
}  // namespace kvcs::s3
