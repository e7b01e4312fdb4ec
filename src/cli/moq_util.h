// Helpers shared by `kvcs moq-pub` and `kvcs moq-sub` (header-only; the CLI's CMakeLists globs
// cmd_*.cc): the synthetic payload both agree on, namespaces (KVCS ones with hex fields), "G[:O]"
// locations, "A-B" ranges, and the client-side TLS options. Nothing here prints or exits.
#ifndef KVCS_CLI_MOQ_UTIL_H_
#define KVCS_CLI_MOQ_UTIL_H_

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>

#include "common/bytes.h"
#include "common/status.h"
#include "common/strings.h"
#include "moqt/moqt_messages.h"
#include "moqt_endpoint/moqt_endpoint.h"
#include "profile/namespace.h"

namespace kvcs::cli {

// Synthetic object payload: group (u64 BE), object (u64 BE), then byte i = (g*31 + o*7 + i)
// mod 256. Shorter payloads are a prefix of that. moq-sub --verify checks it.
inline constexpr size_t kSyntheticHeader = 16;

inline void FillSynthetic(uint64_t g, uint64_t o, uint8_t* p, size_t n) {
  uint8_t head[kSyntheticHeader];
  StoreBe64(head, g);
  StoreBe64(head + 8, o);
  for (size_t i = 0; i < n; ++i) {
    p[i] = i < kSyntheticHeader ? head[i] : static_cast<uint8_t>(g * 31 + o * 7 + i);
  }
}

inline bool CheckSynthetic(uint64_t g, uint64_t o, ByteSpan payload) {
  uint8_t head[kSyntheticHeader];
  StoreBe64(head, g);
  StoreBe64(head + 8, o);
  for (size_t i = 0; i < payload.size(); ++i) {
    uint8_t want = i < kSyntheticHeader ? head[i] : static_cast<uint8_t>(g * 31 + o * 7 + i);
    if (payload[i] != want) return false;
  }
  return true;
}

// A number for progress lines: three significant digits ("%.3g").
inline std::string Fmt(double v) {
  char b[32];
  std::snprintf(b, sizeof(b), "%.3g", v);
  return b;
}

inline Result<uint64_t> ParseU64(std::string_view s, std::string_view what) {
  auto v = ParseDecimal<uint64_t>(s);
  if (!v) return InvalidArgument(std::string(what) + ": '" + std::string(s) + "' is not a number");
  return *v;
}

// A namespace as the MOQT commands take it: a KVCS namespace or prefix in its text form
// ("kvcs-1/<scope hex>[/<compat hex>[/<anchor hex>[/<pub_id hex>]]]", profile::ParseNamespaceText)
// when its first field is "kvcs-1", else '/'-separated fields, "0x<hex>" for a binary one
// (moqt::ParseNamespace).
inline Result<moqt::TrackNamespace> ParseNamespaceArg(std::string_view text) {
  if (text.substr(0, profile::kNamespaceTag.size()) == profile::kNamespaceTag &&
      (text.size() == profile::kNamespaceTag.size() ||
       text[profile::kNamespaceTag.size()] == '/')) {
    KVCS_ASSIGN_OR_RETURN(profile::TrackNamespace f, profile::ParseNamespaceText(text));
    moqt::TrackNamespace ns;
    for (const Bytes& b : f) ns.emplace_back(b.begin(), b.end());
    return ns;
  }
  return moqt::ParseNamespace(text);
}

// The text form ParseNamespaceArg reads back: KVCS namespaces with hex fields.
inline std::string NamespaceArgText(const moqt::TrackNamespace& ns) {
  profile::TrackNamespace f;
  for (const std::string& s : ns) f.emplace_back(s.begin(), s.end());
  auto kvcs = profile::NamespaceText(f);
  return kvcs ? *kvcs : moqt::NamespaceToString(ns);
}

// "G" or "G:O". `has_object` tells which.
struct LocationArg {
  moqt::Location loc;
  bool has_object = false;
};
inline Result<LocationArg> ParseLocationArg(std::string_view s, std::string_view what) {
  LocationArg a;
  size_t colon = s.find(':');
  KVCS_ASSIGN_OR_RETURN(a.loc.group, ParseU64(s.substr(0, colon), what));
  if (colon != std::string_view::npos) {
    KVCS_ASSIGN_OR_RETURN(a.loc.object, ParseU64(s.substr(colon + 1), what));
    a.has_object = true;
  }
  return a;
}

// "A-B" (inclusive) or "A-" (open-ended) or "A" (just A).
inline Result<moqt::FilterRange> ParseRangeArg(std::string_view s, std::string_view what) {
  moqt::FilterRange r;
  size_t dash = s.find('-');
  KVCS_ASSIGN_OR_RETURN(r.start, ParseU64(s.substr(0, dash), what));
  if (dash == std::string_view::npos) {
    r.end = r.start;
  } else if (dash + 1 < s.size()) {
    KVCS_ASSIGN_OR_RETURN(uint64_t e, ParseU64(s.substr(dash + 1), what));
    if (e < r.start) return InvalidArgument(std::string(what) + ": end below start");
    r.end = e;
  }
  return r;
}

// A token file's text without surrounding whitespace; empty when unreadable or over 8 KiB.
inline std::string ReadTokenFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) return "";
  if (text.size() > 8 * 1024) return "";
  return std::string(Trim(text, kXmlWhitespace));
}

