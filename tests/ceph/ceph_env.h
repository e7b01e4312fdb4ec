// The one-node Ceph radosgw that the CTest fixture (scripts/ceph-fixture.sh) started for these
// tests: where it listens, the credentials the fixture created, and how to kill and restart
// radosgw for the fault tests. Not thread-safe (tests call it from their main thread).
//
// The fixture passes KVCS_CEPH_DIR; the endpoint is read from $KVCS_CEPH_DIR/rgw.port. When it is
// missing the tests FAIL (never skip): CI must not pass without a real radosgw.
#ifndef KVCS_TESTS_CEPH_CEPH_ENV_H_
#define KVCS_TESTS_CEPH_CEPH_ENV_H_

#include <cstdint>
#include <string>

#include "s3client/backend_store.h"
#include "s3client/s3_client.h"

namespace kvcs::ceph_test {

// The main S3 test user scripts/ceph-fixture.sh creates (the one Ceph's vstart.sh creates).
inline constexpr char kAccessKey[] = "0555b35654ad1656d804";
inline constexpr char kSecretKey[] = "h7GhxuBLTrlhVUyxSPUKUV8r/2EI4ngqJxD7iBdBYLhwluN30JaT3Q==";

struct CephEnv {
  std::string dir;
  uint16_t port = 0;
  std::string endpoint;  // http://127.0.0.1:port
};

// Reads the fixture's environment; on failure returns a Status saying what is missing.
Result<CephEnv> LoadCephEnv();

// Client options for the radosgw (short retry policy so fault tests stay quick).
s3client::ClientOptions RgwClientOptions(const CephEnv& env);

// A bucket name unique to this process and `tag` (tests share one radosgw).
std::string UniqueBucket(const std::string& tag);

// kill -9 radosgw (pid from $dir/rgw.pid) and wait until it is gone.
Status KillRgw(const CephEnv& env);
// Starts radosgw again (`scripts/ceph-fixture.sh start-rgw`, the fixture's own command) and waits,
// up to `timeout_s`, until GET http://127.0.0.1:port/ answers.
Status StartRgw(const CephEnv& env, int timeout_s = 60);
// True when GET / answers (any HTTP status).
bool RgwAnswers(const CephEnv& env);

}  // namespace kvcs::ceph_test

#endif  // KVCS_TESTS_CEPH_CEPH_ENV_H_
