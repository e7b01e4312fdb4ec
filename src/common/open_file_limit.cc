// The open-file limit of kvcs's servers. See open_file_limit.h.
#include "common/open_file_limit.h"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

namespace kvcs {

Result<OpenFileLimit> RaiseOpenFileLimit() {
  struct rlimit r;
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0)
    return Status(Code::kInternal,
                  std::string("getrlimit(RLIMIT_NOFILE): ") + std::strerror(errno));
  const auto value = [](rlim_t v) {
    return v == RLIM_INFINITY ? kOpenFileLimitCeiling : static_cast<uint64_t>(v);
  };
  OpenFileLimit out{value(r.rlim_cur), value(r.rlim_cur)};
  const uint64_t want = std::min(value(r.rlim_max), kOpenFileLimitCeiling);
  if (out.before >= want) return out;
  r.rlim_cur = static_cast<rlim_t>(want);
  if (::setrlimit(RLIMIT_NOFILE, &r) != 0)
    return Status(Code::kFailedPrecondition, "setrlimit(RLIMIT_NOFILE, " + std::to_string(want) +
                                                 "): " + std::strerror(errno));
  out.now = want;
  return out;
}

}  // namespace kvcs
