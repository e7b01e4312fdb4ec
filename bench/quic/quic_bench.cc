// Goodput of one QUIC stream over loopback versus TLS 1.3 over TCP moving the same bytes in the
// same run (the baseline), plus CPU seconds per GB (process CPU: both endpoints live in this
// process, so it counts sender + receiver together, for both transports alike).
//
//   kvcs_quic_bench [--mib N] [--payload BYTES]
// Defaults: 512 MiB per transport, 1452-byte QUIC packets. Runs well under 30 s on 2 cores.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/asio.h"
#include "quic/quic.h"
#include "quic/tls.h"

namespace asio = boost::asio;
using namespace kvcs;
using namespace kvcs::quic;
using transport::CloseInfo;
using transport::ErrorCode;
using transport::Session;
using transport::SessionVisitor;
using transport::Stream;
using transport::StreamVisitor;

namespace {

double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

struct Measure {
  double secs = 0, cpu = 0;
};

// ------------------------------------------------------------------------------------ QUIC
class SinkStream : public StreamVisitor {
 public:
  explicit SinkStream(Stream* s) : s_(s) {}
  void OnCanRead() override {
    for (;;) {
      auto p = s_->PeekReadable();
      if (p.data.empty() && !p.fin) return;
      count_ += p.data.size();
      bool fin = s_->Consume(p.data.size());
      if (fin) {
        uint8_t reply[8];
        for (int i = 0; i < 8; ++i) reply[i] = static_cast<uint8_t>(count_ >> (56 - 8 * i));
        (void)s_->Write(ByteSpan(reply, 8), true);
        return;
      }
    }
  }
  void OnCanWrite() override {}
  void OnResetStreamReceived(ErrorCode) override {}
  void OnStopSendingReceived(ErrorCode) override {}

 private:
  Stream* s_;
  uint64_t count_ = 0;
};

class SinkSession : public SessionVisitor {
 public:
  explicit SinkSession(Session* s) : s_(s) {}
  void OnSessionReady() override {}
  void OnSessionClosed(const CloseInfo&) override {}
  void OnIncomingBidirectionalStreamAvailable() override {
    while (Stream* st = s_->AcceptIncomingBidirectionalStream()) {
      st->SetVisitor(std::make_unique<SinkStream>(st));
      st->visitor()->OnCanRead();
    }
  }
  void OnIncomingUnidirectionalStreamAvailable() override {}
  void OnDatagramReceived(ByteSpan) override {}
  void OnCanCreateNewOutgoingBidirectionalStream() override {}
  void OnCanCreateNewOutgoingUnidirectionalStream() override {}

 private:
  Session* s_;
};

class Sender : public StreamVisitor, public SessionVisitor {
 public:
  Sender(uint64_t total) : left_(total), buf_(256 << 10, 0x5a) {}
  // SessionVisitor
  void OnSessionReady() override { ready = true; }
  void OnSessionClosed(const CloseInfo& i) override {
    closed = true;
    fprintf(stderr, "quic session closed: %s\n", i.ToString().c_str());
  }
  void OnIncomingBidirectionalStreamAvailable() override {}
  void OnIncomingUnidirectionalStreamAvailable() override {}
  void OnDatagramReceived(ByteSpan) override {}
  void OnCanCreateNewOutgoingBidirectionalStream() override {}
  void OnCanCreateNewOutgoingUnidirectionalStream() override {}
  // StreamVisitor (the visitor object is owned by the stream; we forward to this)
  void OnCanWrite() override {
    while (left_ > 0 && s->CanWrite()) {
      size_t n = std::min<uint64_t>(left_, buf_.size());
      left_ -= n;
      (void)s->Write(ByteSpan(buf_.data(), n), left_ == 0);
    }
  }
  void OnCanRead() override {
    uint8_t b[64];
    auto r = s->Read({b, sizeof(b)});
    got += r.bytes_read;
    if (r.fin) done = true;
  }
  void OnResetStreamReceived(ErrorCode) override { done = true; }
  void OnStopSendingReceived(ErrorCode) override { done = true; }

  Stream* s = nullptr;
  bool ready = false, closed = false, done = false;
  size_t got = 0;

