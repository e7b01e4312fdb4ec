// The admission-limit options of every kvcs server, defined once: HttpAdmissionOptions for an
// http::Server (kvcs store, kvcs index, the relay's metrics endpoint; http/limits.h) and
// QuicAdmissionOptions for a QUIC server (kvcs relay, and kvcs publish / kvcs moq-pub when they
// serve; quic/quic_admission.h). Each adds its flags to a command, validates them, applies them
// to the server's config, and (QUIC) reads the same names from a JSON config file. The defaults
// are the servers' own; docs/protocols/http.md and quic-transport.md give the reasons.
// Header-only, like cli_util.h.
#ifndef KVCS_CLI_ADMISSION_OPTIONS_H_
#define KVCS_CLI_ADMISSION_OPTIONS_H_

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "http/limits.h"
#include "quic/quic_admission.h"
#include "quic/server.h"

namespace kvcs::cli {

// Upper bound of every count flag: far above what one process can hold open.
inline constexpr uint64_t kMaxAdmissionCount = uint64_t{1} << 20;
// Upper bound of every deadline flag, in ms (10 minutes).
inline constexpr uint64_t kMaxAdmissionDeadlineMs = 600'000;

// --[PREFIX]max-connections, --[PREFIX]max-connections-per-address,
// --[PREFIX]max-requests-per-address, --[PREFIX]header-timeout-ms,
// --[PREFIX]header-timeout-under-pressure-ms, --[PREFIX]min-idle-age-ms. PREFIX is "" for a
// command's own HTTP server and, e.g., "metrics-" for a second one.
struct HttpAdmissionOptions {
  explicit HttpAdmissionOptions(std::string flag_prefix = "") : prefix(std::move(flag_prefix)) {}

  std::string prefix;
  uint64_t max_connections = http::kDefaultMaxConnections;
  uint64_t max_connections_per_address = http::kDefaultMaxConnectionsPerAddress;
  uint64_t max_requests_per_address = http::kDefaultMaxRequestsPerAddress;
  uint64_t header_timeout_ms = uint64_t(http::kDefaultHeaderTimeout.count());
  uint64_t header_timeout_under_pressure_ms =
      uint64_t(http::kDefaultHeaderTimeoutUnderPressure.count());
  uint64_t min_idle_age_ms = uint64_t(http::kDefaultMinIdleAge.count());

  void Add(CLI::App* cmd) {
    const CLI::Range count(uint64_t{1}, kMaxAdmissionCount);
    const CLI::Range deadline(uint64_t{1}, kMaxAdmissionDeadlineMs);
    cmd->add_option("--" + prefix + "max-connections", max_connections,
                    "concurrent HTTP connections in total; at the cap the oldest connections "
                    "without a request head, then idle ones, make room")
        ->check(count)
        ->capture_default_str();
    cmd->add_option("--" + prefix + "max-connections-per-address", max_connections_per_address,
                    "concurrent HTTP connections from one client address; more are closed")
        ->check(count)
        ->capture_default_str();
    cmd->add_option("--" + prefix + "max-requests-per-address", max_requests_per_address,
                    "HTTP requests in flight from one client address; more are answered 503")
        ->check(count)
        ->capture_default_str();
    cmd->add_option("--" + prefix + "header-timeout-ms", header_timeout_ms,
                    "a request head (and an idle keep-alive connection's next one) must arrive "
                    "within this")
        ->check(deadline)
        ->capture_default_str();
    cmd->add_option("--" + prefix + "header-timeout-under-pressure-ms",
                    header_timeout_under_pressure_ms,
                    "... or within this once 75% of the connection cap is open")
        ->check(deadline)
        ->capture_default_str();
    cmd->add_option("--" + prefix + "min-idle-age-ms", min_idle_age_ms,
                    "at the connection cap, a keep-alive connection idle for less than this is "
                    "evicted only from the address holding the most young connections")
        ->check(CLI::Range(uint64_t{0}, kMaxAdmissionDeadlineMs))
        ->capture_default_str();
  }
  void ApplyTo(http::Limits* l) const {
    l->max_connections = max_connections;
    l->max_connections_per_address = max_connections_per_address;
    l->max_requests_per_address = max_requests_per_address;
    l->header_timeout = std::chrono::milliseconds(header_timeout_ms);
    l->header_timeout_under_pressure = std::chrono::milliseconds(header_timeout_under_pressure_ms);
    l->min_idle_age = std::chrono::milliseconds(min_idle_age_ms);
  }
};

// --max-connections-per-address, --max-handshakes-per-address, --retry-on-handshakes,
// --retry-off-handshakes, --handshake-deadline-ms and --require-retry (and, with a total flag
// name, the total cap). In a JSON config the same names with '_' for '-'.
struct QuicAdmissionOptions {
  using Limits = quic::AdmissionLimits;
  uint64_t max_connections = quic::ServerConfig{}.max_connections;
  uint64_t max_connections_per_address = Limits::kDefaultMaxConnectionsPerAddress;
  uint64_t max_handshakes_per_address = Limits::kDefaultMaxHandshakesPerAddress;
  uint64_t retry_on_handshakes = Limits::kDefaultRetryOnHandshakes;
  uint64_t retry_off_handshakes = Limits::kDefaultRetryOffHandshakes;
  uint64_t handshake_deadline_ms = uint64_t(Limits::kDefaultHandshakeDeadline.count());
  bool require_retry = false;

