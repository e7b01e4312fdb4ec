// bench/objcache: layer-major retrieval of a Llama-3.1-8B-layout prefix (32 layers, 64 KiB per
// block-layer) from the store, four ways, in one run on the same bytes:
//   pread        the ceiling: the same (block, layer) byte ranges read from the object files with
//                pread, layer-major (sequential, and parallel through ObjectStore::ReadMany)
//   range GETs   one S3 GET with a Range header per (block, layer): N × L requests
//   block GETs   one S3 GET per whole block: N requests
//   aggregated   ONE POST ?kvcs-aggregate request, layer-major, every block-layer digest verified
//   same-host    the same request with the bytes written by the store into a shared buffer the
//                client registered on the store's Unix socket (2 layer slots), verified in place
// plus the transport's ceiling: the same number of bytes over a bare loopback TCP connection.
// Each reports requests, wall time, GB/s of KV payload and time to first layer (all blocks' layer
// 0 available). Server and client run in this process over 127.0.0.1.
//
// Usage: kvcs_objcache_bench [--blocks N]... [--layers L] [--dir D] [--skip-range]
//                            [--skip-put | --put-only]
//   PUT rows (put_bench.cc) run for sizes up to 1024 blocks.
//   Default: --blocks 256 --blocks 4096 (4K and 64K tokens; 4096 needs ~8.5 GiB of disk).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "common/crypto.h"
#include "common/hex.h"
#include "kvsp/container.h"
#include "objcache/block_layout.h"
#include "objcache/client.h"
#include "objcache/service.h"
#include "objcache/synthetic.h"
#include "s3/server.h"
#include "store/local_store.h"

