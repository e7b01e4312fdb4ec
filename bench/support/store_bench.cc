// What the benches of `kvcs store` on Ceph share (store_bench.h).
#include "bench/support/store_bench.h"

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "objcache/block_layout.h"

namespace kvcs::bench {

namespace {

using Clock = std::chrono::steady_clock;
double Secs(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

void PrintRow(const Row& r) {
  std::printf("  %-44s %5llu req %8.1f ms %6.3f GB/s  cpu %5.2f s + osd %5.2f s", r.name.c_str(),
              static_cast<unsigned long long>(r.requests), r.wall * 1e3, r.gbps(), r.cpu_self,
              r.cpu_osd);
  if (r.ttfl > 0) std::printf("  first layer %7.2f ms", r.ttfl * 1e3);
  std::printf("\n");
}

void KeepBest(Row* best, const Row& r) {
  if (best->wall <= 0 || r.wall < best->wall) *best = r;
}

double ProcessCpu() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double PidCpu(int pid) {
  if (pid <= 0) return 0;
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(f, line);
  const auto p = line.rfind(')');  // "pid (comm) state ...": utime, stime are fields 14, 15
  if (p == std::string::npos || p + 2 > line.size()) return 0;
  std::istringstream in(line.substr(p + 2));
  std::string skip;
  for (int i = 3; i <= 13; ++i) in >> skip;
  unsigned long long ut = 0, st = 0;
  in >> ut >> st;
  return double(ut + st) / double(sysconf(_SC_CLK_TCK));
}

CpuMeter::CpuMeter(Row* row, int osd_pid)
    : row_(row), osd_pid_(osd_pid), self0_(ProcessCpu()), osd0_(PidCpu(osd_pid)) {}

CpuMeter::~CpuMeter() {
  row_->cpu_self = ProcessCpu() - self0_;
  row_->cpu_osd = PidCpu(osd_pid_) - osd0_;
}

CephFixture::~CephFixture() {
  if (!started_) return;
  const std::string cmd = "'" + fixture_ + "' down '" + dir_ + "'";
  if (std::system(cmd.c_str()) == 0 && !keep_) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

Status CephFixture::Up(bool rgw, int memstore_gb) {
  std::printf("starting Ceph%s in %s (scripts/ceph-fixture.sh)...\n", rgw ? "" : " (no radosgw)",
              dir_.c_str());
  const std::string cmd = "'" + fixture_ + "' up " + (rgw ? "" : "--no-rgw ") + "--memstore-gb " +
                          std::to_string(memstore_gb) + " '" + dir_ + "'";
  started_ = true;
  if (std::system(cmd.c_str()) != 0) {
    keep_ = true;
    return Status(Code::kUnavailable,
                  "the Ceph fixture did not start (its reason is above; logs in " + dir_ + "/log)");
  }
  std::ifstream(dir_ + "/osd.pid") >> osd_pid_;
  if (rgw) {
    int port = 0;
    std::ifstream(dir_ + "/rgw.port") >> port;
    if (port <= 0 || port > 65535) {
      keep_ = true;
      return Status(Code::kUnavailable, "the Ceph fixture wrote no radosgw port");
    }
    endpoint_ = "http://127.0.0.1:" + std::to_string(port);
  }
  return Status::Ok();
}

s3client::S3BackendOptions RadosgwBackendOptions(const std::string& endpoint, int parallel) {
  s3client::S3BackendOptions so;
  so.client.endpoint = endpoint;
  so.client.credentials = {kRgwAccessKey, kRgwSecretKey, "us-east-1"};
  so.client.parallel_gets = parallel;
  so.client.max_connections = 2 * parallel + 8;
  so.bucket_prefix = "bench" + std::to_string(::getpid()) + "-";
  return so;
}

Result<SyntheticSet> SyntheticSet::Make(uint32_t blocks, uint32_t layers) {
  SyntheticSet s;
  KVCS_ASSIGN_OR_RETURN(s.cache, objcache::MakeSyntheticCache(blocks, layers));
  s.containers.reserve(blocks);  // views point into them
  for (uint32_t b = 0; b < blocks; ++b) {
    KVCS_ASSIGN_OR_RETURN(Bytes c, objcache::MakeSyntheticContainer(s.cache, b));
    s.stored += c.size();
    s.containers.push_back(std::move(c));
    KVCS_ASSIGN_OR_RETURN(kvsp::ContainerView v, kvsp::ParseContainerHeader(s.containers.back()));
    s.views.push_back(v);
    s.keys.push_back(objcache::BlockObjectKey(s.cache.scope_id, s.cache.compat_id,
                                              s.cache.block_keys[b], "raw"));
  }
  s.block_layer = 2 * s.cache.section_bytes;
  s.payload = uint64_t{blocks} * layers * s.block_layer;
  return s;
}

Result<Row> AggregatePutAll(objcache::Client& client, const std::string& bucket,
                            const SyntheticSet& set, int osd_pid) {
  const size_t n = set.containers.size();
  Row row{"aggregated PUT via kvcs store", (n + 63) / 64, 0, 0, set.stored};
  {
    CpuMeter meter(&row, osd_pid);  // fills row at the end of this scope, before the return
    auto t0 = Clock::now();
    for (size_t b = 0; b < n; b += 64) {
      std::vector<ByteSpan> spans;
      for (size_t i = b; i < std::min(n, b + 64); ++i) spans.emplace_back(set.containers[i]);
      KVCS_ASSIGN_OR_RETURN(auto r, client.AggregatePut(bucket, set.cache.scope_id, spans, false));
      if (r.stored != spans.size())
        return Status(Code::kInternal, "aggregated PUT: not all stored");
    }
    row.wall = Secs(t0, Clock::now());
  }
  return row;
}

Result<Row> TimedAggregateGet(objcache::Client& client, const std::string& bucket,
                              const SyntheticSet& set, const std::string& name, int osd_pid) {
  Row row{name, 1, 0, 0, set.payload};
  const objcache::AggregateRequest req = objcache::SyntheticRequest(set.cache);
  uint64_t got = 0;
  Result<objcache::AggregateStats> st = Status::Ok();
  {
    CpuMeter meter(&row, osd_pid);
    st = client.AggregateGet(bucket, req, [&](const objcache::DeliveredLayer& l) {
      for (const auto& b : l.blocks)
        if (b.status == objcache::BlockStatus::kPresent) got += b.data.size();
      return Status::Ok();
    });
  }
  if (!st.ok()) return st.status();
  if (got != set.payload || st->corrupt_blocks)
    return Status(Code::kCorruption, name + ": delivered " + std::to_string(got) + " of " +
                                         std::to_string(set.payload) + " bytes");
  row.wall = st->total_seconds;
  row.ttfl = st->first_layer_seconds;
  return row;
}

Result<std::unique_ptr<objcache::Client>> SameHostClient(const ServedStore& served,
                                                         const std::string& bucket,
                                                         const SyntheticSet& set) {
  objcache::ClientOptions so = served.client_options();
  so.shm_socket = served.shm_socket();
  so.shm_slots = 2;
  so.shm_buffer_bytes = 2 * uint64_t{set.cache.block_keys.size()} * set.block_layer;
  auto c = std::make_unique<objcache::Client>(so);
  objcache::AggregateRequest req = objcache::SyntheticRequest(set.cache);
  req.layer_count = 1;  // registers the buffer (memfd, mapping, populating it)
  KVCS_RETURN_IF_ERROR(c->AggregateGet(bucket, req, [](const objcache::DeliveredLayer&) {
                          return Status::Ok();
                        }).status());
  return c;
}

Result<Row> RangeGetsToRadosgw(s3client::S3Client& direct, const std::string& backend_bucket,
                               const SyntheticSet& set, int parallel, int osd_pid) {
  const uint32_t blocks = static_cast<uint32_t>(set.views.size());
  const uint32_t layers = set.cache.layers;
  Row row{parallel == 1 ? "range GETs -> radosgw, one at a time"
                        : "range GETs -> radosgw, " + std::to_string(parallel) + " in flight",
          uint64_t{blocks} * layers, 0, 0, set.payload};
  std::vector<Bytes> bufs(parallel == 1 ? 1 : blocks, Bytes(set.block_layer));
  // warm-up: the connection
  KVCS_RETURN_IF_ERROR(
      direct.GetRange(backend_bucket, set.keys[0], set.views[0].Find(0)->both().offset, bufs[0])
          .status());
  {
    CpuMeter meter(&row, osd_pid);
    auto t0 = Clock::now();
    for (uint32_t l = 0; l < layers; ++l) {
      if (parallel == 1) {
        for (uint32_t b = 0; b < blocks; ++b) {
          auto range = set.views[b].Find(l)->both();
          KVCS_ASSIGN_OR_RETURN(size_t n,
                                direct.GetRange(backend_bucket, set.keys[b], range.offset,
                                                std::span<uint8_t>(bufs[0].data(), range.length)));
          if (n != range.length) return Status(Code::kCorruption, "range GET: short");
        }
      } else {
        std::vector<s3client::RangeGet> gets(blocks);
        for (uint32_t b = 0; b < blocks; ++b) {
          auto range = set.views[b].Find(l)->both();
          gets[b].bucket = backend_bucket;
          gets[b].key = set.keys[b];
          gets[b].offset = range.offset;
          gets[b].out = std::span<uint8_t>(bufs[b].data(), range.length);
        }
        direct.ParallelGet(gets);
        for (auto& g : gets) {
          if (!g.result.ok()) return g.result.status();
          if (*g.result != g.out.size()) return Status(Code::kCorruption, "range GET: short");
        }
      }
      if (l == 0) row.ttfl = Secs(t0, Clock::now());
    }
    row.wall = Secs(t0, Clock::now());
  }
  return row;
}

}  // namespace kvcs::bench
