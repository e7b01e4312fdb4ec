// bench/objcache, PUT side: storing N containers (the Llama-3.1-8B layout of objcache_bench.cc)
// durably into a LocalStore with sync ON (what production runs), three ways in one run:
//   verify only       DecodeContainer (structure + every layer digest) of every container, one
//                     thread: the CPU the server must spend whatever the transport
//   store, sequential store.Put + Write + Commit per container on one thread (tmp file, fsync,
//                     rename, directory fsync): the naive durable write
//   store, parallel   the same on kParallelWriters threads: what overlapping fsyncs buys (ext4
//                     journal group commit)
//   aggregated PUT    ONE POST ?kvcs-aggregate-put over loopback carrying every container: the
//                     server verifies and stores each one durably and answers per container
// Each row writes to its own fresh bucket, so no row overwrites another's files.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "kvsp/container.h"
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

// Writer threads of the "store, parallel" baseline: enough concurrent fsyncs for ext4 to group
// them into shared journal commits.
constexpr int kParallelWriters = 8;

Status PutOne(store::ObjectStore& store, const std::string& bucket, const std::string& key,
              ByteSpan bytes) {
  store::PutOptions po;
  po.expected_size = bytes.size();
  auto w = store.Put(bucket, key, po);
  if (!w.ok()) return w.status();
  KVCS_RETURN_IF_ERROR((*w)->Write(bytes));
  return (*w)->Commit().status();
}

// "c<i>": a key per container for the store rows (built with append: GCC 12 warns, falsely, on
// "c" + std::to_string(i) with -Wrestrict).
std::string RowKey(uint32_t i) {
  std::string k = "c";
  k += std::to_string(i);
  return k;
}

void PrintRow(const char* name, double secs, uint64_t bytes) {
  std::printf("  %-34s %9.1f ms %7.2f GB/s\n", name, secs * 1e3, bytes / secs / 1e9);
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

  double verify = 0, seq = 0, par = 0, agg = 0;
  {
    auto t0 = Clock::now();
    for (const Bytes& c : conts) {
      if (!kvsp::DecodeContainer(c).ok()) return std::fprintf(stderr, "verify failed\n"), 1;
    }
    verify = Secs(t0, Clock::now());
  }
  for (const char* b : {"put-seq", "put-par", "put-agg"}) {
    if (Status s = store.CreateBucket(b); !s.ok())
      return std::fprintf(stderr, "%s\n", s.ToString().c_str()), 1;
  }
  {
    auto t0 = Clock::now();
    for (uint32_t i = 0; i < blocks; ++i) {
      Status s = PutOne(store, "put-seq", RowKey(i), conts[i]);
      if (!s.ok()) return std::fprintf(stderr, "%s\n", s.ToString().c_str()), 1;
    }
    seq = Secs(t0, Clock::now());
  }
  {
    std::atomic<uint32_t> next{0};
    std::atomic<bool> failed{false};
    auto t0 = Clock::now();
    std::vector<std::thread> ts;
    for (int t = 0; t < kParallelWriters; ++t) {
      ts.emplace_back([&] {
        for (uint32_t i; (i = next.fetch_add(1)) < blocks;) {
          if (!PutOne(store, "put-par", RowKey(i), conts[i]).ok()) failed = true;
        }
      });
    }
    for (auto& t : ts) t.join();
    par = Secs(t0, Clock::now());
    if (failed) return std::fprintf(stderr, "parallel store PUT failed\n"), 1;
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
    auto t0 = Clock::now();
    auto r = client.AggregatePut("put-agg", cache->scope_id, spans, false);
    agg = Secs(t0, Clock::now());
    server.Stop();
    runner.join();
    if (!r.ok() || r->stored != blocks) {
      std::fprintf(stderr, "aggregated PUT failed: %s\n",
                   r.ok() ? "not every container stored" : r.status().ToString().c_str());
      return 1;
    }
  }
  PrintRow("verify only (1 thread, no I/O)", verify, total);
  PrintRow("store PUT, sequential", seq, total);
  char name[64];
  std::snprintf(name, sizeof name, "store PUT, %d threads", kParallelWriters);
  PrintRow(name, par, total);
  PrintRow("aggregated PUT (1 request)", agg, total);
  std::printf(
      "  ratios: aggregated / sequential store PUT = %.2f of the GB/s; aggregated / parallel "
      "store PUT = %.2f\n",
      seq / agg, par / agg);
  return 0;
}

}  // namespace kvcs::objcache::bench
