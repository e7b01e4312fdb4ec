// bench/rados: layer-major retrieval of a Llama-3.1-8B-layout prefix (32 layers, 64 KiB per
// block-layer, 256 blocks = 4K tokens by default) kept in RADOS through the RADOS backend, in one
// run on the same bytes:
//   aggregated GET   ONE POST ?kvcs-aggregate to `kvcs store` (S3 server + objcache Service,
//                    in-process) over RadosStore: layer l of every block gathered by RadosStore's
//                    ReadMany (asynchronous librados reads, coalesced per RADOS object), every
//                    block-layer digest verified by the objcache client
//   librados par     the same N x L block-layer reads issued by the bench straight to the same
//                    RADOS objects, layer by layer, P in flight (`rados bench`-style)
//   librados seq     the same reads one at a time: one RADOS read's latency
//   aggregated PUT   the N containers through `kvcs store` (aggregated PUT, 64 per request)
//   librados writes  the same N containers written by the bench as RADOS objects, P in flight
// and the ratios: aggregated GET / parallel librados reads (aim >= 0.8), first layer against one
// RADOS read's latency, aggregated PUT / parallel librados writes.
//
// Usage: kvcs_rados_bench [--blocks N] [--layers L] [--parallel P] [--ceph-conf F --pool P]
//   Without --ceph-conf it starts the project's one-node Ceph without radosgw
//   (scripts/ceph-fixture.sh up --no-rgw, memstore 4 GB) beside the binary and stops it at the end.
#include <rados/librados.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kvsp/container.h"
#include "objcache/block_layout.h"
#include "objcache/client.h"
#include "objcache/service.h"
#include "objcache/synthetic.h"
#include "rados_store/rados_reader.h"
#include "rados_store/rados_store.h"
#include "s3/server.h"

using namespace kvcs;
using namespace kvcs::objcache;

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

void Print(const Row& r) {
  std::printf("  %-36s %7llu req %9.1f ms %7.3f GB/s", r.name.c_str(),
              static_cast<unsigned long long>(r.requests), r.wall * 1e3, r.bytes / r.wall / 1e9);
  if (r.ttfl > 0) std::printf("   first layer %8.2f ms", r.ttfl * 1e3);
  std::printf("\n");
}

int Fail(const std::string& what, const Status& s) {
  std::fprintf(stderr, "kvcs_rados_bench: %s: %s\n", what.c_str(), s.ToString().c_str());
  return 1;
}

