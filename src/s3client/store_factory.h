// Chooses the ObjectStore behind `kvcs store` from configuration: the embedded local-disk store
// (the default) or S3BackendStore over an existing S3 service.
//
// Backend config file (JSON; every member optional except those marked):
//   {"backend": "s3",                       // "local" (default) or "s3"
//    "endpoint": "http://127.0.0.1:8000",   // s3: required; or https://host[:port]
//    "ca_file": "/etc/kvcs/s3-ca.pem",      // https: trust this CA (PEM) instead of the system's
//    "insecure": false,                     // https: DEVELOPMENT ONLY, no certificate checks
//    "access_key": "...", "secret_key": "...", // s3: required (or the environment, see below)
//    "region": "us-east-1", "bucket_prefix": "",
//    "parallel_gets": 32, "max_connections": 64,
//    "max_attempts": 5, "attempt_timeout_ms": 10000, "total_deadline_ms": 30000,
//    "multipart_threshold_bytes": 16777216, "part_bytes": 8388608,
//    "conditional_writes": false}            // pass conditional PUTs on (the service evaluates)
// Unknown members are refused (a typo must not silently fall back to a default). When the
// secret key is absent it is read from $KVCS_BACKEND_SECRET_KEY (and the access key from
// $KVCS_BACKEND_ACCESS_KEY), so secrets need not sit in files or on command lines.
// Pure except OpenBackendStore (network) and the environment lookup. Thread-safe.
#ifndef KVCS_S3CLIENT_STORE_FACTORY_H_
#define KVCS_S3CLIENT_STORE_FACTORY_H_

#include <memory>
#include <string>
#include <string_view>

#include "s3client/backend_store.h"
#include "store/object_store.h"

namespace kvcs::s3client {

// A backend config file is a handful of members.
inline constexpr size_t kMaxBackendConfigBytes = 64 << 10;

struct BackendConfig {
  std::string backend = "local";  // "local" | "s3"
  S3BackendOptions s3;
};

// Parses the JSON text into *config (members present replace the defaults).
Status ParseBackendConfig(std::string_view json, BackendConfig* config);
Status LoadBackendConfigFile(const std::string& path, BackendConfig* config);
// Fills missing credentials from $KVCS_BACKEND_ACCESS_KEY / $KVCS_BACKEND_SECRET_KEY and checks
// that an s3 backend has an endpoint and both keys.
Status FinishBackendConfig(BackendConfig* config);
// Opens the S3 backend (REQUIRES: config.backend == "s3"; the local store is opened by its
// owner, which also reports its recovery counters).
Result<std::unique_ptr<store::ObjectStore>> OpenBackendStore(const BackendConfig& config);

}  // namespace kvcs::s3client

#endif  // KVCS_S3CLIENT_STORE_FACTORY_H_
