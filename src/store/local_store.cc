#include "store/local_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <tuple>

#include "common/crypto.h"
#include "common/hex.h"
#include "common/log.h"
#include "store/object_file.h"

namespace kvcs::store {
namespace fs = std::filesystem;

namespace {

// Copy/complete/verify buffers: big enough to amortize syscalls, small enough to keep many
// concurrent copies cheap.
constexpr size_t kCopyBufferBytes = 1 << 20;
// Upload ids are 16 random bytes (hex): unguessable and collision-free in practice.
constexpr size_t kUploadIdBytes = 16;
// upload.json / bucket.json are tiny records.
constexpr size_t kMaxRecordFileBytes = 64 * 1024;

Status Err(Code code, StoreError e, std::string message) {
  return Status(code, std::move(message), static_cast<int>(e));
}
Status SysErr(const std::string& what, const std::string& path, int err = errno) {
  return Err(Code::kIoError, StoreError::kIo, what + " " + path + ": " + std::strerror(err));
}
Status NoSuchBucket(std::string_view b) {
  return Err(Code::kNotFound, StoreError::kNoSuchBucket, "no such bucket: " + std::string(b));
}
Status NoSuchKey(std::string_view k) {
  return Err(Code::kNotFound, StoreError::kNoSuchKey, "no such key: " + std::string(k));
}
Status NoSuchUpload(std::string_view id) {
  return Err(Code::kNotFound, StoreError::kNoSuchUpload, "no such upload: " + std::string(id));
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string RandomHex(size_t n) {
  Bytes b(n);
  RandomBytes(b.data(), n);
  return ToHex(b);
}

Status WriteAll(int fd, ByteSpan data, const std::string& path) {
  while (!data.empty()) {
    ssize_t w = ::write(fd, data.data(), data.size());
    if (w < 0) {
      if (errno == EINTR) continue;
      return SysErr("write", path);
    }
    data = data.subspan(static_cast<size_t>(w));
  }
  return Status::Ok();
}

Result<size_t> PreadFull(int fd, uint64_t offset, std::span<uint8_t> out) {
  size_t got = 0;
  while (got < out.size()) {
    ssize_t r = ::pread(fd, out.data() + got, out.size() - got, static_cast<off_t>(offset + got));
    if (r < 0) {
      if (errno == EINTR) continue;
      return SysErr("pread", "fd " + std::to_string(fd));
    }
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return got;
}

Status FsyncPath(const std::string& path, bool sync) {
  if (!sync) return Status::Ok();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return SysErr("open for fsync", path);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return SysErr("fsync", path, err);
  return Status::Ok();
}

Result<std::string> ReadSmallFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return SysErr("open", path);
  std::string out(kMaxRecordFileBytes + 1, '\0');
  auto r = PreadFull(fd, 0, std::span<uint8_t>(reinterpret_cast<uint8_t*>(out.data()), out.size()));
  ::close(fd);
  if (!r.ok()) return r.status();
  if (*r > kMaxRecordFileBytes) {
    return Err(Code::kCorruption, StoreError::kCorrupt, "record file too large: " + path);
  }
  out.resize(*r);
  return out;
}

// Writes `text` to `final_path` atomically: tmp file, fsync, rename, fsync directory.
Status AtomicWriteFile(const std::string& tmp_dir, const std::string& final_path,
                       std::string_view text, bool sync) {
  std::string tmp = tmp_dir + "/" + RandomHex(12) + ".rec";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return SysErr("create", tmp);
  Status s = WriteAll(fd, AsBytes(text), tmp);
  if (s.ok() && sync && ::fsync(fd) != 0) s = SysErr("fsync", tmp);
  ::close(fd);
  if (s.ok() && ::rename(tmp.c_str(), final_path.c_str()) != 0) s = SysErr("rename", tmp);
  if (!s.ok()) {
    ::unlink(tmp.c_str());
    return s;
  }
  return FsyncPath(fs::path(final_path).parent_path().string(), sync);
}

nlohmann::json OptionsToJson(const PutOptions& o) {
  nlohmann::json j;
  j["content_type"] = o.content_type;
  j["content_encoding"] = o.content_encoding;
  j["content_disposition"] = o.content_disposition;
  j["cache_control"] = o.cache_control;
  if (!o.expires.empty()) j["expires"] = o.expires;
  if (!o.acl.empty()) j["acl"] = o.acl;
  nlohmann::json um = nlohmann::json::array();
  for (const auto& [k, v] : o.user_meta) um.push_back({ToHex(AsBytes(k)), ToHex(AsBytes(v))});
  j["user_meta_hex"] = um;
  return j;
}

Result<PutOptions> OptionsFromJson(const nlohmann::json& j) {
  PutOptions o;
  try {
    o.content_type = j.at("content_type").get<std::string>();
    o.content_encoding = j.at("content_encoding").get<std::string>();
    o.content_disposition = j.at("content_disposition").get<std::string>();
    o.cache_control = j.at("cache_control").get<std::string>();
    o.expires = j.value("expires", "");
    o.acl = j.value("acl", "");
    for (const auto& kv : j.at("user_meta_hex")) {
      KVCS_ASSIGN_OR_RETURN(Bytes k, FromHex(kv.at(0).get<std::string>()));
      KVCS_ASSIGN_OR_RETURN(Bytes v, FromHex(kv.at(1).get<std::string>()));
      o.user_meta.emplace_back(std::string(AsStringView(k)), std::string(AsStringView(v)));
    }
  } catch (const nlohmann::json::exception& e) {
    return Err(Code::kCorruption, StoreError::kCorrupt, std::string("bad options: ") + e.what());
  }
  return o;
}

// Smallest string greater than every string with prefix `p` (empty: none).
std::string PrefixSuccessor(std::string p) {
  while (!p.empty()) {
    unsigned char c = static_cast<unsigned char>(p.back());
    if (c != 0xff) {
      p.back() = static_cast<char>(c + 1);
      return p;
    }
    p.pop_back();
  }
  return p;
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

class LocalReader final : public ObjectReader {
 public:
  LocalReader(int fd, ObjectMeta meta) : fd_(fd), meta_(std::move(meta)) {}
  ~LocalReader() override { ::close(fd_); }
  const ObjectMeta& meta() const override { return meta_; }
  Result<size_t> ReadAt(uint64_t offset, std::span<uint8_t> out) const override {
    if (offset >= meta_.size) return size_t{0};
    uint64_t n = std::min<uint64_t>(out.size(), meta_.size - offset);
    return PreadFull(fd_, offset, out.first(static_cast<size_t>(n)));
  }

 private:
  int fd_;
  ObjectMeta meta_;
};

// Opens an object file and verifies its trailer. ENOENT -> kNoSuchKey.
Result<std::shared_ptr<const ObjectReader>> OpenObjectFile(const std::string& path,
                                                           std::string_view key) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NoSuchKey(key);
    return SysErr("open", path);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    Status s = SysErr("fstat", path);
    ::close(fd);
    return s;
  }
  uint64_t file_size = static_cast<uint64_t>(st.st_size);
  auto fail = [&](Status s) -> Result<std::shared_ptr<const ObjectReader>> {
    ::close(fd);
    return s.WithContext(path);
  };
  uint8_t footer[kObjectFooterBytes];
  if (file_size < kObjectFooterBytes) {
    return fail(Err(Code::kCorruption, StoreError::kCorrupt, "object file too short"));
  }
  auto r = PreadFull(fd, file_size - kObjectFooterBytes, footer);
  if (!r.ok()) return fail(r.status());
  auto m = DecodeObjectFooter(ByteSpan(footer, kObjectFooterBytes), file_size);
  if (!m.ok()) return fail(m.status());
  Bytes meta_bytes(*m);
  r = PreadFull(fd, file_size - kObjectFooterBytes - *m, meta_bytes);
  if (!r.ok()) return fail(r.status());
  auto meta = DecodeObjectMeta(meta_bytes, ByteSpan(footer, kObjectFooterBytes), file_size);
  if (!meta.ok()) return fail(meta.status());
  return std::shared_ptr<const ObjectReader>(std::make_shared<LocalReader>(fd, std::move(*meta)));
}

}  // namespace

struct PartRecord {
  PartInfo info;
  Md5 md5{};
  std::optional<Digest> sha256;
};

struct UploadState {
  std::string key;
  PutOptions options;
  int64_t initiated_ms = 0;
  std::map<int, PartRecord> parts;
};

struct BucketState {
  int64_t created_ms = 0;
  std::string owner;  // empty: none recorded
  std::string acl;    // BucketInfo::acl
  std::map<std::string, ObjectMeta> objects;
  std::map<std::string, UploadState> uploads;  // by upload id
};

// A batch of n independent tasks (ReadMany's reads, OpenMany's opens) shared by the caller and
// the pool's workers.
struct PoolBatch {
  size_t n = 0;
  std::function<void(size_t)> task;
  std::atomic<size_t> next{0};
  std::atomic<size_t> done{0};
  std::mutex mu;
  std::condition_variable cv;

