// Server configuration and the access-key file.
//
// Config file format (documented in docs/protocols/s3-api.md), a small INI subset:
//
//   # comment
//   region = us-east-1
//   virtual_host = localhost        # repeatable: "<bucket>.localhost" is virtual-hosted style
//   [key kvcsadmin]                 # one section per access key id
//   secret = kvcsadmin-secret-key
//   user = alice                    # optional: the user id the key acts as (owner of what it
//   display_name = Alice            #   creates); without it the key is its own user
//
// Several keys may name one user: they then share ownership of that user's buckets.
// Keys may also come from KVCS_S3_ACCESS_KEY / KVCS_S3_SECRET_KEY. Without any key, the server
// uses the development pair kDevAccessKey / kDevSecretKey and says so at startup.
// Pure parsing: no I/O besides LoadConfigFile reading the file.
#ifndef KVCS_S3_CONFIG_H_
#define KVCS_S3_CONFIG_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "http/limits.h"

namespace kvcs::s3 {

inline constexpr char kDevAccessKey[] = "kvcsadmin";
inline constexpr char kDevSecretKey[] = "kvcsadmin-dev-secret";

// Config files are tiny; anything bigger is a mistake.
inline constexpr size_t kMaxConfigFileBytes = 1 << 20;

// The user an access key acts as: the owner of the buckets it creates.
struct User {
  std::string id;            // 1..128 bytes
  std::string display_name;  // defaults to the id
};

struct ServerConfig {
  std::string listen_host = "127.0.0.1";
  uint16_t port = 9000;
  std::string region = "us-east-1";
  std::map<std::string, std::string> secrets;  // access key id -> secret key
  // access key id -> the user it acts as; a key absent here is its own user (UserOf).
  std::map<std::string, User> users;
  // Host suffixes for virtual-hosted addressing ("bucket.<suffix>[:port]"). Path style always
  // works.
  std::vector<std::string> virtual_hosts = {"localhost"};
  std::string tls_cert_file;  // PEM; TLS is on when both files are set
  std::string tls_key_file;
  int io_threads = 4;
  // Connection admission and bounds of the HTTP server (docs/protocols/http.md).
  http::Limits http_limits;
};

// Parses the config text into *config (keys are added; scalars replaced).
Status ParseConfig(std::string_view text, ServerConfig* config);
Status LoadConfigFile(const std::string& path, ServerConfig* config);

// The user `access_key` acts as: config.users' entry, else a user whose id and display name are
// the key itself (old configs: one user per key). Empty key (anonymous): an empty user.
User UserOf(const ServerConfig& config, std::string_view access_key);

// True when some configured access key acts as user `id` (what ACL grants may name).
bool IsKnownUser(const ServerConfig& config, std::string_view id);
// The user `id` names: that of the first configured key acting as it, else {id, id}.
User UserById(const ServerConfig& config, std::string_view id);
// How many distinct users the configured keys act as.
size_t CountUsers(const ServerConfig& config);

}  // namespace kvcs::s3

#endif  // KVCS_S3_CONFIG_H_
