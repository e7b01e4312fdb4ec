// Helpers every bench shares: wall and thread-CPU clocks, the machine's load average, an
// event loop driven until a condition holds, an io_context on its own thread (BenchThread), and
// a self-signed certificate written to a temporary folder.
#ifndef KVCS_BENCH_SUPPORT_BENCH_UTIL_H_
#define KVCS_BENCH_SUPPORT_BENCH_UTIL_H_

#include <time.h>

#include <functional>
#include <future>
#include <string>
#include <thread>

#include "common/asio.h"

namespace kvcs::bench {

// Seconds of CPU the thread behind `id` has used (pthread_getcpuclockid, or
// CLOCK_THREAD_CPUTIME_ID for the calling thread).
double ThreadCpuOf(clockid_t id);
double ThreadCpu();
// Monotonic wall seconds.
double Now();
// The first three fields of /proc/loadavg.
std::string LoadAvg();
// Runs `io` on the calling thread until `pred` holds (true) or `budget_s` passes (false).
bool RunUntil(boost::asio::io_context& io, const std::function<bool()>& pred, double budget_s);

// An io_context run by its own thread; its CPU time is measured.
class BenchThread {
 public:
  BenchThread();
  ~BenchThread();  // stops after what is queued; call Call() first to destroy what lives here
  BenchThread(const BenchThread&) = delete;
  BenchThread& operator=(const BenchThread&) = delete;

  // Runs fn on the thread and waits for it.
  template <typename F>
  void Call(F fn) {
    std::promise<void> p;
    boost::asio::post(io, [&] {
      fn();
      p.set_value();
    });
    p.get_future().wait();
  }
  double cpu() const { return ThreadCpuOf(cpu_clock_); }

  boost::asio::io_context io;

 private:
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::thread th_;
  clockid_t cpu_clock_{};
};

// A self-signed certificate for "localhost" in a fresh temporary folder, removed on destruction.
struct TempCert {
  explicit TempCert(const std::string& bench_name);
  ~TempCert();
  bool ok = false;
  std::string dir, cert, key;
};

}  // namespace kvcs::bench

#endif  // KVCS_BENCH_SUPPORT_BENCH_UTIL_H_
