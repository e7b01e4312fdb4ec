// http::Server on its own over 127.0.0.1: routing (first match wins, fallback), streamed request
// bodies (Content-Length and chunked), chunked responses, keep-alive, the body limit, the header
// deadline, the errors the server answers itself, a custom error responder, and TLS.
#include "common/asio.h"

#include "http/server.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <unistd.h>

#include <boost/asio/ssl.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

namespace kvcs::http {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

// Writes `request` and reads until the server closes the connection.
template <class Stream>
std::string WriteAndReadToEnd(Stream& s, const std::string& request) {
  boost::system::error_code ec;
  asio::write(s, asio::buffer(request), ec);
  std::string out;
  char buf[4096];
  for (;;) {
    size_t n = s.read_some(asio::buffer(buf), ec);
    out.append(buf, n);
    if (ec) break;
  }
  return out;
}

std::string Exchange(uint16_t port, const std::string& request) {
  asio::io_context ioc;
  tcp::socket s(ioc);
  s.connect({asio::ip::make_address("127.0.0.1"), port});
  return WriteAndReadToEnd(s, request);
}

// Reads `request`'s handler body in 3-byte reads; answers the bytes in 4-byte chunks (chunked
// transfer coding), or 413/400 when reading failed.
Awaitable<void> Echo(HandlerContext& ctx) {
  std::string body;
  uint8_t buf[3];
  for (;;) {
    auto n = co_await ctx.body.Read(buf);
    if (!n.ok()) {
      int status = n.status().detail() == static_cast<int>(BodyError::kTooLarge) ? 413 : 400;
      co_await SendComplete(ctx.response, status, {}, n.status().message());
      co_return;
    }
    if (*n == 0) break;
    body.append(reinterpret_cast<char*>(buf), *n);
  }
  HeaderList h;
  h.emplace_back("x-route", "echo");
  Status s = co_await ctx.response.Start(200, std::move(h), std::nullopt);
  for (size_t i = 0; s.ok() && i < body.size(); i += 4) {
    s = co_await ctx.response.Write(AsBytes(std::string_view(body).substr(i, 4)));
  }
  if (s.ok()) co_await ctx.response.Finish();
}

Handler Text(std::string text) {
  return [text = std::move(text)](HandlerContext& ctx) -> Awaitable<void> {
    std::string body = text + " " + ctx.request.path;
    co_await SendComplete(ctx.response, 200, {}, body);
  };
}

class HttpServerTest : public ::testing::Test {
 protected:
  void StartServer(ServerOptions o) {
    o.port = 0;
    o.io_threads = 2;
    server_ = std::make_unique<Server>(std::move(o));
    Router& r = server_->router();
    r.Add({"first", Router::PathPrefix("/x/"), Text("first")});
    r.Add({"second", Router::PathPrefix("/x/y"), Text("second")});  // shadowed by "first"
    r.Add({"echo", Router::MethodAndPath("POST", "/echo"), Echo});
    r.Add({"silent", Router::PathPrefix("/silent"),
           [](HandlerContext&) -> Awaitable<void> { co_return; }});
    r.SetFallback(Text("fallback"));
    ASSERT_TRUE(server_->Start().ok());
    thread_ = std::thread([this] { server_->Run(false); });
  }
  void SetUp() override {
    ServerOptions o;
    o.limits.max_body_bytes = 1024;
    o.limits.header_timeout = std::chrono::milliseconds(300);
    StartServer(std::move(o));
  }
  void TearDown() override {
    server_->Stop();
    thread_.join();
  }
  uint16_t port() const { return server_->port(); }