  // Claims and runs tasks until none are left.
  void Work() {
    for (;;) {
      size_t i = next.fetch_add(1);
      if (i >= n) return;
      task(i);
      if (done.fetch_add(1) + 1 == n) {
        std::lock_guard<std::mutex> l(mu);
        cv.notify_all();
      }
    }
  }
};

struct LocalStore::Impl {
  std::string root;
  std::string tmp_dir;
  std::string buckets_dir;
  LocalStoreOptions options;
  int removed_temp = 0;
  int corrupt = 0;

  mutable std::mutex mu;
  std::map<std::string, BucketState, std::less<>> buckets;

  // ReadMany pool.
  std::mutex pool_mu;
  std::condition_variable pool_cv;
  std::deque<std::shared_ptr<PoolBatch>> pool_queue;
  bool pool_stop = false;
  std::vector<std::thread> pool_threads;

  ~Impl() {
    {
      std::lock_guard<std::mutex> l(pool_mu);
      pool_stop = true;
    }
    pool_cv.notify_all();
    for (auto& t : pool_threads) t.join();
  }

  // Runs task(0..n-1) on the pool, the caller helping; returns when all have run.
  void RunOnPool(size_t n, std::function<void(size_t)> task) {
    if (n == 0) return;
    auto batch = std::make_shared<PoolBatch>();
    batch->n = n;
    batch->task = std::move(task);
    if (n > 1) {
      {
        std::lock_guard<std::mutex> l(pool_mu);
        pool_queue.push_back(batch);
      }
      pool_cv.notify_all();
    }
    batch->Work();
    std::unique_lock<std::mutex> l(batch->mu);
    batch->cv.wait(l, [&] { return batch->done.load() == n; });
  }

  void PoolLoop() {
    for (;;) {
      std::shared_ptr<PoolBatch> batch;
      {
        std::unique_lock<std::mutex> l(pool_mu);
        pool_cv.wait(l, [&] { return pool_stop || !pool_queue.empty(); });
        if (pool_stop) return;
        batch = pool_queue.front();
        if (batch->next.load() >= batch->n) {
          pool_queue.pop_front();
          continue;
        }
      }
      batch->Work();
      std::lock_guard<std::mutex> l(pool_mu);
      if (!pool_queue.empty() && pool_queue.front() == batch) pool_queue.pop_front();
    }
  }

