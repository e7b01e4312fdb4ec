#include "ceph_env.h"

#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

namespace kvcs::ceph_test {

Result<CephEnv> LoadCephEnv() {
  const char* dir = std::getenv("KVCS_CEPH_DIR");
  if (dir == nullptr || *dir == '\0') {
    return Status(Code::kFailedPrecondition,
                  "KVCS_CEPH_DIR is not set: run these tests through ctest (the ceph_up fixture "
                  "starts radosgw with scripts/ceph-fixture.sh)");
  }
  CephEnv env;
  env.dir = dir;
  std::ifstream in(env.dir + "/rgw.port");
  int port = 0;
  if (!(in >> port) || port <= 0 || port > 65535) {
    return Status(Code::kFailedPrecondition,
                  "no radosgw: " + env.dir +
                      "/rgw.port is missing. Did ceph_up fail? Install "
                      "ceph-mon ceph-osd radosgw ceph-common uuid-runtime (KVCS_BOOTSTRAP_CEPH=1 "
                      "scripts/bootstrap.sh)");
  }
  env.port = static_cast<uint16_t>(port);
  env.endpoint = "http://127.0.0.1:" + std::to_string(port);
  return env;
}

s3client::ClientOptions RgwClientOptions(const CephEnv& env) {
  s3client::ClientOptions o;
  o.endpoint = env.endpoint;
  o.credentials.access_key = kAccessKey;
  o.credentials.secret_key = kSecretKey;
  o.credentials.region = "us-east-1";
  o.retry.max_attempts = 8;
  o.retry.base_backoff = std::chrono::milliseconds(50);
  o.retry.max_backoff = std::chrono::milliseconds(1000);
  o.retry.attempt_timeout = std::chrono::milliseconds(10000);
  o.retry.total_deadline = std::chrono::milliseconds(30000);
  return o;
}

std::string UniqueBucket(const std::string& tag) {
  static int counter = 0;
  return "kvcs-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
}

namespace {
pid_t ReadPid(const CephEnv& env) {
  std::ifstream in(env.dir + "/rgw.pid");
  long pid = 0;
  in >> pid;
  return static_cast<pid_t>(pid);
}
}  // namespace

Status KillRgw(const CephEnv& env) {
  pid_t pid = ReadPid(env);
  if (pid <= 0) return Status(Code::kFailedPrecondition, "no rgw.pid in " + env.dir);
  if (::kill(pid, SIGKILL) != 0) return IoError("kill radosgw failed");
  // The fixture's radosgw is not our child: poll until the pid is gone (bounded).
  for (int i = 0; i < 1000 && ::kill(pid, 0) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (::kill(pid, 0) == 0) return IoError("radosgw survived SIGKILL for 10 s");
  return Status::Ok();
}

bool RgwAnswers(const CephEnv& env) {
  std::string cmd =
      "curl -s -o /dev/null --max-time 2 http://127.0.0.1:" + std::to_string(env.port) + "/";
  return std::system(cmd.c_str()) == 0;
}

Status StartRgw(const CephEnv& env, int timeout_s) {
  // The fixture script starts radosgw the way `up` did and waits until it answers.
  std::string cmd = "KVCS_CEPH_TIMEOUT=" + std::to_string(timeout_s) +
                    " '" KVCS_CEPH_FIXTURE "' start-rgw '" + env.dir + "'";
  if (std::system(cmd.c_str()) != 0) {
    return Status(Code::kUnavailable, "restarting radosgw failed (its reason is above): " + cmd);
  }
  if (!RgwAnswers(env)) return Status(Code::kUnavailable, "radosgw started but does not answer");
  return Status::Ok();
}

}  // namespace kvcs::ceph_test
