// kvcs store: the S3-compatible object server over the durable local-disk store.
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <iostream>

#include "cli/command.h"
#include "common/crypto.h"
#include "common/hex.h"
#include "common/log.h"
#include "s3/config.h"
#include "s3/server.h"
#include "store/local_store.h"
#if __has_include("objcache/service.h")
#include "objcache/service.h"
#define KVCS_STORE_HAS_OBJCACHE 1
#endif

namespace kvcs::cli {
namespace {

struct StoreFlags {
  std::string root;
  std::string listen = "127.0.0.1:9000";
  std::string config;
  std::string tls_cert, tls_key;
  int io_threads = 4;
  double bandwidth_cap = 0;
};

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

int Run(const StoreFlags& f) {
  const std::string cmd = "store";
  s3::ServerConfig config;
  size_t colon = f.listen.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return Fail(cmd, "--listen must be HOST:PORT", "e.g. --listen 127.0.0.1:9000 (port 0: any)");
  }
  config.listen_host = f.listen.substr(0, colon);
  if (config.listen_host.size() > 2 && config.listen_host.front() == '[') {
    config.listen_host = config.listen_host.substr(1, config.listen_host.size() - 2);
  }
  char* end = nullptr;
  long port = std::strtol(f.listen.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || port < 0 || port > 65535) return Fail(cmd, "bad port in --listen");
  config.port = static_cast<uint16_t>(port);
  config.io_threads = f.io_threads;
  config.tls_cert_file = f.tls_cert;
  config.tls_key_file = f.tls_key;

  auto store = store::LocalStore::Open(f.root);
  if (!store.ok()) return Fail(cmd, store.status().ToString(), "is --root writable?");

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

  s3::Server server(config, **store);
#ifdef KVCS_STORE_HAS_OBJCACHE
  objcache::ServiceOptions so;
  so.bandwidth_cap = f.bandwidth_cap;
  objcache::Service service(so);
  for (auto& ext : service.Extensions()) server.AddExtension(std::move(ext));
#endif
  Status s = server.Start();
  if (!s.ok()) return Fail(cmd, s.ToString(), "is the port free?");
  if ((*store)->removed_temp_files() > 0 || (*store)->corrupt_files() > 0) {
    std::cout << "kvcs store: recovery: removed " << (*store)->removed_temp_files()
              << " temporary files, skipped " << (*store)->corrupt_files()
              << " damaged object files\n";
  }
  bool tls = !config.tls_cert_file.empty();
  std::cout << "kvcs store: listening on " << (tls ? "https" : "http") << "://"
            << config.listen_host << ":" << server.port() << " (root " << f.root << ")\n";
  std::cout << "kvcs store: access keys from " << key_source << " (" << config.secrets.size()
            << " key" << (config.secrets.size() == 1 ? "" : "s") << ")\n";
  if (!generated_secret.empty()) {
    std::cout << "kvcs store: generated development key: access key " << s3::kDevAccessKey
              << "  secret " << generated_secret << "\n";
  }
  std::cout << std::flush;
  server.Run(/*handle_signals=*/true);
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
  cmd->add_option("--bandwidth-cap", flags->bandwidth_cap,
                  "aggregated-retrieval bandwidth cap in bytes/s (0: none)")
      ->check(CLI::NonNegativeNumber);
  cmd->footer(
      "Config file:\n"
      "  region = us-east-1\n"
      "  virtual_host = localhost      # bucket.localhost:PORT is virtual-hosted style\n"
      "  [key myaccesskey]\n"
      "  secret = mysecretkey\n\n"
      "Example:\n"
      "  kvcs store --root /var/lib/kvcs --listen 127.0.0.1:9000\n"
      "  aws --endpoint-url http://127.0.0.1:9000 s3 mb s3://kv   # with the printed key\n"
      "SIGINT/SIGTERM stop it gracefully; set --log info for per-event logs.");
  return [flags] { return Run(*flags); };
}

}  // namespace
KVCS_REGISTER_COMMAND(store, 60, Setup);
}  // namespace kvcs::cli