// Client-side TLS and connection options (moq-sub, moq-pub --relay).
struct ClientTlsOptions {
  std::string ca_file;
  bool insecure = false;
  std::string server_name;
  double connect_timeout_s = 5;
  std::string auth_token_file;
  double idle_timeout_s = 30;

  void Add(CLI::App* cmd) {
    cmd->add_option("--idle-timeout", idle_timeout_s,
                    "seconds without a packet from the peer before the session is declared "
                    "dead (keep-alive PINGs at a third of it)")
        ->capture_default_str();
    cmd->add_option("--auth-token", auth_token_file,
                    "file with a token for the relay's SETUP (kvcs token --allow "
                    "publish,subscribe)");
    auto* ca = cmd->add_option("--ca", ca_file,
                               "PEM CA bundle to verify the server (e.g. the "
                               "certificate moq-pub printed)");
    auto* in =
        cmd->add_flag("--insecure", insecure, "accept any server certificate (development only)");
    ca->excludes(in);
    cmd->add_option("--server-name", server_name,
                    "TLS server name to verify (default: the URL's host)");
    cmd->add_option("--connect-timeout", connect_timeout_s, "QUIC handshake timeout in seconds")
        ->capture_default_str();
  }
  moqt::MoqtClientConfig ClientConfig(const moqt::MoqtUrl& url) const {
    moqt::MoqtClientConfig c;
    c.quic.host = url.host;
    c.quic.port = url.port;
    c.quic.server_name = server_name;
    c.quic.ca_file = ca_file;
    c.quic.insecure = insecure;
    c.quic.limits.handshake_timeout =
        std::chrono::milliseconds(static_cast<int64_t>(connect_timeout_s * 1000));
    c.quic.limits.idle_timeout =
        std::chrono::milliseconds(static_cast<int64_t>(idle_timeout_s * 1000));
    c.quic.limits.keep_alive = c.quic.limits.idle_timeout / 3;
    if (!url.path.empty()) c.session.path = url.path;
    c.session.authority = url.authority();
    c.session.implementation = "kvcs-cli/0.1";
    if (!auth_token_file.empty()) {
      // An unreadable file sends no token: the relay then refuses the session as unauthorized.
      auto text = ReadTokenFile(auth_token_file);
      if (!text.empty()) {
        moqt::AuthToken t;
        t.token_type = 1;
        t.value = std::move(text);
        c.session.setup_auth_tokens.push_back(std::move(t));
      }
    }
    return c;
  }
};

// A hint for a failed connection, from how it failed.
inline std::string ConnectHint(const moqt::SessionEnd& end) {
  using K = transport::CloseInfo::Kind;
  if (end.transport.kind == K::kTls) {
    return "the server's certificate was not accepted or no ALPN in common (moqt-22): pass --ca "
           "with the server's certificate, or --insecure for a development server";
  }
  if (!end.handshake_completed) {
    return "is a MOQT (draft-22, raw QUIC) server listening at that address and UDP port? "
           "start one with: kvcs moq-pub --listen 127.0.0.1:4443";
  }
  return "";
}

}  // namespace kvcs::cli

#endif  // KVCS_CLI_MOQ_UTIL_H_
