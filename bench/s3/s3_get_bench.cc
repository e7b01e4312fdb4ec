// s3_get_bench: plain S3 GET throughput and request rate of `kvcs store` over loopback, against a
// raw pread of the same bytes measured in the same run (the ceiling).
//
//   s3_get_bench [--big-mib N] [--small-count N]
//
// 1. One large object (default 256 MiB) read whole with GET (SigV4, UNSIGNED-PAYLOAD), vs pread.
// 2. Many 64 KiB objects (one ObjectCache block-layer each) read with one GET each on a
//    keep-alive connection, vs pread of the same files: the per-request cost that the aggregated
//    extension exists to amortize.
// The client is a minimal blocking HTTP/1.1 client (no Beast) so that it costs little itself.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "common/crypto.h"
#include "common/hex.h"
#include "s3/server.h"
#include "s3/sigv4.h"
#include "store/local_store.h"

using namespace kvcs;
using Clock = std::chrono::steady_clock;

namespace {

constexpr char kAk[] = "benchkey";
constexpr char kSk[] = "benchsecret";

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::string AmzDate() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

std::string SignedGet(const std::string& path, const std::string& host) {
  std::string date = AmzDate();
  std::string scope = date.substr(0, 8) + "/us-east-1/s3/aws4_request";
  std::string ch =
      "host:" + host + "\nx-amz-content-sha256:UNSIGNED-PAYLOAD\nx-amz-date:" + date + "\n";
  std::string cr = s3::CanonicalRequest("GET", path, "", ch, "host;x-amz-content-sha256;x-amz-date",
                                        s3::kUnsignedPayload);
  std::string sig = s3::SignHex(s3::SigningKey(kSk, date.substr(0, 8), "us-east-1", "s3"),
                                s3::StringToSign(date, scope, cr));
  return "GET " + path + " HTTP/1.1\r\nHost: " + host +
         "\r\nx-amz-content-sha256: UNSIGNED-PAYLOAD\r\nx-amz-date: " + date +
         "\r\nAuthorization: AWS4-HMAC-SHA256 Credential=" + kAk + "/" + scope +
         ", SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=" + sig + "\r\n\r\n";
}

class Client {
 public:
  explicit Client(uint16_t port) : port_(port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) std::perror("connect");
    host_ = "127.0.0.1:" + std::to_string(port);
  }
  ~Client() { ::close(fd_); }

  // GETs `path` into `out` (resized); returns the HTTP status.
  int Get(const std::string& path, std::vector<uint8_t>* out) {
    std::string req = SignedGet(path, host_);
    ::send(fd_, req.data(), req.size(), 0);
    size_t end;
    while ((end = pending_.find("\r\n\r\n")) == std::string::npos) {
      char buf[16384];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return -1;
      pending_.append(buf, static_cast<size_t>(n));
    }
    std::string head = pending_.substr(0, end + 4);
    pending_.erase(0, end + 4);
    int status = std::atoi(head.c_str() + 9);
    size_t cl = 0;
    size_t p = head.find("Content-Length: ");
    if (p != std::string::npos) cl = std::strtoull(head.c_str() + p + 16, nullptr, 10);
    out->resize(cl);
    size_t got = std::min(cl, pending_.size());
    std::memcpy(out->data(), pending_.data(), got);
    pending_.erase(0, got);
    while (got < cl) {
      ssize_t n = ::recv(fd_, out->data() + got, cl - got, 0);
      if (n <= 0) return -1;
      got += static_cast<size_t>(n);
    }
    return status;
  }

 private:
  uint16_t port_;
  int fd_;
  std::string host_;
  std::string pending_;  // bytes received past the current response head
};

