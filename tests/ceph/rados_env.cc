#include "rados_env.h"

#include <rados/librados.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

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

namespace {

// Runs one JSON command on the monitor (osd < 0) or on osd.`osd`; returns its output.
Result<std::string> Command(const RadosEnv& env, int osd, const std::string& json) {
  rados_t c = nullptr;
  int r = rados_create(&c, "admin");
  if (r == 0) r = rados_conf_read_file(c, env.ceph_conf.c_str());
  if (r == 0) r = rados_conf_set(c, "rados_mon_op_timeout", "20");
  if (r == 0) r = rados_connect(c);
  std::string out, status;
  if (r == 0) {
    const char* cmd[] = {json.c_str()};
    char *outbuf = nullptr, *outs = nullptr;
    size_t outlen = 0, outslen = 0;
    r = osd < 0 ? rados_mon_command(c, cmd, 1, "", 0, &outbuf, &outlen, &outs, &outslen)
                : rados_osd_command(c, osd, cmd, 1, "", 0, &outbuf, &outlen, &outs, &outslen);
    if (outbuf) out.assign(outbuf, outlen);
    if (outs) status.assign(outs, outslen);
    rados_buffer_free(outbuf);
    rados_buffer_free(outs);
  }
  if (c) rados_shutdown(c);
  if (r < 0) return Status(Code::kUnavailable, json + ": " + std::to_string(r) + " " + status);
  return out;
}

// The unsigned number after `"name":` in `json`.
Result<uint64_t> JsonNumber(const std::string& json, const std::string& name) {
  const std::string k = "\"" + name + "\":";
  size_t p = json.find(k);
  if (p == std::string::npos) return Status(Code::kNotFound, name + " not in the output");
  p += k.size();
  while (p < json.size() && json[p] == ' ') ++p;
  return std::strtoull(json.c_str() + p, nullptr, 10);
}

}  // namespace

Result<OsdBytes> OsdUsage(const RadosEnv& env) {
  KVCS_ASSIGN_OR_RETURN(std::string out,
                        Command(env, 0, R"({"prefix": "perf dump", "logger": "osd"})"));
  OsdBytes b;
  KVCS_ASSIGN_OR_RETURN(b.used, JsonNumber(out, "stat_bytes_used"));
  KVCS_ASSIGN_OR_RETURN(b.total, JsonNumber(out, "stat_bytes"));
  return b;
}

Status SetFullRatios(const RadosEnv& env, double nearfull, double backfillfull, double full) {
  auto set = [&](const char* which, double ratio) -> Status {
    char json[128];
    std::snprintf(json, sizeof json, R"({"prefix": "osd set-%s-ratio", "ratio": %.6f})", which,
                  ratio);
    return Command(env, -1, json).status();
  };
  // In an order that keeps nearfull <= backfillfull <= full at every step.
  const bool lowering = full < 0.95;
  const char* order[3] = {"nearfull", "backfillfull", "full"};
  const double ratios[3] = {nearfull, backfillfull, full};
  for (int i = 0; i < 3; ++i) {
    const int k = lowering ? i : 2 - i;
    KVCS_RETURN_IF_ERROR(set(order[k], ratios[k]));
  }
  return Status::Ok();
}

Status WaitOsdFull(const RadosEnv& env, bool full, double deadline_s) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(deadline_s);
  for (;;) {
    KVCS_ASSIGN_OR_RETURN(std::string out,
                          Command(env, -1, R"({"prefix": "osd dump", "format": "json"})"));
    // The OSD's state list holds "full" while the monitor counts it full.
    if ((out.find("\"full\"") != std::string::npos) == full) return Status::Ok();
    if (std::chrono::steady_clock::now() > end) {
      return Status(Code::kUnavailable, std::string("the OSD did not become ") +
                                            (full ? "full" : "writable again") + " in time");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // polling the monitor
  }
}

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