  std::string BucketDir(std::string_view b) const { return buckets_dir + "/" + std::string(b); }
  std::string ObjectPath(std::string_view b, std::string_view key) const {
    std::string h = ToHex(Sha256::Hash(key));
    return BucketDir(b) + "/obj/" + h.substr(0, 2) + "/" + h;
  }
  std::string UploadDir(std::string_view b, std::string_view id) const {
    return BucketDir(b) + "/mpu/" + std::string(id);
  }
  static std::string PartName(int n) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "part-%05d", n);
    return buf;
  }

  Status LoadBucket(const std::string& name);
  // Renames `tmp` into place as `key`'s new version when `condition` holds against the current
  // version (checked under mu, so the check and the rename are one step).
  Status Publish(const std::string& bucket, const std::string& key, const std::string& tmp,
                 const ObjectMeta& meta, const WriteCondition& condition);
  // Writes bucket.json (creation time, owner, ACL) atomically into `dir`.
  Status WriteBucketRecord(const std::string& dir, const BucketState& b);
  Status PublishPart(const std::string& bucket, const std::string& upload_id, int part,
                     const std::string& tmp, const PartRecord& rec);
  Result<std::unique_ptr<ObjectWriter>> NewWriter(std::string bucket, std::string key,
                                                  PutOptions options, std::string upload_id,
                                                  int part_number);
};

namespace {

// Streams one object or part into a temporary file, hashing as it goes.
class LocalWriter final : public ObjectWriter {
 public:
  LocalWriter(LocalStore::Impl* store, std::string bucket, std::string key, PutOptions options,
              std::string upload_id, int part_number, int fd, std::string tmp)
      : store_(store),
        bucket_(std::move(bucket)),
        key_(std::move(key)),
        options_(std::move(options)),
        upload_id_(std::move(upload_id)),
        part_number_(part_number),
        fd_(fd),
        tmp_(std::move(tmp)) {}
  ~LocalWriter() override {
    if (fd_ >= 0) ::close(fd_);
    if (!published_) ::unlink(tmp_.c_str());
  }

  Status Write(ByteSpan data) override {
    if (committed_) return Status(Code::kFailedPrecondition, "write after commit");
    uint64_t limit = upload_id_.empty() ? kMaxObjectBytes : kMaxPartBytes;
    if (data.size() > limit - n_) {
      return Err(Code::kResourceExhausted, StoreError::kEntityTooLarge, "object too large");
    }
    md5_.Update(data);
    sha_.Update(data);
    n_ += data.size();
    return WriteAll(fd_, data, tmp_);
  }

  Result<ObjectMeta> Commit() override {
    if (committed_) return Status(Code::kFailedPrecondition, "commit called twice");
    committed_ = true;
    if (options_.expected_size && *options_.expected_size != n_) {
      return Err(Code::kInvalidArgument, StoreError::kIncompleteBody,
                 "body has " + std::to_string(n_) + " bytes, expected " +
                     std::to_string(*options_.expected_size));
    }
    Md5 md5 = md5_.Finish();
    Digest sha = sha_.Finish();
    if (options_.expected_md5 && !ConstantTimeEqual(*options_.expected_md5, md5)) {
      return Err(Code::kInvalidArgument, StoreError::kBadDigest,
                 "Content-MD5 does not match the body");
    }
    if (options_.expected_sha256 && !ConstantTimeEqual(*options_.expected_sha256, sha)) {
      return Err(Code::kInvalidArgument, StoreError::kSha256Mismatch,
                 "x-amz-content-sha256 does not match the body");
    }
    ObjectMeta meta;
    meta.key = key_;
    meta.size = n_;
    meta.etag = multipart_etag_.empty() ? ToHex(md5) : multipart_etag_;
    meta.parts_count = parts_count_;
    meta.sha256 = sha;
    meta.content_type =
        options_.content_type.empty() ? "binary/octet-stream" : options_.content_type;
    meta.content_encoding = options_.content_encoding;
    meta.content_disposition = options_.content_disposition;
    meta.cache_control = options_.cache_control;
    meta.expires = options_.expires;
    meta.acl = options_.acl;
    meta.user_meta = options_.user_meta;
    std::sort(meta.user_meta.begin(), meta.user_meta.end());
    meta.last_modified_ms = NowMs();
    KVCS_RETURN_IF_ERROR(WriteAll(fd_, EncodeObjectTrailer(meta), tmp_));
    if (store_->options.sync && ::fsync(fd_) != 0) return SysErr("fsync", tmp_);
    ::close(fd_);
    fd_ = -1;
    if (upload_id_.empty()) {
      KVCS_RETURN_IF_ERROR(store_->Publish(bucket_, key_, tmp_, meta, options_.condition));
    } else {
      PartRecord rec;
      rec.info = {part_number_, n_, meta.etag, meta.last_modified_ms};
      rec.md5 = md5;
      rec.sha256 = sha;
      KVCS_RETURN_IF_ERROR(store_->PublishPart(bucket_, upload_id_, part_number_, tmp_, rec));
    }
    published_ = true;
    return meta;
  }

  uint64_t bytes_written() const override { return n_; }

  // Used by CompleteMultipart: the object's ETag is the multipart ETag, not the MD5.
  void SetMultipart(std::string etag, int parts) {
    multipart_etag_ = std::move(etag);
    parts_count_ = parts;
  }

 private:
  std::string multipart_etag_;
  int parts_count_ = 0;
  LocalStore::Impl* store_;
  std::string bucket_, key_;
  PutOptions options_;
  std::string upload_id_;
  int part_number_;
  int fd_;
  std::string tmp_;
  Md5Hasher md5_;
  Sha256 sha_;
  uint64_t n_ = 0;
  bool committed_ = false;
  bool published_ = false;
};

}  // namespace

