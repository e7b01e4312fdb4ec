#include "s3client/backend_store.h"

#include <algorithm>
#include <chrono>
#include <mutex>

#include "common/hex.h"

namespace kvcs::s3client {

using store::StoreError;

namespace {

Status StoreErr(Code code, StoreError e, std::string message) {
  return Status(code, std::move(message), static_cast<int>(e));
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int PartsCountFromEtag(std::string_view etag) {
  size_t dash = etag.rfind('-');
  if (dash == std::string_view::npos) return 0;
  int n = 0;
  for (char c : etag.substr(dash + 1)) {
    if (c < '0' || c > '9' || n > store::kMaxPartNumber) return 0;
    n = n * 10 + (c - '0');
  }
  return n;
}

PutObjectOptions ToClientOptions(const store::PutOptions& o, const std::optional<Digest>& sha) {
  PutObjectOptions p;
  p.content_type = o.content_type;
  p.content_encoding = o.content_encoding;
  p.content_disposition = o.content_disposition;
  p.cache_control = o.cache_control;
  for (const auto& [k, v] : o.user_meta) {
    if (k == kSha256MetaName) continue;  // reserved: only the store writes it
    p.user_meta.emplace_back(k, v);
  }
  if (sha) p.user_meta.emplace_back(kSha256MetaName, ToHex(*sha));
  return p;
}

store::ObjectMeta MetaFromHead(std::string_view key, ObjectHead h) {
  store::ObjectMeta m;
  m.key = std::string(key);
  m.size = h.size;
  m.etag = h.etag;
  m.content_type = h.content_type.empty() ? "binary/octet-stream" : h.content_type;
  m.content_encoding = h.content_encoding;
  m.content_disposition = h.content_disposition;
  m.cache_control = h.cache_control;
  for (auto& [k, v] : h.user_meta) {
    if (k == kSha256MetaName) {
      auto d = FromHexFixed<kDigestSize>(v);
      if (d.ok()) m.sha256 = *d;
      continue;
    }
    m.user_meta.emplace_back(std::move(k), std::move(v));
  }
  m.last_modified_ms = h.last_modified_ms;
  m.parts_count = PartsCountFromEtag(m.etag);
  return m;
}

}  // namespace

Status ToStoreStatus(const Status& s) {
  if (s.ok()) return s;
  StoreError e = StoreError::kIo;
  switch (static_cast<ClientError>(s.detail())) {
    case ClientError::kNoSuchBucket:
      e = StoreError::kNoSuchBucket;
      break;
    case ClientError::kNoSuchKey:
      e = StoreError::kNoSuchKey;
      break;
    case ClientError::kNoSuchUpload:
      e = StoreError::kNoSuchUpload;
      break;
    case ClientError::kBucketAlreadyExists:
    case ClientError::kBucketAlreadyOwnedByYou:
      e = StoreError::kBucketAlreadyExists;
      break;
    case ClientError::kBucketNotEmpty:
      e = StoreError::kBucketNotEmpty;
      break;
    case ClientError::kInvalidBucketName:
      e = StoreError::kInvalidBucketName;
      break;
    case ClientError::kKeyTooLong:
      e = StoreError::kKeyTooLong;
      break;
    case ClientError::kInvalidRange:
      e = StoreError::kInvalidRange;
      break;
    case ClientError::kInvalidPart:
      e = StoreError::kInvalidPart;
      break;
    case ClientError::kInvalidPartOrder:
      e = StoreError::kInvalidPartOrder;
      break;
    case ClientError::kEntityTooSmall:
      e = StoreError::kEntityTooSmall;
      break;
    case ClientError::kEntityTooLarge:
      e = StoreError::kEntityTooLarge;
      break;
    case ClientError::kBadDigest:
      e = StoreError::kBadDigest;
      break;
    case ClientError::kSha256Mismatch:
      e = StoreError::kSha256Mismatch;
      break;
    case ClientError::kIncompleteBody:
      e = StoreError::kIncompleteBody;
      break;
    case ClientError::kMetadataTooLarge:
      e = StoreError::kMetadataTooLarge;
      break;
    case ClientError::kInvalidArgument:
      e = StoreError::kInvalidArgument;
      break;
    default:
      break;
  }
  return Status(s.code(), "S3 backend: " + s.message(), static_cast<int>(e));
}

struct S3BackendStore::Impl {
  S3BackendOptions options;
  std::unique_ptr<S3Client> client;
  // Bytes of read-ahead the readers may still hold (starts at options.read_ahead_budget).
  std::atomic<int64_t> read_ahead_left{0};

  Result<std::string> Backend(std::string_view bucket) const {
    KVCS_RETURN_IF_ERROR(store::ValidateBucketName(bucket));
    std::string b = options.bucket_prefix + std::string(bucket);
    if (b.size() > store::kMaxBucketNameBytes) {
      return StoreErr(Code::kInvalidArgument, StoreError::kInvalidBucketName,
                      "bucket name plus the backend prefix exceeds 63 characters");
    }
    return b;
  }

