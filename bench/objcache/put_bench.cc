// bench/objcache, PUT side: storing N containers (the Llama-3.1-8B layout of objcache_bench.cc)
// durably into a LocalStore with sync ON (what production runs), in one run:
//   verify only                  DecodeContainer (structure + every layer digest) of every
//                                container on one thread: CPU the server spends whatever else
//   verify + store, sequential   DecodeContainer, then store.Put + Write + Commit (tmp file,
//                                fsync, rename, directory fsync), one container after the other:
//                                the server's work without the transport, done naively
//   verify + store, parallel     the same on kParallelWriters threads (fsyncs overlap, both cores
//                                hash): the aggregated PUT's ceiling, as the server does this
//                                work AND receives every byte over TCP
//   aggregated PUT               ONE POST ?kvcs-aggregate-put over loopback with every container:
//                                the server verifies and stores each durably, answers per container
// Each row reports wall time and the process's CPU time (user + system, all threads).
// Each row writes to its own fresh bucket, so no row overwrites another's files.
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "kvsp/container.h"
#include "objcache/aggregated_put_handler.h"
#include "objcache/block_layout.h"
#include "objcache/client.h"
#include "objcache/service.h"
#include "objcache/synthetic.h"
#include "s3/server.h"
#include "store/local_store.h"

