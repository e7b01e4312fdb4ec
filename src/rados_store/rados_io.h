// RadosIo: one connection to a Ceph cluster (librados, the C API) and one I/O context on the
// pool and namespace the RADOS backend keeps its objects in, with the few synchronous helpers the
// store needs (compound write ops, omap reads, removes) and the mapping of librados's negative
// errno values to typed store errors. docs/protocols/rados-backend.md.
//
// Every write op is sent with LIBRADOS_OPERATION_FULL_TRY: on a full pool (or one over its quota)
// librados returns -ENOSPC / -EDQUOT at once instead of queueing the write until space appears,
// so a PUT to a full pool is refused with a clear error. Every operation is bounded by
// rados_osd_op_timeout / rados_mon_op_timeout (op_timeout_s): a stopped OSD makes requests fail
// with kUnavailable after that long instead of hanging (an OSD back sooner lets them complete).
//
// Thread-safety: all methods are thread-safe (librados's ioctx is).
#ifndef KVCS_RADOS_STORE_RADOS_IO_H_
#define KVCS_RADOS_STORE_RADOS_IO_H_

#include <rados/librados.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "store/object_store.h"

namespace kvcs::rados_store {

struct RadosConnectOptions {
  std::string pool;                 // required; must exist
  std::string rados_namespace;      // empty: the pool's default namespace
  std::string ceph_conf;            // ceph.conf path (mon_host, auth); required
  std::string keyring;              // cephx keyring path; empty: what ceph.conf says (or none)
  std::string client_id = "admin";  // the cephx user is client.<client_id>
  int op_timeout_s = 30;            // rados_osd_op_timeout and rados_mon_op_timeout
};

// librados's -errno `err` as a store failure: -ENOENT is `if_missing`, -ENOSPC/-EDQUOT a full
// pool (kResourceExhausted), -ETIMEDOUT and friends kUnavailable, everything else kIo.
Status RadosError(int err, const std::string& what,
                  store::StoreError if_missing = store::StoreError::kNoSuchKey);
// A failure with StoreError `e` as its detail.
Status StoreErr(Code code, store::StoreError e, std::string message);

// RAII for librados write and read operations.
struct WriteOp {
  WriteOp() : op(rados_create_write_op()) {}
  ~WriteOp() { rados_release_write_op(op); }
  WriteOp(const WriteOp&) = delete;
  WriteOp& operator=(const WriteOp&) = delete;
  rados_write_op_t op;
};
struct ReadOp {
  ReadOp() : op(rados_create_read_op()) {}
  ~ReadOp() { rados_release_read_op(op); }
  ReadOp(const ReadOp&) = delete;
  ReadOp& operator=(const ReadOp&) = delete;
  rados_read_op_t op;
};
// One librados completion (no callbacks: waited for).
struct Completion {
  Completion() { rados_aio_create_completion2(nullptr, nullptr, &c); }
  ~Completion() { rados_aio_release(c); }
  Completion(const Completion&) = delete;
  Completion& operator=(const Completion&) = delete;
  // Waits and returns the operation's return value (>= 0 or -errno).
  int Wait() {
    rados_aio_wait_for_complete(c);
    return rados_aio_get_return_value(c);
  }
  rados_completion_t c = nullptr;
};

// One page of omap entries in key order.
struct OmapPage {
  std::vector<std::pair<std::string, std::string>> entries;
  bool more = false;
};

class RadosIo {
 public:
  // Connects (reads ceph_conf, applies keyring and timeouts) and opens the pool; a missing pool
  // fails with kNotFound naming it.
  static Result<std::unique_ptr<RadosIo>> Connect(const RadosConnectOptions& options);
  ~RadosIo();
  RadosIo(const RadosIo&) = delete;
  RadosIo& operator=(const RadosIo&) = delete;

  rados_ioctx_t ioctx() const { return io_; }
  const RadosConnectOptions& options() const { return options_; }

  // Runs `op` on `oid` (FULL_TRY); returns 0 or -errno.
  int Write(WriteOp& op, const std::string& oid);
  // Starts `op` on `oid` asynchronously (FULL_TRY); returns 0 or -errno.
  int AioWrite(WriteOp& op, const std::string& oid, Completion& c);
  int Read(ReadOp& op, const std::string& oid);
  int AioRead(ReadOp& op, const std::string& oid, Completion& c);

  // The omap value of `key` in `oid`: nullopt when the key (or the object) is absent.
  Result<std::optional<std::string>> OmapGet(const std::string& oid, std::string_view key,
                                             store::StoreError if_missing_object);
  // Sets `key` of `oid` to `value` (empty: removes it) in one op, only if its value is
  // `expected` now (empty: the key is absent). Returns 0, -ECANCELED when it is not, or -errno.
  int OmapCompareAndSet(const std::string& oid, std::string_view key, std::string_view expected,
                        std::string_view value);
  // Up to `max` entries of `oid` after `start_after` whose keys begin with `prefix`.
  Result<OmapPage> OmapList(const std::string& oid, const std::string& start_after,
                            const std::string& prefix, uint64_t max,
                            store::StoreError if_missing_object);
  // Removes the objects (best effort, concurrently, FULL_FORCE: also on a full pool; a missing
  // one is fine). Returns the first failure other than -ENOENT.
  Status RemoveAll(const std::vector<std::string>& oids);

 private:
  RadosIo() = default;
  RadosConnectOptions options_;
  rados_t cluster_ = nullptr;
  rados_ioctx_t io_ = nullptr;
};

// Collects the entries of a finished omap read (rados_read_op_omap_get_vals2 / _by_keys2) and
// releases the iterator.
std::vector<std::pair<std::string, std::string>> DrainOmap(rados_omap_iter_t it);

}  // namespace kvcs::rados_store

#endif  // KVCS_RADOS_STORE_RADOS_IO_H_