  // Opens `key` of backend bucket `bucket` with one range GET of its first open_prefix_bytes
  // (HEAD when that is 0). REQUIRES: the key is valid.
  Result<std::shared_ptr<const store::ObjectReader>> OpenReader(const std::string& bucket,
                                                                std::string_view key);

  Result<store::ObjectMeta> HeadBackend(const std::string& bucket, std::string_view key) {
    auto h = client->HeadObject(bucket, key);
    if (!h.ok()) {
      if (h.status().Is(ClientError::kNoSuchKey)) {
        // HEAD has no body: tell a missing bucket from a missing key.
        Status b = client->HeadBucket(bucket);
        if (!b.ok()) return ToStoreStatus(b);
      }
      return ToStoreStatus(h.status());
    }
    return MetaFromHead(key, std::move(h).value());
  }
};

namespace {

// A pinned snapshot: opened by one range GET of the object's first bytes (its metadata and ETag
// come from that response, the bytes are kept); every later read is a range GET with If-Match on
// that ETag, so all bytes a reader returns belong to the version it opened.
//
// Read-ahead (ReadMany only): when a read starts where this reader's previous read ended (give or
// take kReadAheadGap), the GET also fetches up to read_ahead_factor times its length beyond it,
// and the reader keeps those bytes for the next reads (layer l+1, l+2, ... of a block read
// layer-major). The kept bytes come from an If-Match GET, so they are of the pinned version too.
// Their total over all readers is bounded by S3BackendOptions::read_ahead_budget.
class BackendReader final : public store::ObjectReader {
 public:
  BackendReader(S3BackendStore::Impl* store, std::string bucket, store::ObjectMeta meta,
                Bytes prefix)
      : store_(store),
        bucket_(std::move(bucket)),
        meta_(std::move(meta)),
        prefix_(std::move(prefix)) {}
  ~BackendReader() override { Release(); }
  const store::ObjectMeta& meta() const override { return meta_; }
  Result<size_t> ReadAt(uint64_t offset, std::span<uint8_t> out) const override {
    if (offset >= meta_.size || out.empty()) return size_t{0};
    out = out.first(static_cast<size_t>(std::min<uint64_t>(out.size(), meta_.size - offset)));
    if (FromKept(offset, out)) return out.size();
    auto r = store_->client->GetRange(bucket_, meta_.key, offset, out, meta_.etag);
    return Finish(r, out.size());
  }
  // Copies [offset, offset + out.size()) from the bytes kept at Open or by read-ahead when they
  // hold all of it.
  bool FromKept(uint64_t offset, std::span<uint8_t> out) const {
    if (offset <= prefix_.size() && out.size() <= prefix_.size() - offset) {
      std::copy_n(prefix_.begin() + static_cast<ptrdiff_t>(offset), out.size(), out.begin());
      return true;
    }
    std::lock_guard lock(mu_);
    if (offset < ahead_offset_ || offset - ahead_offset_ > ahead_.size() ||
        out.size() > ahead_.size() - (offset - ahead_offset_)) {
      return false;
    }
    std::copy_n(ahead_.begin() + static_cast<ptrdiff_t>(offset - ahead_offset_), out.size(),
                out.begin());
    last_end_ = offset + out.size();
    return true;
  }
  // Called for each GET ReadMany sends for [offset, end): how many bytes past `end` to fetch as
  // read-ahead (0 unless the read continues the previous one), reserved from the store's budget.
  uint64_t PlanAhead(uint64_t offset, uint64_t end) const {
    std::lock_guard lock(mu_);
    const bool sequential =
        last_end_ != kNone && offset >= last_end_ && offset - last_end_ <= kReadAheadGap;
    last_end_ = end;
    // The kept bytes did not serve this read (ReadMany asked FromKept first): they are behind it
    // now; give their budget back before reserving more.
    store_->read_ahead_left.fetch_add(static_cast<int64_t>(reserved_), std::memory_order_relaxed);
    reserved_ = 0;
    ahead_.clear();
    streak_ = sequential ? streak_ + 1 : 0;
    if (!sequential || end >= meta_.size) return 0;
    // Grows with the run of consecutive reads (1, 2, .. factor times the read): the early layers,
    // which the client waits for first, are not slowed by large GETs.
    const uint64_t factor = std::min<uint64_t>(streak_, store_->options.read_ahead_factor);
    uint64_t want = std::min<uint64_t>((end - offset) * factor, meta_.size - end);
    want = std::min<uint64_t>(want, kMaxCoalescedGetBytes - (end - offset));
    if (want == 0) return 0;
    int64_t left = store_->read_ahead_left.load(std::memory_order_relaxed);
    while (left >= static_cast<int64_t>(want) && !store_->read_ahead_left.compare_exchange_weak(
                                                     left, left - static_cast<int64_t>(want))) {
    }
    if (left < static_cast<int64_t>(want)) return 0;  // budget spent: read only what is asked
    reserved_ = want;  // held from now; KeepAhead keeps the bytes, Release gives it back
    return want;
  }
  // Keeps `bytes` (read at `offset`), the read-ahead PlanAhead reserved budget for.
  void KeepAhead(uint64_t offset, Bytes bytes) const {
    std::lock_guard lock(mu_);
    ahead_offset_ = offset;
    ahead_ = std::move(bytes);
  }
  void Release() const {
    std::lock_guard lock(mu_);
    store_->read_ahead_left.fetch_add(static_cast<int64_t>(reserved_), std::memory_order_relaxed);
    reserved_ = 0;
    ahead_.clear();
    ahead_.shrink_to_fit();
  }
  Result<size_t> Finish(const Result<size_t>& r, size_t want) const {
    if (!r.ok()) {
      if (r.status().Is(ClientError::kPreconditionFailed) ||
          r.status().Is(ClientError::kNoSuchKey)) {
        return StoreErr(Code::kFailedPrecondition, StoreError::kIo,
                        "S3 backend: object " + meta_.key +
                            " changed or vanished after it was opened; reopen it");
      }
      return ToStoreStatus(r.status());
    }
    if (*r != want) {  // the size was pinned at Open: a short read means another version
      return StoreErr(Code::kIoError, StoreError::kIo,
                      "S3 backend: short read of " + meta_.key + " (object changed?)");
    }
    return *r;
  }
  const std::string& bucket() const { return bucket_; }

