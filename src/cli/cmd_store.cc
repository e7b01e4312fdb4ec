// kvcs store: the S3-compatible object server over the durable local-disk store.
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <span>

#include "cli/admission_options.h"
#include "cli/cli_util.h"
#include "cli/command.h"
#include "cli/index_options.h"
#include "cli/store_registration.h"
#include "common/allocator_policy.h"
#include "common/crypto.h"
#include "common/hex.h"
#include "common/log.h"
#include "common/open_file_limit.h"
#include "objcache/aggregate_wire.h"
#include "objcache/block_event_store.h"
#include "objcache/block_events.h"
#include "objcache/service.h"
#include "rados_store/rados_config.h"
#include "rados_store/rados_store.h"
#include "rados_store/rados_sweep.h"
#include "s3/config.h"
#include "s3/server.h"
#include "s3client/store_factory.h"
#include "sched/scheduler.h"
#include "store/local_store.h"

namespace kvcs::cli {
namespace {

struct StoreFlags {
  std::string root;
  std::string listen = "127.0.0.1:9000";
  std::string config;
  std::string tls_cert, tls_key;
  int io_threads = 4;
  HttpAdmissionOptions http;  // admission limits (docs/protocols/http.md)
  double bandwidth_cap = 0;
  // How the cap is shared (docs/protocols/scheduler.md): stall-target (default) or equal-share.
  std::string bandwidth_policy = "stall-target";
  size_t read_window_bytes = 0;  // 0: objcache::ServiceOptions' default
  // Where objects live (docs/protocols/s3-backend.md, rados-backend.md): "local" (ROOT), "s3" or
  // "rados".
  std::string backend = "local";
  std::string backend_config;
  std::string s3_endpoint, s3_access_key, s3_secret_key, s3_region, s3_bucket_prefix;
  std::string s3_ca_file;    // https backend: trust this CA (PEM) instead of the system store
  bool s3_insecure = false;  // https backend: DEVELOPMENT ONLY, no certificate checks
  bool s3_conditional_writes = false;  // pass conditional PUTs to the S3 backend
  std::string rados_pool, rados_namespace, ceph_conf, keyring, rados_client_id;
  // Maintenance: remove orphaned RADOS objects older than the grace period, then exit.
  bool sweep_orphans = false;
  double sweep_grace_s = rados_store::kDefaultSweepGraceS;
  // Same-host delivery socket; empty = ROOT/shm.sock, "none" = off.
  std::string shm_socket;
  // Registration with a KVSP Index Service (docs/protocols/kvsp-index.md §Holders).
  IndexOptions index;
  std::string public_url;            // what the index tells consumers; default from --listen
  uint64_t index_ttl_s = 24 * 3600;  // the lease of each registration
  size_t index_queue = 1024;         // registrations waiting at most
  double index_scan_rate = 2000;     // block objects read per second when re-registering
};

// BlockEvents that forward to a target set later (or never); safe to call from any thread.
class DeferredEvents final : public objcache::BlockEvents {
 public:
  void Set(objcache::BlockEvents* target) { target_.store(target); }
  void OnStored(const std::string& bucket, std::span<const objcache::StoredBlock> blocks,
                std::optional<Digest> anchor) override {
    if (auto* t = target_.load()) t->OnStored(bucket, blocks, anchor);
  }
  void OnDeleted(const std::string& bucket, const objcache::DeletedBlock& d) override {
    if (auto* t = target_.load()) t->OnDeleted(bucket, d);
  }