  std::unique_ptr<Server> server_;
  std::thread thread_;
};

TEST_F(HttpServerTest, FirstMatchingRouteWinsElseFallback) {
  std::string r = Exchange(port(), "GET /x/y HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 200", 0), 0u) << r;
  EXPECT_NE(r.find("Server: kvcs"), std::string::npos) << r;
  EXPECT_NE(r.find("\r\nDate: "), std::string::npos) << r;
  EXPECT_NE(r.find("\r\n\r\nfirst /x/y"), std::string::npos) << r;
  r = Exchange(port(), "GET /other%20path?a=1 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
  EXPECT_NE(r.find("\r\n\r\nfallback /other path"), std::string::npos) << r;
  // GET /echo is not the echo route (it is POST only).
  r = Exchange(port(), "GET /echo HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
  EXPECT_NE(r.find("\r\n\r\nfallback /echo"), std::string::npos) << r;
}

TEST_F(HttpServerTest, StreamedBodyAndChunkedResponse) {
  std::string r = Exchange(port(),
                           "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n"
                           "Connection: close\r\n\r\n0123456789");
  EXPECT_EQ(r.rfind("HTTP/1.1 200", 0), 0u) << r;
  EXPECT_NE(r.find("Transfer-Encoding: chunked"), std::string::npos) << r;
  EXPECT_NE(r.find("x-route: echo"), std::string::npos) << r;
  // Three chunks of 4, 4 and 2 bytes, then the terminating chunk.
  EXPECT_NE(r.find("4\r\n0123\r\n4\r\n4567\r\n2\r\n89\r\n0\r\n\r\n"), std::string::npos) << r;
  // A chunked request body, with 100-continue.
  r = Exchange(port(),
               "POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n"
               "Expect: 100-continue\r\nConnection: close\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 100", 0), 0u) << r;
  EXPECT_NE(r.find("HTTP/1.1 200"), std::string::npos) << r;
  EXPECT_NE(r.find("4\r\nabcd\r\n1\r\ne\r\n0\r\n\r\n"), std::string::npos) << r;
}

TEST_F(HttpServerTest, KeepAlivePipelinedRequests) {
  std::string r = Exchange(port(),
                           "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nhi"
                           "GET /x/1 HTTP/1.1\r\nHost: h\r\n\r\n"
                           "GET /z HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
  size_t first = r.find("HTTP/1.1 200");
  size_t second = r.find("HTTP/1.1 200", first + 1);
  size_t third = r.find("HTTP/1.1 200", second + 1);
  ASSERT_NE(third, std::string::npos) << r;
  EXPECT_NE(r.find("first /x/1"), std::string::npos) << r;
  EXPECT_EQ(r.substr(r.size() - 11), "fallback /z") << r;
}

TEST_F(HttpServerTest, BodyOverTheLimitIsRefused) {
  // A declared length over max_body_bytes: 413 from the server, and the connection closes.
  std::string body(2000, 'x');
  std::string r =
      Exchange(port(), "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 2000\r\n\r\n" + body +
                           "GET /x/1 HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 413", 0), 0u) << r;
  EXPECT_NE(r.find("Connection: close"), std::string::npos) << r;
  EXPECT_EQ(r.find("first /x/1"), std::string::npos) << r;  // never served
  // A chunked body that grows past the limit: the handler's Read fails with kTooLarge.
  std::string chunked = "POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 3; ++i) chunked += "200\r\n" + std::string(512, 'y') + "\r\n";
  chunked += "0\r\n\r\n";
  r = Exchange(port(), chunked);
  EXPECT_EQ(r.rfind("HTTP/1.1 413", 0), 0u) << r;
  EXPECT_NE(r.find("Connection: close"), std::string::npos) << r;
}

TEST_F(HttpServerTest, ServerAnswersBadTargetsOversizedHeadsAndSilentHandlers) {
  std::string r = Exchange(port(), "GET /%zz HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 400", 0), 0u) << r;
  r = Exchange(port(), "GET /a?b=%zz HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 400", 0), 0u) << r;
  r = Exchange(port(), "GET / HTTP/1.1\r\nHost: h\r\nX-Big: " + std::string(70 * 1024, 'a') +
                           "\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 400", 0), 0u) << r.substr(0, 200);
  r = Exchange(port(), "GET /silent HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 500", 0), 0u) << r;
  EXPECT_NE(r.find("text/plain"), std::string::npos) << r;
}

TEST_F(HttpServerTest, IdleConnectionClosedAfterHeaderTimeout) {
  asio::io_context ioc;
  tcp::socket s(ioc);
  s.connect({asio::ip::make_address("127.0.0.1"), port()});
  auto t0 = std::chrono::steady_clock::now();
  std::string r = WriteAndReadToEnd(s, "GET /x/");  // an unfinished head
  auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(r, "");
  EXPECT_GE(waited, std::chrono::milliseconds(250));
  EXPECT_LT(waited, std::chrono::seconds(10));
}

