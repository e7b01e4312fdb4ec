// The `kvcs store --backend rados` configuration: the JSON backend config file's rados form
// (the same file `--backend-config` names for the S3 backend, with "backend": "rados"):
//   {"backend": "rados",
//    "pool": "kvcs",                      // required; must exist
//    "namespace": "",                     // RADOS namespace inside the pool
//    "ceph_conf": "/etc/ceph/ceph.conf",  // required
//    "keyring": "/etc/ceph/ceph.client.kvcs.keyring",  // cephx; omit for what ceph.conf says
//    "client_id": "admin",                // cephx user client.<id>
//    "op_timeout_s": 30, "index_shards": 8, "stripe_bytes": 4194304,
//    "max_reads_in_flight": 64, "max_read_bytes_in_flight": 67108864}
// Unknown members are refused. docs/protocols/rados-backend.md. Pure (except the file read).
#ifndef KVCS_RADOS_STORE_RADOS_CONFIG_H_
#define KVCS_RADOS_STORE_RADOS_CONFIG_H_

#include <string>
#include <string_view>

#include "common/status.h"
#include "rados_store/rados_store.h"

namespace kvcs::rados_store {

// True when the config text's "backend" member is "rados" (any parse failure: false, and the
// S3 backend's parser reports it).
bool IsRadosBackendConfig(std::string_view json);
// Reads the whole file (at most 64 KiB) into *text.
Status ReadBackendConfigFile(const std::string& path, std::string* text);
// Parses a rados backend config into *options (members present replace the defaults).
Status ParseRadosBackendConfig(std::string_view json, RadosStoreOptions* options);
// Checks that the pool and ceph.conf are given.
Status FinishRadosBackendConfig(const RadosStoreOptions& options);

}  // namespace kvcs::rados_store

#endif  // KVCS_RADOS_STORE_RADOS_CONFIG_H_
