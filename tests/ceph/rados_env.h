// The one-node Ceph the CTest fixture (scripts/ceph-fixture.sh) started, as the RADOS backend's
// tests use it: its ceph.conf ($KVCS_CEPH_DIR/ceph.conf; no cephx), the test pool (created on
// first use) and a RADOS namespace per store under test, so tests never see each other's objects.
// When KVCS_CEPH_DIR or its ceph.conf is missing the tests FAIL (never skip). Not thread-safe.
#ifndef KVCS_TESTS_CEPH_RADOS_ENV_H_
#define KVCS_TESTS_CEPH_RADOS_ENV_H_

#include <cstdint>
#include <string>
#include <vector>

#include "rados_store/rados_store.h"

namespace kvcs::ceph_test {

// The pool every RADOS backend test uses (namespaces keep them apart).
inline constexpr char kRadosTestPool[] = "kvcs-rados-test";

struct RadosEnv {
  std::string dir;
  std::string ceph_conf;
};

// Reads $KVCS_CEPH_DIR and makes sure kRadosTestPool exists.
Result<RadosEnv> LoadRadosEnv();
// A namespace unique to this process and `tag`.
std::string UniqueNamespace(const std::string& tag);
// Store options on the test pool in namespace `ns` (short op timeout so fault tests stay quick).
rados_store::RadosStoreOptions RadosTestOptions(const RadosEnv& env, const std::string& ns);
// SIGSTOP / SIGCONT the fixture's OSD (pid from $dir/osd.pid): a stopped OSD answers nothing.
Status PauseOsd(const RadosEnv& env);
Status ResumeOsd(const RadosEnv& env);
// The fixture's OSD as its statfs sees it (`perf dump`): bytes used and in all.
struct OsdBytes {
  uint64_t used = 0, total = 0;
};
Result<OsdBytes> OsdUsage(const RadosEnv& env);
// `ceph osd set-nearfull-ratio` / `set-backfillfull-ratio` / `set-full-ratio` (the monitor's
// thresholds of a full OSD; the fixture's are Ceph's defaults, 0.85 / 0.90 / 0.95).
Status SetFullRatios(const RadosEnv& env, double nearfull, double backfillfull, double full);
// Polls the OSD map until the OSD's "full" state is `full` (true) or not (false); kUnavailable
// after `deadline_s`.
Status WaitOsdFull(const RadosEnv& env, bool full, double deadline_s);
// The RADOS objects in namespace `ns` of the test pool, sorted.
std::vector<std::string> ObjectsIn(rados_store::RadosIo& io);

}  // namespace kvcs::ceph_test

#endif  // KVCS_TESTS_CEPH_RADOS_ENV_H_