 private:
  std::atomic<objcache::BlockEvents*> target_{nullptr};
};

// The S3 backend from --backend-config and/or the --s3-* flags (flags win). Returns null with
// *error set on failure, or null with no error when the configuration says "local".
std::unique_ptr<store::ObjectStore> OpenS3Backend(const StoreFlags& f, std::string* desc,
                                                  Status* error) {
  s3client::BackendConfig c;
  if (!f.backend_config.empty()) {
    *error = s3client::LoadBackendConfigFile(f.backend_config, &c);
    if (!error->ok()) return nullptr;
  }
  if (f.backend != "local") c.backend = f.backend;
  if (!f.s3_endpoint.empty()) c.s3.client.endpoint = f.s3_endpoint;
  if (!f.s3_access_key.empty()) c.s3.client.credentials.access_key = f.s3_access_key;
  if (!f.s3_secret_key.empty()) c.s3.client.credentials.secret_key = f.s3_secret_key;
  if (!f.s3_region.empty()) c.s3.client.credentials.region = f.s3_region;
  if (!f.s3_bucket_prefix.empty()) c.s3.bucket_prefix = f.s3_bucket_prefix;
  if (!f.s3_ca_file.empty()) c.s3.client.ca_file = f.s3_ca_file;
  if (f.s3_insecure) c.s3.client.insecure = true;
  if (f.s3_conditional_writes) c.s3.conditional_writes = true;
  if (c.backend != "s3") return nullptr;
  c.s3.client.parallel_gets = std::max(c.s3.client.parallel_gets, 32);
  *error = s3client::FinishBackendConfig(&c);
  if (!error->ok()) return nullptr;
  auto store = s3client::OpenBackendStore(c);
  if (!store.ok()) {
    *error = store.status();
    return nullptr;
  }
  *desc = "S3 backend " + c.s3.client.endpoint +
          (c.s3.bucket_prefix.empty() ? "" : ", bucket prefix " + c.s3.bucket_prefix);
  return std::move(*store);
}

// The RADOS backend from --backend-config (when it says "rados") and/or the --rados-* flags
// (flags win). Returns null with *error set on failure, or null with no error when neither asks
// for rados.
std::unique_ptr<store::ObjectStore> OpenRadosBackend(const StoreFlags& f, std::string* desc,
                                                     Status* error) {
  rados_store::RadosStoreOptions o;
  bool rados = f.backend == "rados";
  if (!f.backend_config.empty()) {
    std::string text;
    *error = rados_store::ReadBackendConfigFile(f.backend_config, &text);
    if (!error->ok()) return nullptr;
    if (rados_store::IsRadosBackendConfig(text)) {
      if (f.backend != "local" && f.backend != "rados") {
        *error = InvalidArgument("--backend " + f.backend + " contradicts " + f.backend_config +
                                 " (backend rados)");
        return nullptr;
      }
      rados = true;
      *error = rados_store::ParseRadosBackendConfig(text, &o);
      if (!error->ok()) {
        *error = error->WithContext(f.backend_config);
        return nullptr;
      }
    }
  }
  if (!rados) return nullptr;
  if (!f.rados_pool.empty()) o.connect.pool = f.rados_pool;
  if (!f.rados_namespace.empty()) o.connect.rados_namespace = f.rados_namespace;
  if (!f.ceph_conf.empty()) o.connect.ceph_conf = f.ceph_conf;
  if (!f.keyring.empty()) o.connect.keyring = f.keyring;
  if (!f.rados_client_id.empty()) o.connect.client_id = f.rados_client_id;
  *error = rados_store::FinishRadosBackendConfig(o);
  if (!error->ok()) return nullptr;
  auto store = rados_store::RadosStore::Open(o);
  if (!store.ok()) {
    *error = store.status();
    return nullptr;
  }
  *desc = "RADOS backend pool " + o.connect.pool +
          (o.connect.rados_namespace.empty() ? "" : ", namespace " + o.connect.rados_namespace);
  return std::move(*store);
}

// Generated config for a store started without keys: one access key with a random secret.
Result<std::string> GenerateConfig(const std::string& path, s3::ServerConfig* config) {
  uint8_t raw[20];
  RandomBytes(raw, sizeof raw);
  std::string secret = ToHex(ByteSpan(raw, sizeof raw));
  std::string text =
      "# kvcs store access keys (generated on first start; edit freely).\n"
      "# Format: docs/protocols/s3-api.md \"Configuration\".\n"
      "region = us-east-1\n\n[key " +
      std::string(s3::kDevAccessKey) + "]\nsecret = " + secret + "\n";
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (!f) return Status(Code::kIoError, "cannot write " + path);
    f << text;
    if (!f.flush()) return Status(Code::kIoError, "cannot write " + path);
  }
  ::chmod(path.c_str(), 0600);
  KVCS_RETURN_IF_ERROR(s3::ParseConfig(text, config));
  return secret;
}

// --sweep-orphans: one bounded pass of rados_store::SweepOrphans over the pool and namespace.
int Sweep(const StoreFlags& f, store::ObjectStore* backend) {
  auto* rados = dynamic_cast<rados_store::RadosStore*>(backend);
  if (rados == nullptr) {
    return Fail("store", "--sweep-orphans needs the RADOS backend",
                "add --backend rados --rados-pool POOL --ceph-conf FILE");
  }
  rados_store::SweepOptions o;
  o.grace_s = f.sweep_grace_s;
  auto stats = rados_store::SweepOrphans(rados->io(), o);
  if (!stats.ok()) return Fail("store", stats.status().ToString());
  std::cout << "kvcs store: swept orphans: " << stats->examined << " objects examined, "
            << stats->unreferenced << " unreferenced, " << stats->too_young
            << " kept (younger than " << f.sweep_grace_s << " s), " << stats->removed << " removed"
            << (stats->complete ? "" : "; more remain: run it again") << "\n";
  return 0;
}

// Descriptors a store wants: one aggregated request of the most blocks holds one per block
// (ProbeBlocks keeps every container open until it is sent), plus its sockets and own files.
constexpr uint64_t kStoreOpenFilesWanted = objcache::kMaxBlocks + 1024;

int Run(const StoreFlags& f) {
  UseServerAllocatorPolicy();  // RSS stays flat under sustained load
  const std::string cmd = "store";
  if (auto lim = RaiseOpenFileLimit(); !lim.ok()) {
    KVCS_LOG_WARN("store: could not raise the open-file limit: {}", lim.status().ToString());
  } else if (lim->now < kStoreOpenFilesWanted) {
    KVCS_LOG_WARN(
        "store: the open-file limit is {}, under the {} that a request of {} blocks may hold "
        "(one per block): raise the hard limit (ulimit -Hn, or LimitNOFILE= under systemd)",
        lim->now, kStoreOpenFilesWanted, objcache::kMaxBlocks);
  }
  s3::ServerConfig config;
  auto listen = ParseListen(f.listen);
  if (!listen.ok()) {
    return Fail(cmd, listen.status().message(), "e.g. --listen 127.0.0.1:9000 (port 0: any)");
  }
  config.listen_host = listen->host;
  config.port = listen->port;
  config.io_threads = f.io_threads;
  f.http.ApplyTo(&config.http_limits);
  config.tls_cert_file = f.tls_cert;
  config.tls_key_file = f.tls_key;

  // The ObjectStore: the local directory (default) or an S3 service (--backend s3).
  std::unique_ptr<store::LocalStore> local;
  std::unique_ptr<store::ObjectStore> remote;
  std::string backend_desc = "root " + f.root;
  if (f.backend != "local" || !f.backend_config.empty()) {
    Status error;
    remote = OpenRadosBackend(f, &backend_desc, &error);
    if (!error.ok()) {
      return Fail(cmd, error.ToString(),
                  "check --rados-pool (it must exist), --ceph-conf and --keyring");
    }
    if (!remote) remote = OpenS3Backend(f, &backend_desc, &error);
    if (!error.ok()) {
      return Fail(cmd, error.ToString(),
                  "check --s3-endpoint, the keys and that the service answers");
    }
    std::error_code ec;
    std::filesystem::create_directories(f.root, ec);  // still holds s3.conf
  }
  if (f.sweep_orphans) return Sweep(f, remote.get());
  if (!remote) {
    auto store = store::LocalStore::Open(f.root);
    if (!store.ok()) return Fail(cmd, store.status().ToString(), "is --root writable?");
    local = std::move(*store);
  }
  store::ObjectStore& active = local ? static_cast<store::ObjectStore&>(*local) : *remote;

  std::string key_source;
  std::string generated_secret;
  if (!f.config.empty()) {
    Status s = s3::LoadConfigFile(f.config, &config);
    if (!s.ok()) return Fail(cmd, s.ToString(), "see kvcs store --help for the format");
    key_source = f.config;
  } else if (const char* ak = std::getenv("KVCS_S3_ACCESS_KEY")) {
    const char* sk = std::getenv("KVCS_S3_SECRET_KEY");
    if (!sk || !*sk) return Fail(cmd, "KVCS_S3_ACCESS_KEY is set but KVCS_S3_SECRET_KEY is not");
    config.secrets[ak] = sk;
    key_source = "environment";
  } else {
    std::string path = f.root + "/s3.conf";
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) {
      Status s = s3::LoadConfigFile(path, &config);
      if (!s.ok()) return Fail(cmd, s.ToString());
    } else {
      auto secret = GenerateConfig(path, &config);
      if (!secret.ok()) return Fail(cmd, secret.status().ToString());
      generated_secret = *secret;
    }
    key_source = path;
  }
  if (config.secrets.empty()) {
    return Fail(cmd, "no access keys configured in " + key_source,
                "add a [key <id>] section with secret = ...");
  }

