// bench/ceph: layer-major retrieval of a Llama-3.1-8B-layout prefix (32 layers, 64 KiB per
// block-layer, 256 blocks = 4K tokens by default) kept in a real Ceph radosgw, in one run on the
// same bytes:
//   aggregated      ONE POST ?kvcs-aggregate to `kvcs store` (S3 server + objcache Service,
//                   in-process) whose ObjectStore is S3BackendStore → radosgw: layer l gathered by
//                   parallel range GETs from the backend; every block-layer digest verified by the
//                   objcache client
//   range GETs seq  one GET with a Range header per (block, layer) sent straight to radosgw,
//                   layer-major, one keep-alive connection (what a plain S3 client does)
//   range GETs par  the same N × L range GETs straight to radosgw, layer by layer, P concurrent
// Each reports requests, wall time, GB/s of KV payload and time to first layer (all blocks'
// layer 0 received), and the ratios against the aggregated request. Also: how many requests the
// aggregated request cost the backend, and the time to open the N blocks one by one (Open) and
// concurrently (OpenMany).
//
// Usage: kvcs_ceph_bench [--blocks N] [--layers L] [--parallel P] [--endpoint http://host:port]
//   Without --endpoint it starts the project's one-node Ceph (scripts/ceph-fixture.sh, about 15 s,
//   memstore 4 GB) on free ports in ceph-<pid> beside the binary in the build tree, and stops it
//   at the end.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "kvsp/container.h"
#include "objcache/block_layout.h"
#include "objcache/client.h"
#include "objcache/service.h"
#include "objcache/synthetic.h"
#include "s3/config.h"
#include "s3/server.h"
#include "s3client/backend_store.h"

using namespace kvcs;
using namespace kvcs::objcache;

