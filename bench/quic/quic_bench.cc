// Goodput and CPU cost of one QUIC stream over loopback, against baselines measured in the same
// run on the same bytes:
//   - raw UDP: the kernel's loopback UDP path through our own quic::UdpSocket (the same GSO /
//     sendmmsg batching and GRO / recvmmsg receive the transport uses), datagrams of the same size
//     as our QUIC packets, no QUIC and no crypto. No QUIC stack can beat this on this machine.
//   - TLS 1.3 over TCP (OpenSSL, AES-128-GCM): what a byte stream costs without QUIC.
//   - ngtcp2's own example server and client (Debian ngtcp2-server / ngtcp2-client: gtlsserver
//     serving a file over HTTP/3, gtlsclient downloading it), when installed: the same library
//     driven by its authors' code, with their default settings.
// CPU is measured per thread (sender and receiver separately; for the ngtcp2 examples per
// process) and reported as seconds per GB moved, which does not depend on how busy the machine
// is; goodput does. The load average is printed with the figures.
//
//   kvcs_quic_bench [--mib N] [--payload BYTES] [--ack-thresh N] [--cc reno|cubic|bbr|bbr2]
//                   [--only quic,udp,tcp,ngtcp2] [--ngtcp2-server PATH] [--ngtcp2-client PATH]
// Defaults: 256 MiB per transport, our default TransportLimits. Runs well under 30 s on 2 cores.
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/asio.h"
#include "quic/client.h"
#include "quic/server.h"
#include "quic/tls.h"
#include "quic/udp.h"

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

double ClockSeconds(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}
double ThreadCpu() { return ClockSeconds(CLOCK_THREAD_CPUTIME_ID); }
clockid_t ThreadClock(std::thread& t) {
  clockid_t id;
  pthread_getcpuclockid(t.native_handle(), &id);
  return id;
}

struct Measure {
  IoStats sender_io, receiver_io;  // QUIC only
  double secs = 0;
  double sender_cpu = 0, receiver_cpu = 0;
  uint64_t bytes = 0;  // goodput bytes (raw UDP: bytes that arrived)
  std::string note;
};

std::string LoadAvg() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

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
    if (!done) fprintf(stderr, "quic session closed: %s\n", i.ToString().c_str());
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

