// Public keys for token verification from the command line (`kvcs index`, `kvcs relay`):
// "kid=public.pem" values, or a JSON file {"keys": {"<kid>": "<public.pem>", ...}}.
#ifndef KVCS_CLI_KEYRING_FILE_H_
#define KVCS_CLI_KEYRING_FILE_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "auth/token.h"
#include "cli/cli_util.h"
#include "common/status.h"

namespace kvcs::cli {

// Adds one kid=public.pem pair to the keyring.
inline Status AddKey(auth::Keyring* ring, const std::string& kid, const std::string& path) {
  KVCS_ASSIGN_OR_RETURN(std::string pem, ReadSmallFile(path, kMaxKeyFileBytes));
  Status s = ring->Add(kid, pem);
  return s.ok() ? s : s.WithContext("key " + kid + " (" + path + ")");
}

inline Result<auth::Keyring> LoadKeys(const std::vector<std::string>& values) {
  auth::Keyring ring;
  for (const std::string& v : values) {
    size_t eq = v.find('=');
    if (eq != std::string::npos) {
      KVCS_RETURN_IF_ERROR(AddKey(&ring, v.substr(0, eq), v.substr(eq + 1)));
      continue;
    }
    KVCS_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(v, kMaxKeyFileBytes));
    auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() || !j.contains("keys") || !j["keys"].is_object()) {
      return InvalidArgument(v + ": expected {\"keys\": {\"<kid>\": \"<public.pem>\", ...}}");
    }
    for (auto& [kid, path] : j["keys"].items()) {
      if (!path.is_string()) return InvalidArgument(v + ": key " + kid + " is not a file name");
      KVCS_RETURN_IF_ERROR(AddKey(&ring, kid, path.get<std::string>()));
    }
  }
  return ring;
}

}  // namespace kvcs::cli

#endif  // KVCS_CLI_KEYRING_FILE_H_