Result<std::unique_ptr<ObjectWriter>> LocalStore::Impl::NewWriter(std::string bucket,
                                                                  std::string key,
                                                                  PutOptions options,
                                                                  std::string upload_id,
                                                                  int part_number) {
  std::string tmp = tmp_dir + "/" + RandomHex(12) + ".obj";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return SysErr("create", tmp);
  return std::unique_ptr<ObjectWriter>(
      std::make_unique<LocalWriter>(this, std::move(bucket), std::move(key), std::move(options),
                                    std::move(upload_id), part_number, fd, std::move(tmp)));
}

Status LocalStore::Impl::Publish(const std::string& bucket, const std::string& key,
                                 const std::string& tmp, const ObjectMeta& meta,
                                 const WriteCondition& condition) {
  std::string path = ObjectPath(bucket, key);
  std::string dir = fs::path(path).parent_path().string();
  {
    std::lock_guard<std::mutex> l(mu);
    auto it = buckets.find(bucket);
    if (it == buckets.end()) return NoSuchBucket(bucket);
    if (!condition.empty()) {
      auto cur = it->second.objects.find(key);
      KVCS_RETURN_IF_ERROR(
          CheckWriteCondition(condition, cur == it->second.objects.end() ? nullptr : &cur->second));
    }
    if (::mkdir(dir.c_str(), 0755) == 0) {
      KVCS_RETURN_IF_ERROR(FsyncPath(BucketDir(bucket) + "/obj", options.sync));
    } else if (errno != EEXIST) {
      return SysErr("mkdir", dir);
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) return SysErr("rename", tmp);
    it->second.objects[key] = meta;
  }
  return FsyncPath(dir, options.sync);
}

Status LocalStore::Impl::PublishPart(const std::string& bucket, const std::string& upload_id,
                                     int part, const std::string& tmp, const PartRecord& rec) {
  std::string dir = UploadDir(bucket, upload_id);
  {
    std::lock_guard<std::mutex> l(mu);
    auto it = buckets.find(bucket);
    if (it == buckets.end()) return NoSuchBucket(bucket);
    auto up = it->second.uploads.find(upload_id);
    if (up == it->second.uploads.end()) return NoSuchUpload(upload_id);
    std::string path = dir + "/" + PartName(part);
    if (::rename(tmp.c_str(), path.c_str()) != 0) return SysErr("rename", tmp);
    up->second.parts[part] = rec;
  }
  return FsyncPath(dir, options.sync);
}

Status LocalStore::Impl::LoadBucket(const std::string& name) {
  std::string dir = BucketDir(name);
  BucketState b;
  auto rec = ReadSmallFile(dir + "/bucket.json");
  if (rec.ok()) {
    auto j = nlohmann::json::parse(*rec, nullptr, false);
    if (j.is_object()) {
      b.created_ms = j.value("created_ms", int64_t{0});
      if (auto o = j.find("owner"); o != j.end() && o->is_string()) b.owner = o->get<std::string>();
      if (auto a = j.find("acl"); a != j.end() && a->is_string()) b.acl = a->get<std::string>();
    }
  }
  std::error_code ec;
  for (const auto& shard : fs::directory_iterator(dir + "/obj", ec)) {
    std::error_code ec2;
    for (const auto& f : fs::directory_iterator(shard.path(), ec2)) {
      auto r = OpenObjectFile(f.path().string(), "");
      if (!r.ok()) {
        ++corrupt;
        KVCS_LOG_WARN("store: skipping damaged object file {}: {}", f.path().string(),
                      r.status().ToString());
        continue;
      }
      const ObjectMeta& m = (*r)->meta();
      if (ToHex(Sha256::Hash(m.key)) != f.path().filename().string()) {
        ++corrupt;
        KVCS_LOG_WARN("store: object file {} names another key", f.path().string());
        continue;
      }
      b.objects[m.key] = m;
    }
  }
  for (const auto& up : fs::directory_iterator(dir + "/mpu", ec)) {
    std::string id = up.path().filename().string();
    auto urec = ReadSmallFile(up.path().string() + "/upload.json");
    nlohmann::json j = urec.ok() ? nlohmann::json::parse(*urec, nullptr, false) : nlohmann::json();
    if (!j.is_object() || !j.contains("key_hex") || !j.contains("options")) {
      // Completed or aborted (upload.json is removed first): finish the cleanup.
      fs::remove_all(up.path(), ec);
      continue;
    }
    UploadState u;
    auto key = FromHex(j["key_hex"].get<std::string>());
    auto opts = OptionsFromJson(j["options"]);
    if (!key.ok() || !opts.ok()) {
      ++corrupt;
      continue;
    }
    u.key = std::string(AsStringView(*key));
    u.options = std::move(*opts);
    u.initiated_ms = j.value("initiated_ms", int64_t{0});
    std::error_code ec2;
    for (const auto& f : fs::directory_iterator(up.path(), ec2)) {
      std::string fname = f.path().filename().string();
      if (fname.rfind("part-", 0) != 0) continue;
      auto r = OpenObjectFile(f.path().string(), "");
      if (!r.ok()) {
        ++corrupt;
        continue;
      }
      int n = std::atoi(fname.c_str() + 5);
      const ObjectMeta& m = (*r)->meta();
      PartRecord pr;
      pr.info = {n, m.size, m.etag, m.last_modified_ms};
      auto md5 = FromHexFixed<16>(m.etag);
      if (!md5.ok()) continue;
      pr.md5 = *md5;
      pr.sha256 = m.sha256;
      u.parts[n] = pr;
    }
    b.uploads[id] = std::move(u);
  }
  buckets[name] = std::move(b);
  return Status::Ok();
}

