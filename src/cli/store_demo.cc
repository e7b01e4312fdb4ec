// `kvcs demo` store part. See store_demo.h.
#include "cli/store_demo.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "objcache/client.h"
#include "objcache/service.h"
#include "objcache/synthetic.h"
#include "s3/server.h"
#include "store/local_store.h"

namespace kvcs::cli {

using objcache::AggregatePutResult;
using objcache::AggregateRequest;
using objcache::AggregateStats;
using objcache::BlockStatus;
using objcache::Client;
using objcache::ClientOptions;
using objcache::DeliveredBlock;
using objcache::DeliveredLayer;
using objcache::kDefaultKvBucket;
using objcache::MakeSyntheticCache;
using objcache::MakeSyntheticContainer;
using objcache::Service;
using objcache::ServiceOptions;
using objcache::SyntheticCache;
using objcache::SyntheticLayerBytes;
using objcache::SyntheticRequest;

Status RunStoreDemo(const StoreDemoOptions& o, std::ostream& out) {
  namespace fs = std::filesystem;
  if (o.prefix_blocks > o.blocks) return InvalidArgument("demo: prefix_blocks > blocks");
  std::string dir = o.dir;
  bool made_dir = false;
  if (dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/kvcs-demo-store-XXXXXX";
    if (!mkdtemp(tmpl.data())) return IoError("demo: cannot create a temporary directory");
    dir = tmpl;
    made_dir = true;
  }
  struct Cleanup {
    std::string dir;
    bool remove;
    ~Cleanup() {
      std::error_code ec;
      if (remove) fs::remove_all(dir, ec);
    }
  } cleanup{dir, made_dir && !o.keep_dir};

  store::LocalStoreOptions so;
  so.sync = false;  // a throw-away demo store; durability is tested elsewhere
  KVCS_ASSIGN_OR_RETURN(auto st, store::LocalStore::Open(dir, so));
  s3::ServerConfig cfg;
  cfg.listen_host = "127.0.0.1";
  cfg.port = 0;
  cfg.secrets[s3::kDevAccessKey] = s3::kDevSecretKey;
  cfg.io_threads = 2;
  s3::Server server(cfg, *st);
  ServiceOptions svo;
  svo.bandwidth_cap = o.bandwidth_cap;
  Service service(svo);
  for (auto& e : service.Extensions()) server.AddExtension(std::move(e));
  const std::string shm_path = dir + "/shm.sock";
  KVCS_RETURN_IF_ERROR(service.ListenShm(shm_path));
  KVCS_RETURN_IF_ERROR(server.Start());
  std::thread runner([&] { server.Run(false); });
  struct Stopper {
    s3::Server& s;
    std::thread& t;
    ~Stopper() {
      s.Stop();
      if (t.joinable()) t.join();
    }
  } stopper{server, runner};

  out << fmt::format("store: {} on http://127.0.0.1:{} (bucket {})\n", dir, server.port(),
                     kDefaultKvBucket);
  KVCS_ASSIGN_OR_RETURN(SyntheticCache cache, MakeSyntheticCache(o.blocks, o.layers));
  ClientOptions co;
  co.port = server.port();
  co.access_key = s3::kDevAccessKey;
  co.secret_key = s3::kDevSecretKey;
  Client client(co);
  KVCS_RETURN_IF_ERROR(client.CreateBucket(kDefaultKvBucket));

  std::vector<Bytes> containers;
  std::vector<ByteSpan> spans;
  uint64_t stored_bytes = 0;
  for (uint32_t i = 0; i < o.blocks; ++i) {
    KVCS_ASSIGN_OR_RETURN(Bytes c, MakeSyntheticContainer(cache, i));
    stored_bytes += c.size();
    containers.push_back(std::move(c));
  }
  for (const Bytes& c : containers) spans.push_back(c);
  auto t0 = std::chrono::steady_clock::now();
  KVCS_ASSIGN_OR_RETURN(AggregatePutResult put,
                        client.AggregatePut(kDefaultKvBucket, cache.scope_id, spans, true));
  double put_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (put.stored != o.blocks)
    return Internal("demo: aggregated PUT stored " + std::to_string(put.stored) + " of " +
                    std::to_string(o.blocks));
  out << fmt::format(
      "put:   {} blocks x {} layers ({:.1f} MiB of KVSP containers) in ONE aggregated PUT: "
      "{:.1f} ms; prefix record {}\n",
      o.blocks, o.layers, stored_bytes / 1048576.0, put_s * 1e3, put.prefix_record);
  containers.clear();

  uint32_t n = o.prefix_blocks ? o.prefix_blocks : o.blocks;
  AggregateRequest req = SyntheticRequest(cache, n);
  req.compute_us_per_layer = o.compute_us_per_layer;
  req.stall_target_us = o.stall_target_us;
  std::vector<uint64_t> layer_bytes;
  uint32_t wrong = 0;
  auto on_layer = [&](const DeliveredLayer& l) -> Status {
    uint64_t b = 0;
    for (uint32_t i = 0; i < l.blocks.size(); ++i) {
      const DeliveredBlock& blk = l.blocks[i];
      if (blk.status != BlockStatus::kPresent) {
        ++wrong;
        continue;
      }
      b += blk.data.size();
      if (i == 0 &&
          Bytes(blk.data.begin(), blk.data.end()) != SyntheticLayerBytes(cache, 0, l.layer))
        ++wrong;
    }
    layer_bytes.push_back(b);
    return Status::Ok();
  };
  KVCS_ASSIGN_OR_RETURN(AggregateStats stats, client.AggregateGet(kDefaultKvBucket, req, on_layer));
  // The same request delivered into a shared buffer (same host: the RDMA stand-in). The buffer
  // is registered once, as an engine would at start-up, before the timed request.
  ClientOptions sho = co;
  sho.shm_socket = shm_path;
  sho.shm_slots = 2;
  sho.shm_buffer_bytes = 2 * uint64_t{n} * 2 * cache.section_bytes;
  Client shm_client(sho);
  AggregateRequest first_layer = req;
  first_layer.layer_count = 1;
  KVCS_RETURN_IF_ERROR(shm_client
                           .AggregateGet(kDefaultKvBucket, first_layer,
                                         [](const DeliveredLayer&) { return Status::Ok(); })
                           .status());
  const std::vector<uint64_t> http_layer_bytes = layer_bytes;
  layer_bytes.clear();
  KVCS_ASSIGN_OR_RETURN(AggregateStats shm_stats,
                        shm_client.AggregateGet(kDefaultKvBucket, req, on_layer));
  out << fmt::format(
      "get:   first {} blocks ({} tokens), layers 0-{}, ONE aggregated request, layer-major,\n"
      "       over HTTP and again into a shared buffer (same host; 2 layer slots)\n",
      n, n * 16, o.layers - 1);
  out << "  layer    MiB   verified   HTTP arrived(ms)       same-host arrived(ms)\n";
  double prev = 0, shm_prev = 0;
  for (size_t i = 0; i < stats.layer_seconds.size(); ++i) {
    double t = stats.layer_seconds[i];
    double ts = i < shm_stats.layer_seconds.size() ? shm_stats.layer_seconds[i] : 0;
    out << fmt::format("  {:5}   {:5.1f}   {:8}   {:8.2f} (+{:6.2f})    {:8.2f} (+{:6.2f})\n", i,
                       http_layer_bytes[i] / 1048576.0, n, t * 1e3, (t - prev) * 1e3, ts * 1e3,
                       (ts - shm_prev) * 1e3);
    prev = t;
    shm_prev = ts;
  }
  for (const auto* st : {&stats, &shm_stats})
    out << fmt::format(
        "total: {:9} {:.1f} MiB verified in {:.1f} ms ({:.2f} GB/s); first layer after {:.2f} "
        "ms; {} corrupt\n",
        st == &stats ? "HTTP" : "same-host", st->payload_bytes / 1048576.0, st->total_seconds * 1e3,
        st->payload_bytes / st->total_seconds / 1e9, st->first_layer_seconds * 1e3,
        st->corrupt_blocks);
  out << fmt::format("check: {} unexpected blocks\n", wrong);
  stats.corrupt_blocks += shm_stats.corrupt_blocks;
  if (wrong || stats.corrupt_blocks) return Corruption("demo: retrieved bytes did not verify");
  return Status::Ok();
}

}  // namespace kvcs::cli
