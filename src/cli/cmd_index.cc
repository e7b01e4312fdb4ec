// kvcs index: the KVSP Index Service (spec §7) on the HTTP module, over the embedded SQLite store
// or a shared Redis. Wiring only: the service is src/index/index_service.h.
#include <chrono>
#include <iostream>
#include <memory>

#include "auth/token.h"
#include "cli/admission_options.h"
#include "cli/cli_util.h"
#include "cli/command.h"
#include "cli/keyring_file.h"
#include "common/allocator_policy.h"
#include "common/log.h"
#include "common/open_file_limit.h"
#include "http/server.h"
#include "index/embedded_store.h"
#include "index/index_service.h"
#include "index/redis_store.h"

namespace kvcs::cli {
namespace {

struct IndexFlags {
  std::string listen = "127.0.0.1:7070";
  std::string db = "./kvcs-index.db";
  std::string redis;
  std::string redis_prefix = "kvsp";
  std::vector<std::string> keys;
  bool open = false;
  std::string tls_cert, tls_key;
  int io_threads = 2;
  int workers = 2;
  HttpAdmissionOptions http;  // admission limits (docs/protocols/http.md)
};

uint64_t NowMs() {
  return uint64_t(std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count());
}

// --redis: "unix:/path/redis.sock", "/path/redis.sock", "redis://host:port" or "host:port".
Result<index::RedisOptions> ParseRedis(const std::string& text, const std::string& prefix) {
  index::RedisOptions o;
  o.prefix = prefix;
  std::string t = text;
  if (t.rfind("unix:", 0) == 0) t = t.substr(5);
  if (!t.empty() && t.front() == '/') {
    o.unix_socket = t;
    return o;
  }
  if (t.rfind("redis://", 0) == 0) t = t.substr(8);
  auto hp = ParseListen(t);
  if (!hp.ok() || hp->port == 0) {
    return InvalidArgument("--redis must be unix:/path, /path, redis://HOST:PORT or HOST:PORT");
  }
  o.host = hp->host;
  o.port = hp->port;
  return o;
}

int Run(const IndexFlags& f) {
  UseServerAllocatorPolicy();  // RSS stays flat under sustained load
  // A descriptor per connection (common/open_file_limit.h).
  if (auto lim = RaiseOpenFileLimit(); !lim.ok())
    KVCS_LOG_WARN("index: could not raise the open-file limit: {}", lim.status().ToString());
  const std::string cmd = "index";
  InitLogging();
  auto listen = ParseListen(f.listen);
  if (!listen.ok()) {
    return Fail(cmd, listen.status().message(), "e.g. --listen 127.0.0.1:7070 (port 0: any)");
  }
  index::IndexServiceOptions options;
  options.open = f.open;
  options.worker_threads = f.workers;
  if (!f.open) {
    if (f.keys.empty()) {
      return Fail(cmd, "no token keys", "pass --keys KID=public.pem (see kvcs token), or --open");
    }
    auto ring = LoadKeys(f.keys);
    if (!ring.ok()) return Fail(cmd, ring.status().message());
    options.verifier = std::make_shared<auth::Verifier>(std::move(*ring));
  } else if (!f.keys.empty()) {
    return Fail(cmd, "--open and --keys exclude each other");
  }

  std::unique_ptr<index::RecordStore> store;
  std::string desc;
  if (!f.redis.empty()) {
    auto o = ParseRedis(f.redis, f.redis_prefix);
    if (!o.ok()) return Fail(cmd, o.status().message());
    auto r = index::RedisRecordStore::Connect(*o);
    if (!r.ok()) return Fail(cmd, "redis " + f.redis + ": " + r.status().message());
    store = std::move(*r);
    desc = "redis " + f.redis + ", prefix " + f.redis_prefix;
  } else {
    auto e = index::EmbeddedRecordStore::Open(f.db, NowMs());
    if (!e.ok()) return Fail(cmd, e.status().message());
    index::EmbeddedRecordStore* embedded = e->get();
    options.records = [embedded] { return embedded->size(); };
    desc = "embedded " + f.db + ", " + std::to_string(embedded->size()) + " live records";
    store = std::move(*e);
  }

  http::ServerOptions http_options;
  http_options.name = "index";
  http_options.listen_host = listen->host;
  http_options.port = listen->port;
  http_options.tls_cert_file = f.tls_cert;
  http_options.tls_key_file = f.tls_key;
  http_options.io_threads = f.io_threads;
  index::IndexService::ConfigureLimits(&http_options.limits);
  f.http.ApplyTo(&http_options.limits);
  http::Server server(http_options);
  index::IndexService service(*store, std::move(options));
  service.Mount(server);
  if (Status s = server.Start(); !s.ok()) return Fail(cmd, s.message());
  bool tls = !f.tls_cert.empty();
  std::cout << "kvcs index: listening on " << (tls ? "https" : "http") << "://" << listen->host
            << ":" << server.port() << " (" << desc << ")\n";
  std::cout << "kvcs index: authorization "
            << (f.open ? "OFF (--open: anyone may look up and register)"
                       : "by bearer token, " + std::to_string(f.keys.size()) + " key source(s)")
            << "\n"
            << std::flush;
  server.Run(/*handle_signals=*/true);
  std::cout << "kvcs index: stopped\n";
  return 0;
}

RunFn Setup(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "index", "Serve the KVSP Index Service (spec §7): who holds which Block Key prefix");
  auto f = std::make_shared<IndexFlags>();
  cmd->add_option("--listen", f->listen, "HOST:PORT to listen on (port 0 picks a free one)")
      ->capture_default_str();
  cmd->add_option("--db", f->db, "embedded store: SQLite file (created if missing)")
      ->capture_default_str();
  cmd->add_option("--redis", f->redis,
                  "share records in Redis instead: unix:/path.sock, /path.sock, redis://HOST:PORT");
  cmd->add_option("--redis-prefix", f->redis_prefix, "first component of every Redis key")
      ->capture_default_str();
  cmd->add_option("--keys", f->keys,
                  "token signer public key KID=public.pem (repeatable), or a JSON file "
                  "{\"keys\": {\"KID\": \"public.pem\"}}");
  cmd->add_flag("--open", f->open, "no authorization at all (development only)");
  cmd->add_option("--tls-cert", f->tls_cert, "PEM certificate chain (enables HTTPS)");
  cmd->add_option("--tls-key", f->tls_key, "PEM private key for --tls-cert");
  cmd->add_option("--io-threads", f->io_threads, "event-loop threads")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--workers", f->workers, "threads that run store calls")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  f->http.Add(cmd);
  cmd->footer(
      "Endpoints: POST /kvsp/v1/lookup, GET /kvsp/v1/anchors/{compat}/{anchor}?scope_id=,\n"
      "POST /kvsp/v1/replicas, POST /kvsp/v1/replicas/withdraw, GET /metrics.\n"
      "Every request but /metrics needs \"Authorization: Bearer <token>\" from kvcs token\n"
      "granting lookup or register on the scope (docs/protocols/kvsp-index.md).\n\n"
      "Examples:\n"
      "  kvcs keygen producer --alg es256 --kid idx-1 --out-key signer.pem --out-pub "
      "signer.pub.pem\n"
      "  kvcs index --listen 127.0.0.1:7070 --db /var/lib/kvcs/index.db --keys "
      "idx-1=signer.pub.pem\n"
      "  kvcs index --listen 0.0.0.0:7070 --redis unix:/run/redis/redis.sock --keys keys.json\n"
      "  kvcs index --listen 127.0.0.1:0 --db '' --open      # in memory, no auth (testing)");
  return [f] { return Run(*f); };
}

}  // namespace

KVCS_REGISTER_COMMAND(index, 62, Setup);

}  // namespace kvcs::cli