// Baseline: the same transfers over a bare loopback TCP connection (no HTTP, no store): a thread
// answers each 1-byte request with `reply` bytes. Returns seconds for `n` round trips.
double LoopbackSeconds(size_t reply, size_t n) {
  int ls = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ::bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::listen(ls, 1);
  ::getsockname(ls, reinterpret_cast<sockaddr*>(&a), &len);
  std::thread srv([&] {
    int c = ::accept(ls, nullptr, nullptr);
    int one = 1;
    ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::vector<uint8_t> payload(std::min<size_t>(reply, 1 << 20), 7);
    char b;
    while (::recv(c, &b, 1, 0) == 1) {
      for (size_t sent = 0; sent < reply;) {
        ssize_t w = ::send(c, payload.data(), std::min(payload.size(), reply - sent), 0);
        if (w <= 0) break;
        sent += static_cast<size_t>(w);
      }
    }
    ::close(c);
  });
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  std::vector<uint8_t> in(std::min<size_t>(reply, 1 << 20));
  auto t0 = Clock::now();
  for (size_t i = 0; i < n; ++i) {
    ::send(fd, "x", 1, 0);
    for (size_t got = 0; got < reply;) {
      ssize_t r = ::recv(fd, in.data(), std::min(in.size(), reply - got), 0);
      if (r <= 0) break;
      got += static_cast<size_t>(r);
    }
  }
  double s = Seconds(t0, Clock::now());
  ::close(fd);
  srv.join();
  ::close(ls);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  size_t big_mib = 256, small_count = 2048;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--big-mib") == 0) big_mib = std::strtoull(argv[i + 1], nullptr, 10);
    if (std::strcmp(argv[i], "--small-count") == 0) {
      small_count = std::strtoull(argv[i + 1], nullptr, 10);
    }
  }
  auto root =
      std::filesystem::temp_directory_path() / ("kvcs-s3-bench-" + std::to_string(getpid()));
  auto st = store::LocalStore::Open(root.string(), {.read_threads = 4, .sync = false});
  if (!st.ok()) return std::fprintf(stderr, "%s\n", st.status().ToString().c_str()), 1;
  auto& store = **st;
  (void)store.CreateBucket("bench");
  constexpr size_t kSmall = 64 * 1024;
  std::vector<uint8_t> data(big_mib << 20);
  RandomBytes(data.data(), std::min<size_t>(data.size(), 1 << 20));
  for (size_t off = 1 << 20; off < data.size(); off += 1 << 20) {
    std::memcpy(data.data() + off, data.data(), std::min<size_t>(1 << 20, data.size() - off));
  }
  {
    auto w = store.Put("bench", "big", {});
    (void)(*w)->Write(data);
    (void)(*w)->Commit();
  }
  for (size_t i = 0; i < small_count; ++i) {
    auto w = store.Put("bench", "small/" + std::to_string(i), {});
    (void)(*w)->Write(ByteSpan(data.data() + (i % 64) * kSmall, kSmall));
    (void)(*w)->Commit();
  }
  s3::ServerConfig cfg;
  cfg.port = 0;
  cfg.secrets[kAk] = kSk;
  cfg.io_threads = 2;
  s3::Server server(cfg, store);
  if (!server.Start().ok()) return 1;
  std::thread srv([&] { server.Run(false); });

  // Baseline: pread of the big object through the store (page cache warmed by a first pass).
  // Each figure is the best of kRounds so that a busy machine disturbs the ratio less.
  constexpr int kRounds = 3;
  std::vector<uint8_t> buf(data.size());
  auto reader = *store.Open("bench", "big");
  double pread_s = 1e9, get_s = 1e9;
  for (int round = 0; round <= kRounds; ++round) {
    auto t0 = Clock::now();
    for (size_t off = 0; off < data.size(); off += 1 << 20) {
      (void)reader->ReadAt(
          off, std::span<uint8_t>(buf.data() + off, std::min<size_t>(1 << 20, data.size() - off)));
    }
    if (round > 0) pread_s = std::min(pread_s, Seconds(t0, Clock::now()));
  }
  Client client(server.port());
  std::vector<uint8_t> out;
  bool ok = true;
  for (int round = 0; round <= kRounds; ++round) {
    auto t0 = Clock::now();
    int status = client.Get("/bench/big", &out);
    if (round > 0) get_s = std::min(get_s, Seconds(t0, Clock::now()));
    ok = ok && status == 200 && out == data;
  }
  double gb = data.size() / 1e9;
  double tcp_s = 1e9;
  for (int round = 0; round < kRounds; ++round) {
    tcp_s = std::min(tcp_s, LoopbackSeconds(data.size(), 1));
  }
  std::printf(
      "large GET  %zu MiB: %.2f GB/s | raw pread %.2f GB/s (ratio %.2f) | bare loopback "
      "TCP %.2f GB/s (ratio %.2f)  [%s]\n",
      big_mib, gb / get_s, gb / pread_s, pread_s / get_s, gb / tcp_s, tcp_s / get_s,
      ok ? "bytes verified" : "MISMATCH");

  // Small objects: one GET per 64 KiB block-layer vs pread of each.
  std::vector<std::shared_ptr<const store::ObjectReader>> readers;
  for (size_t i = 0; i < small_count; ++i)
    readers.push_back(*store.Open("bench", "small/" + std::to_string(i)));
  std::vector<uint8_t> sbuf(kSmall);
  double spread_s = 1e9, sget_s = 1e9;
  size_t bad = 0;
  for (int round = 0; round < kRounds; ++round) {
    auto t0 = Clock::now();
    for (auto& r : readers) (void)r->ReadAt(0, sbuf);
    spread_s = std::min(spread_s, Seconds(t0, Clock::now()));
    t0 = Clock::now();
    for (size_t i = 0; i < small_count; ++i) {
      if (client.Get("/bench/small/" + std::to_string(i), &out) != 200 || out.size() != kSmall) {
        ++bad;
      }
    }
    sget_s = std::min(sget_s, Seconds(t0, Clock::now()));
  }
  double stcp_s = 1e9;
  for (int round = 0; round < kRounds; ++round) {
    stcp_s = std::min(stcp_s, LoopbackSeconds(kSmall, small_count));
  }
  std::printf(
      "small GETs %zu x 64 KiB: %.0f req/s, %.1f us/req | raw pread %.1f us/read (ratio "
      "%.3f) | bare loopback TCP round trip %.1f us (ratio %.3f)  [%zu failed]\n",
      small_count, small_count / sget_s, 1e6 * sget_s / small_count, 1e6 * spread_s / small_count,
      spread_s / sget_s, 1e6 * stcp_s / small_count, stcp_s / sget_s, bad);
  server.Stop();
  srv.join();
  std::filesystem::remove_all(root);
  return ok && bad == 0 ? 0 : 1;
}
