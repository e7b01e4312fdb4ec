// The options by which a kvcs command talks to a KVSP Index Service (docs/protocols/
// kvsp-index.md): --index URL plus a bearer token (--index-token or --index-token-file), for an
// https:// index the CA to trust (--index-ca-file) or --index-insecure, and the client they
// make. Header-only, like cli_util.h.
#ifndef KVCS_CLI_INDEX_OPTIONS_H_
#define KVCS_CLI_INDEX_OPTIONS_H_

#include <CLI/CLI.hpp>
#include <chrono>
#include <string>

#include "cli/cli_util.h"
#include "common/strings.h"
#include "index/index_client.h"

namespace kvcs::cli {

// A token file holds one compact JWS (≤ 8 KiB) and perhaps a newline.
inline constexpr size_t kMaxTokenFileSize = 16 * 1024;

// Reads a bearer token file (surrounding whitespace dropped).
inline Result<std::string> ReadBearerFile(const std::string& path) {
  KVCS_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(path, kMaxTokenFileSize));
  return std::string(Trim(text, " \t\r\n"));
}

struct IndexOptions {
  std::string url;
  std::string token, token_file;
  double timeout_s = 5;
  std::string ca_file;
  bool insecure = false;

  // The URL option is "--index"; the others are "--index-token[-file]", "--index-timeout",
  // "--index-ca-file" and "--index-insecure" unless `plain_token` (kvcs lookup's --token,
  // --timeout, --ca-file, --insecure: its only server is the index).
  void Add(CLI::App* cmd, const std::string& url_help, bool plain_token = false) {
    cmd->add_option("--index", url, url_help);
    std::string t = plain_token ? "--token" : "--index-token";
    auto* tok = cmd->add_option(t, token, "bearer token (kvcs token) for the index");
    auto* tokf = cmd->add_option(t + "-file", token_file, "file holding that bearer token");
    tok->excludes(tokf);
    cmd->add_option(plain_token ? "--timeout" : "--index-timeout", timeout_s,
                    "seconds per index request")
        ->check(CLI::Range(0.001, 600.0))
        ->capture_default_str();
    std::string p = plain_token ? "--" : "--index-";
    cmd->add_option(p + "ca-file", ca_file,
                    "https index: PEM CA (or self-signed certificate) to trust instead of the "
                    "system store");
    cmd->add_flag(p + "insecure", insecure,
                  "https index: skip certificate checks (DEVELOPMENT ONLY)");
  }
  bool enabled() const { return !url.empty(); }
  // The client; the message of a failure says which option is wrong.
  Result<index::IndexClient> Client() const {
    index::IndexClientOptions o;
    o.url = url;
    o.bearer = token;
    o.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
    o.ca_file = ca_file;
    o.insecure = insecure;
    if (!token_file.empty()) {
      auto b = ReadBearerFile(token_file);
      if (!b.ok()) return b.status();
      o.bearer = *b;
    }
    return index::IndexClient::Create(std::move(o));
  }
};

}  // namespace kvcs::cli

#endif  // KVCS_CLI_INDEX_OPTIONS_H_
