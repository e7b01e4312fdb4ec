#include "rados_store/rados_io.h"

#include <cerrno>
#include <cstring>
#include <deque>

namespace kvcs::rados_store {

using store::StoreError;

Status StoreErr(Code code, StoreError e, std::string message) {
  return Status(code, std::move(message), static_cast<int>(e));
}

Status RadosError(int err, const std::string& what, StoreError if_missing) {
  const int e = err < 0 ? -err : err;
  std::string m = "rados: " + what + ": " + std::strerror(e);
  switch (e) {
    case ENOENT:
      return StoreErr(Code::kNotFound, if_missing, std::move(m));
    case ENOSPC:
    case EDQUOT:
      return StoreErr(Code::kResourceExhausted, StoreError::kInsufficientStorage,
                      std::move(m) + " (the pool is full or over its quota)");
    case ETIMEDOUT:
    case ESHUTDOWN:
    case ENOTCONN:
    case ECONNREFUSED:
    case EAGAIN:
      return StoreErr(Code::kUnavailable, StoreError::kIo, std::move(m));
    default:
      return StoreErr(Code::kIoError, StoreError::kIo, std::move(m));
  }
}

Result<std::unique_ptr<RadosIo>> RadosIo::Connect(const RadosConnectOptions& o) {
  if (o.pool.empty()) return InvalidArgument("the rados backend needs a pool");
  if (o.ceph_conf.empty()) return InvalidArgument("the rados backend needs a ceph.conf path");
  if (o.op_timeout_s < 1 || o.op_timeout_s > 3600) {
    return InvalidArgument("rados op timeout must be 1..3600 s");
  }
  std::unique_ptr<RadosIo> io(new RadosIo());
  io->options_ = o;
  int r = rados_create(&io->cluster_, o.client_id.empty() ? nullptr : o.client_id.c_str());
  if (r < 0) return RadosError(r, "rados_create");
  r = rados_conf_read_file(io->cluster_, o.ceph_conf.c_str());
  if (r < 0) return RadosError(r, "reading " + o.ceph_conf, StoreError::kIo);
  if (!o.keyring.empty()) {
    r = rados_conf_set(io->cluster_, "keyring", o.keyring.c_str());
    if (r < 0) return RadosError(r, "keyring " + o.keyring, StoreError::kIo);
  }
  const std::string t = std::to_string(o.op_timeout_s);
  for (const char* name :
       {"rados_osd_op_timeout", "rados_mon_op_timeout", "client_mount_timeout"}) {
    r = rados_conf_set(io->cluster_, name, t.c_str());
    if (r < 0) return RadosError(r, std::string("setting ") + name, StoreError::kIo);
  }
  r = rados_connect(io->cluster_);
  if (r < 0) {
    rados_shutdown(io->cluster_);
    io->cluster_ = nullptr;
    Status s = RadosError(r, "connecting with " + o.ceph_conf, StoreError::kIo);
    return Status(Code::kUnavailable, s.message(), s.detail());
  }
  r = rados_ioctx_create(io->cluster_, o.pool.c_str(), &io->io_);
  if (r < 0) {
    if (r == -ENOENT) return NotFound("rados: no pool named " + o.pool);
    return RadosError(r, "opening pool " + o.pool, StoreError::kIo);
  }
  rados_ioctx_set_namespace(io->io_, o.rados_namespace.c_str());
  return io;
}

RadosIo::~RadosIo() {
  if (io_) rados_ioctx_destroy(io_);
  if (cluster_) rados_shutdown(cluster_);
}

int RadosIo::Write(WriteOp& op, const std::string& oid) {
  return rados_write_op_operate2(op.op, io_, oid.c_str(), nullptr, LIBRADOS_OPERATION_FULL_TRY);
}

int RadosIo::AioWrite(WriteOp& op, const std::string& oid, Completion& c) {
  return rados_aio_write_op_operate(op.op, io_, c.c, oid.c_str(), nullptr,
                                    LIBRADOS_OPERATION_FULL_TRY);
}

int RadosIo::Read(ReadOp& op, const std::string& oid) {
  return rados_read_op_operate(op.op, io_, oid.c_str(), 0);
}

int RadosIo::AioRead(ReadOp& op, const std::string& oid, Completion& c) {
  return rados_aio_read_op_operate(op.op, io_, c.c, oid.c_str(), 0);
}

std::vector<std::pair<std::string, std::string>> DrainOmap(rados_omap_iter_t it) {
  std::vector<std::pair<std::string, std::string>> out;
  if (it == nullptr) return out;
  for (;;) {
    char *k = nullptr, *v = nullptr;
    size_t kl = 0, vl = 0;
    if (rados_omap_get_next2(it, &k, &v, &kl, &vl) < 0 || k == nullptr) break;
    out.emplace_back(std::string(k, kl), std::string(v ? v : "", v ? vl : 0));
  }
  rados_omap_get_end(it);
  return out;
}

Result<std::optional<std::string>> RadosIo::OmapGet(const std::string& oid, std::string_view key,
                                                    StoreError if_missing_object) {
  ReadOp op;
  const char* keys[] = {key.data()};
  const size_t lens[] = {key.size()};
  rados_omap_iter_t it = nullptr;
  int prval = 0;
  rados_read_op_omap_get_vals_by_keys2(op.op, keys, 1, lens, &it, &prval);
  int r = Read(op, oid);
  if (r < 0 || prval < 0) {
    if (it) rados_omap_get_end(it);
    return RadosError(r < 0 ? r : prval, "omap read of " + oid, if_missing_object);
  }
  auto entries = DrainOmap(it);
  for (auto& [k, v] : entries) {
    if (k == key) return std::optional<std::string>(std::move(v));
  }
  return std::optional<std::string>();
}

int RadosIo::OmapCompareAndSet(const std::string& oid, std::string_view key,
                               std::string_view expected, std::string_view value) {
  WriteOp op;
  int cmp = 0;
  rados_write_op_omap_cmp2(op.op, key.data(), LIBRADOS_CMPXATTR_OP_EQ, expected.data(), key.size(),
                           expected.size(), &cmp);
  const char* keys[] = {key.data()};
  const size_t klens[] = {key.size()};
  if (value.empty()) {
    rados_write_op_omap_rm_keys2(op.op, keys, klens, 1);
  } else {
    const char* vals[] = {value.data()};
    const size_t vlens[] = {value.size()};
    rados_write_op_omap_set2(op.op, keys, vals, klens, vlens, 1);
  }
  return Write(op, oid);
}

Result<OmapPage> RadosIo::OmapList(const std::string& oid, const std::string& start_after,
                                   const std::string& prefix, uint64_t max,
                                   StoreError if_missing_object) {
  ReadOp op;
  rados_omap_iter_t it = nullptr;
  unsigned char more = 0;
  int prval = 0;
  rados_read_op_omap_get_vals2(op.op, start_after.c_str(), prefix.c_str(), max, &it, &more, &prval);
  int r = Read(op, oid);
  if (r < 0 || prval < 0) {
    if (it) rados_omap_get_end(it);
    return RadosError(r < 0 ? r : prval, "omap list of " + oid, if_missing_object);
  }
  OmapPage page;
  page.entries = DrainOmap(it);
  page.more = more != 0;
  return page;
}

Status RadosIo::RemoveAll(const std::vector<std::string>& oids) {
  // At most 64 removes in flight.
  constexpr size_t kWindow = 64;
  Status first;
  std::deque<std::unique_ptr<Completion>> flight;
  auto reap = [&] {
    int r = flight.front()->Wait();
    flight.pop_front();
    if (r < 0 && r != -ENOENT && first.ok()) first = RadosError(r, "remove");
  };
  std::deque<std::unique_ptr<WriteOp>> ops;
  for (const std::string& oid : oids) {
    if (flight.size() >= kWindow) {
      reap();
      ops.pop_front();
    }
    auto c = std::make_unique<Completion>();
    auto op = std::make_unique<WriteOp>();
    rados_write_op_remove(op->op);
    // FULL_FORCE: a remove frees space, so it runs on a full pool too (instead of queueing).
    int r = rados_aio_write_op_operate(op->op, io_, c->c, oid.c_str(), nullptr,
                                       LIBRADOS_OPERATION_FULL_FORCE);
    if (r < 0) {
      if (first.ok()) first = RadosError(r, "remove " + oid);
      continue;
    }
    flight.push_back(std::move(c));
    ops.push_back(std::move(op));
  }
  while (!flight.empty()) reap();
  return first;
}

}  // namespace kvcs::rados_store