  // With --index, what aggregated PUTs store and deletes remove is announced to the index; the
  // public URL (the holder) needs the port, known once the server listens, so the announcer is
  // made in two steps: the hooks exist from the start and forward once it is set.
  objcache::ServiceOptions so;
  so.bandwidth_cap = f.bandwidth_cap;
  if (f.bandwidth_policy == "equal-share") so.sched.policy = sched::Policy::kEqualShare;
  if (f.read_window_bytes) so.window_bytes = f.read_window_bytes;
  std::optional<index::IndexClient> index_client;
  if (f.index.enabled()) {
    auto c = f.index.Client();
    if (!c.ok()) return Fail(cmd, c.status().message(), "e.g. --index http://127.0.0.1:7070");
    index_client = std::move(*c);
    if (!f.public_url.empty() && f.public_url.rfind("http://", 0) != 0 &&
        f.public_url.rfind("https://", 0) != 0) {
      return Fail(cmd, "--public-url must start with http:// or https://",
                  "e.g. --public-url https://store-1.example:9000");
    }
  } else if (!f.public_url.empty()) {
    return Fail(cmd, "--public-url needs --index", "it names this store in the index");
  }
  std::unique_ptr<IndexAnnouncer> announcer;
  std::unique_ptr<HoldingsRenewal> renewal;
  DeferredEvents events;
  if (index_client) so.events = &events;
  objcache::BlockEventStore observed(active, events, so.kv_bucket);
  s3::Server server(config, index_client ? static_cast<store::ObjectStore&>(observed) : active);
  objcache::Service service(so);
  for (auto& ext : service.Extensions()) server.AddExtension(std::move(ext));
  std::string shm_path = f.shm_socket.empty() ? f.root + "/shm.sock" : f.shm_socket;
  if (shm_path != "none") {
    Status shm = service.ListenShm(shm_path);
    if (!shm.ok() && f.shm_socket.empty()) {
      // The default is a convenience: a ROOT too long for a Unix socket path only turns it off.
      std::cout << "kvcs store: same-host delivery off (" << shm.message()
                << "); pass --shm-socket PATH to turn it on\n";
      shm_path = "none";
    } else if (!shm.ok()) {
      return Fail(cmd, shm.message(), "pass another --shm-socket PATH, or --shm-socket none");
    }
  }
  Status s = server.Start();
  if (!s.ok()) return Fail(cmd, s.ToString(), "is the port free?");
  if (local && (local->removed_temp_files() > 0 || local->corrupt_files() > 0)) {
    std::cout << "kvcs store: recovery: removed " << local->removed_temp_files()
              << " temporary files, skipped " << local->corrupt_files()
              << " damaged object files\n";
  }
  bool tls = !config.tls_cert_file.empty();
  if (index_client) {
    std::string base = f.public_url;
    if (base.empty()) {
      base = std::string(tls ? "https" : "http") + "://" + config.listen_host + ":" +
             std::to_string(server.port());
    }
    while (!base.empty() && base.back() == '/') base.pop_back();
    announcer = std::make_unique<IndexAnnouncer>(*index_client, base + "/_kvsp", so.kv_bucket,
                                                 f.index_ttl_s * 1000, f.index_queue);
    events.Set(announcer.get());
    // What the bucket already holds (a previous run's blocks) is announced again at once, then
    // every half lease, so that the leases of everything held keep running.
    HoldingsRenewalOptions ro;
    ro.inventory.max_blocks_per_s = f.index_scan_rate;
    ro.policy.ttl_ms = f.index_ttl_s * 1000;
    ro.policy.retry_min_ms = std::min<uint64_t>(1000, ro.policy.ttl_ms / 4);
    ro.policy.retry_max_ms = std::min<uint64_t>(60'000, ro.policy.ttl_ms / 4);
    renewal = std::make_unique<HoldingsRenewal>(active, *announcer, ro);
    renewal->Start();
    std::cout << "kvcs store: registering blocks of bucket " << so.kv_bucket << " with index "
              << index_client->url() << " as " << announcer->holder() << " (lease " << f.index_ttl_s
              << " s, renewed every " << (f.index_ttl_s * 1000 / 2) << " ms)\n";
  }
  std::cout << "kvcs store: listening on " << (tls ? "https" : "http") << "://"
            << config.listen_host << ":" << server.port() << " (" << backend_desc << ")\n";
  if (shm_path != "none")
    std::cout << "kvcs store: same-host delivery (shared buffers) on " << shm_path << "\n";
  std::cout << "kvcs store: access keys from " << key_source << " (" << config.secrets.size()
            << " key" << (config.secrets.size() == 1 ? "" : "s") << ")\n";
  if (!generated_secret.empty()) {
    std::cout << "kvcs store: generated development key: access key " << s3::kDevAccessKey
              << "  secret " << generated_secret << "\n";
  }
  std::cout << std::flush;
  server.Run(/*handle_signals=*/true);
  if (announcer) {
    renewal->Stop();
    events.Set(nullptr);
    announcer->WaitIdle(std::chrono::seconds(2));  // bounded: an unreachable index cannot hold us
    auto st = announcer->stats();
    std::cout << "kvcs store: index: " << st.sent << " sent, " << st.failed << " failed, "
              << st.dropped << " dropped, " << st.pending << " pending"
              << (st.last_error.empty() ? "" : " (last error: " + st.last_error + ")") << "\n";
    auto rs = renewal->stats();
    std::cout << "kvcs store: index: " << rs.passes
              << " passes over the bucket (last: " << rs.blocks << " blocks, " << rs.anchors
              << " prefixes, " << rs.skipped << " skipped), " << rs.failed_passes << " failed\n";
  }
  std::cout << "kvcs store: stopped\n";
  return 0;
}

RunFn Setup(CLI::App& app) {
  auto flags = std::make_shared<StoreFlags>();
  auto* cmd = app.add_subcommand(
      "store", "Serve an S3-compatible object store (SigV4) over a durable local directory");
  cmd->add_option("--root", flags->root, "store directory (created if missing)")->required();
  cmd->add_option("--listen", flags->listen, "HOST:PORT to listen on (port 0 picks a free one)")
      ->capture_default_str();
  cmd->add_option("--config", flags->config,
                  "access-key config file; default: $KVCS_S3_ACCESS_KEY/$KVCS_S3_SECRET_KEY, "
                  "else ROOT/s3.conf (generated with a random secret on first start)");
  cmd->add_option("--tls-cert", flags->tls_cert, "PEM certificate chain (enables HTTPS)");
  cmd->add_option("--tls-key", flags->tls_key, "PEM private key for --tls-cert");
  cmd->add_option("--io-threads", flags->io_threads, "event-loop threads")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  flags->http.Add(cmd);
  cmd->add_option("--bandwidth-cap", flags->bandwidth_cap,
                  "aggregated-retrieval bandwidth cap in bytes/s (0: none)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--bandwidth-policy", flags->bandwidth_policy,
                  "how --bandwidth-cap is shared: stall-target (each retrieval gets the rate its "
                  "compute and stall target need, docs/protocols/scheduler.md) or equal-share "
                  "(cap / n each; the baseline)")
      ->check(CLI::IsMember({"stall-target", "equal-share"}))
      ->capture_default_str();
  cmd->add_option("--read-window-bytes", flags->read_window_bytes,
                  "bytes an aggregated GET reads and paces at once (default 16 MiB); smaller "
                  "windows pace short contexts layer by layer at a higher per-read cost")
      ->check(CLI::Range(size_t{64} << 10, size_t{1} << 30));
  cmd->add_option("--backend", flags->backend,
                  "where objects live: local (ROOT, default), s3 (an existing S3 service) or "
                  "rados (a Ceph pool, through librados); with s3 or rados ROOT only holds "
                  "s3.conf")
      ->check(CLI::IsMember({"local", "s3", "rados"}));
  cmd->add_option("--backend-config", flags->backend_config,
                  "JSON backend config (docs/protocols/s3-backend.md, rados-backend.md); the "
                  "--s3-* and --rados-* flags override it");
  cmd->add_option("--s3-endpoint", flags->s3_endpoint,
                  "S3 backend endpoint, http://HOST:PORT or https://HOST[:PORT]");
  cmd->add_option("--s3-ca-file", flags->s3_ca_file,
                  "https backend: PEM CA bundle to verify it against (default: system store)");
  cmd->add_flag("--s3-conditional-writes", flags->s3_conditional_writes,
                "pass conditional PUTs (If-None-Match: *, If-Match) to the S3 backend, which "
                "must evaluate them (AWS S3, Ceph radosgw); off: they are refused");
  cmd->add_flag("--s3-insecure", flags->s3_insecure,
                "https backend: skip certificate checks (DEVELOPMENT ONLY)");
  cmd->add_option("--s3-access-key", flags->s3_access_key,
                  "S3 backend access key (default $KVCS_BACKEND_ACCESS_KEY)");
  cmd->add_option("--s3-secret-key", flags->s3_secret_key,
                  "S3 backend secret key (default $KVCS_BACKEND_SECRET_KEY)");
  cmd->add_option("--s3-region", flags->s3_region, "S3 backend region for SigV4 (us-east-1)");
  cmd->add_option("--s3-bucket-prefix", flags->s3_bucket_prefix,
                  "backend bucket = PREFIX + bucket (share one service between stores)");
  cmd->add_option("--rados-pool", flags->rados_pool,
                  "rados backend: the pool objects live in (must exist)");
  cmd->add_option("--rados-namespace", flags->rados_namespace,
                  "rados backend: RADOS namespace inside the pool (default: none)");
  cmd->add_option("--ceph-conf", flags->ceph_conf, "rados backend: ceph.conf path");
  cmd->add_option("--keyring", flags->keyring,
                  "rados backend: cephx keyring (default: what ceph.conf says)");
  cmd->add_option("--rados-client-id", flags->rados_client_id,
                  "rados backend: cephx user client.ID (default admin)");
  cmd->add_flag("--sweep-orphans", flags->sweep_orphans,
                "rados backend: remove the objects nothing refers to (left by a store killed "
                "mid-write) that are older than --sweep-grace, then exit; safe while other "
                "stores serve the pool");
  cmd->add_option("--sweep-grace", flags->sweep_grace_s,
                  "seconds an orphan must be old before --sweep-orphans removes it (below 3600 "
                  "a slow PUT in flight may lose its stripes)")
      ->check(CLI::Range(0.0, 365.0 * 86400))
      ->capture_default_str();
  cmd->add_option("--shm-socket", flags->shm_socket,
                  "Unix socket where clients on this host register shared buffers for "
                  "aggregated GETs (default ROOT/shm.sock; none: off)");
  flags->index.Add(cmd,
                   "register stored blocks with this KVSP Index Service (http[s]://HOST:PORT): "
                   "after each aggregated PUT into the KV bucket, withdrawn on delete; what the "
                   "bucket holds is re-registered at start and renewed every half lease");
  cmd->add_option("--public-url", flags->public_url,
                  "this store's URL as consumers reach it (default: http(s)://LISTEN); the index "
                  "holder is PUBLIC_URL/_kvsp");
  cmd->add_option("--index-ttl", flags->index_ttl_s, "lease of each registration, seconds")
      ->check(CLI::Range(uint64_t{1}, uint64_t{24 * 3600}))
      ->capture_default_str();
  cmd->add_option("--index-scan-rate", flags->index_scan_rate,
                  "block objects read per second when re-registering what the bucket holds (at "
                  "start, then every half lease); a pass must fit in half the lease")
      ->check(CLI::Range(1.0, 1e6))
      ->capture_default_str();
  cmd->add_option("--index-queue", flags->index_queue,
                  "registrations waiting for the index at most (more are dropped and counted)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 20))
      ->capture_default_str();
  cmd->footer(
      "Config file:\n"
      "  region = us-east-1\n"
      "  virtual_host = localhost      # bucket.localhost:PORT is virtual-hosted style\n"
      "  [key myaccesskey]\n"
      "  secret = mysecretkey\n\n"
      "Example:\n"
      "  kvcs store --root /var/lib/kvcs --listen 127.0.0.1:9000\n"
      "  aws --endpoint-url http://127.0.0.1:9000 s3 mb s3://kv   # with the printed key\n"
      "  KVCS_BACKEND_SECRET_KEY=... kvcs store --root /var/lib/kvcs --backend s3 \\\n"
      "      --s3-endpoint http://rgw:8000 --s3-access-key AK   # objects kept in Ceph RGW\n"
      "  kvcs store --root /var/lib/kvcs --index http://index:7070 --index-token-file reg.jwt \\\n"
      "      --public-url https://store-1.example:9000   # announce blocks to a KVSP index\n"
      "  kvcs store --root /var/lib/kvcs --backend rados --rados-pool kvcs \\\n"
      "      --ceph-conf /etc/ceph/ceph.conf   # objects kept in RADOS; stores may share the pool\n"
      "  An engine on the same host sets ClientOptions::shm_socket = ROOT/shm.sock: block bytes\n"
      "  are then written into its shared buffer instead of the HTTP body.\n"
      "SIGINT/SIGTERM stop it gracefully; set --log info for per-event logs.");
  return [flags] { return Run(*flags); };
}

}  // namespace
KVCS_REGISTER_COMMAND(store, 60, Setup);
}  // namespace kvcs::cli
