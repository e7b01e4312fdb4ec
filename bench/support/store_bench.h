// What the benches of `kvcs store` on Ceph share (bench/ceph: radosgw behind the store;
// bench/rados: RADOS behind it, and the radosgw rows of the same run): the project's Ceph fixture
// started for one run, the store served in-process (S3 server + objcache Service, inline and
// same-host delivery), the synthetic Llama-layout data set, the timed aggregated GET and PUT, the
// range GETs sent straight to radosgw, and the result rows with the CPU each path used.
#ifndef KVCS_BENCH_SUPPORT_STORE_BENCH_H_
#define KVCS_BENCH_SUPPORT_STORE_BENCH_H_

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "kvsp/container.h"
#include "objcache/client.h"
#include "objcache/served_store.h"
#include "objcache/synthetic.h"
#include "s3/server.h"
#include "s3client/backend_store.h"
#include "s3client/s3_client.h"
#include "store/object_store.h"

namespace kvcs::bench {

// One result row: wall time, KV payload bytes, time to first layer, and the CPU seconds this
// process and the fixture's OSD used meanwhile.
struct Row {
  std::string name;
  uint64_t requests = 0;
  double wall = 0, ttfl = 0;
  uint64_t bytes = 0;
  double cpu_self = 0, cpu_osd = 0;
  double gbps() const { return wall > 0 ? bytes / wall / 1e9 : 0; }
};
void PrintRow(const Row& r);
// The faster of two measurements of one path (for best-of-N on a busy machine).
void KeepBest(Row* best, const Row& r);

// CPU seconds used so far by this process, and by process `pid` (0 when pid <= 0 or gone).
double ProcessCpu();
double PidCpu(int pid);

// Sets row->cpu_self and row->cpu_osd to what was used between construction and destruction.
class CpuMeter {
 public:
  CpuMeter(Row* row, int osd_pid);
  ~CpuMeter();
  CpuMeter(const CpuMeter&) = delete;
  CpuMeter& operator=(const CpuMeter&) = delete;

 private:
  Row* row_;
  int osd_pid_;
  double self0_, osd0_;
};

// The project's one-node Ceph (scripts/ceph-fixture.sh, `fixture` is its path) in `dir`, on free
// ports, for one run: stopped and removed on destruction (the logs are kept when `up` failed).
class CephFixture {
 public:
  CephFixture(std::string fixture, std::string dir) : fixture_(std::move(fixture)), dir_(dir) {}
  ~CephFixture();
  CephFixture(const CephFixture&) = delete;
  CephFixture& operator=(const CephFixture&) = delete;
  // `up [--no-rgw] --memstore-gb N dir`.
  Status Up(bool rgw, int memstore_gb);
  std::string ceph_conf() const { return dir_ + "/ceph.conf"; }
  std::string rgw_endpoint() const { return endpoint_; }  // empty without radosgw
  int osd_pid() const { return osd_pid_; }

 private:
  const std::string fixture_, dir_;
  bool started_ = false, keep_ = false;
  std::string endpoint_;
  int osd_pid_ = 0;
};

// The test users' keys the fixture's radosgw knows.
inline constexpr char kRgwAccessKey[] = "0555b35654ad1656d804";
inline constexpr char kRgwSecretKey[] = "h7GhxuBLTrlhVUyxSPUKUV8r/2EI4ngqJxD7iBdBYLhwluN30JaT3Q==";

// The S3 backend on the fixture's radosgw at `endpoint` (its test user), `parallel` range GETs,
// buckets prefixed with this process's id.
s3client::S3BackendOptions RadosgwBackendOptions(const std::string& endpoint, int parallel);

// `kvcs store` in-process over a store (objcache/served_store.h).
using objcache::ServedStore;

// The synthetic prefix (objcache/synthetic.h): `blocks` containers of `layers` layers.
struct SyntheticSet {
  static Result<SyntheticSet> Make(uint32_t blocks, uint32_t layers);
  objcache::SyntheticCache cache;
  std::vector<Bytes> containers;
  std::vector<kvsp::ContainerView> views;  // into containers
  std::vector<std::string> keys;           // each block's object key (block_layout.h)
  uint64_t block_layer = 0;                // K+V bytes of one block-layer
  uint64_t payload = 0;                    // K+V bytes of every block-layer
  uint64_t stored = 0;                     // bytes of every container
};

// The containers through `client` (aggregated PUT, 64 per request) into `bucket`.
Result<Row> AggregatePutAll(objcache::Client& client, const std::string& bucket,
                            const SyntheticSet& set, int osd_pid);
// ONE aggregated GET of every layer of every block; every byte counted and verified by the
// client. Fails on a short or corrupt delivery.
Result<Row> TimedAggregateGet(objcache::Client& client, const std::string& bucket,
                              const SyntheticSet& set, const std::string& name, int osd_pid);
// A same-host client (shared buffer for two layers) registered outside the timed request, as an
// engine does at start-up.
Result<std::unique_ptr<objcache::Client>> SameHostClient(const ServedStore& served,
                                                         const std::string& bucket,
                                                         const SyntheticSet& set);

// Every (block, layer) range GET straight to radosgw, layer-major: `parallel` == 1 one at a
// time on one keep-alive connection, else layer by layer with ParallelGet.
Result<Row> RangeGetsToRadosgw(s3client::S3Client& direct, const std::string& backend_bucket,
                               const SyntheticSet& set, int parallel, int osd_pid);

}  // namespace kvcs::bench

#endif  // KVCS_BENCH_SUPPORT_STORE_BENCH_H_
