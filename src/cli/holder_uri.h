// The moqt:// holder URI by which a KVCS publisher (or a relay) registers one publication with a
// KVSP Index Service (spec §7 "a moqt:// URI naming a full KVCS namespace"):
//
//   moqt://HOST:PORT[/path]?ns=kvcs-1/<scope_id>/<compat_id>/<anchor_key>/<pub_id>   (hex)
//
// the MOQT endpoint to connect to, then the publication's full Track Namespace as
// profile::ToString writes it. Header-only, like cli_util.h (docs/protocols/kvsp-index.md).
#ifndef KVCS_CLI_HOLDER_URI_H_
#define KVCS_CLI_HOLDER_URI_H_

#include <optional>
#include <string>
#include <string_view>

#include "profile/namespace.h"

namespace kvcs::cli {

inline constexpr std::string_view kHolderNsQuery = "?ns=";

// `endpoint` is the moqt:// URL subscribers connect to ("moqt://127.0.0.1:4443/").
inline std::string MoqtHolderUri(std::string_view endpoint, const profile::Namespace& ns) {
  return std::string(endpoint) + std::string(kHolderNsQuery) + profile::ToString(ns);
}

struct MoqtHolder {
  std::string endpoint;  // the moqt:// URL before "?ns="
  profile::Namespace ns;
};

// The parts of a holder MoqtHolderUri wrote; nullopt for any other holder.
inline std::optional<MoqtHolder> ParseMoqtHolderUri(std::string_view holder) {
  if (holder.substr(0, 7) != "moqt://") return std::nullopt;
  size_t q = holder.find(kHolderNsQuery);
  if (q == std::string_view::npos) return std::nullopt;
  MoqtHolder h;
  h.endpoint = std::string(holder.substr(0, q));
  auto fields = profile::ParseNamespaceText(holder.substr(q + kHolderNsQuery.size()));
  auto ns =
      fields.ok() ? profile::ParseNamespace(*fields) : Result<profile::Namespace>(fields.status());
  if (!ns.ok()) return std::nullopt;
  h.ns = *ns;
  return h;
}

}  // namespace kvcs::cli

#endif  // KVCS_CLI_HOLDER_URI_H_