  // `total_flag`: the name of the total-cap flag ("--max-connections"), or empty when the
  // command has its own (kvcs relay's --max-sessions).
  void Add(CLI::App* cmd, const std::string& total_flag = "--max-connections") {
    const CLI::Range count(uint64_t{1}, kMaxAdmissionCount);
    if (!total_flag.empty()) {
      cmd->add_option(total_flag, max_connections,
                      "concurrent QUIC connections; at the cap a newcomer replaces the oldest "
                      "handshake in progress")
          ->check(count)
          ->capture_default_str();
    }
    for (const auto& c : Counts()) {
      cmd->add_option(c.flag, *c.value, c.help)->check(count)->capture_default_str();
    }
    cmd->add_option("--handshake-deadline-ms", handshake_deadline_ms,
                    "a QUIC handshake not complete this long after its first Initial is dropped")
        ->check(CLI::Range(uint64_t{1}, kMaxAdmissionDeadlineMs))
        ->capture_default_str();
    cmd->add_flag("--require-retry", require_retry,
                  "validate every client address with a Retry round trip (default: only under "
                  "load)");
  }
  // The flags check their ranges; this checks JSON values too, and the Retry hysteresis.
  Status Validate() {
    for (const auto& c : Counts()) {
      if (*c.value == 0 || *c.value > kMaxAdmissionCount) {
        return InvalidArgument(std::string(c.flag) + " must be 1.." +
                               std::to_string(kMaxAdmissionCount));
      }
    }
    if (handshake_deadline_ms == 0 || handshake_deadline_ms > kMaxAdmissionDeadlineMs) {
      return InvalidArgument("--handshake-deadline-ms must be 1.." +
                             std::to_string(kMaxAdmissionDeadlineMs));
    }
    if (retry_off_handshakes > retry_on_handshakes) {
      return InvalidArgument("--retry-off-handshakes must not exceed --retry-on-handshakes");
    }
    return Status::Ok();
  }
  Limits limits() const {
    Limits l;
    l.max_connections_per_address = max_connections_per_address;
    l.max_handshakes_per_address = max_handshakes_per_address;
    l.retry_on_handshakes = retry_on_handshakes;
    l.retry_off_handshakes = retry_off_handshakes;
    l.handshake_deadline = std::chrono::milliseconds(handshake_deadline_ms);
    return l;
  }
  // Everything but the total, which the caller sets (relays: from --max-sessions).
  void ApplyTo(quic::ServerConfig* c) const {
    c->max_connections = max_connections;
    c->require_retry = require_retry;
    c->admission = limits();
  }
  // A JSON config member `key` (the flag's name without "--", '_' for '-'): returns nullopt when
  // the key is not one of these options, else the outcome (a value the command line did not set
  // is taken; a wrong type fails). The total is the command's own member.
  std::optional<Status> ApplyJson(CLI::App* cmd, const std::string& key, const nlohmann::json& v) {
    std::string flag = "--" + key;
    for (char& ch : flag) ch = ch == '_' ? '-' : ch;
    auto unset = [&] { return cmd->get_option(flag)->count() == 0; };
    if (flag == "--require-retry") {
      if (!v.is_boolean()) return InvalidArgument("\"" + key + "\" must be true/false");
      if (unset()) require_retry = v.get<bool>();
      return Status::Ok();
    }
    uint64_t* out = flag == "--handshake-deadline-ms" ? &handshake_deadline_ms : nullptr;
    for (const auto& c : Counts())
      if (flag == c.flag) out = c.value;
    if (!out) return std::nullopt;
    if (!v.is_number_unsigned()) {
      return InvalidArgument("\"" + key + "\" must be a non-negative integer");
    }
    if (unset()) *out = v.get<uint64_t>();
    return Status::Ok();
  }

 private:
  struct Count {
    const char* flag;
    uint64_t* value;
    const char* help;
  };
  std::vector<Count> Counts() {
    return {
        {"--max-connections-per-address", &max_connections_per_address,
         "concurrent QUIC connections from one IP address; more are refused"},
        {"--max-handshakes-per-address", &max_handshakes_per_address,
         "QUIC handshakes in progress from one IP address; more must first answer a Retry"},
        {"--retry-on-handshakes", &retry_on_handshakes,
         "every new QUIC client must answer a Retry while this many handshakes are in progress"},
        {"--retry-off-handshakes", &retry_off_handshakes,
         "... until fewer than this are in progress"},
    };
  }
};

}  // namespace kvcs::cli

#endif  // KVCS_CLI_ADMISSION_OPTIONS_H_
