// kvcs relay: the caching MOQT draft-22 relay (src/relay). Wiring only: flags and the JSON
// config file into RelayServerConfig, a development certificate when none is given, signals.
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <chrono>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/admission_options.h"
#include "cli/cli_util.h"
#include "cli/command.h"
#include "cli/dev_cert.h"
#include "cli/keyring_file.h"
#include "common/allocator_policy.h"
#include "common/log.h"
#include "common/open_file_limit.h"
#include "common/strings.h"
#include "relay/relay_server.h"

namespace kvcs::cli {
namespace {

constexpr const char* kCmd = "relay";
// A relay's config file is a few hundred bytes; 1 MiB bounds a mistaken path.
constexpr size_t kMaxConfigBytes = 1 << 20;

struct RelayFlags {
  std::string config;
  std::string listen = "127.0.0.1:4443";
  std::string cert, key;
  std::string id;
  std::string upstream, upstream_ca, upstream_token;
  bool upstream_insecure = false;
  std::vector<std::string> keys;
  bool open = false;
  uint64_t cache_mib = 1024;
  uint64_t max_sessions = 1024;
  uint64_t max_publications = relay::kDefaultMaxPublications;
  uint64_t upstream_timeout_ms = relay::kDefaultUpstreamTimeoutMs;
  uint64_t subscriber_stall_ms = relay::kDefaultSubscriberStallMs;
  uint64_t upstream_stall_ms = relay::kDefaultUpstreamStallMs;
  std::string metrics;
  QuicAdmissionOptions quic;                      // --max-sessions is the total
  HttpAdmissionOptions metrics_http{"metrics-"};  // the metrics endpoint
  double drain_s = 2;
  bool verbose = false;
};

// Applies the config file's members to the flags the command line did not set.
Status ApplyConfig(CLI::App* cmd, RelayFlags* f) {
  KVCS_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(f->config, kMaxConfigBytes));
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument(f->config + ": not a JSON object");
  auto unset = [cmd](const char* flag) { return cmd->get_option(flag)->count() == 0; };
  for (auto& [k, v] : j.items()) {
    auto str = [&](const char* flag, std::string* out) -> Status {
      if (!v.is_string()) return InvalidArgument(f->config + ": \"" + k + "\" must be a string");
      if (unset(flag)) *out = v.get<std::string>();
      return Status::Ok();
    };
    auto num = [&](const char* flag, uint64_t* out) -> Status {
      if (!v.is_number_unsigned()) {
        return InvalidArgument(f->config + ": \"" + k + "\" must be a non-negative integer");
      }
      if (unset(flag)) *out = v.get<uint64_t>();
      return Status::Ok();
    };
    auto flag = [&](const char* name, bool* out) -> Status {
      if (!v.is_boolean()) return InvalidArgument(f->config + ": \"" + k + "\" must be true/false");
      if (unset(name)) *out = v.get<bool>();
      return Status::Ok();
    };
    Status st;
    if (k == "listen")
      st = str("--listen", &f->listen);
    else if (k == "cert")
      st = str("--cert", &f->cert);
    else if (k == "key")
      st = str("--key", &f->key);
    else if (k == "id")
      st = str("--id", &f->id);
    else if (k == "upstream")
      st = str("--upstream", &f->upstream);
    else if (k == "upstream_ca")
      st = str("--upstream-ca", &f->upstream_ca);
    else if (k == "upstream_token")
      st = str("--upstream-token", &f->upstream_token);
    else if (k == "upstream_insecure")
      st = flag("--upstream-insecure", &f->upstream_insecure);
    else if (k == "open")
      st = flag("--open", &f->open);
    else if (k == "cache_mib")
      st = num("--cache-mib", &f->cache_mib);
    else if (k == "max_sessions")
      st = num("--max-sessions", &f->max_sessions);
    else if (k == "max_publications")
      st = num("--max-publications", &f->max_publications);
    else if (k == "upstream_timeout_ms")
      st = num("--upstream-timeout-ms", &f->upstream_timeout_ms);
    else if (k == "subscriber_stall_ms")
      st = num("--subscriber-stall-ms", &f->subscriber_stall_ms);
    else if (k == "upstream_stall_ms")
      st = num("--upstream-stall-ms", &f->upstream_stall_ms);
    else if (k == "metrics")
      st = str("--metrics", &f->metrics);
    else if (k == "keys") {
      if (!v.is_object()) return InvalidArgument(f->config + ": \"keys\" must be {\"KID\": PEM}");
      if (unset("--keys")) {
        for (auto& [kid, path] : v.items()) {
          if (!path.is_string()) return InvalidArgument(f->config + ": key " + kid);
          f->keys.push_back(kid + "=" + path.get<std::string>());
        }
      }
    } else if (auto q = f->quic.ApplyJson(cmd, k, v)) {
      st = q->ok() ? *q : InvalidArgument(f->config + ": " + q->message());
    } else {
      return InvalidArgument(f->config + ": unknown member \"" + k + "\"");
    }
    KVCS_RETURN_IF_ERROR(st);
  }
  return Status::Ok();
}

int Run(CLI::App* cmd, RelayFlags f) {
  UseServerAllocatorPolicy();  // RSS stays flat under sustained load
  // A descriptor per connection (common/open_file_limit.h).
  if (auto lim = RaiseOpenFileLimit(); !lim.ok())
    KVCS_LOG_WARN("relay: could not raise the open-file limit: {}", lim.status().ToString());
  if (!f.config.empty()) {
    Status st = ApplyConfig(cmd, &f);
    if (!st.ok()) return Fail(kCmd, st.message(), "see kvcs relay --help for the members");
  }
  auto listen = ParseListen(f.listen);
  if (!listen.ok()) return Fail(kCmd, listen.status().message(), "e.g. --listen 127.0.0.1:4443");
  relay::RelayServerConfig c;
  c.listen_host = listen->host;
  c.port = listen->port;
  c.max_sessions = f.max_sessions;
  if (Status st = f.quic.Validate(); !st.ok()) return Fail(kCmd, st.message());
  c.admission = f.quic.limits();
  c.require_retry = f.quic.require_retry;
  f.metrics_http.ApplyTo(&c.metrics_limits);
  c.upstream_url = f.upstream;
  c.upstream_ca_file = f.upstream_ca;
  c.upstream_insecure = f.upstream_insecure;
  c.metrics_listen = f.metrics;
  c.relay.relay_id = f.id;
  if (f.id.find(',') != std::string::npos) return Fail(kCmd, "--id must not contain ','");
  if (f.cache_mib == 0 || f.cache_mib > (uint64_t{1} << 24)) {
    return Fail(kCmd, "--cache-mib must be 1..16777216");
  }
  c.relay.cache_bytes = f.cache_mib << 20;
  c.relay.max_publications = f.max_publications;
  c.relay.upstream_timeout_ms = f.upstream_timeout_ms;
  c.subscriber_stall_ms = f.subscriber_stall_ms;
  c.relay.upstream_stall_ms = f.upstream_stall_ms;
  if (!f.upstream_token.empty()) {
    auto tok = ReadSmallFile(f.upstream_token, auth::kMaxTokenBytes + 2);
    if (!tok.ok()) return Fail(kCmd, "--upstream-token: " + tok.status().message());
    moqt::AuthToken t;
    t.token_type = 1;
    t.value = std::string(Trim(*tok, kXmlWhitespace));
    c.relay.upstream_tokens.push_back(std::move(t));
  }
  if (f.keys.empty() && !f.open) {
    return Fail(kCmd, "no token keys and not --open",
                "pass --keys KID=signer.pub.pem (tokens from kvcs token), or --open for a "
                "development relay that anyone may use");
  }
  if (!f.keys.empty()) {
    auto ring = LoadKeys(f.keys);
    if (!ring.ok()) return Fail(kCmd, ring.status().message());
    c.relay.verifier = std::make_shared<auth::Verifier>(std::move(*ring), /*leeway_s=*/30);
  }
  if (f.cert.empty() != f.key.empty()) {
    return Fail(kCmd, "--cert and --key go together", "pass both, or neither for a dev cert");
  }
  if (f.cert.empty()) {
    auto dev = WriteDevCertificate("kvcs-relay");
    if (!dev.ok()) return Fail(kCmd, dev.status().message());
    f.cert = dev->cert;
    f.key = dev->key;
    std::cout << "dev certificate " << f.cert
              << " (name localhost; clients: --ca this file, or --insecure)" << std::endl;
  }
  c.cert_file = f.cert;
  c.key_file = f.key;
  boost::asio::io_context io;
  relay::RelayServer::Log log;
  if (f.verbose) log = [](const std::string& line) { std::cerr << "relay: " << line << "\n"; };
  // Notable events (a slow subscriber cut off) are logged with or without -v.
  c.relay.log = [](const std::string& line) { std::cerr << "relay: " << line << std::endl; };
  auto server = relay::RelayServer::Start(io, c, log);
  if (!server.ok()) {
    return Fail(kCmd, server.status().message(),
                "is the UDP port in use? are the certificate and key readable?");
  }
  std::string host =
      c.listen_host.find(':') != std::string::npos ? "[" + c.listen_host + "]" : c.listen_host;
  std::cout << "relay " << (*server)->relay().id() << " listening on moqt://" << host << ":"
            << (*server)->port() << "/" << (f.open ? " (open access)" : "");
  if ((*server)->metrics_port()) {
    auto m = ParseListen(c.metrics_listen);
    std::cout << ", metrics http://" << (m.ok() ? m->host : "127.0.0.1") << ":"
              << (*server)->metrics_port() << "/metrics";
  }
  if (!c.upstream_url.empty()) std::cout << ", upstream " << c.upstream_url;
  std::cout << std::endl;
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int) {
    if (ec) return;
    std::cout << "stopping: GOAWAY to every session, draining" << std::endl;
    (*server)->Shutdown(std::chrono::milliseconds(static_cast<int64_t>(f.drain_s * 1000)),
                        [&io] { io.stop(); });
  });
  io.run();
  server->reset();
  return 0;
}