using namespace kvcs;
using namespace kvcs::objcache;
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;
double Secs(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct Row {
  std::string name;
  uint64_t requests = 0;
  double wall = 0, ttfl = 0;
  uint64_t bytes = 0;
};

double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

// Baseline: `bytes` moved over a bare loopback TCP connection (no HTTP, no store, no
// verification) from a sender thread in 1 MiB writes to a receiver reading 1 MiB at a time.
// Returns seconds, or a negative value if the sockets could not be set up.
double LoopbackTcpSeconds(uint64_t bytes) {
  int ls = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (ls < 0 || ::bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(ls, 1) != 0 || ::getsockname(ls, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (ls >= 0) ::close(ls);
    return -1;
  }
  constexpr size_t kIo = 1 << 20;
  std::thread sender([&] {
    int c = ::accept(ls, nullptr, nullptr);
    if (c < 0) return;
    std::vector<uint8_t> payload(kIo, 7);
    for (uint64_t sent = 0; sent < bytes;) {
      ssize_t w = ::send(c, payload.data(), std::min<uint64_t>(kIo, bytes - sent), 0);
      if (w <= 0) break;
      sent += static_cast<uint64_t>(w);
    }
    ::close(c);
  });
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  double secs = -1;
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    std::vector<uint8_t> in(kIo);
    auto t0 = Clock::now();
    uint64_t got = 0;
    while (got < bytes) {
      ssize_t r = ::recv(fd, in.data(), in.size(), 0);
      if (r <= 0) break;
      got += static_cast<uint64_t>(r);
    }
    if (got == bytes) secs = Secs(t0, Clock::now());
  }
  if (fd >= 0) ::close(fd);
  sender.join();
  ::close(ls);
  return secs;
}

double LoadAverage() {
  double l[1] = {0};
  return getloadavg(l, 1) == 1 ? l[0] : -1;
}

void Print(const Row& r) {
  std::printf("  %-28s %9llu req %9.1f ms %7.2f GB/s   first layer %8.2f ms\n", r.name.c_str(),
              static_cast<unsigned long long>(r.requests), r.wall * 1e3, r.bytes / r.wall / 1e9,
              r.ttfl * 1e3);
}

int RunSize(uint32_t blocks, uint32_t layers, const std::string& parent, bool skip_range) {
  std::string tmpl = parent + "/kvcs-objcache-bench-XXXXXX";
  if (!mkdtemp(tmpl.data())) {
    std::fprintf(stderr, "cannot create a directory under %s\n", parent.c_str());
    return 1;
  }
  const std::string dir = tmpl;
  struct Rm {
    std::string d;
    ~Rm() {
      std::error_code ec;
      fs::remove_all(d, ec);
    }
  } rm{dir};
  store::LocalStoreOptions so;
  so.sync = false;  // setup speed; reads are what we measure
  auto st = store::LocalStore::Open(dir, so);
  if (!st.ok()) return std::fprintf(stderr, "%s\n", st.status().ToString().c_str()), 1;
  auto& store = **st;
  const std::string bucket = kDefaultKvBucket;
  (void)store.CreateBucket(bucket);
  auto cache = MakeSyntheticCache(blocks, layers);
  if (!cache.ok()) return std::fprintf(stderr, "%s\n", cache.status().ToString().c_str()), 1;
  std::vector<std::string> keys;
  auto t_setup = Clock::now();
  for (uint32_t i = 0; i < blocks; ++i) {
    auto c = MakeSyntheticContainer(*cache, i);
    auto k = c.ok() ? StoreContainer(store, bucket, cache->scope_id, *c) : c.status();
    if (!k.ok()) return std::fprintf(stderr, "%s\n", k.status().ToString().c_str()), 1;
    keys.push_back(*k);
  }
  const uint64_t block_layer = 2 * cache->section_bytes;
  const uint64_t payload = uint64_t{blocks} * layers * block_layer;
  std::printf(
      "\n%u blocks (%u tokens) x %u layers, %.1f MiB of KV payload (setup %.1f s, load average "
      "%.2f)\n",
      blocks, blocks * 16, layers, payload / 1048576.0, Secs(t_setup, Clock::now()), LoadAverage());

  // Views of every stored container (the layer byte ranges).
  std::vector<std::shared_ptr<const store::ObjectReader>> readers;
  std::vector<kvsp::ContainerView> views;
  for (const auto& k : keys) {
    auto r = store.Open(bucket, k);
    auto v = r.ok() ? ReadContainerView(**r) : Result<kvsp::ContainerView>(r.status());
    if (!v.ok()) return std::fprintf(stderr, "%s\n", v.status().ToString().c_str()), 1;
    readers.push_back(*r);
    views.push_back(*v);
  }

  std::vector<Row> rows;
  Bytes buf(uint64_t{blocks} * block_layer);
  {  // pread, sequential, layer-major
    Row r{"pread (sequential)", 0, 0, 0, payload};
    auto t0 = Clock::now();
    for (uint32_t l = 0; l < layers; ++l) {
      for (uint32_t b = 0; b < blocks; ++b) {
        auto range = views[b].Find(l)->both();
        (void)readers[b]->ReadAt(range.offset,
                                 std::span<uint8_t>(buf.data() + b * block_layer, block_layer));
        ++r.requests;
      }
      if (l == 0) r.ttfl = Secs(t0, Clock::now());
    }
    r.wall = Secs(t0, Clock::now());
    rows.push_back(r);
  }
  // Layer l of every block into `buf`, in parallel on the store's threads (ReadMany).
  std::vector<store::RangeRead> reads(blocks);
  auto read_layer = [&](uint32_t l) {
    for (uint32_t b = 0; b < blocks; ++b) {
      auto range = views[b].Find(l)->both();
      reads[b].reader = readers[b].get();
      reads[b].offset = range.offset;
      reads[b].out = std::span<uint8_t>(buf.data() + b * block_layer, block_layer);
    }
    store.ReadMany(reads);
  };
  {  // pread, parallel (ReadMany on the store's threads), layer-major
    Row r{"pread (parallel, ReadMany)", 0, 0, 0, payload};
    auto t0 = Clock::now();
    for (uint32_t l = 0; l < layers; ++l) {
      read_layer(l);
      r.requests += blocks;
      if (l == 0) r.ttfl = Secs(t0, Clock::now());
    }
    r.wall = Secs(t0, Clock::now());
    rows.push_back(r);
  }
  {  // pread + SHA-256 of every block-layer: what the client's verification adds
    Row r{"pread + SHA-256 verify", 0, 0, 0, payload};
    auto t0 = Clock::now();
    for (uint32_t l = 0; l < layers; ++l) {
      read_layer(l);
      for (uint32_t b = 0; b < blocks; ++b)
        if (Sha256::Hash(ByteSpan(buf.data() + b * block_layer, block_layer)) !=
            views[b].Find(l)->digest)
          return std::fprintf(stderr, "digest mismatch\n"), 1;
      r.requests += blocks;
      if (l == 0) r.ttfl = Secs(t0, Clock::now());
    }
    r.wall = Secs(t0, Clock::now());
    rows.push_back(r);
  }

  {  // the same with the hashing spread over every core, as the client verifies
    const unsigned nt = std::max(1u, std::thread::hardware_concurrency());
    Row r{"pread + verify, " + std::to_string(nt) + " threads", 0, 0, 0, payload};
    auto t0 = Clock::now();
    std::atomic<bool> mismatch{false};
    for (uint32_t l = 0; l < layers; ++l) {
      read_layer(l);
      std::atomic<uint32_t> next{0};
      auto work = [&] {
        for (uint32_t b; (b = next.fetch_add(1)) < blocks;)
          if (Sha256::Hash(ByteSpan(buf.data() + b * block_layer, block_layer)) !=
              views[b].Find(l)->digest)
            mismatch = true;
      };
      std::vector<std::thread> ts;
      for (unsigned t = 1; t < nt; ++t) ts.emplace_back(work);
      work();
      for (auto& t : ts) t.join();
      r.requests += blocks;
      if (l == 0) r.ttfl = Secs(t0, Clock::now());
    }
    if (mismatch) return std::fprintf(stderr, "digest mismatch\n"), 1;
    r.wall = Secs(t0, Clock::now());
    rows.push_back(r);
  }

  {  // the same number of bytes over a bare loopback TCP connection: the transport's ceiling
    double secs = 1e9;
    for (int i = 0; i < 2; ++i) {  // best of two: the machine is shared
      double s = LoopbackTcpSeconds(payload);
      if (s > 0) secs = std::min(secs, s);
    }
    if (secs < 1e9) rows.push_back(Row{"loopback TCP (no HTTP)", 1, secs, 0, payload});
  }

  s3::ServerConfig cfg;
  cfg.port = 0;
  cfg.secrets[s3::kDevAccessKey] = s3::kDevSecretKey;
  cfg.io_threads = 2;
  s3::Server server(cfg, store);
  Service service;
  for (auto& e : service.Extensions()) server.AddExtension(std::move(e));
  const std::string shm_path = dir + "/shm.sock";
  if (Status s = service.ListenShm(shm_path); !s.ok())
    return std::fprintf(stderr, "%s\n", s.ToString().c_str()), 1;
  if (!server.Start().ok()) return std::fprintf(stderr, "server start failed\n"), 1;
  std::thread runner([&] { server.Run(false); });
  ClientOptions co;
  co.port = server.port();
  co.access_key = s3::kDevAccessKey;
  co.secret_key = s3::kDevSecretKey;
  Client client(co);
  int rc = 0;

  double agg_client_cpu = 0;
  if (!skip_range) {  // one Range GET per (block, layer)
    Row r{"S3 range GET per block-layer", 0, 0, 0, payload};
    auto t0 = Clock::now();
    for (uint32_t l = 0; l < layers && !rc; ++l) {
      for (uint32_t b = 0; b < blocks; ++b) {
        auto range = views[b].Find(l)->both();
        auto res = client.Request("GET", "/" + bucket + "/" + keys[b], "", {},
                                  {{"Range", "bytes=" + std::to_string(range.offset) + "-" +
                                                 std::to_string(range.end() - 1)}});
        if (!res.ok() || res->status != 206 || res->body.size() != block_layer) {
          std::fprintf(stderr, "range GET failed\n");
          rc = 1;
          break;
        }
        ++r.requests;
      }
      if (l == 0) r.ttfl = Secs(t0, Clock::now());
    }
    r.wall = Secs(t0, Clock::now());
    rows.push_back(r);
  }
  {  // one GET per whole block; layer 0 of all blocks is there only when the last block is
    Row r{"S3 GET per block", 0, 0, 0, payload};
    auto t0 = Clock::now();
    for (uint32_t b = 0; b < blocks && !rc; ++b) {
      auto res = client.Request("GET", "/" + bucket + "/" + keys[b], "", {});
      if (!res.ok() || res->status != 200) {
        std::fprintf(stderr, "block GET failed\n");
        rc = 1;
      }
      ++r.requests;
    }
    r.wall = r.ttfl = Secs(t0, Clock::now());
    rows.push_back(r);
  }
  // ONE aggregated request, inline (bytes in the HTTP body) and same-host (shared buffer).
  AggregateRequest req = SyntheticRequest(*cache);
  auto aggregated = [&](Client& c, const char* name, double* cpu) {
    uint64_t verified = 0;
    double cpu0 = ThreadCpuSeconds();
    auto stats = c.AggregateGet(bucket, req, [&](const DeliveredLayer& l) {
      for (const auto& b : l.blocks)
        if (b.status == BlockStatus::kPresent) verified += b.data.size();
      return Status::Ok();
    });
    if (!stats.ok() || verified != payload || stats->corrupt_blocks) {
      std::fprintf(stderr, "%s failed: %s\n", name,
                   stats.ok() ? "short" : stats.status().ToString().c_str());
      rc = 1;
      return;
    }
    *cpu = ThreadCpuSeconds() - cpu0;
    rows.push_back(Row{name, 1, stats->total_seconds, stats->first_layer_seconds, payload});
  };
  aggregated(client, "aggregated (1 request)", &agg_client_cpu);
  double shm_client_cpu = 0;
  {
    ClientOptions so = co;
    so.shm_socket = shm_path;
    so.shm_slots = 2;
    so.shm_buffer_bytes = 2 * uint64_t{blocks} * block_layer;  // 64 KiB block-layers: aligned
    Client shm_client(so);
    // Registration (memfd, mapping and populating the buffer) happens once per client, not per
    // request: do it outside the timed request, as an engine would at start-up.
    req.layer_count = 1;
    auto warm =
        shm_client.AggregateGet(bucket, req, [](const DeliveredLayer&) { return Status::Ok(); });
    req.layer_count = layers;
    if (!warm.ok()) {
      std::fprintf(stderr, "same-host registration failed: %s\n", warm.status().ToString().c_str());
      rc = 1;
    } else {
      aggregated(shm_client, "aggregated, same-host shm", &shm_client_cpu);
    }
  }
  server.Stop();
  runner.join();
  for (const Row& r : rows) Print(r);
  auto find = [&](const std::string& n) -> const Row* {
    for (const Row& r : rows)
      if (r.name.rfind(n, 0) == 0) return &r;
    return nullptr;
  };
  const Row* agg = find("aggregated (");
  const Row* shm = find("aggregated, same-host");
  const Row* seq = find("pread (sequential)");
  const Row* par = find("pread (parallel");
  const Row* ver = find("pread + SHA");
  const Row* verp = find("pread + verify,");
  const Row* rng = find("S3 range");
  const Row* blk = find("S3 GET per block");
  const Row* tcp = find("loopback TCP");
  if (agg) {
    const Row* best = seq->wall < par->wall ? seq : par;
    std::printf(
        "  ratios: aggregated / best raw pread = %.2f of the GB/s; aggregated / (pread + "
        "verify) = %.2f\n",
        best->wall / agg->wall, ver->wall / agg->wall);
    if (tcp)
      std::printf(
          "          aggregated / bare loopback TCP = %.2f; loopback TCP / best raw pread = %.2f\n",
          tcp->wall / agg->wall, best->wall / tcp->wall);
    std::printf(
        "          aggregated client thread CPU %.1f ms (%.2f GB/s of CPU); load average %.2f\n",
        agg_client_cpu * 1e3, agg->bytes / agg_client_cpu / 1e9, LoadAverage());
    if (rng)
      std::printf("          per-range GETs take %.1fx the aggregated time (first layer %.1fx)\n",
                  rng->wall / agg->wall, rng->ttfl / agg->ttfl);
    if (blk)
      std::printf("          per-block GETs take %.1fx the aggregated time (first layer %.1fx)\n",
                  blk->wall / agg->wall, blk->ttfl / agg->ttfl);
  }
  if (shm) {
    const Row* best = seq->wall < par->wall ? seq : par;
    std::printf(
        "  same-host: / best raw pread = %.2f; / (pread + verify) = %.2f; / (pread + verify on "
        "every core) = %.2f; %.2fx faster than inline aggregated\n",
        best->wall / shm->wall, ver->wall / shm->wall, verp->wall / shm->wall,
        agg ? agg->wall / shm->wall : 0.0);
    if (rng)
      std::printf("          per-range GETs take %.1fx the same-host time (first layer %.1fx)\n",
                  rng->wall / shm->wall, rng->ttfl / shm->ttfl);
    std::printf("          same-host client thread CPU %.1f ms (%.2f GB/s of CPU)\n",
                shm_client_cpu * 1e3, shm->bytes / shm_client_cpu / 1e9);
  }
  return rc;
}

}  // namespace