 private:
  static constexpr uint64_t kNone = ~uint64_t{0};
  // A read "continues" the previous one if it starts at most this far past its end (room for
  // alignment padding between a container's layers).
  static constexpr uint64_t kReadAheadGap = 4096;

  S3BackendStore::Impl* store_;
  std::string bucket_;
  store::ObjectMeta meta_;
  Bytes prefix_;  // the first bytes of this version (at most open_prefix_bytes)
  mutable std::mutex mu_;
  mutable uint64_t last_end_ = kNone;  // end of the previous read (ReadMany), kNone before one
  mutable uint64_t ahead_offset_ = 0;  // read-ahead bytes kept: [ahead_offset_, + ahead_.size())
  mutable Bytes ahead_;
  mutable uint64_t reserved_ = 0;  // budget held for ahead_ (or for the GET filling it)
  mutable uint64_t streak_ = 0;    // consecutive reads that continued the previous one
};

// Streams an object: buffered until multipart_threshold, then multipart parts of part_bytes.
class BackendWriter final : public store::ObjectWriter {
 public:
  BackendWriter(S3BackendStore::Impl* store, std::string bucket, std::string key,
                store::PutOptions options)
      : store_(store),
        bucket_(std::move(bucket)),
        key_(std::move(key)),
        options_(std::move(options)) {}
  ~BackendWriter() override {
    if (!upload_id_.empty() && !committed_) {
      (void)store_->client->AbortMultipartUpload(bucket_, key_, upload_id_);  // best effort
    }
  }

  Status Write(ByteSpan data) override {
    if (failed_) return Status(Code::kFailedPrecondition, "writer failed earlier");
    if (written_ + data.size() > store::kMaxObjectBytes) {
      return Fail(
          StoreErr(Code::kResourceExhausted, StoreError::kEntityTooLarge, "object exceeds 5 TiB"));
    }
    sha_.Update(data);
    md5_.Update(data);
    written_ += data.size();
    buf_.insert(buf_.end(), data.begin(), data.end());
    const uint64_t part = std::max<uint64_t>(store_->options.part_bytes, store::kMinPartBytes);
    if (upload_id_.empty() && buf_.size() > store_->options.multipart_threshold) {
      auto id = store_->client->CreateMultipartUpload(
          bucket_, key_, ToClientOptions(options_, options_.expected_sha256));
      if (!id.ok()) return Fail(ToStoreStatus(id.status()));
      upload_id_ = *id;
    }
    // Keep at least one byte back so the last part is never empty.
    while (!upload_id_.empty() && buf_.size() > part) {
      KVCS_RETURN_IF_ERROR(SendPart(ByteSpan(buf_.data(), part)));
      buf_.erase(buf_.begin(), buf_.begin() + static_cast<ptrdiff_t>(part));
    }
    return Status::Ok();
  }