LocalStore::LocalStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LocalStore::~LocalStore() = default;
int LocalStore::removed_temp_files() const { return impl_->removed_temp; }
int LocalStore::corrupt_files() const { return impl_->corrupt; }

Result<std::unique_ptr<LocalStore>> LocalStore::Open(const std::string& root,
                                                     LocalStoreOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->root = root;
  impl->tmp_dir = root + "/tmp";
  impl->buckets_dir = root + "/buckets";
  impl->options = options;
  std::error_code ec;
  fs::create_directories(impl->tmp_dir, ec);
  if (ec) return SysErr("create", impl->tmp_dir, ec.value());
  fs::create_directories(impl->buckets_dir, ec);
  if (ec) return SysErr("create", impl->buckets_dir, ec.value());
  for (const auto& e : fs::directory_iterator(impl->tmp_dir, ec)) {
    std::error_code ec2;
    fs::remove_all(e.path(), ec2);
    ++impl->removed_temp;
  }
  if (impl->removed_temp > 0) {
    KVCS_LOG_INFO("store: removed {} leftover temporary files", impl->removed_temp);
  }
  for (const auto& e : fs::directory_iterator(impl->buckets_dir, ec)) {
    if (!e.is_directory()) continue;
    std::string name = e.path().filename().string();
    if (!ValidateBucketName(name).ok()) continue;
    KVCS_RETURN_IF_ERROR(impl->LoadBucket(name));
  }
  if (ec) return SysErr("scan", root, ec.value());
  int threads = std::max(1, options.read_threads);
  for (int i = 0; i < threads; ++i) {
    impl->pool_threads.emplace_back([p = impl.get()] { p->PoolLoop(); });
  }
  return std::unique_ptr<LocalStore>(new LocalStore(std::move(impl)));
}

Status LocalStore::CreateBucket(std::string_view bucket) { return CreateBucketOwnedBy(bucket, ""); }

Status LocalStore::CreateBucketOwnedBy(std::string_view bucket, std::string_view owner) {
  KVCS_RETURN_IF_ERROR(ValidateBucketName(bucket));
  if (owner.size() > 128) {
    return Err(Code::kInvalidArgument, StoreError::kInvalidArgument, "owner over 128 bytes");
  }
  std::lock_guard<std::mutex> l(impl_->mu);
  if (impl_->buckets.count(bucket)) {
    return Err(Code::kAlreadyExists, StoreError::kBucketAlreadyExists,
               "bucket exists: " + std::string(bucket));
  }
  // Build the bucket directory under tmp/ and rename it into place: all or nothing.
  std::string tmp = impl_->tmp_dir + "/" + RandomHex(12) + ".bucket";
  if (::mkdir(tmp.c_str(), 0755) != 0) return SysErr("mkdir", tmp);
  int64_t now = NowMs();
  Status s = Status::Ok();
  if (::mkdir((tmp + "/obj").c_str(), 0755) != 0 || ::mkdir((tmp + "/mpu").c_str(), 0755) != 0) {
    s = SysErr("mkdir", tmp);
  }
  BucketState fresh;
  fresh.created_ms = now;
  fresh.owner = std::string(owner);
  if (s.ok()) s = impl_->WriteBucketRecord(tmp, fresh);
  if (s.ok()) s = FsyncPath(tmp, impl_->options.sync);
  std::string final_dir = impl_->BucketDir(bucket);
  if (s.ok() && ::rename(tmp.c_str(), final_dir.c_str()) != 0) s = SysErr("rename", tmp);
  if (!s.ok()) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    return s;
  }
  KVCS_RETURN_IF_ERROR(FsyncPath(impl_->buckets_dir, impl_->options.sync));
  impl_->buckets[std::string(bucket)] = std::move(fresh);
  return Status::Ok();
}

Status LocalStore::Impl::WriteBucketRecord(const std::string& dir, const BucketState& b) {
  nlohmann::json j;
  j["created_ms"] = b.created_ms;
  if (!b.owner.empty()) j["owner"] = b.owner;
  if (!b.acl.empty()) j["acl"] = b.acl;
  return AtomicWriteFile(tmp_dir, dir + "/bucket.json", j.dump(), options.sync);
}

Status LocalStore::SetBucketAcl(std::string_view bucket, std::string_view acl) {
  std::lock_guard<std::mutex> l(impl_->mu);  // one bucket.json writer at a time
  auto it = impl_->buckets.find(bucket);
  if (it == impl_->buckets.end()) return NoSuchBucket(bucket);
  BucketState changed;
  changed.created_ms = it->second.created_ms;
  changed.owner = it->second.owner;
  changed.acl = std::string(acl);
  KVCS_RETURN_IF_ERROR(impl_->WriteBucketRecord(impl_->BucketDir(bucket), changed));
  it->second.acl = changed.acl;
  return Status::Ok();
}

Status LocalStore::DeleteBucket(std::string_view bucket) {
  std::lock_guard<std::mutex> l(impl_->mu);
  auto it = impl_->buckets.find(bucket);
  if (it == impl_->buckets.end()) return NoSuchBucket(bucket);
  if (!it->second.objects.empty()) {
    return Err(Code::kFailedPrecondition, StoreError::kBucketNotEmpty,
               "bucket is not empty: " + std::string(bucket));
  }
  // Move the directory out of buckets/ first (atomic), then delete it at leisure.
  std::string tmp = impl_->tmp_dir + "/" + RandomHex(12) + ".deleted";
  std::string dir = impl_->BucketDir(bucket);
  if (::rename(dir.c_str(), tmp.c_str()) != 0) return SysErr("rename", dir);
  impl_->buckets.erase(it);
  KVCS_RETURN_IF_ERROR(FsyncPath(impl_->buckets_dir, impl_->options.sync));
  std::error_code ec;
  fs::remove_all(tmp, ec);
  return Status::Ok();
}