RunFn Setup(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      kCmd, "Run a caching MOQT draft-22 relay: fan-out, relay trees, token authorization");
  auto f = std::make_shared<RelayFlags>();
  cmd->add_option("--config", f->config,
                  "JSON file with any of the options below (names with '_' for '-'); flags win");
  cmd->add_option("--listen", f->listen, "UDP HOST:PORT for QUIC (port 0 picks one)")
      ->capture_default_str();
  cmd->add_option("--cert", f->cert, "PEM certificate chain (default: a dev certificate)");
  cmd->add_option("--key", f->key, "PEM private key for --cert");
  cmd->add_option("--id", f->id, "relay id for loop detection (default: random)");
  cmd->add_option("--upstream", f->upstream,
                  "parent relay moqt://HOST:PORT/ (misses and announcements go there)");
  cmd->add_option("--upstream-ca", f->upstream_ca, "PEM CA bundle for the upstream's certificate");
  cmd->add_flag("--upstream-insecure", f->upstream_insecure,
                "accept any upstream certificate (development only)");
  cmd->add_option("--upstream-token", f->upstream_token,
                  "file with this relay's token for the upstream (kvcs token)");
  cmd->add_option("--keys", f->keys,
                  "token signer public key KID=public.pem (repeatable), or a JSON file "
                  "{\"keys\": {\"KID\": \"public.pem\"}}");
  cmd->add_flag("--open", f->open, "no authorization: anyone may publish and subscribe");
  cmd->add_option("--cache-mib", f->cache_mib, "byte budget of the cache, MiB")
      ->capture_default_str();
  cmd->add_option("--max-sessions", f->max_sessions, "concurrent QUIC sessions")
      ->capture_default_str();
  cmd->add_option("--max-publications", f->max_publications, "publications held in the cache")
      ->capture_default_str();
  cmd->add_option("--upstream-timeout-ms", f->upstream_timeout_ms,
                  "how long a request waits for the upstream's answer")
      ->capture_default_str();
  cmd->add_option("--subscriber-stall-ms", f->subscriber_stall_ms,
                  "cut off (PUBLISH_DONE TOO_FAR_BEHIND) a subscriber that took none of the data "
                  "waiting for it for this long, releasing its publication (0: never)")
      ->capture_default_str();
  cmd->add_option("--upstream-stall-ms", f->upstream_stall_ms,
                  "end the feeds of an upstream (publisher or upstream relay) that delivered "
                  "nothing it owed for this long; the upstream relay's link is reconnected "
                  "(0: never)")
      ->capture_default_str();
  cmd->add_option("--metrics", f->metrics, "HOST:PORT for GET /metrics (Prometheus text)");
  f->quic.Add(cmd, /*total_flag=*/"");
  f->metrics_http.Add(cmd);
  cmd->add_option("--drain", f->drain_s, "seconds sessions get to leave after GOAWAY on SIGTERM")
      ->capture_default_str();
  cmd->add_flag("-v,--verbose", f->verbose, "log sessions and upstream events to stderr");
  cmd->footer(
      "Publishers connect and PUBLISH_NAMESPACE (kvcs moq-pub --relay, kvcs publish --relay);\n"
      "subscribers SUBSCRIBE/FETCH/SUBSCRIBE_NAMESPACE. Whole publications are cached under\n"
      "--cache-mib and evicted least recently used, never while in use. Tokens (kvcs token,\n"
      "--allow publish,subscribe) go in the SETUP; see docs/protocols/relay.md.\n\n"
      "Examples:\n"
      "  kvcs relay --listen 127.0.0.1:4443 --open --metrics 127.0.0.1:9464\n"
      "  kvcs relay --listen 0.0.0.0:4443 --cert relay.pem --key relay.key --keys "
      "k1=signer.pub.pem\n"
      "  kvcs relay --listen 127.0.0.1:4444 --open --upstream moqt://127.0.0.1:4443/ "
      "--upstream-insecure\n"
      "  kvcs relay --config relay.json");
  return [cmd, f] { return Run(cmd, *f); };
}

}  // namespace

KVCS_REGISTER_COMMAND(relay, 72, Setup);

}  // namespace kvcs::cli
