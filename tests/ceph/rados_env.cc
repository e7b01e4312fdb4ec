#include "rados_env.h"

#include <rados/librados.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace kvcs::ceph_test {

Result<RadosEnv> LoadRadosEnv() {
  const char* dir = std::getenv("KVCS_CEPH_DIR");
  if (dir == nullptr || *dir == '\0') {
    return Status(Code::kFailedPrecondition,
                  "KVCS_CEPH_DIR is not set: run these tests through ctest (the ceph_up fixture "
                  "starts Ceph with scripts/ceph-fixture.sh)");
  }
  RadosEnv env{dir, std::string(dir) + "/ceph.conf"};
  if (!std::filesystem::exists(env.ceph_conf)) {
    return Status(Code::kFailedPrecondition,
                  "no Ceph: " + env.ceph_conf +
                      " is missing. Did ceph_up fail? Install ceph-mon ceph-osd ceph-common "
                      "uuid-runtime (KVCS_BOOTSTRAP_CEPH=1 scripts/bootstrap.sh)");
  }
  static bool pool_made = false;
  if (!pool_made) {
    rados_t c = nullptr;
    int r = rados_create(&c, "admin");
    if (r == 0) r = rados_conf_read_file(c, env.ceph_conf.c_str());
    if (r == 0) r = rados_connect(c);
    if (r == 0) {
      r = rados_pool_create(c, kRadosTestPool);
      if (r == -EEXIST) r = 0;
    }
    if (c) rados_shutdown(c);
    if (r < 0)
      return Status(Code::kUnavailable, "cannot create the test pool: " + std::to_string(r));
    pool_made = true;
  }
  return env;
}

std::string UniqueNamespace(const std::string& tag) {
  static int counter = 0;
  return tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
}

rados_store::RadosStoreOptions RadosTestOptions(const RadosEnv& env, const std::string& ns) {
  rados_store::RadosStoreOptions o;
  o.connect.pool = kRadosTestPool;
  o.connect.rados_namespace = ns;
  o.connect.ceph_conf = env.ceph_conf;
  o.connect.op_timeout_s = 10;
  return o;
}

namespace {
Status SignalOsd(const RadosEnv& env, int sig) {
  std::ifstream in(env.dir + "/osd.pid");
  long pid = 0;
  if (!(in >> pid) || pid <= 0)
    return Status(Code::kFailedPrecondition, "no osd.pid in " + env.dir);
  if (::kill(static_cast<pid_t>(pid), sig) != 0) return IoError("signalling the OSD failed");
  return Status::Ok();
}
}  // namespace

Status PauseOsd(const RadosEnv& env) { return SignalOsd(env, SIGSTOP); }
Status ResumeOsd(const RadosEnv& env) { return SignalOsd(env, SIGCONT); }

std::vector<std::string> ObjectsIn(rados_store::RadosIo& io) {
  std::vector<std::string> out;
  rados_list_ctx_t ctx = nullptr;
  if (rados_nobjects_list_open(io.ioctx(), &ctx) < 0) return out;
  const char* entry = nullptr;
  while (rados_nobjects_list_next(ctx, &entry, nullptr, nullptr) == 0) out.emplace_back(entry);
  rados_nobjects_list_close(ctx);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace kvcs::ceph_test