Result<BucketInfo> LocalStore::HeadBucket(std::string_view bucket) {
  std::lock_guard<std::mutex> l(impl_->mu);
  auto it = impl_->buckets.find(bucket);
  if (it == impl_->buckets.end()) return NoSuchBucket(bucket);
  return BucketInfo{std::string(bucket), it->second.created_ms, it->second.owner, it->second.acl};
}

Result<std::vector<BucketInfo>> LocalStore::ListBuckets() {
  std::lock_guard<std::mutex> l(impl_->mu);
  std::vector<BucketInfo> out;
  for (const auto& [name, b] : impl_->buckets) out.push_back({name, b.created_ms, b.owner, b.acl});
  return out;
}

Result<std::unique_ptr<ObjectWriter>> LocalStore::Put(std::string_view bucket, std::string_view key,
                                                      PutOptions options) {
  KVCS_RETURN_IF_ERROR(ValidateKey(key));
  size_t meta_bytes = 0;
  for (const auto& [k, v] : options.user_meta) meta_bytes += k.size() + v.size();
  if (meta_bytes > kMaxUserMetadataBytes) {
    return Err(Code::kInvalidArgument, StoreError::kMetadataTooLarge,
               "user metadata exceeds 2 KiB");
  }
  if (options.condition.empty()) {
    KVCS_RETURN_IF_ERROR(HeadBucket(bucket).status());
  } else {
    // Refuse early, before the body is sent; Publish checks again atomically at commit.
    std::lock_guard<std::mutex> l(impl_->mu);
    auto it = impl_->buckets.find(bucket);
    if (it == impl_->buckets.end()) return NoSuchBucket(bucket);
    auto cur = it->second.objects.find(std::string(key));
    KVCS_RETURN_IF_ERROR(CheckWriteCondition(
        options.condition, cur == it->second.objects.end() ? nullptr : &cur->second));
  }
  return impl_->NewWriter(std::string(bucket), std::string(key), std::move(options), "", 0);
}

Result<std::shared_ptr<const ObjectReader>> LocalStore::Open(std::string_view bucket,
                                                             std::string_view key) {
  KVCS_RETURN_IF_ERROR(ValidateKey(key));
  KVCS_RETURN_IF_ERROR(HeadBucket(bucket).status());
  return OpenObjectFile(impl_->ObjectPath(bucket, key), key);
}

Result<ObjectMeta> LocalStore::Head(std::string_view bucket, std::string_view key) {
  KVCS_RETURN_IF_ERROR(ValidateKey(key));
  std::lock_guard<std::mutex> l(impl_->mu);
  auto it = impl_->buckets.find(bucket);
  if (it == impl_->buckets.end()) return NoSuchBucket(bucket);
  auto o = it->second.objects.find(std::string(key));
  if (o == it->second.objects.end()) return NoSuchKey(key);
  return o->second;
}

Status LocalStore::SetObjectAcl(std::string_view bucket, std::string_view key,
                                std::string_view acl) {
  // A new version of the file with the same bytes and metadata but the ACL, published only if
  // the key still holds the version read (else kPreconditionFailed: a PUT won the race).
  KVCS_ASSIGN_OR_RETURN(auto reader, Open(bucket, key));
  ObjectMeta meta = reader->meta();
  meta.acl = std::string(acl);
  std::string tmp = impl_->tmp_dir + "/" + RandomHex(12) + ".obj";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return SysErr("create", tmp);
  Status s = Status::Ok();
  Bytes buf(kCopyBufferBytes);
  for (uint64_t off = 0; s.ok() && off < meta.size;) {
    auto n = reader->ReadAt(off, buf);
    if (!n.ok()) {
      s = n.status();
    } else if (*n == 0) {
      s = Err(Code::kCorruption, StoreError::kCorrupt, "object truncated");
    } else {
      s = WriteAll(fd, ByteSpan(buf.data(), *n), tmp);
      off += *n;
    }
  }
  if (s.ok()) s = WriteAll(fd, EncodeObjectTrailer(meta), tmp);
  if (s.ok() && impl_->options.sync && ::fsync(fd) != 0) s = SysErr("fsync", tmp);
  ::close(fd);
  WriteCondition same;
  same.if_match = {meta.etag};
  if (s.ok()) s = impl_->Publish(std::string(bucket), std::string(key), tmp, meta, same);
  if (!s.ok()) ::unlink(tmp.c_str());
  return s;
}

Status LocalStore::Delete(std::string_view bucket, std::string_view key) {
  KVCS_RETURN_IF_ERROR(ValidateKey(key));
  std::string path = impl_->ObjectPath(bucket, key);
  bool existed = true;
  {
    std::lock_guard<std::mutex> l(impl_->mu);
    auto it = impl_->buckets.find(bucket);
    if (it == impl_->buckets.end()) return NoSuchBucket(bucket);
    if (::unlink(path.c_str()) != 0) {
      if (errno != ENOENT) return SysErr("unlink", path);
      existed = false;
    }
    it->second.objects.erase(std::string(key));
  }
  if (!existed) return Status::Ok();
  return FsyncPath(fs::path(path).parent_path().string(), impl_->options.sync);
}