  Result<store::ObjectMeta> Commit() override {
    if (failed_ || committed_) return Status(Code::kFailedPrecondition, "writer not usable");
    if (options_.expected_size && *options_.expected_size != written_) {
      return Fail(StoreErr(Code::kInvalidArgument, StoreError::kIncompleteBody,
                           "wrote " + std::to_string(written_) + " bytes, declared " +
                               std::to_string(*options_.expected_size)));
    }
    const Digest sha = sha_.Finish();
    const store::Md5 md5 = md5_.Finish();
    if (options_.expected_sha256 && *options_.expected_sha256 != sha) {
      return Fail(StoreErr(Code::kCorruption, StoreError::kSha256Mismatch,
                           "body does not match x-amz-content-sha256"));
    }
    if (options_.expected_md5 && *options_.expected_md5 != md5) {
      return Fail(
          StoreErr(Code::kCorruption, StoreError::kBadDigest, "body does not match Content-MD5"));
    }
    store::ObjectMeta m;
    m.key = key_;
    m.size = written_;
    m.content_type = options_.content_type.empty() ? "binary/octet-stream" : options_.content_type;
    m.content_encoding = options_.content_encoding;
    m.content_disposition = options_.content_disposition;
    m.cache_control = options_.cache_control;
    for (const auto& kv : options_.user_meta) {
      if (kv.first != kSha256MetaName) m.user_meta.push_back(kv);
    }
    std::sort(m.user_meta.begin(), m.user_meta.end());
    if (upload_id_.empty()) {
      auto etag =
          store_->client->PutObject(bucket_, key_, buf_, ToClientOptions(options_, sha), md5);
      if (!etag.ok()) return Fail(ToStoreStatus(etag.status()));
      m.etag = *etag;
      m.sha256 = sha;
    } else {
      KVCS_RETURN_IF_ERROR(SendPart(buf_));
      auto etag = store_->client->CompleteMultipartUpload(bucket_, key_, upload_id_, parts_);
      if (!etag.ok()) return Fail(ToStoreStatus(etag.status()));
      committed_ = true;  // the upload is consumed: never abort it now
      m.etag = *etag;
      if (m.etag.empty()) m.etag = store::MultipartEtag(part_md5s_);
      m.parts_count = static_cast<int>(parts_.size());
      m.sha256 = options_.expected_sha256;  // stored only when known at CreateMultipart
    }
    committed_ = true;
    buf_.clear();
    buf_.shrink_to_fit();
    m.last_modified_ms = NowMs();
    return m;
  }

  uint64_t bytes_written() const override { return written_; }

 private:
  Status Fail(Status s) {
    failed_ = true;
    if (!upload_id_.empty()) {
      (void)store_->client->AbortMultipartUpload(bucket_, key_, upload_id_);
      upload_id_.clear();
    }
    return s;
  }
  Status SendPart(ByteSpan data) {
    const int n = static_cast<int>(parts_.size()) + 1;
    if (n > store::kMaxPartNumber) {
      return Fail(StoreErr(Code::kResourceExhausted, StoreError::kEntityTooLarge,
                           "object needs more than 10,000 parts; raise part_bytes"));
    }
    store::Md5Hasher h;
    h.Update(data);
    const store::Md5 md5 = h.Finish();
    auto etag = store_->client->UploadPart(bucket_, key_, upload_id_, n, data, md5);
    if (!etag.ok()) return Fail(ToStoreStatus(etag.status()));
    parts_.push_back({n, *etag});
    part_md5s_.push_back(md5);
    return Status::Ok();
  }

  S3BackendStore::Impl* store_;
  std::string bucket_, key_;
  store::PutOptions options_;
  Bytes buf_;
  Sha256 sha_;
  store::Md5Hasher md5_;
  uint64_t written_ = 0;
  std::string upload_id_;
  std::vector<CompletedPart> parts_;
  std::vector<store::Md5> part_md5s_;
  bool committed_ = false;
  bool failed_ = false;
};

// One part of a front-end multipart upload: buffered, then one UploadPart at Commit.
class PartWriter final : public store::ObjectWriter {
 public:
  PartWriter(S3Client* client, std::string bucket, std::string key, std::string upload_id,
             int part_number, store::PutOptions options)
      : client_(client),
        bucket_(std::move(bucket)),
        key_(std::move(key)),
        upload_id_(std::move(upload_id)),
        part_number_(part_number),
        options_(std::move(options)) {}

  Status Write(ByteSpan data) override {
    if (buf_.size() + data.size() > kMaxBufferedPartBytes) {
      return StoreErr(Code::kResourceExhausted, StoreError::kEntityTooLarge,
                      "S3 backend buffers parts up to 128 MiB; use smaller parts");
    }
    buf_.insert(buf_.end(), data.begin(), data.end());
    return Status::Ok();
  }

  Result<store::ObjectMeta> Commit() override {
    if (options_.expected_size && *options_.expected_size != buf_.size()) {
      return StoreErr(Code::kInvalidArgument, StoreError::kIncompleteBody,
                      "part shorter or longer than declared");
    }
    store::Md5Hasher h;
    h.Update(buf_);
    const store::Md5 md5 = h.Finish();
    if (options_.expected_md5 && *options_.expected_md5 != md5) {
      return StoreErr(Code::kCorruption, StoreError::kBadDigest, "part does not match Content-MD5");
    }
    if (options_.expected_sha256 && *options_.expected_sha256 != Sha256::Hash(buf_)) {
      return StoreErr(Code::kCorruption, StoreError::kSha256Mismatch,
                      "part does not match x-amz-content-sha256");
    }
    auto etag = client_->UploadPart(bucket_, key_, upload_id_, part_number_, buf_, md5);
    if (!etag.ok()) return ToStoreStatus(etag.status());
    store::ObjectMeta m;
    m.key = key_;
    m.size = buf_.size();
    m.etag = *etag;
    m.last_modified_ms = NowMs();
    return m;
  }

