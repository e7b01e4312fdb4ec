// Helpers every bench shares (bench_util.h).
#include "bench/support/bench_util.h"

#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "quic/tls.h"

namespace kvcs::bench {

double ThreadCpuOf(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

double ThreadCpu() { return ThreadCpuOf(CLOCK_THREAD_CPUTIME_ID); }

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string LoadAvg() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

bool RunUntil(boost::asio::io_context& io, const std::function<bool()>& pred, double budget_s) {
  const double deadline = Now() + budget_s;
  while (!pred()) {
    if (Now() > deadline) return false;
    io.run_one_for(std::chrono::milliseconds(50));
    if (io.stopped()) io.restart();
  }
  return true;
}

BenchThread::BenchThread() : work_(io.get_executor()) {
  th_ = std::thread([this] { io.run(); });
  pthread_getcpuclockid(th_.native_handle(), &cpu_clock_);
}

BenchThread::~BenchThread() {
  work_.reset();
  th_.join();
}

TempCert::TempCert(const std::string& bench_name) {
  auto pem = quic::GenerateSelfSignedCert("localhost");
  if (!pem.ok()) return;
  auto d = std::filesystem::temp_directory_path() / (bench_name + "_" + std::to_string(getpid()));
  std::filesystem::create_directories(d);
  dir = d.string();
  cert = (d / "cert.pem").string();
  key = (d / "key.pem").string();
  std::ofstream(cert) << pem->cert_pem;
  std::ofstream(key) << pem->key_pem;
  ok = true;
}

TempCert::~TempCert() {
  std::error_code ec;
  if (!dir.empty()) std::filesystem::remove_all(dir, ec);
}

}  // namespace kvcs::bench
