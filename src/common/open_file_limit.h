// The open-file limit of kvcs's long-running servers (store, index, relay). A store holds one
// descriptor per block of every aggregated request in flight (the probe opens every block's
// container before its first byte is sent: 4,096 for one 64K-context load), so the soft limit a
// fresh shell gets (1,024 on Debian) failed such a load block by block with read errors. A server
// raises its soft limit to its hard limit at start, as nginx (worker_rlimit_nofile) and Go's
// runtime do.
#ifndef KVCS_COMMON_OPEN_FILE_LIMIT_H_
#define KVCS_COMMON_OPEN_FILE_LIMIT_H_

#include <cstdint>

#include "common/status.h"

namespace kvcs {

// The most the soft limit is raised to: Linux refuses a limit above fs.nr_open, 1,048,576 unless
// changed, and an unlimited hard limit must not be asked for as such.
inline constexpr uint64_t kOpenFileLimitCeiling = uint64_t{1} << 20;

struct OpenFileLimit {
  uint64_t before = 0;  // the soft limit found
  uint64_t now = 0;     // the soft limit in force
};

// Raises RLIMIT_NOFILE's soft limit to min(hard, kOpenFileLimitCeiling) when it is lower. An
// error (the system refused) leaves the limit as it was.
Result<OpenFileLimit> RaiseOpenFileLimit();

}  // namespace kvcs

#endif  // KVCS_COMMON_OPEN_FILE_LIMIT_H_