// The PUT side (put_bench.cc).
namespace kvcs::objcache::bench {
int RunPutBench(uint32_t blocks, uint32_t layers, const std::string& parent);
// Sizes the PUT rows run for: they write every container three times with fsync on.
constexpr uint32_t kMaxPutBenchBlocks = 1024;
}  // namespace kvcs::objcache::bench

int main(int argc, char** argv) {
  std::vector<uint32_t> sizes;
  uint32_t layers = 32;
  std::string dir = "/tmp";
  bool skip_range = false;
  bool skip_put = false, put_only = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--blocks" && i + 1 < argc)
      sizes.push_back(std::atoi(argv[++i]));
    else if (a == "--layers" && i + 1 < argc)
      layers = std::atoi(argv[++i]);
    else if (a == "--dir" && i + 1 < argc)
      dir = argv[++i];
    else if (a == "--skip-range")
      skip_range = true;
    else if (a == "--skip-put")
      skip_put = true;
    else if (a == "--put-only")
      put_only = true;
    else {
      std::fprintf(stderr,
                   "usage: %s [--blocks N]... [--layers L] [--dir D] [--skip-range] [--skip-put | "
                   "--put-only]\n"
                   "  default: --blocks 256 --blocks 4096 (4K and 64K tokens)\n",
                   argv[0]);
      return 2;
    }
  }
  if (sizes.empty()) sizes = {256, 4096};
  std::printf("objcache bench: Llama-3.1-8B layout (64 KiB per block-layer), store in %s\n",
              dir.c_str());
  for (uint32_t n : sizes) {
    if (n < 1 || n > kMaxBlocks || layers < 1 || layers > 1024) {
      std::fprintf(stderr, "blocks must be 1..%u, layers 1..1024\n", kMaxBlocks);
      return 2;
    }
    if (!put_only)
      if (int rc = RunSize(n, layers, dir, skip_range)) return rc;
    if (!skip_put && n <= bench::kMaxPutBenchBlocks)
      if (int rc = bench::RunPutBench(n, layers, dir)) return rc;
  }
  return 0;
}