Result<ListResult> LocalStore::List(std::string_view bucket, const ListOptions& o) {
  std::lock_guard<std::mutex> l(impl_->mu);
  auto bit = impl_->buckets.find(bucket);
  if (bit == impl_->buckets.end()) return NoSuchBucket(bucket);
  const auto& objects = bit->second.objects;
  ListResult out;
  int max_keys = std::clamp(o.max_keys, 0, kMaxListKeys);
  auto it = objects.lower_bound(o.prefix);
  if (!o.start_after.empty() && o.start_after >= o.prefix) it = objects.upper_bound(o.start_after);
  int count = 0;
  while (it != objects.end() && StartsWith(it->first, o.prefix)) {
    const std::string& key = it->first;
    std::string common;
    if (!o.delimiter.empty()) {
      size_t pos = key.find(o.delimiter, o.prefix.size());
      if (pos != std::string::npos) common = key.substr(0, pos + o.delimiter.size());
    }
    if (!common.empty() && common <= o.start_after) {
      std::string succ = PrefixSuccessor(common);
      it = succ.empty() ? objects.end() : objects.lower_bound(succ);
      continue;
    }
    if (count >= max_keys) {
      out.truncated = max_keys > 0;
      break;
    }
    ++count;
    if (!common.empty()) {
      out.common_prefixes.push_back(common);
      out.next_marker = common;
      std::string succ = PrefixSuccessor(common);
      it = succ.empty() ? objects.end() : objects.lower_bound(succ);
    } else {
      out.objects.push_back(it->second);
      out.next_marker = key;
      ++it;
    }
  }
  if (!out.truncated) out.next_marker.clear();
  return out;
}

Result<ObjectMeta> LocalStore::Copy(std::string_view src_bucket, std::string_view src_key,
                                    std::string_view dst_bucket, std::string_view dst_key,
                                    std::optional<PutOptions> options) {
  KVCS_ASSIGN_OR_RETURN(auto reader, Open(src_bucket, src_key));
  KVCS_ASSIGN_OR_RETURN(
      auto writer, Put(dst_bucket, dst_key, CopyPutOptions(reader->meta(), std::move(options))));
  return StreamCopy(*reader, *writer, kCopyBufferBytes);
}

void LocalStore::ReadMany(std::span<RangeRead> ranges) {
  if (ranges.empty()) return;
  if (ranges.size() > kMaxReadManyRanges) {
    for (auto& r : ranges) r.result = Status(Code::kResourceExhausted, "too many ranges");
    return;
  }
  impl_->RunOnPool(ranges.size(), [ranges](size_t i) {
    RangeRead& rr = ranges[i];
    rr.result = rr.reader ? rr.reader->ReadAt(rr.offset, rr.out)
                          : Result<size_t>(Status(Code::kInvalidArgument, "null reader"));
  });
}

std::vector<Result<std::shared_ptr<const ObjectReader>>> LocalStore::OpenMany(
    std::string_view bucket, std::span<const std::string> keys) {
  std::vector<Result<std::shared_ptr<const ObjectReader>>> out(
      keys.size(), Result<std::shared_ptr<const ObjectReader>>(Status(Code::kInternal, "not run")));
  impl_->RunOnPool(keys.size(), [&](size_t i) { out[i] = Open(bucket, keys[i]); });
  return out;
}

Result<std::string> LocalStore::CreateMultipart(std::string_view bucket, std::string_view key,
                                                PutOptions options) {
  KVCS_RETURN_IF_ERROR(ValidateKey(key));
  KVCS_RETURN_IF_ERROR(HeadBucket(bucket).status());
  std::string id = RandomHex(kUploadIdBytes);
  std::string dir = impl_->UploadDir(bucket, id);
  if (::mkdir(dir.c_str(), 0755) != 0) return SysErr("mkdir", dir);
  KVCS_RETURN_IF_ERROR(FsyncPath(impl_->BucketDir(bucket) + "/mpu", impl_->options.sync));
  nlohmann::json j;
  j["key_hex"] = ToHex(AsBytes(key));
  j["options"] = OptionsToJson(options);
  int64_t now = NowMs();
  j["initiated_ms"] = now;
  KVCS_RETURN_IF_ERROR(
      AtomicWriteFile(impl_->tmp_dir, dir + "/upload.json", j.dump(), impl_->options.sync));
  std::lock_guard<std::mutex> l(impl_->mu);
  auto it = impl_->buckets.find(bucket);
  if (it == impl_->buckets.end()) return NoSuchBucket(bucket);
  UploadState& u = it->second.uploads[id];
  u.key = std::string(key);
  u.options = std::move(options);
  u.initiated_ms = now;
  return id;
}

Result<std::unique_ptr<ObjectWriter>> LocalStore::PutPart(std::string_view bucket,
                                                          std::string_view key,
                                                          std::string_view upload_id,
                                                          int part_number, PutOptions options) {
  if (part_number < 1 || part_number > kMaxPartNumber) {
    return Err(Code::kInvalidArgument, StoreError::kInvalidPartNumber,
               "part number must be 1..10000");
  }
  {
    std::lock_guard<std::mutex> l(impl_->mu);
    auto it = impl_->buckets.find(bucket);
    if (it == impl_->buckets.end()) return NoSuchBucket(bucket);
    auto up = it->second.uploads.find(std::string(upload_id));
    if (up == it->second.uploads.end() || up->second.key != key) return NoSuchUpload(upload_id);
  }
  return impl_->NewWriter(std::string(bucket), std::string(key), std::move(options),
                          std::string(upload_id), part_number);
}

Result<std::vector<PartInfo>> LocalStore::ListParts(std::string_view bucket, std::string_view key,
                                                    std::string_view upload_id) {
  std::lock_guard<std::mutex> l(impl_->mu);
  auto it = impl_->buckets.find(bucket);
  if (it == impl_->buckets.end()) return NoSuchBucket(bucket);
  auto up = it->second.uploads.find(std::string(upload_id));
  if (up == it->second.uploads.end() || up->second.key != key) return NoSuchUpload(upload_id);
  std::vector<PartInfo> out;
  for (const auto& [n, p] : up->second.parts) out.push_back(p.info);
  return out;
}

