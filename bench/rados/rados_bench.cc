// bench/rados: layer-major retrieval of a Llama-3.1-8B-layout prefix (32 layers, 64 KiB per
// block-layer, 256 blocks = 4K tokens by default) kept in Ceph, issue 18's table in ONE run on one
// cluster, the same bytes in every row:
//   aggregated GET, RADOS     ONE POST ?kvcs-aggregate to `kvcs store` (S3 server + objcache
//                             Service, in-process) over RadosStore: each window's ranges read by
//                             ReadMany (asynchronous librados reads, coalesced per RADOS object);
//                             every block-layer digest verified by the objcache client; inline
//                             (HTTP body) and same-host (shared buffer)
//   RadosStore::ReadMany      the same ranges read by ReadMany layer by layer, no HTTP: the store
//                             alone
//   librados par / seq        the same block-layer reads issued by the bench straight to the same
//                             RADOS objects, layer by layer, P in flight (`rados bench`-style) and
//                             one at a time (one RADOS read's latency)
//   aggregated GET, radosgw   the same request to a second `kvcs store` whose backend is radosgw
//                             (S3BackendStore), and the N x L range GETs straight to radosgw, P in
//                             flight and one at a time
//   aggregated PUT            the N containers through `kvcs store` on RADOS (64 per request), and
//   librados writes           the same containers written by the bench as RADOS objects, P in
//   flight
// Every GET row but the one-at-a-time ones is measured `--repeat` times, interleaved, and the best
// kept (the machine may be shared). Each row also shows the CPU this process and the OSD used.
// Ratios: aggregated GET on RADOS / parallel librados reads (aim >= 0.8), / aggregated GET on
// radosgw (aim >= 4); first layer against one RADOS read; aggregated PUT / parallel writes.
//
// Usage: kvcs_rados_bench [--blocks N] [--layers L] [--parallel P] [--repeat R]
//                         [--ceph-conf F --pool P [--endpoint URL]] [--no-rgw]
//   Without --ceph-conf it starts the project's one-node Ceph with radosgw (scripts/ceph-fixture.sh
//   up, memstore 4 GB; --no-rgw: without, and no radosgw rows) beside the binary and stops it at
//   the end. With --ceph-conf the radosgw rows need --endpoint (the fixture's test user's keys).
#include <rados/librados.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/support/store_bench.h"
#include "objcache/block_layout.h"
#include "rados_store/rados_reader.h"
#include "rados_store/rados_store.h"
#include "s3client/backend_store.h"

using namespace kvcs;
using namespace kvcs::objcache;
using kvcs::bench::Row;