 private:
  uint64_t left_;
  std::vector<uint8_t> buf_;
};

class Forward : public StreamVisitor {
 public:
  explicit Forward(Sender* s) : s_(s) {}
  void OnCanRead() override { s_->OnCanRead(); }
  void OnCanWrite() override { s_->OnCanWrite(); }
  void OnResetStreamReceived(ErrorCode c) override { s_->OnResetStreamReceived(c); }
  void OnStopSendingReceived(ErrorCode c) override { s_->OnStopSendingReceived(c); }
  void OnStreamClosed() override { s_->s = nullptr; }

 private:
  Sender* s_;
};

std::optional<Measure> RunQuic(const std::string& cert, const std::string& key, uint64_t bytes,
                               size_t payload, size_t ack_thresh, bool* gso) {
  asio::io_context sio;
  ServerConfig sc;
  sc.alpns = {"bench"};
  sc.cert_file = cert;
  sc.key_file = key;
  sc.limits.max_udp_payload = payload;
  sc.limits.ack_threshold = ack_thresh;
  std::vector<std::unique_ptr<SinkSession>> sessions;
  sc.on_session = [&](Session& s) {
    sessions.push_back(std::make_unique<SinkSession>(&s));
    s.SetVisitor(sessions.back().get());
  };
  auto server = QuicServer::Create(sio, sc);
  if (!server.ok()) {
    fprintf(stderr, "server: %s\n", server.status().ToString().c_str());
    return std::nullopt;
  }
  *gso = (*server)->gso_enabled();
  auto work = asio::make_work_guard(sio);
  std::thread st([&] { sio.run(); });

  asio::io_context cio;
  ClientConfig cc;
  cc.port = (*server)->port();
  cc.alpns = {"bench"};
  cc.server_name = "localhost";
  cc.ca_file = cert;
  cc.limits.max_udp_payload = payload;
  cc.limits.ack_threshold = ack_thresh;
  Sender sender(bytes);
  auto client = QuicClientSession::Connect(cio, cc, &sender);
  std::optional<Measure> result;
  if (client.ok()) {
    while (!sender.ready && !sender.closed) cio.run_one();
    if (sender.ready) {
      double c0 = CpuSeconds();
      auto t0 = std::chrono::steady_clock::now();
      sender.s = (*client)->OpenOutgoingBidirectionalStream();
      sender.s->SetVisitor(std::make_unique<Forward>(&sender));
      sender.OnCanWrite();
      while (!sender.done && !sender.closed) cio.run_one();
      Measure m;
      m.secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      m.cpu = CpuSeconds() - c0;
      if (sender.done) result = m;
    }
    (*client)->CloseSession(0, "done");
    cio.poll();
    client->reset();
  } else {
    fprintf(stderr, "client: %s\n", client.status().ToString().c_str());
  }
  asio::post(sio, [&] {
    server->reset();
    sessions.clear();
    work.reset();
  });
  st.join();
  return result;
}

// ------------------------------------------------------------------------------ TLS over TCP
std::optional<Measure> RunTls(const std::string& cert, const std::string& key, uint64_t bytes) {
  SSL_CTX* sctx = SSL_CTX_new(TLS_server_method());
  SSL_CTX* cctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_min_proto_version(sctx, TLS1_3_VERSION);
  SSL_CTX_set_min_proto_version(cctx, TLS1_3_VERSION);
  // Same cipher GnuTLS picks for QUIC here: AES-128-GCM.
  SSL_CTX_set_ciphersuites(sctx, "TLS_AES_128_GCM_SHA256");
  SSL_CTX_set_ciphersuites(cctx, "TLS_AES_128_GCM_SHA256");
  if (SSL_CTX_use_certificate_file(sctx, cert.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_use_PrivateKey_file(sctx, key.c_str(), SSL_FILETYPE_PEM) != 1) {
    fprintf(stderr, "openssl: cannot load cert/key\n");
    return std::nullopt;
  }
  SSL_CTX_load_verify_locations(cctx, cert.c_str(), nullptr);
  SSL_CTX_set_verify(cctx, SSL_VERIFY_PEER, nullptr);

  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  listen(lfd, 1);
  socklen_t al = sizeof(a);
  getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &al);

  std::atomic<uint64_t> received{0};
  std::thread server([&] {
    int fd = accept(lfd, nullptr, nullptr);
    SSL* ssl = SSL_new(sctx);
    SSL_set_fd(ssl, fd);
    if (SSL_accept(ssl) == 1) {
      std::vector<uint8_t> buf(256 << 10);
      uint64_t n = 0;
      for (;;) {
        int r = SSL_read(ssl, buf.data(), static_cast<int>(buf.size()));
        if (r <= 0) break;
        n += r;
        if (n >= bytes) break;
      }
      received = n;
      uint8_t ack = 1;
      SSL_write(ssl, &ack, 1);
    }
    SSL_shutdown(ssl);
    SSL_free(ssl);
    close(fd);
  });
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  SSL* ssl = SSL_new(cctx);
  SSL_set_fd(ssl, fd);
  SSL_set_tlsext_host_name(ssl, "localhost");
  SSL_set1_host(ssl, "localhost");
  std::optional<Measure> result;
  if (SSL_connect(ssl) == 1) {
    std::vector<uint8_t> buf(256 << 10, 0x5a);
    double c0 = CpuSeconds();
    auto t0 = std::chrono::steady_clock::now();
    uint64_t left = bytes;
    bool ok = true;
    while (left > 0) {
      int n = static_cast<int>(std::min<uint64_t>(left, buf.size()));
      int w = SSL_write(ssl, buf.data(), n);
      if (w <= 0) {
        ok = false;
        break;
      }
      left -= w;
    }
    uint8_t ack;
    if (ok && SSL_read(ssl, &ack, 1) == 1) {
      Measure m;
      m.secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      m.cpu = CpuSeconds() - c0;
      result = m;
    }
  } else {
    ERR_print_errors_fp(stderr);
  }
  SSL_shutdown(ssl);
  SSL_free(ssl);
  close(fd);
  server.join();
  close(lfd);
  SSL_CTX_free(sctx);
  SSL_CTX_free(cctx);
  if (received.load() != bytes) result.reset();
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t mib = 512;
  size_t payload = 1452;
  size_t ack_thresh = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--mib")) mib = std::stoull(argv[i + 1]);
    if (!strcmp(argv[i], "--payload")) payload = std::stoul(argv[i + 1]);
    if (!strcmp(argv[i], "--ack-thresh")) ack_thresh = std::stoul(argv[i + 1]);
  }
  uint64_t bytes = mib << 20;
  auto pem = GenerateSelfSignedCert("localhost");
  if (!pem.ok()) {
    fprintf(stderr, "cert: %s\n", pem.status().ToString().c_str());
    return 1;
  }
  auto dir =
      std::filesystem::temp_directory_path() / ("kvcs_quic_bench_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::string cert = (dir / "cert.pem").string(), key = (dir / "key.pem").string();
  std::ofstream(cert) << pem->cert_pem;
  std::ofstream(key) << pem->key_pem;

  bool gso = false;
  auto q = RunQuic(cert, key, bytes, payload, ack_thresh, &gso);
  auto t = RunTls(cert, key, bytes);
  std::filesystem::remove_all(dir);
  if (!q || !t) {
    fprintf(stderr, "a transfer failed (quic=%d tls=%d)\n", q.has_value(), t.has_value());
    return 1;
  }
  double gb = bytes / 1e9;
  double qg = bytes * 8 / q->secs / 1e9, tg = bytes * 8 / t->secs / 1e9;
  printf("one stream, %llu MiB over loopback, %zu-byte QUIC packets, GSO %s\n",
         static_cast<unsigned long long>(mib), payload, gso ? "on" : "off");
  printf("  QUIC (ngtcp2+GnuTLS):  %6.2f Gbit/s  %5.2f s  CPU %5.2f s/GB\n", qg, q->secs,
         q->cpu / gb);
  printf("  TLS 1.3 over TCP:      %6.2f Gbit/s  %5.2f s  CPU %5.2f s/GB  (baseline)\n", tg,
         t->secs, t->cpu / gb);
  printf("  ratio QUIC/TLS-TCP goodput: %.2f   CPU per GB ratio: %.2f\n", qg / tg,
         (q->cpu / gb) / (t->cpu / gb));
  return 0;
}