Result<ObjectMeta> LocalStore::CompleteMultipart(std::string_view bucket, std::string_view key,
                                                 std::string_view upload_id,
                                                 std::span<const CompletePart> parts) {
  std::vector<PartRecord> chosen;
  PutOptions options;
  {
    std::lock_guard<std::mutex> l(impl_->mu);
    auto it = impl_->buckets.find(bucket);
    if (it == impl_->buckets.end()) return NoSuchBucket(bucket);
    auto up = it->second.uploads.find(std::string(upload_id));
    if (up == it->second.uploads.end() || up->second.key != key) return NoSuchUpload(upload_id);
    if (parts.empty()) {
      return Err(Code::kInvalidArgument, StoreError::kInvalidPart, "no parts given");
    }
    int last = 0;
    for (const CompletePart& cp : parts) {
      if (cp.part_number <= last) {
        return Err(Code::kInvalidArgument, StoreError::kInvalidPartOrder,
                   "part numbers must be strictly ascending");
      }
      last = cp.part_number;
      auto p = up->second.parts.find(cp.part_number);
      std::string etag = cp.etag;
      if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
        etag = etag.substr(1, etag.size() - 2);
      }
      if (p == up->second.parts.end() || p->second.info.etag != etag) {
        return Err(Code::kInvalidArgument, StoreError::kInvalidPart,
                   "part " + std::to_string(cp.part_number) + " missing or ETag mismatch");
      }
      chosen.push_back(p->second);
    }
    for (size_t i = 0; i + 1 < chosen.size(); ++i) {
      if (chosen[i].info.size < kMinPartBytes) {
        return Err(Code::kInvalidArgument, StoreError::kEntityTooSmall,
                   "part " + std::to_string(chosen[i].info.part_number) +
                       " is smaller than 5 MiB and not the last part");
      }
    }
    options = up->second.options;
  }
  // Assemble into a new object file, re-verifying every part's SHA-256 on the way.
  auto w = impl_->NewWriter(std::string(bucket), std::string(key), options, "", 0);
  if (!w.ok()) return w.status();
  Bytes buf(kCopyBufferBytes);
  std::string dir = impl_->UploadDir(bucket, upload_id);
  std::vector<Md5> md5s;
  for (const PartRecord& p : chosen) {
    auto r = OpenObjectFile(dir + "/" + Impl::PartName(p.info.part_number), key);
    if (!r.ok()) return r.status();
    Sha256 sha;
    for (uint64_t off = 0; off < p.info.size;) {
      KVCS_ASSIGN_OR_RETURN(size_t n, (*r)->ReadAt(off, buf));
      if (n == 0) return Err(Code::kCorruption, StoreError::kCorrupt, "part truncated");
      sha.Update(ByteSpan(buf.data(), n));
      KVCS_RETURN_IF_ERROR((*w)->Write(ByteSpan(buf.data(), n)));
      off += n;
    }
    if (p.sha256 && sha.Finish() != *p.sha256) {
      return Err(Code::kCorruption, StoreError::kCorrupt,
                 "part " + std::to_string(p.info.part_number) + " failed its SHA-256");
    }
    md5s.push_back(p.md5);
  }
  static_cast<LocalWriter*>(w->get())->SetMultipart(MultipartEtag(md5s),
                                                    static_cast<int>(md5s.size()));
  KVCS_ASSIGN_OR_RETURN(ObjectMeta meta, (*w)->Commit());
  // The object is durable; now forget the upload. upload.json goes first so that a crash here
  // leaves a directory that the next Open() recognizes as finished and removes.
  {
    std::lock_guard<std::mutex> l(impl_->mu);
    auto it = impl_->buckets.find(bucket);
    if (it != impl_->buckets.end()) it->second.uploads.erase(std::string(upload_id));
  }
  ::unlink((dir + "/upload.json").c_str());
  std::error_code ec;
  fs::remove_all(dir, ec);
  return meta;
}

Status LocalStore::AbortMultipart(std::string_view bucket, std::string_view key,
                                  std::string_view upload_id) {
  std::string dir = impl_->UploadDir(bucket, upload_id);
  {
    std::lock_guard<std::mutex> l(impl_->mu);
    auto it = impl_->buckets.find(bucket);
    if (it == impl_->buckets.end()) return NoSuchBucket(bucket);
    auto up = it->second.uploads.find(std::string(upload_id));
    if (up == it->second.uploads.end() || up->second.key != key) return NoSuchUpload(upload_id);
    it->second.uploads.erase(up);
    if (::unlink((dir + "/upload.json").c_str()) != 0 && errno != ENOENT) {
      return SysErr("unlink", dir);
    }
  }
  KVCS_RETURN_IF_ERROR(FsyncPath(dir, impl_->options.sync));
  std::error_code ec;
  fs::remove_all(dir, ec);
  return Status::Ok();
}

Result<std::vector<UploadInfo>> LocalStore::ListMultipartUploads(std::string_view bucket,
                                                                 std::string_view prefix) {
  std::lock_guard<std::mutex> l(impl_->mu);
  auto it = impl_->buckets.find(bucket);
  if (it == impl_->buckets.end()) return NoSuchBucket(bucket);
  std::vector<UploadInfo> out;
  for (const auto& [id, u] : it->second.uploads) {
    if (StartsWith(u.key, prefix)) out.push_back({u.key, id, u.initiated_ms});
  }
  std::sort(out.begin(), out.end(), [](const UploadInfo& a, const UploadInfo& b) {
    return std::tie(a.key, a.initiated_ms) < std::tie(b.key, b.initiated_ms);
  });
  if (out.size() > static_cast<size_t>(kMaxListKeys)) out.resize(kMaxListKeys);
  return out;
}

}  // namespace kvcs::store