struct Ceph {
  std::string dir;
  bool started = false;
  ~Ceph() {
    if (!started) return;
    std::string cmd = "'" KVCS_CEPH_FIXTURE "' down '" + dir + "'";
    if (std::system(cmd.c_str()) == 0) {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  }
};

// One read or write job for the librados baselines: `len` bytes at `off` of `oid`.
struct Job {
  std::string oid;
  uint64_t off = 0;
  size_t len = 0;
  uint8_t* buf = nullptr;
  const uint8_t* src = nullptr;  // writes: write_full of src[0, len)
};

// Runs `jobs` with at most `parallel` in flight; returns false on any failure.
bool RunJobs(rados_ioctx_t io, std::vector<Job>& jobs, int parallel) {
  std::deque<rados_completion_t> flight;
  bool ok = true;
  auto reap = [&] {
    rados_completion_t c = flight.front();
    flight.pop_front();
    rados_aio_wait_for_complete(c);
    if (rados_aio_get_return_value(c) < 0) ok = false;
    rados_aio_release(c);
  };
  for (Job& j : jobs) {
    if (static_cast<int>(flight.size()) >= parallel) reap();
    rados_completion_t c = nullptr;
    rados_aio_create_completion2(nullptr, nullptr, &c);
    int r =
        j.src ? rados_aio_write_full(io, j.oid.c_str(), c, reinterpret_cast<const char*>(j.src),
                                     j.len)
              : rados_aio_read(io, j.oid.c_str(), c, reinterpret_cast<char*>(j.buf), j.len, j.off);
    if (r < 0) {
      ok = false;
      rados_aio_release(c);
      continue;
    }
    flight.push_back(c);
  }
  while (!flight.empty()) reap();
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  uint32_t blocks = 256, layers = 32;
  int parallel = 32;
  std::string ceph_conf, pool = "kvcs-bench";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--blocks") {
      blocks = static_cast<uint32_t>(std::atoi(next().c_str()));
    } else if (a == "--layers") {
      layers = static_cast<uint32_t>(std::atoi(next().c_str()));
    } else if (a == "--parallel") {
      parallel = std::atoi(next().c_str());
    } else if (a == "--ceph-conf") {
      ceph_conf = next();
    } else if (a == "--pool") {
      pool = next();
    } else {
      std::fprintf(stderr,
                   "usage: %s [--blocks N] [--layers L] [--parallel P] [--ceph-conf F --pool P]\n",
                   argv[0]);
      return 2;
    }
  }
  if (blocks < 1 || blocks > 4096 || layers < 1 || layers > 128 || parallel < 1 ||
      parallel > 1024) {
    std::fprintf(stderr, "bad sizes\n");
    return 2;
  }
  Ceph ceph;
  if (ceph_conf.empty()) {
    ceph.dir = KVCS_RADOS_BENCH_DIR "/ceph-" + std::to_string(::getpid());
    std::printf("starting Ceph (no radosgw) in %s (scripts/ceph-fixture.sh)...\n",
                ceph.dir.c_str());
    ceph.started = true;
    std::string cmd = "'" KVCS_CEPH_FIXTURE "' up --no-rgw --memstore-gb 4 '" + ceph.dir + "'";
    if (std::system(cmd.c_str()) != 0) {
      std::fprintf(stderr, "kvcs_rados_bench: the Ceph fixture did not start\n");
      return 1;
    }
    ceph_conf = ceph.dir + "/ceph.conf";
  }
  {  // the pool (idempotent)
    rados_t c = nullptr;
    int r = rados_create(&c, "admin");
    if (r == 0) r = rados_conf_read_file(c, ceph_conf.c_str());
    if (r == 0) r = rados_connect(c);
    if (r == 0 && (r = rados_pool_create(c, pool.c_str())) == -EEXIST) r = 0;
    if (c) rados_shutdown(c);
    if (r < 0) return Fail("create pool " + pool, IoError(std::to_string(r)));
  }
  rados_store::RadosStoreOptions ro;
  ro.connect.pool = pool;
  ro.connect.rados_namespace = "bench-" + std::to_string(::getpid());
  ro.connect.ceph_conf = ceph_conf;
  ro.max_reads_in_flight = static_cast<size_t>(parallel);
  auto store = rados_store::RadosStore::Open(ro);
  if (!store.ok()) return Fail("open RADOS backend", store.status());
  s3::ServerConfig cfg;
  cfg.port = 0;
  cfg.secrets[s3::kDevAccessKey] = s3::kDevSecretKey;
  cfg.io_threads = 4;
  s3::Server server(cfg, **store);
  Service service(ServiceOptions{});
  for (auto& e : service.Extensions()) server.AddExtension(std::move(e));
  if (Status s = server.Start(); !s.ok()) return Fail("server start", s);
  std::thread runner([&] { server.Run(false); });
  struct StopServer {
    s3::Server& server;
    std::thread& runner;
    ~StopServer() {
      server.Stop();
      runner.join();
    }
  } stop_server{server, runner};

  objcache::ClientOptions co;
  co.port = server.port();
  co.access_key = s3::kDevAccessKey;
  co.secret_key = s3::kDevSecretKey;
  Client client(co);
  const std::string bucket = kDefaultKvBucket;
  if (Status s = client.CreateBucket(bucket); !s.ok()) return Fail("create bucket", s);
  auto cache = MakeSyntheticCache(blocks, layers);
  if (!cache.ok()) return Fail("synthetic cache", cache.status());
  std::vector<Bytes> containers;
  std::vector<kvsp::ContainerView> views;
  for (uint32_t b = 0; b < blocks; ++b) {
    auto c = MakeSyntheticContainer(*cache, b);
    if (!c.ok()) return Fail("container", c.status());
    views.push_back(*kvsp::ParseContainerHeader(*c));
    containers.push_back(std::move(*c));
  }
  const uint64_t block_layer = 2 * cache->section_bytes;
  const uint64_t payload = uint64_t{blocks} * layers * block_layer;
  uint64_t stored_bytes = 0;
  for (const auto& c : containers) stored_bytes += c.size();
  std::printf(
      "layout: %u blocks x %u layers, %llu KiB per block-layer, %.1f MiB of KV; pool %s, "
      "%d in flight\n\n",
      blocks, layers, static_cast<unsigned long long>(block_layer >> 10), payload / 1048576.0,
      pool.c_str(), parallel);
  rados_ioctx_t io = (*store)->io().ioctx();

  // PUT: aggregated through kvcs store, then the same containers as plain RADOS objects.
  Row put{"aggregated PUT via kvcs store", (blocks + 63) / 64, 0, 0, stored_bytes};
  {
    auto t0 = Clock::now();
    for (uint32_t b = 0; b < blocks; b += 64) {
      std::vector<ByteSpan> spans;
      for (uint32_t i = b; i < std::min(blocks, b + 64); ++i) spans.emplace_back(containers[i]);
      auto r = client.AggregatePut(bucket, cache->scope_id, spans, false);
      if (!r.ok() || r->stored != spans.size()) {
        return Fail("aggregated PUT",
                    r.ok() ? Status(Code::kInternal, "not all stored") : r.status());
      }
    }
    put.wall = Secs(t0, Clock::now());
  }
  Row wpar{"librados writes, " + std::to_string(parallel) + " in flight", blocks, 0, 0,
           stored_bytes};
  {
    std::vector<Job> jobs;
    for (uint32_t b = 0; b < blocks; ++b) {
      jobs.push_back({"bench-raw-" + std::to_string(b), 0, containers[b].size(), nullptr,
                      containers[b].data()});
    }
    auto t0 = Clock::now();
    if (!RunJobs(io, jobs, parallel)) return Fail("librados writes", IoError("failed"));
    wpar.wall = Secs(t0, Clock::now());
  }

  // GET: the RADOS objects and offsets of every (block, layer), for the baselines.
  std::vector<std::string> keys;
  for (uint32_t b = 0; b < blocks; ++b) {
    keys.push_back(BlockObjectKey(cache->scope_id, cache->compat_id, cache->block_keys[b], "raw"));
  }
  auto readers = (*store)->OpenMany(bucket, keys);
  std::vector<std::vector<Job>> per_layer(layers);
  std::vector<Bytes> bufs(blocks, Bytes(block_layer));
  for (uint32_t b = 0; b < blocks; ++b) {
    if (!readers[b].ok()) return Fail("open", readers[b].status());
    const auto* r = dynamic_cast<const rados_store::RadosReader*>(readers[b]->get());
    for (uint32_t l = 0; l < layers; ++l) {
      auto range = views[b].Find(l)->both();
      std::vector<rados_store::RadosReader::Piece> ps;
      r->Locate(range.offset, range.length, &ps);
      for (const auto& p : ps)
        per_layer[l].push_back({p.oid, p.offset, p.len, bufs[b].data() + p.pos});
    }
  }
  AggregateRequest req = SyntheticRequest(*cache);
  (void)client.AggregateGet(bucket, req, [](const DeliveredLayer&) { return Status::Ok(); });
  Row agg{"aggregated GET via kvcs store", 1, 0, 0, payload};
  uint64_t ops = 0;
  {
    uint64_t got = 0;
    const uint64_t ops_before = (*store)->read_ops();
    auto st = client.AggregateGet(bucket, req, [&](const DeliveredLayer& l) {
      for (const auto& b : l.blocks) got += b.data.size();
      return Status::Ok();
    });
    if (!st.ok()) return Fail("aggregated GET", st.status());
    if (got != payload || st->corrupt_blocks) return Fail("aggregated GET", Corruption("short"));
    agg.wall = st->total_seconds;
    agg.ttfl = st->first_layer_seconds;
    ops = (*store)->read_ops() - ops_before;
  }
  Row par{"librados reads, " + std::to_string(parallel) + " in flight", uint64_t{blocks} * layers,
          0, 0, payload};
  {
    auto t0 = Clock::now();
    for (uint32_t l = 0; l < layers; ++l) {
      if (!RunJobs(io, per_layer[l], parallel)) return Fail("librados reads", IoError("failed"));
      if (l == 0) par.ttfl = Secs(t0, Clock::now());
    }
    par.wall = Secs(t0, Clock::now());
  }
  Row seq{"librados reads, one at a time", uint64_t{blocks} * layers, 0, 0, payload};
  {
    auto t0 = Clock::now();
    for (uint32_t l = 0; l < layers; ++l) {
      if (!RunJobs(io, per_layer[l], 1)) return Fail("librados reads", IoError("failed"));
      if (l == 0) seq.ttfl = Secs(t0, Clock::now());
    }
    seq.wall = Secs(t0, Clock::now());
  }
  const double one_read = seq.wall / (double(blocks) * layers);
  Print(agg);
  Print(par);
  Print(seq);
  Print(put);
  Print(wpar);
  std::printf("\n  aggregated GET / parallel librados reads: %.2f (GB/s ratio; aim >= 0.8)\n",
              par.wall / agg.wall);
  std::printf("  the aggregated GET cost %llu RADOS read ops for %llu block-layers\n",
              static_cast<unsigned long long>(ops),
              static_cast<unsigned long long>(uint64_t{blocks} * layers));
  std::printf("  first layer %.2f ms = %.1f x one RADOS read (%.3f ms per %llu KiB read)\n",
              agg.ttfl * 1e3, agg.ttfl / one_read, one_read * 1e3,
              static_cast<unsigned long long>(block_layer >> 10));
  std::printf("  aggregated PUT / parallel librados writes: %.2f (GB/s ratio)\n",
              wpar.wall / put.wall);
  std::vector<std::string> raw;
  for (uint32_t b = 0; b < blocks; ++b) raw.push_back("bench-raw-" + std::to_string(b));
  (void)(*store)->io().RemoveAll(raw);
  for (const auto& k : keys) (void)(*store)->Delete(bucket, k);
  (void)(*store)->DeleteBucket(bucket);
  return 0;
}