namespace {

using Clock = std::chrono::steady_clock;
double Secs(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

int Fail(const std::string& what, const Status& s) {
  std::fprintf(stderr, "kvcs_rados_bench: %s: %s\n", what.c_str(), s.ToString().c_str());
  return 1;
}

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
  int parallel = 32, repeat = 3;
  bool rgw = true;
  std::string ceph_conf, endpoint, pool = "kvcs-bench";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--blocks") {
      blocks = static_cast<uint32_t>(std::atoi(next().c_str()));
    } else if (a == "--layers") {
      layers = static_cast<uint32_t>(std::atoi(next().c_str()));
    } else if (a == "--parallel") {
      parallel = std::atoi(next().c_str());
    } else if (a == "--repeat") {
      repeat = std::atoi(next().c_str());
    } else if (a == "--ceph-conf") {
      ceph_conf = next();
    } else if (a == "--endpoint") {
      endpoint = next();
    } else if (a == "--pool") {
      pool = next();
    } else if (a == "--no-rgw") {
      rgw = false;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--blocks N] [--layers L] [--parallel P] [--repeat R] "
                   "[--ceph-conf F --pool P [--endpoint URL]] [--no-rgw]\n",
                   argv[0]);
      return 2;
    }
  }
  if (blocks < 1 || blocks > 4096 || layers < 1 || layers > 128 || parallel < 2 ||
      parallel > 1024 || repeat < 1 || repeat > 20) {
    std::fprintf(stderr, "bad sizes\n");
    return 2;
  }
  bench::CephFixture ceph(KVCS_CEPH_FIXTURE,
                          KVCS_RADOS_BENCH_DIR "/ceph-" + std::to_string(::getpid()));
  if (ceph_conf.empty()) {
    if (Status s = ceph.Up(rgw, 4); !s.ok()) return Fail("Ceph", s);
    ceph_conf = ceph.ceph_conf();
    endpoint = ceph.rgw_endpoint();
  }
  if (!rgw) endpoint.clear();
  const int osd = ceph.osd_pid();
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
  const std::string shm_socket = "/tmp/kvcs-rados-bench-" + std::to_string(::getpid()) + ".sock";
  auto served = bench::ServedStore::Start(**store, shm_socket);
  if (!served.ok()) return Fail("server start", served.status());
  struct Unlink {
    std::string path;
    ~Unlink() { ::unlink(path.c_str()); }
  } unlink_socket{shm_socket};
  auto client = std::make_unique<Client>((*served)->client_options());  // for the PUTs
  const std::string bucket = kDefaultKvBucket;
  if (Status s = client->CreateBucket(bucket); !s.ok()) return Fail("create bucket", s);
  auto set = bench::SyntheticSet::Make(blocks, layers);
  if (!set.ok()) return Fail("synthetic data", set.status());
  const uint64_t payload = set->payload;
  std::printf(
      "layout: %u blocks x %u layers, %llu KiB per block-layer, %.1f MiB of KV; pool %s, "
      "%d in flight, best of %d\n",
      blocks, layers, static_cast<unsigned long long>(set->block_layer >> 10), payload / 1048576.0,
      pool.c_str(), parallel, repeat);
  rados_ioctx_t io = (*store)->io().ioctx();

  // PUT: aggregated through kvcs store, then the same containers as plain RADOS objects.
  auto put = bench::AggregatePutAll(*client, bucket, *set, osd);
  client.reset();
  if (!put.ok()) return Fail("aggregated PUT", put.status());
  Row wpar{"librados writes, " + std::to_string(parallel) + " in flight", blocks, 0, 0,
           set->stored};
  {
    std::vector<Job> jobs;
    for (uint32_t b = 0; b < blocks; ++b) {
      jobs.push_back({"bench-raw-" + std::to_string(b), 0, set->containers[b].size(), nullptr,
                      set->containers[b].data()});
    }
    bench::CpuMeter meter(&wpar, osd);
    auto t0 = Clock::now();
    if (!RunJobs(io, jobs, parallel)) return Fail("librados writes", IoError("failed"));
    wpar.wall = Secs(t0, Clock::now());
  }

  // The radosgw side: a second kvcs store whose backend is radosgw, holding the same containers.
  std::unique_ptr<s3client::S3BackendStore> rgw_store;
  std::unique_ptr<bench::ServedStore> rgw_served;
  std::unique_ptr<s3client::S3Client> rgw_direct;
  s3client::S3BackendOptions so;
  if (!endpoint.empty()) {
    so = bench::RadosgwBackendOptions(endpoint, parallel);
    auto s = s3client::S3BackendStore::Open(so);
    if (!s.ok()) return Fail("open radosgw backend", s.status());
    rgw_store = std::move(*s);
    auto sv = bench::ServedStore::Start(*rgw_store);
    if (!sv.ok()) return Fail("radosgw store start", sv.status());
    rgw_served = std::move(*sv);
    Client rgw_client(rgw_served->client_options());
    if (Status st = rgw_client.CreateBucket(bucket); !st.ok()) return Fail("rgw bucket", st);
    auto p = bench::AggregatePutAll(rgw_client, bucket, *set, osd);
    if (!p.ok()) return Fail("aggregated PUT to radosgw", p.status());
    auto d = s3client::S3Client::Create(so.client);
    if (!d.ok()) return Fail("direct radosgw client", d.status());
    rgw_direct = std::move(*d);
  }

  // GET: the RADOS objects and offsets of every (block, layer), for the baselines.
  auto readers = (*store)->OpenMany(bucket, set->keys);
  std::vector<std::vector<Job>> per_layer(layers);
  std::vector<Bytes> bufs(blocks, Bytes(set->block_layer));
  for (uint32_t b = 0; b < blocks; ++b) {
    if (!readers[b].ok()) return Fail("open", readers[b].status());
    const auto* r = dynamic_cast<const rados_store::RadosReader*>(readers[b]->get());
    for (uint32_t l = 0; l < layers; ++l) {
      auto range = set->views[b].Find(l)->both();
      std::vector<rados_store::RadosReader::Piece> ps;
      r->Locate(range.offset, range.length, &ps);
      for (const auto& p : ps)
        per_layer[l].push_back({p.oid, p.offset, p.len, bufs[b].data() + p.pos});
    }
  }
  auto librados_reads = [&](int in_flight, const std::string& name) -> Result<Row> {
    Row row{name, uint64_t{blocks} * layers, 0, 0, payload};
    {
      bench::CpuMeter meter(&row, osd);
      auto t0 = Clock::now();
      for (uint32_t l = 0; l < layers; ++l) {
        if (!RunJobs(io, per_layer[l], in_flight)) return IoError("librados reads failed");
        if (l == 0) row.ttfl = Secs(t0, Clock::now());
      }
      row.wall = Secs(t0, Clock::now());
    }
    return row;
  };
  auto read_many = [&]() -> Result<Row> {
    const uint64_t ops0 = (*store)->read_ops();
    Row row{"RadosStore::ReadMany layer by layer (no HTTP)", 0, 0, 0, payload};
    {
      bench::CpuMeter meter(&row, osd);
      auto t0 = Clock::now();
      for (uint32_t l = 0; l < layers; ++l) {
        std::vector<store::RangeRead> rr(blocks);
        for (uint32_t b = 0; b < blocks; ++b) {
          auto range = set->views[b].Find(l)->both();
          rr[b].reader = readers[b]->get();
          rr[b].offset = range.offset;
          rr[b].out = std::span<uint8_t>(bufs[b].data(), range.length);
        }
        (*store)->ReadMany(rr);
        for (auto& r : rr)
          if (!r.result.ok()) return r.result.status();
        if (l == 0) row.ttfl = Secs(t0, Clock::now());
      }
      row.wall = Secs(t0, Clock::now());
    }
    row.requests = (*store)->read_ops() - ops0;
    return row;
  };

  // Warm-up. The clients are kept across rows: the store closes a keep-alive connection idle
  // for 10 s (http/limits.h) and a row may take longer, but Client reconnects then.
  Client agg_client((*served)->client_options());
  std::optional<Client> rgw_client;
  if (rgw_served) rgw_client.emplace(rgw_served->client_options());
  {
    auto warm = bench::TimedAggregateGet(agg_client, bucket, *set, "warm-up", osd);
    if (!warm.ok()) return Fail("aggregated GET", warm.status());
  }
  if (rgw_served) {
    auto w = bench::TimedAggregateGet(*rgw_client, bucket, *set, "warm-up", osd);
    if (!w.ok()) return Fail("aggregated GET via radosgw", w.status());
  }
  Row agg, shm, direct, par, rgw_agg, rgw_par;
  uint64_t agg_ops = 0, rgw_requests = 0;
  for (int rep = 0; rep < repeat; ++rep) {
    const uint64_t ops0 = (*store)->read_ops();
    auto a = bench::TimedAggregateGet(agg_client, bucket, *set,
                                      "aggregated GET via kvcs store, RADOS", osd);
    if (!a.ok()) return Fail("aggregated GET", a.status());
    agg_ops = (*store)->read_ops() - ops0;
    bench::KeepBest(&agg, *a);
    auto shm_client = bench::SameHostClient(**served, bucket, *set);
    if (!shm_client.ok()) return Fail("same-host registration", shm_client.status());
    auto s = bench::TimedAggregateGet(**shm_client, bucket, *set,
                                      "  the same, same-host shared buffer", osd);
    if (!s.ok()) return Fail("same-host aggregated GET", s.status());
    bench::KeepBest(&shm, *s);
    auto d = read_many();
    if (!d.ok()) return Fail("ReadMany", d.status());
    bench::KeepBest(&direct, *d);
    auto p = librados_reads(parallel, "librados reads, " + std::to_string(parallel) + " in flight");
    if (!p.ok()) return Fail("librados reads", p.status());
    bench::KeepBest(&par, *p);
    if (!rgw_served) continue;
    const uint64_t r0 = rgw_store->client().stats().requests;
    auto ra = bench::TimedAggregateGet(*rgw_client, bucket, *set,
                                       "aggregated GET via kvcs store, radosgw", osd);
    if (!ra.ok()) return Fail("aggregated GET via radosgw", ra.status());
    rgw_requests = rgw_store->client().stats().requests - r0;
    bench::KeepBest(&rgw_agg, *ra);
    auto rp =
        bench::RangeGetsToRadosgw(*rgw_direct, so.bucket_prefix + bucket, *set, parallel, osd);
    if (!rp.ok()) return Fail("range GETs to radosgw", rp.status());
    bench::KeepBest(&rgw_par, *rp);
  }
  auto seq = librados_reads(1, "librados reads, one at a time");
  if (!seq.ok()) return Fail("librados reads", seq.status());
  Row rgw_seq;
  if (rgw_direct) {
    auto r = bench::RangeGetsToRadosgw(*rgw_direct, so.bucket_prefix + bucket, *set, 1, osd);
    if (!r.ok()) return Fail("range GETs to radosgw", r.status());
    rgw_seq = *r;
  }
  const double one_read = seq->wall / (double(blocks) * layers);
  std::printf("\n");
  bench::PrintRow(agg);
  bench::PrintRow(shm);
  bench::PrintRow(direct);
  bench::PrintRow(par);
  bench::PrintRow(*seq);
  if (rgw_served) {
    bench::PrintRow(rgw_agg);
    bench::PrintRow(rgw_par);
    bench::PrintRow(rgw_seq);
  }
  bench::PrintRow(*put);
  bench::PrintRow(wpar);
  std::printf(
      "\n  aggregated GET on RADOS / parallel librados reads: %.2f inline, %.2f same-host "
      "(GB/s ratio; aim >= 0.8); ReadMany alone %.2f\n",
      par.wall / agg.wall, par.wall / shm.wall, par.wall / direct.wall);
  if (rgw_served) {
    std::printf(
        "  aggregated GET on RADOS / on radosgw: %.2f (aim >= 4); radosgw served %llu "
        "requests for it\n",
        rgw_agg.wall / agg.wall, static_cast<unsigned long long>(rgw_requests));
  }
  std::printf("  the aggregated GET cost %llu RADOS read ops for %llu block-layers\n",
              static_cast<unsigned long long>(agg_ops),
              static_cast<unsigned long long>(uint64_t{blocks} * layers));
  std::printf("  first layer %.2f ms = %.1f x one RADOS read (%.3f ms per %llu KiB read)\n",
              agg.ttfl * 1e3, agg.ttfl / one_read, one_read * 1e3,
              static_cast<unsigned long long>(set->block_layer >> 10));
  std::printf("  aggregated PUT / parallel librados writes: %.2f (GB/s ratio)\n",
              wpar.wall / put->wall);
  std::vector<std::string> raw;
  for (uint32_t b = 0; b < blocks; ++b) raw.push_back("bench-raw-" + std::to_string(b));
  (void)(*store)->io().RemoveAll(raw);
  for (const auto& k : set->keys) (void)(*store)->Delete(bucket, k);
  (void)(*store)->DeleteBucket(bucket);
  if (rgw_store) {
    for (const auto& k : set->keys) (void)rgw_store->Delete(bucket, k);
    (void)rgw_store->DeleteBucket(bucket);
  }
  return 0;
}