// The client sends (main thread), the server receives (its own thread).
std::optional<Measure> RunQuic(const std::string& cert, const std::string& key, uint64_t bytes,
                               const TransportLimits& limits, bool* gso) {
  asio::io_context sio;
  ServerConfig sc;
  sc.alpns = {"bench"};
  sc.cert_file = cert;
  sc.key_file = key;
  sc.limits = limits;
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
  clockid_t server_clock = ThreadClock(st);

  asio::io_context cio;
  ClientConfig cc;
  cc.port = (*server)->port();
  cc.alpns = {"bench"};
  cc.server_name = "localhost";
  cc.ca_file = cert;
  cc.limits = limits;
  Sender sender(bytes);
  auto client = QuicClientSession::Connect(cio, cc, &sender);
  std::optional<Measure> result;
  if (client.ok()) {
    while (!sender.ready && !sender.closed) cio.run_one();
    if (sender.ready) {
      double c0 = ThreadCpu(), s0 = ClockSeconds(server_clock);
      auto t0 = std::chrono::steady_clock::now();
      sender.s = (*client)->OpenOutgoingBidirectionalStream();
      sender.s->SetVisitor(std::make_unique<Forward>(&sender));
      sender.OnCanWrite();
      while (!sender.done && !sender.closed) cio.run_one();
      Measure m;
      m.secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      m.sender_cpu = ThreadCpu() - c0;
      m.receiver_cpu = ClockSeconds(server_clock) - s0;
      m.bytes = bytes;
      m.sender_io = (*client)->io_stats();
      std::promise<IoStats> rx_io;
      asio::post(sio, [&] { rx_io.set_value((*server)->stats().io); });
      m.receiver_io = rx_io.get_future().get();
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
  double receiver_cpu = 0;  // written by the server thread before join
  std::thread server([&] {
    int fd = accept(lfd, nullptr, nullptr);
    SSL* ssl = SSL_new(sctx);
    SSL_set_fd(ssl, fd);
    if (SSL_accept(ssl) == 1) {
      std::vector<uint8_t> buf(256 << 10);
      uint64_t n = 0;
      double c0 = ThreadCpu();
      for (;;) {
        int r = SSL_read(ssl, buf.data(), static_cast<int>(buf.size()));
        if (r <= 0) break;
        n += r;
        if (n >= bytes) break;
      }
      receiver_cpu = ThreadCpu() - c0;
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
    double c0 = ThreadCpu();
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
      m.sender_cpu = ThreadCpu() - c0;
      m.bytes = bytes;
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
  if (result) result->receiver_cpu = receiver_cpu;
  return result;
}

// ----------------------------------------------------------------------------------- raw UDP
// The ceiling of any QUIC stack here: our own UdpSocket (quic/udp.h: the same GSO/sendmmsg
// batching and GRO/recvmmsg receive the transport uses) moving the same bytes without QUIC or
// crypto. In-process credit keeps the sender from overrunning the receiver's socket buffer (the
// receiver would otherwise drop and the figure would measure loss, not the kernel path): at most
// kUdpWindow bytes may be sent and not yet received.
constexpr uint64_t kUdpWindow = 2 << 20;

// Waits until `fd` is ready for `events` or 1 s passes; false on timeout (a lost datagram must
// not hang the run).
bool WaitFd(int fd, short events) {
  pollfd p{fd, events, 0};
  return poll(&p, 1, 1000) > 0;
}

std::optional<Measure> RunUdp(uint64_t bytes, size_t payload, bool* gso_used) {
  auto local = quic::SockAddr::Resolve("127.0.0.1", 0);
  if (!local.ok()) return std::nullopt;
  auto rx_sock = quic::UdpSocket::Open(*local, nullptr);
  if (!rx_sock.ok()) return std::nullopt;
  quic::SockAddr to = (*rx_sock)->local();
  auto tx_sock = quic::UdpSocket::Open(*local, &to);
  if (!tx_sock.ok()) return std::nullopt;
  quic::UdpSocket& rx_udp = **rx_sock;
  quic::UdpSocket& tx = **tx_sock;
  *gso_used = tx.gso();
  payload = std::min(payload, rx_udp.max_rx_payload());

  std::mutex mu;
  std::condition_variable cv;
  std::atomic<uint64_t> received{0};
  std::atomic<bool> receiver_done{false};
  double receiver_cpu = 0;
  std::thread rx([&] {
    std::vector<quic::RxDatagram> got_now;
    double c0 = ThreadCpu();
    uint64_t got = 0;
    while (got < bytes) {
      if (rx_udp.RecvBatch(&got_now) == 0) {
        if (!WaitFd(rx_udp.fd(), POLLIN)) break;
        continue;
      }
      for (const quic::RxDatagram& d : got_now) got += d.len;
      received.store(got, std::memory_order_release);
      std::lock_guard<std::mutex> lock(mu);
      cv.notify_one();
    }
    receiver_cpu = ThreadCpu() - c0;
    receiver_done = true;
    std::lock_guard<std::mutex> lock(mu);
    cv.notify_one();
  });

  // Sends the built batch, waiting for the socket while it would block.
  auto send = [&] {
    if (tx.batch_packets() == 0 || tx.SendBatch(nullptr)) return;
    while (!tx.FlushPending()) {
      if (!WaitFd(tx.fd(), POLLOUT)) return;
    }
  };
  double c0 = ThreadCpu();
  auto t0 = std::chrono::steady_clock::now();
  uint64_t sent = 0;
  while (sent < bytes && !receiver_done) {
    if (sent - received.load(std::memory_order_acquire) > kUdpWindow) {
      send();
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] {
        return receiver_done || sent - received.load(std::memory_order_acquire) <= kUdpWindow;
      });
      continue;
    }
    // The packet's bytes are left as they are: QUIC would write ciphertext there.
    size_t len = static_cast<size_t>(std::min<uint64_t>(payload, bytes - sent));
    (void)tx.NextPacketBuffer();
    sent += len;
    if (tx.CommitPacket(len) || sent == bytes) send();
  }
  double sender_cpu = ThreadCpu() - c0;
  rx.join();
  auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Measure m;
  m.bytes = received.load();
  // A tail lost to the 1 s receive timeout is not counted in the time either (approximately).
  m.secs = m.bytes == bytes ? secs : secs - 1.0;
  m.sender_cpu = sender_cpu;
  m.receiver_cpu = receiver_cpu;
  if (m.bytes != bytes) {
    m.note = "lost " + std::to_string(bytes - m.bytes) + " bytes";
  }
  if (m.bytes == 0) return std::nullopt;
  return m;
}

// ------------------------------------------------------------------ ngtcp2 example binaries
double ProcCpu(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(f, line);
  auto p = line.rfind(')');
  if (p == std::string::npos) return 0;
  std::istringstream in(line.substr(p + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  // Fields 3.. follow the command; utime and stime are fields 14 and 15.
  for (int i = 3; i <= 15 && in >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

pid_t Spawn(const std::vector<std::string>& args) {
  pid_t pid = fork();
  if (pid == 0) {
    int devnull = open("/dev/null", O_RDWR);
    dup2(devnull, 0);
    dup2(devnull, 1);
    dup2(devnull, 2);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

uint16_t FreeUdpPort() {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t al = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &al);
  close(fd);
  return ntohs(a.sin_port);
}

bool UdpPortInUse(uint16_t port) {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  bool in_use = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0;
  close(fd);
  return in_use;
}

// The server (receiving the request, sending the file) is the SENDER of the bytes here.
std::optional<Measure> RunNgtcp2Examples(const std::string& server_bin,
                                         const std::string& client_bin,
                                         const std::filesystem::path& dir, const std::string& cert,
                                         const std::string& key, uint64_t bytes) {
  auto htdocs = dir / "htdocs";
  std::filesystem::create_directories(htdocs);
  {
    std::ofstream f(htdocs / "blob", std::ios::binary);
    std::vector<char> chunk(1 << 20, 0x5a);
    for (uint64_t left = bytes; left > 0;) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(left, chunk.size()));
      f.write(chunk.data(), static_cast<std::streamsize>(n));
      left -= n;
    }
  }
  uint16_t port = FreeUdpPort();
  std::string ports = std::to_string(port);
  pid_t server = Spawn({server_bin, "-q", "--no-quic-dump", "--no-http-dump", "-d", htdocs.string(),
                        "127.0.0.1", ports, key, cert});
  // Wait (bounded) until the server has bound its port.
  for (int i = 0; i < 500 && !UdpPortInUse(port); ++i) usleep(10000);
  std::optional<Measure> result;
  if (UdpPortInUse(port)) {
    double s0 = ProcCpu(server);
    auto t0 = std::chrono::steady_clock::now();
    pid_t client =
        Spawn({client_bin, "-q", "--no-quic-dump", "--no-http-dump", "--exit-on-all-streams-close",
               "127.0.0.1", ports, "https://127.0.0.1:" + ports + "/blob"});
    int status = 0;
    rusage ru{};
    wait4(client, &status, 0, &ru);
    Measure m;
    m.secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    m.sender_cpu = ProcCpu(server) - s0;
    m.receiver_cpu =
        ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
    m.bytes = bytes;
    m.note = "HTTP/3, their defaults, incl. process start and handshake";
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      result = m;
    } else {
      fprintf(stderr, "ngtcp2 example client failed (status %d)\n", status);
    }
  } else {
    fprintf(stderr, "ngtcp2 example server did not start\n");
  }
  kill(server, SIGTERM);
  waitpid(server, nullptr, 0);
  return result;
}

bool Executable(const std::string& p) { return !p.empty() && access(p.c_str(), X_OK) == 0; }

bool Wants(const std::string& only, const char* what) {
  if (only.empty()) return true;
  return ("," + only + ",").find(std::string(",") + what + ",") != std::string::npos;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t mib = 256;
  TransportLimits limits;
  std::string only;
  std::string ng_server = "/usr/sbin/gtlsserver", ng_client = "/usr/bin/gtlsclient";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h" || i + 1 >= argc) {
      printf(
          "usage: kvcs_quic_bench [--mib N] [--payload BYTES] [--ack-thresh N]\n"
          "         [--cc reno|cubic|bbr|bbr2] [--only quic,udp,tcp,ngtcp2]\n"
          "         [--ngtcp2-server PATH] [--ngtcp2-client PATH]\n"
          "example: kvcs_quic_bench --mib 512 --only quic,udp\n");
      return a == "--help" || a == "-h" ? 0 : 2;
    }
    std::string v = argv[++i];
    if (a == "--mib") {
      mib = std::stoull(v);
    } else if (a == "--payload") {
      limits.max_udp_payload = std::stoul(v);
      limits.loopback_udp_payload = limits.max_udp_payload;
    } else if (a == "--ack-thresh") {
      limits.ack_threshold = std::stoul(v);
    } else if (a == "--cc") {
      if (v == "reno") {
        limits.congestion_control = CongestionControl::kReno;
      } else if (v == "cubic") {
        limits.congestion_control = CongestionControl::kCubic;
      } else if (v == "bbr") {
        limits.congestion_control = CongestionControl::kBbr;
      } else if (v == "bbr2") {
        limits.congestion_control = CongestionControl::kBbr2;
      } else {
        fprintf(stderr, "unknown --cc %s\n", v.c_str());
        return 2;
      }
    } else if (a == "--only") {
      only = v;
    } else if (a == "--ngtcp2-server") {
      ng_server = v;
    } else if (a == "--ngtcp2-client") {
      ng_client = v;
    } else {
      fprintf(stderr, "unknown option %s (see --help)\n", a.c_str());
      return 2;
    }
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

  size_t packet =
      std::min(limits.loopback_udp_payload ? limits.loopback_udp_payload : limits.max_udp_payload,
               kMaxUdpPayload);
  printf("one stream, %llu MiB over loopback; QUIC packets up to %zu bytes, ack threshold %zu\n",
         static_cast<unsigned long long>(mib), packet, limits.ack_threshold);
  printf("load average before: %s\n", LoadAvg().c_str());
  printf("  %-30s %8s %7s %9s %9s %9s\n", "transport", "Gbit/s", "secs", "CPU s/GB", "sender",
         "receiver");
  auto print = [&](const char* name, const std::optional<Measure>& m) {
    if (!m) {
      printf("  %-30s   failed or skipped\n", name);
      return;
    }
    double gb = m->bytes / 1e9;
    printf("  %-30s %8.2f %7.2f %9.2f %9.2f %9.2f  %s\n", name, m->bytes * 8 / m->secs / 1e9,
           m->secs, (m->sender_cpu + m->receiver_cpu) / gb, m->sender_cpu / gb,
           m->receiver_cpu / gb, m->note.c_str());
    fflush(stdout);
  };

  std::optional<Measure> q, u, t, n;
  bool gso = false, udp_gso = false;
  if (Wants(only, "quic")) {
    q = RunQuic(cert, key, bytes, limits, &gso);
    print(gso ? "QUIC (ours, GSO)" : "QUIC (ours, no GSO)", q);
  }
  if (q) {
    auto io = [](const char* side, const IoStats& s) {
      auto per = [](uint64_t a, uint64_t b) { return b ? static_cast<double>(a) / b : 0.0; };
      printf(
          "    %s: %llu pkts sent in %llu calls (%.1f/call), %llu received in %llu recvmmsg "
          "(%.1f/call, %.1f/buffer), %llu flushes, timer %llu sets %llu fires, %llu "
          "flush yields, %llu EAGAIN\n",
          side, (unsigned long long)s.packets_sent, (unsigned long long)s.send_calls,
          per(s.packets_sent, s.send_calls), (unsigned long long)s.datagrams_received,
          (unsigned long long)s.recv_calls, per(s.datagrams_received, s.recv_calls),
          per(s.datagrams_received, s.recv_buffers), (unsigned long long)s.flushes,
          (unsigned long long)s.timer_sets, (unsigned long long)s.timer_fires,
          (unsigned long long)s.flush_yields, (unsigned long long)s.send_blocked);
    };
    io("sender  ", q->sender_io);
    io("receiver", q->receiver_io);
  }
  if (Wants(only, "udp")) {
    u = RunUdp(bytes, packet, &udp_gso);
    print(udp_gso ? "raw UDP (GSO+GRO, no crypto)" : "raw UDP (mmsg, no crypto)", u);
  }
  if (Wants(only, "tcp")) {
    t = RunTls(cert, key, bytes);
    print("TLS 1.3 over TCP", t);
  }
  if (Wants(only, "ngtcp2")) {
    if (Executable(ng_server) && Executable(ng_client)) {
      n = RunNgtcp2Examples(ng_server, ng_client, dir, cert, key, bytes);
      print("ngtcp2 examples (gtls*)", n);
    } else {
      printf(
          "  ngtcp2 examples: %s or %s not installed (apt-get install ngtcp2-server "
          "ngtcp2-client)\n",
          ng_server.c_str(), ng_client.c_str());
    }
  }
  printf("load average after: %s\n", LoadAvg().c_str());
  std::filesystem::remove_all(dir);

  if (q) {
    double qg = q->bytes / q->secs, qc = (q->sender_cpu + q->receiver_cpu) / q->bytes;
    auto ratio = [&](const char* name, const std::optional<Measure>& b) {
      if (!b) return;
      double bg = b->bytes / b->secs, bc = (b->sender_cpu + b->receiver_cpu) / b->bytes;
      printf("  ours / %-24s goodput %5.2fx   CPU per byte %5.2fx\n", name, qg / bg, qc / bc);
    };
    printf("ratios (goodput: higher is better for us; CPU per byte: lower is better)\n");
    ratio("raw UDP (ceiling)", u);
    ratio("TLS 1.3 over TCP", t);
    ratio("ngtcp2 examples", n);
  }
  if (!q && Wants(only, "quic")) return 1;
  return 0;
}