namespace kvcs::objcache::bench {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
double Secs(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Writer threads of the "verify + store, parallel" baseline: as many containers as the server
// keeps in flight (objcache::kMaxPutInFlight).
constexpr int kParallelWriters = static_cast<int>(kMaxPutInFlight);

// What the server does per container, minus the transport: verify, then store durably.
Status VerifyAndPut(store::ObjectStore& store, const std::string& bucket, const std::string& key,
                    ByteSpan bytes) {
  KVCS_RETURN_IF_ERROR(kvsp::DecodeContainer(bytes).status());
  store::PutOptions po;
  po.expected_size = bytes.size();
  auto w = store.Put(bucket, key, po);
  if (!w.ok()) return w.status();
  KVCS_RETURN_IF_ERROR((*w)->Write(bytes));
  return (*w)->Commit().status();
}

// CPU seconds (user + system) of the whole process so far: every row's work runs in this process.
double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

// "c<i>": a key per container for the store rows (built with append: GCC 12 warns, falsely, on
// "c" + std::to_string(i) with -Wrestrict).
std::string RowKey(uint32_t i) {
  std::string k = "c";
  k += std::to_string(i);
  return k;
}

struct Timing {
  double wall = 0, cpu = 0;
};
struct Timer {
  Clock::time_point t0 = Clock::now();
  double cpu0 = ProcessCpuSeconds();
  Timing Stop() const { return {Secs(t0, Clock::now()), ProcessCpuSeconds() - cpu0}; }
};

void PrintRow(const char* name, Timing t, uint64_t bytes) {
  std::printf("  %-34s %9.1f ms %7.2f GB/s   process CPU %7.1f ms\n", name, t.wall * 1e3,
              bytes / t.wall / 1e9, t.cpu * 1e3);
}

}  // namespace

int RunPutBench(uint32_t blocks, uint32_t layers, const std::string& parent) {
  std::string tmpl = parent + "/kvcs-objcache-put-bench-XXXXXX";
  if (!mkdtemp(tmpl.data())) {
    std::fprintf(stderr, "cannot create a directory under %s\n", parent.c_str());
    return 1;
  }
  struct Rm {
    std::string d;
    ~Rm() {
      std::error_code ec;
      fs::remove_all(d, ec);
    }
  } rm{tmpl};
  store::LocalStoreOptions so;
  so.sync = true;  // what production does: every commit is durable
  auto st = store::LocalStore::Open(tmpl, so);
  if (!st.ok()) return std::fprintf(stderr, "%s\n", st.status().ToString().c_str()), 1;
  auto& store = **st;
  auto cache = MakeSyntheticCache(blocks, layers, /*seed=*/7);
  if (!cache.ok()) return std::fprintf(stderr, "%s\n", cache.status().ToString().c_str()), 1;
  std::vector<Bytes> conts;
  uint64_t total = 0;
  for (uint32_t i = 0; i < blocks; ++i) {
    auto c = MakeSyntheticContainer(*cache, i);
    if (!c.ok()) return std::fprintf(stderr, "%s\n", c.status().ToString().c_str()), 1;
    total += c->size();
    conts.push_back(std::move(*c));
  }
  std::printf("\naggregated PUT: %u containers of %.2f MiB (%.1f MiB), sync on\n", blocks,
              conts[0].size() / 1048576.0, total / 1048576.0);

  Timing verify, seq, par, agg;
  {
    Timer t;
    for (const Bytes& c : conts) {
      if (!kvsp::DecodeContainer(c).ok()) return std::fprintf(stderr, "verify failed\n"), 1;
    }
    verify = t.Stop();
  }
  for (const char* b : {"put-seq", "put-par", "put-agg"}) {
    if (Status s = store.CreateBucket(b); !s.ok())
      return std::fprintf(stderr, "%s\n", s.ToString().c_str()), 1;
  }
  {
    Timer t;
    for (uint32_t i = 0; i < blocks; ++i) {
      Status s = VerifyAndPut(store, "put-seq", RowKey(i), conts[i]);
      if (!s.ok()) return std::fprintf(stderr, "%s\n", s.ToString().c_str()), 1;
    }
    seq = t.Stop();
  }
  {
    std::atomic<uint32_t> next{0};
    std::atomic<bool> failed{false};
    Timer t;
    std::vector<std::thread> ts;
    for (int w = 0; w < kParallelWriters; ++w) {
      ts.emplace_back([&] {
        for (uint32_t i; (i = next.fetch_add(1)) < blocks;) {
          if (!VerifyAndPut(store, "put-par", RowKey(i), conts[i]).ok()) failed = true;
        }
      });
    }
    for (auto& th : ts) th.join();
    par = t.Stop();
    if (failed) return std::fprintf(stderr, "parallel verify + store failed\n"), 1;
  }
  {
    s3::ServerConfig cfg;
    cfg.port = 0;
    cfg.secrets[s3::kDevAccessKey] = s3::kDevSecretKey;
    cfg.io_threads = 2;
    s3::Server server(cfg, store);
    Service service;
    for (auto& e : service.Extensions()) server.AddExtension(std::move(e));
    if (!server.Start().ok()) return std::fprintf(stderr, "server start failed\n"), 1;
    std::thread runner([&] { server.Run(false); });
    ClientOptions co;
    co.port = server.port();
    co.access_key = s3::kDevAccessKey;
    co.secret_key = s3::kDevSecretKey;
    Client client(co);
    std::vector<ByteSpan> spans(conts.begin(), conts.end());
    Timer t;
    auto r = client.AggregatePut("put-agg", cache->scope_id, spans, false);
    agg = t.Stop();
    server.Stop();
    runner.join();
    if (!r.ok() || r->stored != blocks) {
      std::fprintf(stderr, "aggregated PUT failed: %s\n",
                   r.ok() ? "not every container stored" : r.status().ToString().c_str());
      return 1;
    }
  }
  PrintRow("verify only (1 thread, no I/O)", verify, total);
  PrintRow("verify + store PUT, sequential", seq, total);
  char name[64];
  std::snprintf(name, sizeof name, "verify + store PUT, %d threads", kParallelWriters);
  PrintRow(name, par, total);
  PrintRow("aggregated PUT (1 request)", agg, total);
  std::printf(
      "  ratios: aggregated / sequential verify + store = %.2f of the GB/s; aggregated / "
      "parallel verify + store = %.2f\n",
      seq.wall / agg.wall, par.wall / agg.wall);
  return 0;
}

}  // namespace kvcs::objcache::bench
