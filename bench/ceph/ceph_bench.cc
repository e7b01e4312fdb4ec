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
#include <string>
#include <vector>

#include "bench/support/store_bench.h"
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
  std::fprintf(stderr, "kvcs_ceph_bench: %s: %s\n", what.c_str(), s.ToString().c_str());
  return 1;
}

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
  if (blocks < 1 || blocks > 4096 || layers < 1 || layers > 128 || parallel < 2) {
    std::fprintf(stderr, "bad sizes\n");
    return 2;
  }

  bench::CephFixture ceph(KVCS_CEPH_FIXTURE,
                          KVCS_CEPH_BENCH_DIR "/ceph-" + std::to_string(::getpid()));
  if (endpoint.empty()) {
    if (Status s = ceph.Up(/*rgw=*/true, 4); !s.ok()) return Fail("Ceph", s);
    endpoint = ceph.rgw_endpoint();
  }

  // The store: S3BackendStore over radosgw, served by the S3 server + objcache Service.
  const s3client::S3BackendOptions so = bench::RadosgwBackendOptions(endpoint, parallel);
  auto store = s3client::S3BackendStore::Open(so);
  if (!store.ok()) return Fail("open backend", store.status());
  auto served = bench::ServedStore::Start(**store);
  if (!served.ok()) return Fail("server start", served.status());
  Client client((*served)->client_options());
  const std::string bucket = kDefaultKvBucket;
  if (Status s = client.CreateBucket(bucket); !s.ok()) return Fail("create bucket", s);
  auto set = bench::SyntheticSet::Make(blocks, layers);
  if (!set.ok()) return Fail("synthetic data", set.status());
  std::printf(
      "layout: %u blocks x %u layers, %llu KiB per block-layer, %.1f MiB of KV; "
      "backend %s, %d parallel range GETs\n",
      blocks, layers, static_cast<unsigned long long>(set->block_layer >> 10),
      set->payload / 1048576.0, endpoint.c_str(), parallel);
  auto put = bench::AggregatePutAll(client, bucket, *set, ceph.osd_pid());
  if (!put.ok()) return Fail("aggregated PUT", put.status());
  std::printf("stored through kvcs store -> radosgw in %.2f s\n\n", put->wall);

  // Warm-up (connections, radosgw caches) for both paths.
  (void)client.AggregateGet(bucket, SyntheticRequest(set->cache),
                            [](const DeliveredLayer&) { return Status::Ok(); });
  const std::string backend_bucket = so.bucket_prefix + bucket;

  // 0. Opening the N blocks, as the aggregated handler does before reading: one by one with
  //    ObjectStore::Open and all at once with OpenMany.
  double open_seq = 0, open_many = 0;
  {
    auto start = Clock::now();
    for (const auto& k : set->keys) {
      auto r = (*store)->Open(bucket, k);
      if (!r.ok()) return Fail("open", r.status());
    }
    open_seq = Secs(start, Clock::now());
    start = Clock::now();
    auto all = (*store)->OpenMany(bucket, set->keys);
    open_many = Secs(start, Clock::now());
    for (const auto& r : all) {
      if (!r.ok()) return Fail("OpenMany", r.status());
    }
  }

  // 1. Aggregated through kvcs store.
  const auto before = (*store)->client().stats().requests;
  const auto coalesced_before = (*store)->coalesced_reads();
  auto agg = bench::TimedAggregateGet(client, bucket, *set, "aggregated via kvcs store (1 req)",
                                      ceph.osd_pid());
  if (!agg.ok()) return Fail("aggregated GET", agg.status());
  const uint64_t backend_requests = (*store)->client().stats().requests - before;
  const uint64_t coalesced = (*store)->coalesced_reads() - coalesced_before;

  // 2, 3. Straight to radosgw with the same client library: one at a time, then P in flight.
  auto direct = s3client::S3Client::Create(so.client);
  if (!direct.ok()) return Fail("direct client", direct.status());
  auto seq = bench::RangeGetsToRadosgw(**direct, backend_bucket, *set, 1, ceph.osd_pid());
  if (!seq.ok()) return Fail("range GETs", seq.status());
  auto par = bench::RangeGetsToRadosgw(**direct, backend_bucket, *set, parallel, ceph.osd_pid());
  if (!par.ok()) return Fail("parallel range GETs", par.status());
  std::printf("\n");
  bench::PrintRow(*agg);
  bench::PrintRow(*seq);
  bench::PrintRow(*par);
  std::printf(
      "\n  the aggregated request cost %llu requests to radosgw (%llu block-layer reads "
      "coalesced into a neighbour's GET)\n",
      static_cast<unsigned long long>(backend_requests),
      static_cast<unsigned long long>(coalesced));
  std::printf(
      "  aggregated vs sequential range GETs: %.2fx faster (wall), first layer %.2fx sooner, "
      "%llux fewer client requests\n",
      seq->wall / agg->wall, seq->ttfl / agg->ttfl, static_cast<unsigned long long>(seq->requests));
  std::printf("  aggregated vs %d-parallel range GETs: %.2fx (wall), first layer %.2fx\n", parallel,
              par->wall / agg->wall, par->ttfl / agg->ttfl);
  std::printf("  opening the %u blocks: one by one (Open) %.1f ms, OpenMany %.1f ms: %.1fx\n",
              blocks, open_seq * 1e3, open_many * 1e3, open_seq / open_many);
  for (const auto& k : set->keys) (void)(*store)->Delete(bucket, k);
  (void)(*store)->DeleteBucket(bucket);
  return 0;
}