TEST(HttpServer, CustomErrorResponderAndNoFallback) {
  ServerOptions o;
  o.io_threads = 1;
  Server server(o);
  server.SetErrorResponder(
      [](ResponseWriter& w, int status, std::string_view message) -> Awaitable<Status> {
        std::string body = "custom: " + std::string(message);
        HeaderList h;
        h.emplace_back("Content-Type", "application/x-test");
        co_return co_await SendComplete(w, status, std::move(h), body);
      });
  ASSERT_TRUE(server.Start().ok());
  std::thread t([&] { server.Run(false); });
  std::string r =
      Exchange(server.port(), "GET /nowhere HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 404", 0), 0u) << r;
  EXPECT_NE(r.find("application/x-test"), std::string::npos) << r;
  EXPECT_NE(r.find("custom: No handler for /nowhere"), std::string::npos) << r;
  server.Stop();
  t.join();
}

// A throw-away self-signed P-256 certificate and key (PEM files under `dir`).
bool WriteSelfSignedCert(const std::filesystem::path& cert, const std::filesystem::path& key) {
  EVP_PKEY* pkey = EVP_EC_gen("P-256");
  X509* x = X509_new();
  bool ok = pkey != nullptr && x != nullptr && ASN1_INTEGER_set(X509_get_serialNumber(x), 1) == 1 &&
            X509_gmtime_adj(X509_getm_notBefore(x), -60) != nullptr &&
            X509_gmtime_adj(X509_getm_notAfter(x), 3600) != nullptr &&
            X509_set_pubkey(x, pkey) == 1 &&
            X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                                       reinterpret_cast<const unsigned char*>("127.0.0.1"), -1, -1,
                                       0) == 1 &&
            X509_set_issuer_name(x, X509_get_subject_name(x)) == 1 &&
            X509_sign(x, pkey, EVP_sha256()) > 0;
  FILE* cf = ok ? std::fopen(cert.c_str(), "w") : nullptr;
  FILE* kf = ok ? std::fopen(key.c_str(), "w") : nullptr;
  ok = ok && cf != nullptr && kf != nullptr && PEM_write_X509(cf, x) == 1 &&
       PEM_write_PrivateKey(kf, pkey, nullptr, nullptr, 0, nullptr, nullptr) == 1;
  if (cf != nullptr) std::fclose(cf);
  if (kf != nullptr) std::fclose(kf);
  X509_free(x);
  EVP_PKEY_free(pkey);
  return ok;
}

TEST(HttpServer, ServesOverTls) {
  auto dir =
      std::filesystem::temp_directory_path() / ("kvcs-http-tls-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(WriteSelfSignedCert(dir / "cert.pem", dir / "key.pem"));
  ServerOptions o;
  o.io_threads = 1;
  o.tls_cert_file = (dir / "cert.pem").string();
  o.tls_key_file = (dir / "key.pem").string();
  Server server(o);
  server.router().Add({"echo", Router::MethodAndPath("POST", "/echo"), Echo});
  ASSERT_TRUE(server.Start().ok());
  std::thread t([&] { server.Run(false); });

  asio::io_context ioc;
  asio::ssl::context ctx(asio::ssl::context::tls_client);
  ctx.set_verify_mode(asio::ssl::verify_none);
  asio::ssl::stream<tcp::socket> s(ioc, ctx);
  s.next_layer().connect({asio::ip::make_address("127.0.0.1"), server.port()});
  s.handshake(asio::ssl::stream_base::client);
  std::string r = WriteAndReadToEnd(s,
                                    "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n"
                                    "Connection: close\r\n\r\nhello");
  EXPECT_EQ(r.rfind("HTTP/1.1 200", 0), 0u) << r;
  EXPECT_NE(r.find("4\r\nhell\r\n1\r\no\r\n0\r\n\r\n"), std::string::npos) << r;
  // Plain HTTP to the TLS port gets no HTTP answer.
  EXPECT_EQ(Exchange(server.port(), "GET / HTTP/1.1\r\nHost: h\r\n\r\n").find("HTTP/1.1"),
            std::string::npos);
  server.Stop();
  t.join();
  std::filesystem::remove_all(dir);
}

TEST(HttpServer, StartFailsWithHalfATlsPair) {
  ServerOptions o;
  o.tls_cert_file = "/nonexistent/cert.pem";
  Server server(o);
  EXPECT_FALSE(server.Start().ok());
}

}  // namespace
}  // namespace kvcs::http