  uint64_t bytes_written() const override { return buf_.size(); }

 private:
  S3Client* client_;
  std::string bucket_, key_, upload_id_;
  int part_number_;
  store::PutOptions options_;
  Bytes buf_;
};

}  // namespace

S3BackendStore::S3BackendStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
S3BackendStore::~S3BackendStore() = default;

Result<std::unique_ptr<S3BackendStore>> S3BackendStore::Open(S3BackendOptions options) {
  if (options.part_bytes < store::kMinPartBytes || options.part_bytes > kMaxPutBodyBytes) {
    return InvalidArgument("part_bytes must be between 5 MiB and 512 MiB");
  }
  if (options.read_ahead_factor > kMaxReadAheadFactor ||
      options.read_ahead_budget > kMaxReadAheadBudget) {
    return InvalidArgument("read_ahead_factor must be at most 16 and read_ahead_budget 4 GiB");
  }
  if (options.open_prefix_bytes > kMaxOpenPrefixBytes) {
    return InvalidArgument("open_prefix_bytes must be at most 1 MiB");
  }
  if (options.multipart_threshold < options.part_bytes ||
      options.multipart_threshold > kMaxPutBodyBytes) {
    return InvalidArgument("multipart_threshold must be between part_bytes and 512 MiB");
  }
  auto impl = std::make_unique<Impl>();
  KVCS_ASSIGN_OR_RETURN(impl->client, S3Client::Create(options.client));
  impl->options = std::move(options);
  impl->read_ahead_left = static_cast<int64_t>(impl->options.read_ahead_budget);
  auto probe = impl->client->ListBuckets();
  if (!probe.ok()) {
    return Status(probe.status().code(),
                  "S3 backend at " + impl->options.client.endpoint +
                      " did not answer ListBuckets: " + probe.status().message(),
                  probe.status().detail());
  }
  return std::unique_ptr<S3BackendStore>(new S3BackendStore(std::move(impl)));
}

S3Client& S3BackendStore::client() { return *impl_->client; }

Status S3BackendStore::CreateBucket(std::string_view bucket) {
  KVCS_ASSIGN_OR_RETURN(std::string b, impl_->Backend(bucket));
  // Some services (RGW, us-east-1) answer 200 to a second CreateBucket by the owner; the store
  // contract says kBucketAlreadyExists, so look first.
  if (impl_->client->HeadBucket(b).ok()) {
    return StoreErr(Code::kAlreadyExists, StoreError::kBucketAlreadyExists,
                    "bucket already exists: " + std::string(bucket));
  }
  return ToStoreStatus(impl_->client->CreateBucket(b));
}

Status S3BackendStore::DeleteBucket(std::string_view bucket) {
  KVCS_ASSIGN_OR_RETURN(std::string b, impl_->Backend(bucket));
  auto uploads = impl_->client->ListMultipartUploads(b, "", "", "");
  if (!uploads.ok()) return ToStoreStatus(uploads.status());
  if (!uploads->uploads.empty()) {
    return StoreErr(Code::kFailedPrecondition, StoreError::kBucketNotEmpty,
                    "bucket has multipart uploads in progress: " + std::string(bucket));
  }
  return ToStoreStatus(impl_->client->DeleteBucket(b));
}

Result<store::BucketInfo> S3BackendStore::HeadBucket(std::string_view bucket) {
  KVCS_ASSIGN_OR_RETURN(std::string b, impl_->Backend(bucket));
  Status s = impl_->client->HeadBucket(b);
  if (!s.ok()) return ToStoreStatus(s);
  store::BucketInfo info{std::string(bucket), 0};
  auto all = impl_->client->ListBuckets();  // for the creation time
  if (all.ok()) {
    for (const auto& e : *all) {
      if (e.name == b) info.created_ms = e.created_ms;
    }
  }
  return info;
}

Result<std::vector<store::BucketInfo>> S3BackendStore::ListBuckets() {
  auto all = impl_->client->ListBuckets();
  if (!all.ok()) return ToStoreStatus(all.status());
  std::vector<store::BucketInfo> out;
  const std::string& prefix = impl_->options.bucket_prefix;
  for (const auto& e : *all) {
    if (e.name.size() <= prefix.size() || e.name.compare(0, prefix.size(), prefix) != 0) continue;
    std::string front = e.name.substr(prefix.size());
    if (!store::ValidateBucketName(front).ok()) continue;
    out.push_back({std::move(front), e.created_ms});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

Result<std::unique_ptr<store::ObjectWriter>> S3BackendStore::Put(std::string_view bucket,
                                                                 std::string_view key,
                                                                 store::PutOptions options) {
  KVCS_ASSIGN_OR_RETURN(std::string b, impl_->Backend(bucket));
  KVCS_RETURN_IF_ERROR(store::ValidateKey(key));
  if (options.expected_size && *options.expected_size > store::kMaxObjectBytes) {
    return StoreErr(Code::kResourceExhausted, StoreError::kEntityTooLarge, "object exceeds 5 TiB");
  }
  return std::unique_ptr<store::ObjectWriter>(
      new BackendWriter(impl_.get(), std::move(b), std::string(key), std::move(options)));
}

Result<std::shared_ptr<const store::ObjectReader>> S3BackendStore::Impl::OpenReader(
    const std::string& bucket, std::string_view key) {
  Bytes prefix;
  store::ObjectMeta m;
  if (options.open_prefix_bytes == 0) {
    KVCS_ASSIGN_OR_RETURN(m, HeadBackend(bucket, key));
  } else {
    prefix.resize(options.open_prefix_bytes);
    auto p = client->GetPrefix(bucket, key, prefix);
    // A GET's error body names NoSuchBucket apart from NoSuchKey (HEAD needs a second request).
    if (!p.ok()) return ToStoreStatus(p.status());
    prefix.resize(p->bytes);
    m = MetaFromHead(key, std::move(p->head));
  }
  return std::shared_ptr<const store::ObjectReader>(
      std::make_shared<BackendReader>(this, bucket, std::move(m), std::move(prefix)));
}

Result<std::shared_ptr<const store::ObjectReader>> S3BackendStore::Open(std::string_view bucket,
                                                                        std::string_view key) {
  KVCS_ASSIGN_OR_RETURN(std::string b, impl_->Backend(bucket));
  KVCS_RETURN_IF_ERROR(store::ValidateKey(key));
  return impl_->OpenReader(b, key);
}

std::vector<Result<std::shared_ptr<const store::ObjectReader>>> S3BackendStore::OpenMany(
    std::string_view bucket, std::span<const std::string> keys) {
  using R = Result<std::shared_ptr<const store::ObjectReader>>;
  auto b = impl_->Backend(bucket);
  std::vector<R> out(keys.size(), b.ok() ? R(Status(Code::kInternal, "not run")) : R(b.status()));
  if (!b.ok()) return out;
  impl_->client->ForEachParallel(keys.size(), [&](size_t i) {
    Status valid = store::ValidateKey(keys[i]);
    out[i] = valid.ok() ? impl_->OpenReader(*b, keys[i]) : R(valid);
  });
  return out;
}

Result<store::ObjectMeta> S3BackendStore::Head(std::string_view bucket, std::string_view key) {
  KVCS_ASSIGN_OR_RETURN(std::string b, impl_->Backend(bucket));
  KVCS_RETURN_IF_ERROR(store::ValidateKey(key));
  return impl_->HeadBackend(b, key);
}

Status S3BackendStore::Delete(std::string_view bucket, std::string_view key) {
  KVCS_ASSIGN_OR_RETURN(std::string b, impl_->Backend(bucket));
  KVCS_RETURN_IF_ERROR(store::ValidateKey(key));
  return ToStoreStatus(impl_->client->DeleteObject(b, key));
}

Result<store::ListResult> S3BackendStore::List(std::string_view bucket,
                                               const store::ListOptions& options) {
  KVCS_ASSIGN_OR_RETURN(std::string b, impl_->Backend(bucket));
  const int max_keys = std::clamp(options.max_keys, 0, store::kMaxListKeys);
  store::ListResult out;
  if (max_keys == 0) {
    // S3 answers max-keys=0 with an empty page; ask only to report a missing bucket.
    Status s = impl_->client->HeadBucket(b);
    if (!s.ok()) return ToStoreStatus(s);
    return out;
  }
  auto page = impl_->client->ListObjectsV2(b, options.prefix, options.delimiter,
                                           options.start_after, "", max_keys);
  if (!page.ok()) return ToStoreStatus(page.status());
  std::string last;
  for (const auto& e : page->objects) {
    last = std::max(last, e.key);
    if (!options.start_after.empty() && e.key <= options.start_after) continue;
    store::ObjectMeta m;
    m.key = e.key;
    m.size = e.size;
    m.etag = e.etag;
    m.last_modified_ms = e.last_modified_ms;
    m.parts_count = PartsCountFromEtag(e.etag);
    m.content_type = "binary/octet-stream";
    out.objects.push_back(std::move(m));
  }
  for (const auto& p : page->common_prefixes) {
    last = std::max(last, p);
    // A continuation marker that is itself a common prefix has been returned already.
    if (!options.start_after.empty() && p <= options.start_after) continue;
    out.common_prefixes.push_back(p);
  }
  out.truncated = page->truncated;
  if (out.truncated) out.next_marker = last;
  return out;
}

Result<store::ObjectMeta> S3BackendStore::Copy(std::string_view src_bucket,
                                               std::string_view src_key,
                                               std::string_view dst_bucket,
                                               std::string_view dst_key,
                                               std::optional<store::PutOptions> options) {
  KVCS_ASSIGN_OR_RETURN(std::string sb, impl_->Backend(src_bucket));
  KVCS_ASSIGN_OR_RETURN(std::string db, impl_->Backend(dst_bucket));
  KVCS_RETURN_IF_ERROR(store::ValidateKey(src_key));
  KVCS_RETURN_IF_ERROR(store::ValidateKey(dst_key));
  KVCS_ASSIGN_OR_RETURN(store::ObjectMeta src, impl_->HeadBackend(sb, src_key));
  std::optional<PutObjectOptions> replace;
  if (options) replace = ToClientOptions(*options, src.sha256);  // the bytes keep their digest
  auto r = impl_->client->CopyObject(sb, src_key, db, dst_key, replace);
  if (!r.ok()) return ToStoreStatus(r.status());
  return impl_->HeadBackend(db, dst_key);
}

void S3BackendStore::ReadMany(std::span<store::RangeRead> ranges) {
  // Ranges still to fetch, then grouped into runs: adjacent or overlapping ranges of one reader
  // become ONE range GET (into a scratch buffer, then copied out); a lone range is read in place.
  struct Piece {
    const BackendReader* reader;
    uint64_t offset;
    size_t len;
    size_t range;  // index in `ranges`
  };
  std::vector<Piece> pieces;
  pieces.reserve(ranges.size());
  for (size_t i = 0; i < ranges.size(); ++i) {
    store::RangeRead& r = ranges[i];
    const auto* reader = dynamic_cast<const BackendReader*>(r.reader);
    if (reader == nullptr) {
      r.result = r.reader ? r.reader->ReadAt(r.offset, r.out)
                          : Result<size_t>(Status(Code::kInvalidArgument, "null reader"));
      continue;
    }
    const uint64_t size = reader->meta().size;
    if (r.offset >= size || r.out.empty()) {
      r.result = size_t{0};
      continue;
    }
    const size_t len = static_cast<size_t>(std::min<uint64_t>(r.out.size(), size - r.offset));
    if (reader->FromKept(r.offset, r.out.first(len))) {
      r.result = len;
      continue;
    }
    pieces.push_back({reader, r.offset, len, i});
  }
  std::sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) {
    return a.reader != b.reader ? std::less<>()(a.reader, b.reader) : a.offset < b.offset;
  });
  struct Run {
    size_t first, last;  // pieces[first, last)
    uint64_t offset, end;
    uint64_t ahead = 0;  // read-ahead bytes fetched past `end`
    Bytes scratch;       // for runs of more than one piece or with read-ahead
  };
  std::vector<Run> runs;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const Piece& p = pieces[i];
    const uint64_t end = p.offset + p.len;
    if (!runs.empty()) {
      Run& run = runs.back();
      if (pieces[run.first].reader == p.reader && p.offset <= run.end &&
          std::max(run.end, end) - run.offset <= kMaxCoalescedGetBytes) {
        run.end = std::max(run.end, end);
        run.last = i + 1;
        continue;
      }
    }
    runs.push_back({i, i + 1, p.offset, end, {}});
  }
  std::vector<RangeGet> gets(runs.size());
  for (size_t k = 0; k < runs.size(); ++k) {
    Run& run = runs[k];
    const Piece& p = pieces[run.first];
    RangeGet& g = gets[k];
    g.bucket = p.reader->bucket();
    g.key = p.reader->meta().key;
    g.offset = run.offset;
    g.if_match = p.reader->meta().etag;
    run.ahead = p.reader->PlanAhead(run.offset, run.end);
    if (run.last - run.first == 1 && run.ahead == 0) {
      g.out = ranges[p.range].out.first(p.len);
    } else {
      run.scratch.resize(static_cast<size_t>(run.end + run.ahead - run.offset));
      g.out = run.scratch;
    }
  }
  impl_->client->ParallelGet(gets);
  coalesced_gets_.fetch_add(pieces.size() - runs.size(), std::memory_order_relaxed);
  for (size_t k = 0; k < runs.size(); ++k) {
    Run& run = runs[k];
    for (size_t i = run.first; i < run.last; ++i) {
      const Piece& p = pieces[i];
      store::RangeRead& r = ranges[p.range];
      Result<size_t> got = gets[k].result;
      if (got.ok() && !run.scratch.empty()) {
        // Bytes of this piece inside what the run's GET returned (short only if the object
        // changed; Finish reports that).
        const uint64_t skip = p.offset - run.offset;
        const size_t n =
            *got > skip ? static_cast<size_t>(std::min<uint64_t>(p.len, *got - skip)) : size_t{0};
        std::copy_n(run.scratch.begin() + static_cast<ptrdiff_t>(skip), n, r.out.begin());
        got = n;
      }
      r.result = p.reader->Finish(got, p.len);
    }
    if (run.ahead > 0) {
      const BackendReader* reader = pieces[run.first].reader;
      const uint64_t want = run.end + run.ahead - run.offset;
      if (gets[k].result.ok() && *gets[k].result == want) {
        Bytes kept(run.scratch.begin() + static_cast<ptrdiff_t>(run.end - run.offset),
                   run.scratch.end());
        reader->KeepAhead(run.end, std::move(kept));
      } else {  // failed or short (object changed): keep nothing, give the reservation back
        reader->Release();
      }
    }
  }
}

Result<std::string> S3BackendStore::CreateMultipart(std::string_view bucket, std::string_view key,
                                                    store::PutOptions options) {
  KVCS_ASSIGN_OR_RETURN(std::string b, impl_->Backend(bucket));
  KVCS_RETURN_IF_ERROR(store::ValidateKey(key));
  auto id = impl_->client->CreateMultipartUpload(b, key,
                                                 ToClientOptions(options, options.expected_sha256));
  if (!id.ok()) return ToStoreStatus(id.status());
  return *id;
}

Result<std::unique_ptr<store::ObjectWriter>> S3BackendStore::PutPart(std::string_view bucket,
                                                                     std::string_view key,
                                                                     std::string_view upload_id,
                                                                     int part_number,
                                                                     store::PutOptions options) {
  KVCS_ASSIGN_OR_RETURN(std::string b, impl_->Backend(bucket));
  KVCS_RETURN_IF_ERROR(store::ValidateKey(key));
  if (part_number < 1 || part_number > store::kMaxPartNumber) {
    return StoreErr(Code::kInvalidArgument, StoreError::kInvalidPartNumber,
                    "part number must be 1..10000");
  }
  if (options.expected_size && *options.expected_size > kMaxBufferedPartBytes) {
    return StoreErr(Code::kResourceExhausted, StoreError::kEntityTooLarge,
                    "S3 backend buffers parts up to 128 MiB; use smaller parts");
  }
  return std::unique_ptr<store::ObjectWriter>(
      new PartWriter(impl_->client.get(), std::move(b), std::string(key), std::string(upload_id),
                     part_number, std::move(options)));
}

Result<std::vector<store::PartInfo>> S3BackendStore::ListParts(std::string_view bucket,
                                                               std::string_view key,
                                                               std::string_view upload_id) {
  KVCS_ASSIGN_OR_RETURN(std::string b, impl_->Backend(bucket));
  std::vector<store::PartInfo> out;
  int marker = 0;
  for (int page_no = 0; page_no < kMaxListPages; ++page_no) {
    auto page = impl_->client->ListParts(b, key, upload_id, marker);
    if (!page.ok()) return ToStoreStatus(page.status());
    for (const auto& p : page->parts) {
      out.push_back({p.part_number, p.size, p.etag, p.last_modified_ms});
    }
    if (!page->truncated || page->next_part_number_marker <= marker) break;
    marker = page->next_part_number_marker;
  }
  return out;
}

Result<store::ObjectMeta> S3BackendStore::CompleteMultipart(
    std::string_view bucket, std::string_view key, std::string_view upload_id,
    std::span<const store::CompletePart> parts) {
  KVCS_ASSIGN_OR_RETURN(std::string b, impl_->Backend(bucket));
  std::vector<CompletedPart> cp;
  cp.reserve(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0 && parts[i].part_number <= parts[i - 1].part_number) {
      return StoreErr(Code::kInvalidArgument, StoreError::kInvalidPartOrder,
                      "part numbers must be strictly ascending");
    }
    cp.push_back({parts[i].part_number, parts[i].etag});
  }
  auto etag = impl_->client->CompleteMultipartUpload(b, key, upload_id, cp);
  if (!etag.ok()) return ToStoreStatus(etag.status());
  return impl_->HeadBackend(b, key);
}

Status S3BackendStore::AbortMultipart(std::string_view bucket, std::string_view key,
                                      std::string_view upload_id) {
  KVCS_ASSIGN_OR_RETURN(std::string b, impl_->Backend(bucket));
  return ToStoreStatus(impl_->client->AbortMultipartUpload(b, key, upload_id));
}

Result<std::vector<store::UploadInfo>> S3BackendStore::ListMultipartUploads(
    std::string_view bucket, std::string_view prefix) {
  KVCS_ASSIGN_OR_RETURN(std::string b, impl_->Backend(bucket));
  std::vector<store::UploadInfo> out;
  std::string key_marker, id_marker;
  for (int page_no = 0; page_no < kMaxListPages; ++page_no) {
    auto page = impl_->client->ListMultipartUploads(b, prefix, key_marker, id_marker);
    if (!page.ok()) return ToStoreStatus(page.status());
    for (const auto& u : page->uploads) out.push_back({u.key, u.upload_id, u.initiated_ms});
    if (!page->truncated) break;
    key_marker = page->next_key_marker;
    id_marker = page->next_upload_id_marker;
  }
  return out;
}

}  // namespace kvcs::s3client