namespace {

using Clock = std::chrono::steady_clock;
double Secs(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

constexpr char kAccessKey[] = "0555b35654ad1656d804";
constexpr char kSecretKey[] = "h7GhxuBLTrlhVUyxSPUKUV8r/2EI4ngqJxD7iBdBYLhwluN30JaT3Q==";

struct Row {
  std::string name;
  uint64_t requests = 0;
  double wall = 0, ttfl = 0;
  uint64_t bytes = 0;
};

void Print(const Row& r) {
  std::printf("  %-34s %7llu req %9.1f ms %7.3f GB/s   first layer %8.2f ms\n", r.name.c_str(),
              static_cast<unsigned long long>(r.requests), r.wall * 1e3, r.bytes / r.wall / 1e9,
              r.ttfl * 1e3);
}

int Fail(const std::string& what, const Status& s) {
  std::fprintf(stderr, "kvcs_ceph_bench: %s: %s\n", what.c_str(), s.ToString().c_str());
  return 1;
}

// The fixture this run started (scripts/ceph-fixture.sh up); stopped and removed at exit.
struct Ceph {
  std::string dir;
  bool started = false;
  bool keep = false;  // its logs explain a failed start
  ~Ceph() {
    if (!started) return;
    std::string cmd = "'" KVCS_CEPH_FIXTURE "' down '" + dir + "'";
    if (std::system(cmd.c_str()) == 0 && !keep) {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress lines appear as they happen
  uint32_t blocks = 256, layers = 32;
  int parallel = 32;
  std::string endpoint;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--blocks") {
      blocks = static_cast<uint32_t>(std::atoi(next().c_str()));
    } else if (a == "--layers") {
      layers = static_cast<uint32_t>(std::atoi(next().c_str()));
    } else if (a == "--parallel") {
      parallel = std::atoi(next().c_str());
    } else if (a == "--endpoint") {
      endpoint = next();
    } else {
      std::fprintf(stderr, "usage: %s [--blocks N] [--layers L] [--parallel P] [--endpoint URL]\n",
                   argv[0]);
      return 2;
    }
  }
  if (blocks < 1 || blocks > 4096 || layers < 1 || layers > 128 || parallel < 1) {
    std::fprintf(stderr, "bad sizes\n");
    return 2;
  }

  Ceph ceph;
  if (endpoint.empty()) {
    ceph.dir = KVCS_CEPH_BENCH_DIR "/ceph-" + std::to_string(::getpid());
    std::printf("starting Ceph radosgw in %s (scripts/ceph-fixture.sh)...\n", ceph.dir.c_str());
    std::string cmd = "'" KVCS_CEPH_FIXTURE "' up --memstore-gb 4 '" + ceph.dir + "'";
    ceph.started = true;
    int port = 0;
    if (std::system(cmd.c_str()) == 0) {
      std::ifstream in(ceph.dir + "/rgw.port");
      in >> port;
    }
    if (port <= 0 || port > 65535) {
      ceph.keep = true;
      std::fprintf(stderr,
                   "kvcs_ceph_bench: the Ceph fixture did not start (its reason is above; "
                   "logs in %s/log)\n",
                   ceph.dir.c_str());
      return 1;
    }
    endpoint = "http://127.0.0.1:" + std::to_string(port);
  }

  // The store: S3BackendStore over radosgw, served by the S3 server + objcache Service.
  s3client::S3BackendOptions so;
  so.client.endpoint = endpoint;
  so.client.credentials = {kAccessKey, kSecretKey, "us-east-1"};
  so.client.parallel_gets = parallel;
  so.client.max_connections = 2 * parallel + 8;
  so.bucket_prefix = "bench" + std::to_string(::getpid()) + "-";
  auto store = s3client::S3BackendStore::Open(so);
  if (!store.ok()) return Fail("open backend", store.status());
  s3::ServerConfig cfg;
  cfg.port = 0;
  cfg.secrets[s3::kDevAccessKey] = s3::kDevSecretKey;
  cfg.io_threads = 4;
  s3::Server server(cfg, **store);
  Service service(ServiceOptions{});
  for (auto& e : service.Extensions()) server.AddExtension(std::move(e));
  if (Status s = server.Start(); !s.ok()) return Fail("server start", s);
  std::thread runner([&] { server.Run(false); });
  // Every return from here on stops the server first (a joinable thread would abort the process
  // and leave the Ceph fixture running).
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
  int rc = 0;
  do {
    if (Status s = client.CreateBucket(bucket); !s.ok()) {
      rc = Fail("create bucket", s);
      break;
    }
    auto cache = MakeSyntheticCache(blocks, layers);
    if (!cache.ok()) {
      rc = Fail("synthetic cache", cache.status());
      break;
    }
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
    std::printf(
        "layout: %u blocks x %u layers, %llu KiB per block-layer, %.1f MiB of KV; "
        "backend %s, %d parallel range GETs\n",
        blocks, layers, static_cast<unsigned long long>(block_layer >> 10), payload / 1048576.0,
        endpoint.c_str(), parallel);
    // Upload through the store (aggregated PUT, 64 containers per request).
    auto t0 = Clock::now();
    for (uint32_t b = 0; b < blocks; b += 64) {
      std::vector<ByteSpan> spans;
      for (uint32_t i = b; i < std::min(blocks, b + 64); ++i) spans.emplace_back(containers[i]);
      auto r = client.AggregatePut(bucket, cache->scope_id, spans, false);
      if (!r.ok() || r->stored != spans.size()) {
        rc =
            Fail("aggregated PUT", r.ok() ? Status(Code::kInternal, "not all stored") : r.status());
        break;
      }
    }
    if (rc) break;
    std::printf("stored through kvcs store -> radosgw in %.2f s\n\n", Secs(t0, Clock::now()));

    AggregateRequest req = SyntheticRequest(*cache);

    // Warm-up (connections, radosgw caches) for both paths.
    (void)client.AggregateGet(bucket, req, [](const DeliveredLayer&) { return Status::Ok(); });

    const std::string backend_bucket = so.bucket_prefix + bucket;
    std::vector<std::string> keys;
    for (uint32_t b = 0; b < blocks; ++b) {
      keys.push_back(
          BlockObjectKey(cache->scope_id, cache->compat_id, cache->block_keys[b], "raw"));
    }

    // 0. Opening the N blocks, as the aggregated handler does before reading: one by one with
    //    ObjectStore::Open (what objcache's ProbeBlocks does today) and all at once with OpenMany.
    double open_seq = 0, open_many = 0;
    {
      auto start = Clock::now();
      for (const auto& k : keys) {
        auto r = (*store)->Open(bucket, k);
        if (!r.ok()) return Fail("open", r.status());
      }
      open_seq = Secs(start, Clock::now());
      start = Clock::now();
      auto all = (*store)->OpenMany(bucket, keys);
      open_many = Secs(start, Clock::now());
      for (const auto& r : all) {
        if (!r.ok()) return Fail("OpenMany", r.status());
      }
    }

    // 1. Aggregated through kvcs store.
    Row agg{"aggregated via kvcs store (1 req)", 1, 0, 0, payload};
    uint64_t backend_requests = 0, coalesced = 0;
    {
      uint64_t got = 0;
      auto before = (*store)->client().stats().requests;
      auto coalesced_before = (*store)->coalesced_reads();
      auto st = client.AggregateGet(bucket, req, [&](const DeliveredLayer& l) {
        for (const auto& b : l.blocks) got += b.data.size();
        return Status::Ok();
      });
      if (!st.ok()) {
        rc = Fail("aggregated GET", st.status());
        break;
      }
      if (got != payload || st->corrupt_blocks) {
        std::fprintf(stderr, "aggregated GET delivered %llu of %llu bytes\n",
                     static_cast<unsigned long long>(got),
                     static_cast<unsigned long long>(payload));
        rc = 1;
        break;
      }
      agg.wall = st->total_seconds;
      agg.ttfl = st->first_layer_seconds;
      backend_requests = (*store)->client().stats().requests - before;
      coalesced = (*store)->coalesced_reads() - coalesced_before;
    }

    // Straight to radosgw with the same client library.
    s3client::ClientOptions direct_opts = so.client;
    auto direct = s3client::S3Client::Create(direct_opts);
    if (!direct.ok()) return Fail("direct client", direct.status());
    Bytes buf(block_layer);
    // 2. Sequential per-range GETs, layer-major, one connection.
    Row seq{"range GETs -> radosgw, sequential", uint64_t{blocks} * layers, 0, 0, payload};
    {
      // warm-up
      (void)(*direct)->GetRange(backend_bucket, keys[0], views[0].Find(0)->both().offset, buf);
      auto start = Clock::now();
      for (uint32_t l = 0; l < layers && !rc; ++l) {
        for (uint32_t b = 0; b < blocks; ++b) {
          auto range = views[b].Find(l)->both();
          auto n = (*direct)->GetRange(backend_bucket, keys[b], range.offset,
                                       std::span<uint8_t>(buf.data(), range.length));
          if (!n.ok() || *n != range.length) {
            rc = Fail("range GET", n.ok() ? Status(Code::kInternal, "short") : n.status());
            break;
          }
        }
        if (l == 0) seq.ttfl = Secs(start, Clock::now());
      }
      seq.wall = Secs(start, Clock::now());
    }
    if (rc) break;
    // 3. Parallel per-range GETs, layer by layer.
    Row par{"range GETs -> radosgw, " + std::to_string(parallel) + " parallel",
            uint64_t{blocks} * layers, 0, 0, payload};
    {
      std::vector<Bytes> bufs(blocks, Bytes(block_layer));
      auto start = Clock::now();
      for (uint32_t l = 0; l < layers && !rc; ++l) {
        std::vector<s3client::RangeGet> gets(blocks);
        for (uint32_t b = 0; b < blocks; ++b) {
          auto range = views[b].Find(l)->both();
          gets[b].bucket = backend_bucket;
          gets[b].key = keys[b];
          gets[b].offset = range.offset;
          gets[b].out = std::span<uint8_t>(bufs[b].data(), range.length);
        }
        (*direct)->ParallelGet(gets);
        for (auto& g : gets) {
          if (!g.result.ok()) {
            rc = Fail("parallel range GET", g.result.status());
            break;
          }
        }
        if (l == 0) par.ttfl = Secs(start, Clock::now());
      }
      par.wall = Secs(start, Clock::now());
    }
    if (rc) break;
    std::printf("\n");
    Print(agg);
    Print(seq);
    Print(par);
    std::printf(
        "\n  the aggregated request cost %llu requests to radosgw (%llu block-layer reads "
        "coalesced into a neighbour's GET)\n",
        static_cast<unsigned long long>(backend_requests),
        static_cast<unsigned long long>(coalesced));
    std::printf(
        "  aggregated vs sequential range GETs: %.2fx faster (wall), first layer %.2fx sooner, "
        "%llux fewer client requests\n",
        seq.wall / agg.wall, seq.ttfl / agg.ttfl, static_cast<unsigned long long>(seq.requests));
    std::printf("  aggregated vs %d-parallel range GETs: %.2fx (wall), first layer %.2fx\n",
                parallel, par.wall / agg.wall, par.ttfl / agg.ttfl);
    std::printf(
        "  opening the %u blocks: one by one (Open) %.1f ms, "
        "OpenMany %.1f ms: %.1fx\n",
        blocks, open_seq * 1e3, open_many * 1e3, open_seq / open_many);
    // Clean up the backend bucket.
    for (const auto& k : keys) (void)(*store)->Delete(bucket, k);
    (void)(*store)->DeleteBucket(bucket);
  } while (false);
  return rc;
}
