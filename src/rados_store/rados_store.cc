#include "rados_store/rados_store.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <deque>
#include <map>
#include <tuple>

#include "common/hex.h"
#include "rados_store/rados_list_merge.h"
#include "rados_store/rados_reader.h"
#include "rados_store/rados_writer.h"

namespace kvcs::rados_store {

using store::StoreError;

namespace {

// Conflicting compare-and-sets of one index entry before a writer gives up.
constexpr int kMaxPublishAttempts = 32;
// Pieces (extents) one read op carries, and its bytes.
constexpr size_t kMaxExtentsPerOp = 128;
constexpr uint64_t kMaxBytesPerOp = 16ull << 20;
// Copy reads the source in chunks of this size.
constexpr size_t kCopyChunkBytes = 4 << 20;
// Omap entries asked for per read (the OSD caps a reply at osd_max_omap_entries_per_request).
constexpr uint64_t kOmapPage = 1000;
// Index reads OpenMany keeps in flight.
constexpr size_t kOpenWindow = 128;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
Status NoSuchBucket(std::string_view b) {
  return StoreErr(Code::kNotFound, StoreError::kNoSuchBucket, "no such bucket: " + std::string(b));
}
Status NoSuchKey(std::string_view k) {
  return StoreErr(Code::kNotFound, StoreError::kNoSuchKey, "no such key: " + std::string(k));
}
Status NoSuchUpload(std::string_view id) {
  return StoreErr(Code::kNotFound, StoreError::kNoSuchUpload, "no such upload: " + std::string(id));
}
Status CheckUserMeta(const store::PutOptions& o) {
  size_t n = 0;
  for (const auto& [k, v] : o.user_meta) n += k.size() + v.size();
  if (n > store::kMaxUserMetadataBytes) {
    return StoreErr(Code::kInvalidArgument, StoreError::kMetadataTooLarge,
                    "user metadata exceeds 2 KiB");
  }
  return Status::Ok();
}
store::ObjectMeta MetaFromOptions(std::string_view key, const store::PutOptions& o) {
  store::ObjectMeta m;
  m.key = std::string(key);
  m.content_type = o.content_type.empty() ? "binary/octet-stream" : o.content_type;
  m.content_encoding = o.content_encoding;
  m.content_disposition = o.content_disposition;
  m.cache_control = o.cache_control;
  m.expires = o.expires;
  m.user_meta = o.user_meta;
  m.acl = o.acl;
  std::sort(m.user_meta.begin(), m.user_meta.end());
  return m;
}
// The representation, user metadata and ACL of `o` (what an upload record keeps).
store::PutOptions Representation(const store::PutOptions& o) {
  store::PutOptions r;
  r.content_type = o.content_type;
  r.content_encoding = o.content_encoding;
  r.content_disposition = o.content_disposition;
  r.cache_control = o.cache_control;
  r.expires = o.expires;
  r.user_meta = o.user_meta;
  r.acl = o.acl;
  return r;
}
// Adds the removal of `keys` to `op`.
void OmapRemoveKeys(WriteOp& op, const std::vector<std::string>& keys) {
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  for (const auto& k : keys) {
    ptrs.push_back(k.data());
    lens.push_back(k.size());
  }
  rados_write_op_omap_rm_keys2(op.op, ptrs.data(), lens.data(), ptrs.size());
}
std::string Unquote(std::string e) {
  if (e.size() >= 2 && e.front() == '"' && e.back() == '"') e = e.substr(1, e.size() - 2);
  return e;
}

}  // namespace

RadosStore::RadosStore(RadosStoreOptions options, std::shared_ptr<RadosIo> io)
    : options_(std::move(options)), io_(std::move(io)) {}
RadosStore::~RadosStore() = default;

Result<std::unique_ptr<RadosStore>> RadosStore::Open(RadosStoreOptions options) {
  if (options.index_shards < 1 || options.index_shards > kMaxIndexShards) {
    return InvalidArgument("index_shards must be 1..1024");
  }
  if (options.stripe_bytes < kMinStripeBytes || options.stripe_bytes > kMaxStripeBytes) {
    return InvalidArgument("stripe_bytes must be 64 KiB..64 MiB");
  }
  if (options.max_reads_in_flight < 1 || options.max_reads_in_flight > kMaxReadsInFlight ||
      options.max_read_bytes_in_flight < kMinStripeBytes ||
      options.max_read_bytes_in_flight > kMaxReadBytesInFlight) {
    return InvalidArgument(
        "max_reads_in_flight must be 1..1024 and max_read_bytes_in_flight 64 KiB..4 GiB");
  }
  KVCS_ASSIGN_OR_RETURN(std::unique_ptr<RadosIo> io, RadosIo::Connect(options.connect));
  return std::unique_ptr<RadosStore>(
      new RadosStore(std::move(options), std::shared_ptr<RadosIo>(std::move(io))));
}

// ---- buckets

Result<BucketRecord> RadosStore::Bucket(std::string_view bucket) {
  KVCS_RETURN_IF_ERROR(store::ValidateBucketName(bucket));
  KVCS_ASSIGN_OR_RETURN(auto v,
                        io_->OmapGet(kBucketRegistryObject, bucket, StoreError::kNoSuchBucket));
  if (!v) return NoSuchBucket(bucket);
  return DecodeBucket(*v);
}

Status RadosStore::CreateBucket(std::string_view bucket) { return CreateBucketOwnedBy(bucket, ""); }

Status RadosStore::CreateBucketOwnedBy(std::string_view bucket, std::string_view owner) {
  KVCS_RETURN_IF_ERROR(store::ValidateBucketName(bucket));
  if (owner.size() > 128) {
    return StoreErr(Code::kInvalidArgument, StoreError::kInvalidArgument, "owner over 128 bytes");
  }
  BucketRecord b;
  b.id = NewId(8);
  b.created_ms = NowMs();
  b.owner = std::string(owner);
  b.shards = options_.index_shards;
  // The index shards and the uploads object first, so that a registered bucket has them all.
  std::vector<std::string> oids;
  for (uint32_t s = 0; s < b.shards; ++s) oids.push_back(IndexShardObject(b.id, s));
  oids.push_back(UploadsObject(b.id));
  {
    std::vector<std::unique_ptr<WriteOp>> ops;
    std::vector<std::unique_ptr<Completion>> cs;
    std::vector<int> started;
    for (const std::string& oid : oids) {
      ops.push_back(std::make_unique<WriteOp>());
      cs.push_back(std::make_unique<Completion>());
      rados_write_op_create(ops.back()->op, LIBRADOS_CREATE_EXCLUSIVE, nullptr);
      started.push_back(io_->AioWrite(*ops.back(), oid, *cs.back()));
    }
    Status first;
    for (size_t i = 0; i < oids.size(); ++i) {
      int r = started[i] < 0 ? started[i] : cs[i]->Wait();
      if (r < 0 && first.ok()) first = RadosError(r, "creating bucket " + std::string(bucket));
    }
    if (!first.ok()) {
      (void)io_->RemoveAll(oids);
      return first;
    }
  }
  const std::string value = EncodeBucket(b);
  WriteOp op;
  int cmp = 0;
  rados_write_op_create(op.op, LIBRADOS_CREATE_IDEMPOTENT, nullptr);
  rados_write_op_omap_cmp2(op.op, bucket.data(), LIBRADOS_CMPXATTR_OP_EQ, "", bucket.size(), 0,
                           &cmp);
  const char* keys[] = {bucket.data()};
  const char* vals[] = {value.data()};
  const size_t klens[] = {bucket.size()}, vlens[] = {value.size()};
  rados_write_op_omap_set2(op.op, keys, vals, klens, vlens, 1);
  const int r = io_->Write(op, kBucketRegistryObject);
  if (r < 0) {
    (void)io_->RemoveAll(oids);
    if (r == -ECANCELED || cmp < 0) {
      return StoreErr(Code::kAlreadyExists, StoreError::kBucketAlreadyExists,
                      "bucket already exists: " + std::string(bucket));
    }
    return RadosError(r, "registering bucket " + std::string(bucket));
  }
  return Status::Ok();
}

Status RadosStore::DeleteBucket(std::string_view bucket) {
  KVCS_RETURN_IF_ERROR(store::ValidateBucketName(bucket));
  KVCS_ASSIGN_OR_RETURN(auto raw,
                        io_->OmapGet(kBucketRegistryObject, bucket, StoreError::kNoSuchBucket));
  if (!raw) return NoSuchBucket(bucket);
  KVCS_ASSIGN_OR_RETURN(BucketRecord b, DecodeBucket(*raw));
  auto not_empty = [&] {
    return StoreErr(Code::kFailedPrecondition, StoreError::kBucketNotEmpty,
                    "bucket not empty: " + std::string(bucket));
  };
  std::vector<std::string> oids;
  for (uint32_t s = 0; s < b.shards; ++s) {
    oids.push_back(IndexShardObject(b.id, s));
    KVCS_ASSIGN_OR_RETURN(OmapPage p,
                          io_->OmapList(oids.back(), "", "", 1, StoreError::kNoSuchBucket));
    if (!p.entries.empty()) return not_empty();
  }
  oids.push_back(UploadsObject(b.id));
  // Uploads in progress (a finished upload's leftover record does not count).
  KVCS_ASSIGN_OR_RETURN(auto ups, OmapAll(oids.back(), "u/", 1 << 20, StoreError::kNoSuchBucket));
  for (const auto& [k, v] : ups) {
    auto u = DecodeUpload(v);
    if (!u.ok() || !u->done) return not_empty();
  }
  WriteOp op;
  int cmp = 0;
  rados_write_op_omap_cmp2(op.op, bucket.data(), LIBRADOS_CMPXATTR_OP_EQ, raw->data(),
                           bucket.size(), raw->size(), &cmp);
  const char* keys[] = {bucket.data()};
  const size_t klens[] = {bucket.size()};
  rados_write_op_omap_rm_keys2(op.op, keys, klens, 1);
  const int r = io_->Write(op, kBucketRegistryObject);
  if (r == -ECANCELED) return NoSuchBucket(bucket);  // deleted (or re-created) meanwhile
  if (r < 0) return RadosError(r, "deleting bucket " + std::string(bucket));
  (void)io_->RemoveAll(oids);
  return Status::Ok();
}

Status RadosStore::SetBucketAcl(std::string_view bucket, std::string_view acl) {
  KVCS_RETURN_IF_ERROR(store::ValidateBucketName(bucket));
  for (int attempt = 0; attempt < kMaxPublishAttempts; ++attempt) {
    KVCS_ASSIGN_OR_RETURN(auto raw,
                          io_->OmapGet(kBucketRegistryObject, bucket, StoreError::kNoSuchBucket));
    if (!raw) return NoSuchBucket(bucket);
    KVCS_ASSIGN_OR_RETURN(BucketRecord b, DecodeBucket(*raw));
    b.acl = std::string(acl);
    const int r = io_->OmapCompareAndSet(kBucketRegistryObject, bucket, *raw, EncodeBucket(b));
    if (r == 0) return Status::Ok();
    if (r != -ECANCELED) return RadosError(r, "setting the ACL of bucket " + std::string(bucket));
  }
  return StoreErr(Code::kUnavailable, StoreError::kIo,
                  "rados: too many concurrent changes of bucket " + std::string(bucket));
}

Result<store::BucketInfo> RadosStore::HeadBucket(std::string_view bucket) {
  KVCS_ASSIGN_OR_RETURN(BucketRecord b, Bucket(bucket));
  return store::BucketInfo{std::string(bucket), b.created_ms, b.owner, b.acl};
}

Result<std::vector<store::BucketInfo>> RadosStore::ListBuckets() {
  auto all = OmapAll(kBucketRegistryObject, "", 1 << 20, StoreError::kNoSuchBucket);
  if (!all.ok() && all.status().Is(StoreError::kNoSuchBucket)) {
    return std::vector<store::BucketInfo>{};  // no bucket was ever made in this pool/namespace
  }
  if (!all.ok()) return all.status();
  std::vector<store::BucketInfo> out;
  for (const auto& [name, value] : *all) {
    KVCS_ASSIGN_OR_RETURN(BucketRecord b, DecodeBucket(value));
    out.push_back({name, b.created_ms, b.owner, b.acl});
  }
  return out;
}

Result<std::vector<std::pair<std::string, std::string>>> RadosStore::OmapAll(
    const std::string& oid, const std::string& prefix, size_t limit, StoreError missing) {
  std::vector<std::pair<std::string, std::string>> out;
  std::string after;
  for (;;) {
    KVCS_ASSIGN_OR_RETURN(OmapPage p, io_->OmapList(oid, after, prefix, kOmapPage, missing));
    for (auto& e : p.entries) {
      if (out.size() >= limit) return out;
      after = e.first;
      out.push_back(std::move(e));
    }
    if (!p.more || p.entries.empty()) return out;
  }
}

// ---- the index

Result<std::optional<std::pair<std::string, ObjectRecord>>> RadosStore::Entry(
    const BucketRecord& b, std::string_view key) {
  using R = std::optional<std::pair<std::string, ObjectRecord>>;
  KVCS_ASSIGN_OR_RETURN(auto raw, io_->OmapGet(IndexShardObject(b.id, ShardOf(key, b.shards)), key,
                                               StoreError::kNoSuchBucket));
  if (!raw) return R();
  KVCS_ASSIGN_OR_RETURN(ObjectRecord rec, DecodeObject(key, *raw));
  return R(std::make_pair(std::move(*raw), std::move(rec)));
}

Status RadosStore::Publish(const BucketRecord& b, std::string_view key, const std::string& value,
                           const store::WriteCondition& condition) {
  const std::string shard = IndexShardObject(b.id, ShardOf(key, b.shards));
  // Assume a new key first (the common case for KV caches); on a conflict read what is there.
  // A delete or a conditional write reads first: it needs to know what it replaces.
  std::string expected;
  bool read = false;
  for (int attempt = 0; attempt < kMaxPublishAttempts; ++attempt) {
    if (!read && (value.empty() || !condition.empty())) {
      KVCS_ASSIGN_OR_RETURN(auto cur, io_->OmapGet(shard, key, StoreError::kNoSuchBucket));
      if (!cur && value.empty()) return Status::Ok();  // nothing to delete
      expected = cur ? std::move(*cur) : std::string();
      read = true;
    }
    if (!condition.empty()) {  // checked against exactly the entry the compare-and-set expects
      std::optional<ObjectRecord> cur;
      if (!expected.empty()) {
        KVCS_ASSIGN_OR_RETURN(ObjectRecord rec, DecodeObject(key, expected));
        cur = std::move(rec);
      }
      KVCS_RETURN_IF_ERROR(store::CheckWriteCondition(condition, cur ? &cur->meta : nullptr));
    }
    const int r = io_->OmapCompareAndSet(shard, key, expected, value);
    if (r == 0) {
      if (!expected.empty()) {  // the replaced version's objects are garbage now
        auto old = DecodeObject(key, expected);
        if (old.ok()) (void)io_->RemoveAll(StripeObjects(b.id, old->segments));
      }
      return Status::Ok();
    }
    if (r != -ECANCELED) {
      if (r == -ENOENT) return NoSuchBucket("(deleted meanwhile)");
      return RadosError(r, "publishing " + std::string(key));
    }
    KVCS_ASSIGN_OR_RETURN(auto cur, io_->OmapGet(shard, key, StoreError::kNoSuchBucket));
    if (!cur && value.empty()) return Status::Ok();  // deleted by someone else
    expected = cur ? std::move(*cur) : std::string();
    read = true;
  }
  return StoreErr(Code::kUnavailable, StoreError::kIo,
                  "rados: too many concurrent writers of " + std::string(key));
}

// ---- objects

Result<std::unique_ptr<store::ObjectWriter>> RadosStore::Put(std::string_view bucket,
                                                             std::string_view key,
                                                             store::PutOptions options) {
  KVCS_RETURN_IF_ERROR(store::ValidateKey(key));
  KVCS_RETURN_IF_ERROR(CheckUserMeta(options));
  if (options.expected_size && *options.expected_size > store::kMaxObjectBytes) {
    return StoreErr(Code::kResourceExhausted, StoreError::kEntityTooLarge, "object exceeds 5 TiB");
  }
  KVCS_ASSIGN_OR_RETURN(BucketRecord b, Bucket(bucket));
  if (!options.condition.empty()) {
    // Refuse early, before the body is sent; Publish checks again atomically.
    KVCS_ASSIGN_OR_RETURN(auto e, Entry(b, key));
    KVCS_RETURN_IF_ERROR(
        store::CheckWriteCondition(options.condition, e ? &e->second.meta : nullptr));
  }
  auto record = std::make_shared<ObjectRecord>();
  record->meta = MetaFromOptions(key, options);
  auto describe = [record](const WrittenVersion& v) {
    record->meta.size = v.segment.size;
    record->meta.etag = ToHex(v.md5);
    record->meta.sha256 = v.sha256;
    record->meta.last_modified_ms = NowMs();
    record->segments = {v.segment};
    return EncodeObject(*record);
  };
  auto publish = [this, b, record, condition = options.condition](
                     const WrittenVersion&) -> Result<store::ObjectMeta> {
    KVCS_RETURN_IF_ERROR(Publish(b, record->meta.key, EncodeObject(*record), condition));
    return record->meta;
  };
  return std::unique_ptr<store::ObjectWriter>(
      new RadosWriter(io_, b.id, std::string(key), std::move(options), options_.stripe_bytes,
                      store::kMaxObjectBytes, describe, publish));
}

Result<std::shared_ptr<const store::ObjectReader>> RadosStore::Open(std::string_view bucket,
                                                                    std::string_view key) {
  KVCS_RETURN_IF_ERROR(store::ValidateKey(key));
  KVCS_ASSIGN_OR_RETURN(BucketRecord b, Bucket(bucket));
  KVCS_ASSIGN_OR_RETURN(auto e, Entry(b, key));
  if (!e) return NoSuchKey(key);
  return std::shared_ptr<const store::ObjectReader>(
      std::make_shared<RadosReader>(io_, b.id, std::move(e->second)));
}

std::vector<Result<std::shared_ptr<const store::ObjectReader>>> RadosStore::OpenMany(
    std::string_view bucket, std::span<const std::string> keys) {
  using R = Result<std::shared_ptr<const store::ObjectReader>>;
  auto b = Bucket(bucket);
  std::vector<R> out(keys.size(), b.ok() ? R(Status(Code::kInternal, "not run")) : R(b.status()));
  if (!b.ok()) return out;
  struct Flight {
    ReadOp op;
    Completion c;
    rados_omap_iter_t it = nullptr;
    int prval = 0, started = 0;
    size_t i = 0;
  };
  std::deque<std::unique_ptr<Flight>> flight;
  auto reap = [&] {
    Flight& f = *flight.front();
    int r = f.started < 0 ? f.started : f.c.Wait();
    if (r >= 0 && f.prval < 0) r = f.prval;
    const std::string& key = keys[f.i];
    if (r < 0) {
      if (f.it) rados_omap_get_end(f.it);
      out[f.i] = RadosError(r, "index read of " + key, StoreError::kNoSuchBucket);
    } else {
      out[f.i] = NoSuchKey(key);
      for (auto& [k, v] : DrainOmap(f.it)) {
        if (k != key) continue;
        auto rec = DecodeObject(key, v);
        out[f.i] = rec.ok() ? R(std::make_shared<RadosReader>(io_, b->id, std::move(*rec)))
                            : R(rec.status());
      }
    }
    flight.pop_front();
  };
  for (size_t i = 0; i < keys.size(); ++i) {
    Status valid = store::ValidateKey(keys[i]);
    if (!valid.ok()) {
      out[i] = valid;
      continue;
    }
    if (flight.size() >= kOpenWindow) reap();
    auto f = std::make_unique<Flight>();
    f->i = i;
    const char* k[] = {keys[i].data()};
    const size_t kl[] = {keys[i].size()};
    rados_read_op_omap_get_vals_by_keys2(f->op.op, k, 1, kl, &f->it, &f->prval);
    f->started = io_->AioRead(f->op, IndexShardObject(b->id, ShardOf(keys[i], b->shards)), f->c);
    flight.push_back(std::move(f));
  }
  while (!flight.empty()) reap();
  return out;
}

Result<store::ObjectMeta> RadosStore::Head(std::string_view bucket, std::string_view key) {
  KVCS_RETURN_IF_ERROR(store::ValidateKey(key));
  KVCS_ASSIGN_OR_RETURN(BucketRecord b, Bucket(bucket));
  KVCS_ASSIGN_OR_RETURN(auto e, Entry(b, key));
  if (!e) return NoSuchKey(key);
  return e->second.meta;
}

Status RadosStore::SetObjectAcl(std::string_view bucket, std::string_view key,
                                std::string_view acl) {
  // The same version (its stripes are not touched) with the new ACL in its index entry, set only
  // over the entry read; a PUT meanwhile that kept the ETag gets the ACL too, one that changed
  // it wins (kPreconditionFailed), as LocalStore does.
  KVCS_RETURN_IF_ERROR(store::ValidateKey(key));
  KVCS_ASSIGN_OR_RETURN(BucketRecord b, Bucket(bucket));
  const std::string shard = IndexShardObject(b.id, ShardOf(key, b.shards));
  std::string etag;
  for (int attempt = 0; attempt < kMaxPublishAttempts; ++attempt) {
    KVCS_ASSIGN_OR_RETURN(auto e, Entry(b, key));
    if (!e) return NoSuchKey(key);
    ObjectRecord rec = std::move(e->second);
    if (attempt == 0) etag = rec.meta.etag;
    store::WriteCondition same;
    same.if_match = {etag};
    KVCS_RETURN_IF_ERROR(store::CheckWriteCondition(same, &rec.meta));
    rec.meta.acl = std::string(acl);
    const int r = io_->OmapCompareAndSet(shard, key, e->first, EncodeObject(rec));
    if (r == 0) return Status::Ok();
    if (r == -ENOENT) return NoSuchBucket(bucket);
    if (r != -ECANCELED) return RadosError(r, "setting the ACL of " + std::string(key));
  }
  return StoreErr(Code::kUnavailable, StoreError::kIo,
                  "rados: too many concurrent writers of " + std::string(key));
}

Status RadosStore::Delete(std::string_view bucket, std::string_view key) {
  KVCS_RETURN_IF_ERROR(store::ValidateKey(key));
  KVCS_ASSIGN_OR_RETURN(BucketRecord b, Bucket(bucket));
  return Publish(b, key, "");
}

Result<store::ListResult> RadosStore::List(std::string_view bucket,
                                           const store::ListOptions& options) {
  KVCS_ASSIGN_OR_RETURN(BucketRecord b, Bucket(bucket));
  auto fetch = [&](std::span<ShardQuery> qs) {
    struct Flight {
      ReadOp op;
      Completion c;
      rados_omap_iter_t it = nullptr;
      unsigned char more = 0;
      int prval = 0, started = 0;
    };
    std::vector<std::unique_ptr<Flight>> fs;
    for (ShardQuery& q : qs) {
      auto f = std::make_unique<Flight>();
      rados_read_op_omap_get_vals2(f->op.op, q.start_after.c_str(), q.prefix.c_str(), q.max, &f->it,
                                   &f->more, &f->prval);
      f->started = io_->AioRead(f->op, IndexShardObject(b.id, q.shard), f->c);
      fs.push_back(std::move(f));
    }
    for (size_t i = 0; i < qs.size(); ++i) {
      Flight& f = *fs[i];
      int r = f.started < 0 ? f.started : f.c.Wait();
      if (r >= 0 && f.prval < 0) r = f.prval;
      if (r < 0) {
        if (f.it) rados_omap_get_end(f.it);
        qs[i].page = RadosError(r, "listing", StoreError::kNoSuchBucket);
        continue;
      }
      OmapPage p;
      p.entries = DrainOmap(f.it);
      p.more = f.more != 0;
      qs[i].page = std::move(p);
    }
  };
  auto decode = [](const std::string& key, const std::string& value) -> Result<store::ObjectMeta> {
    KVCS_ASSIGN_OR_RETURN(ObjectRecord r, DecodeObject(key, value));
    return std::move(r.meta);
  };
  return MergeShardLists(b.shards, options, fetch, decode);
}

Result<store::ObjectMeta> RadosStore::Copy(std::string_view src_bucket, std::string_view src_key,
                                           std::string_view dst_bucket, std::string_view dst_key,
                                           std::optional<store::PutOptions> options) {
  KVCS_ASSIGN_OR_RETURN(auto reader, Open(src_bucket, src_key));
  KVCS_ASSIGN_OR_RETURN(
      auto writer,
      Put(dst_bucket, dst_key, store::CopyPutOptions(reader->meta(), std::move(options))));
  return store::StreamCopy(*reader, *writer, kCopyChunkBytes);
}

void RadosStore::ReadMany(std::span<store::RangeRead> ranges) {
  if (ranges.size() > store::kMaxReadManyRanges) {
    for (auto& r : ranges) r.result = Status(Code::kResourceExhausted, "too many ranges");
    return;
  }
  // Every range cut into per-object pieces; a range is done when all its pieces are.
  struct Ext {
    const RadosReader* reader;
    RadosReader::Piece piece;
    size_t range;
  };
  std::vector<Ext> exts;
  std::vector<size_t> want(ranges.size(), 0);
  std::vector<Status> failed(ranges.size());
  for (size_t i = 0; i < ranges.size(); ++i) {
    store::RangeRead& r = ranges[i];
    const auto* reader = dynamic_cast<const RadosReader*>(r.reader);
    if (reader != nullptr && reader->io() != io_.get()) reader = nullptr;  // another store's
    if (reader == nullptr) {
      r.result = r.reader ? r.reader->ReadAt(r.offset, r.out)
                          : Result<size_t>(Status(Code::kInvalidArgument, "null reader"));
      want[i] = SIZE_MAX;
      continue;
    }
    const uint64_t size = reader->meta().size;
    if (r.offset >= size || r.out.empty()) continue;
    want[i] = static_cast<size_t>(std::min<uint64_t>(r.out.size(), size - r.offset));
    std::vector<RadosReader::Piece> ps;
    reader->Locate(r.offset, want[i], &ps);
    for (auto& p : ps) exts.push_back({reader, std::move(p), i});
  }
  std::sort(exts.begin(), exts.end(), [](const Ext& a, const Ext& b) {
    return a.piece.oid != b.piece.oid ? a.piece.oid < b.piece.oid : a.piece.offset < b.piece.offset;
  });
  // One op per run of pieces of one object (at most kMaxExtentsPerOp, kMaxBytesPerOp).
  struct Op {
    size_t first = 0, last = 0;  // exts[first, last)
    uint64_t bytes = 0;
  };
  std::vector<Op> ops;
  for (size_t i = 0; i < exts.size(); ++i) {
    if (!ops.empty()) {
      Op& o = ops.back();
      if (exts[o.first].piece.oid == exts[i].piece.oid && o.last - o.first < kMaxExtentsPerOp &&
          o.bytes + exts[i].piece.len <= kMaxBytesPerOp) {
        o.last = i + 1;
        o.bytes += exts[i].piece.len;
        continue;
      }
    }
    ops.push_back({i, i + 1, exts[i].piece.len});
  }
  read_ops_.fetch_add(ops.size(), std::memory_order_relaxed);
  coalesced_.fetch_add(exts.size() - ops.size(), std::memory_order_relaxed);
  struct Flight {
    ReadOp op;
    Completion c;
    std::vector<size_t> got;
    std::vector<int> prval;
    int started = 0;
    size_t op_index = 0;
  };
  std::deque<std::unique_ptr<Flight>> flight;
  uint64_t bytes_in_flight = 0;
  auto reap = [&] {
    Flight& f = *flight.front();
    const Op& o = ops[f.op_index];
    int r = f.started < 0 ? f.started : f.c.Wait();
    for (size_t k = o.first; k < o.last; ++k) {
      const Ext& e = exts[k];
      int pr = r < 0 ? r : f.prval[k - o.first];
      if ((pr < 0 || f.got[k - o.first] != e.piece.len) && failed[e.range].ok()) {
        failed[e.range] = e.reader->ReadFailure(pr);
      }
    }
    bytes_in_flight -= o.bytes;
    flight.pop_front();
  };
  for (size_t k = 0; k < ops.size(); ++k) {
    const Op& o = ops[k];
    while (!flight.empty() && (flight.size() >= options_.max_reads_in_flight ||
                               bytes_in_flight + o.bytes > options_.max_read_bytes_in_flight)) {
      reap();
    }
    auto f = std::make_unique<Flight>();
    f->op_index = k;
    f->got.resize(o.last - o.first);
    f->prval.resize(o.last - o.first);
    for (size_t i = o.first; i < o.last; ++i) {
      const Ext& e = exts[i];
      char* dst = reinterpret_cast<char*>(ranges[e.range].out.data() + e.piece.pos);
      rados_read_op_read(f->op.op, e.piece.offset, e.piece.len, dst, &f->got[i - o.first],
                         &f->prval[i - o.first]);
    }
    f->started = io_->AioRead(f->op, exts[o.first].piece.oid, f->c);
    bytes_in_flight += o.bytes;
    flight.push_back(std::move(f));
  }
  while (!flight.empty()) reap();
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (want[i] == SIZE_MAX) continue;
    if (!failed[i].ok()) {
      ranges[i].result = failed[i];
    } else {
      ranges[i].result = want[i];
    }
  }
}

// ---- multipart

Result<std::string> RadosStore::CreateMultipart(std::string_view bucket, std::string_view key,
                                                store::PutOptions options) {
  KVCS_RETURN_IF_ERROR(store::ValidateKey(key));
  KVCS_RETURN_IF_ERROR(CheckUserMeta(options));
  KVCS_ASSIGN_OR_RETURN(BucketRecord b, Bucket(bucket));
  const std::string id = NewId(16);
  UploadRecord u{std::string(key), Representation(options), NowMs(), false};
  const std::string k = UploadKey(id), v = EncodeUpload(u);
  WriteOp op;
  const char* keys[] = {k.data()};
  const char* vals[] = {v.data()};
  const size_t klens[] = {k.size()}, vlens[] = {v.size()};
  rados_write_op_assert_exists(op.op);
  rados_write_op_omap_set2(op.op, keys, vals, klens, vlens, 1);
  const int r = io_->Write(op, UploadsObject(b.id));
  if (r == -ENOENT) return NoSuchBucket(bucket);
  if (r < 0) return RadosError(r, "creating an upload of " + std::string(key));
  return id;
}

Result<RadosStore::Upload> RadosStore::GetUpload(const BucketRecord& b, std::string_view key,
                                                 std::string_view upload_id) {
  KVCS_ASSIGN_OR_RETURN(
      auto raw, io_->OmapGet(UploadsObject(b.id), UploadKey(upload_id), StoreError::kNoSuchBucket));
  if (!raw) return NoSuchUpload(upload_id);
  KVCS_ASSIGN_OR_RETURN(UploadRecord u, DecodeUpload(*raw));
  if (u.done || u.key != key) return NoSuchUpload(upload_id);
  return Upload{std::move(*raw), std::move(u)};
}

Result<std::vector<PartRecord>> RadosStore::Parts(const BucketRecord& b,
                                                  std::string_view upload_id) {
  KVCS_ASSIGN_OR_RETURN(auto all, OmapAll(UploadsObject(b.id), PartPrefix(upload_id),
                                          store::kMaxPartNumber, StoreError::kNoSuchBucket));
  std::vector<PartRecord> out;
  for (const auto& [k, v] : all) {
    KVCS_ASSIGN_OR_RETURN(PartRecord p, DecodePart(v));
    out.push_back(std::move(p));
  }
  return out;  // key order is part-number order (five digits)
}

Result<std::unique_ptr<store::ObjectWriter>> RadosStore::PutPart(std::string_view bucket,
                                                                 std::string_view key,
                                                                 std::string_view upload_id,
                                                                 int part_number,
                                                                 store::PutOptions options) {
  if (part_number < 1 || part_number > store::kMaxPartNumber) {
    return StoreErr(Code::kInvalidArgument, StoreError::kInvalidPartNumber,
                    "part number must be 1..10000");
  }
  KVCS_ASSIGN_OR_RETURN(BucketRecord b, Bucket(bucket));
  KVCS_ASSIGN_OR_RETURN(Upload up, GetUpload(b, key, upload_id));
  auto part = std::make_shared<PartRecord>();
  auto describe = [part, part_number](const WrittenVersion& v) {
    part->info = {part_number, v.segment.size, ToHex(v.md5), NowMs()};
    part->md5 = v.md5;
    part->sha256 = v.sha256;
    part->segment = v.segment;
    return EncodePart(*part);
  };
  const std::string id(upload_id);
  const std::string k(key);
  auto publish = [this, b, up, part, id, k](const WrittenVersion&) -> Result<store::ObjectMeta> {
    const std::string oid = UploadsObject(b.id);
    const std::string pk = PartKey(id, part->info.part_number), uk = UploadKey(id);
    const std::string value = EncodePart(*part);
    std::string expected;
    for (int attempt = 0; attempt < kMaxPublishAttempts; ++attempt) {
      WriteOp op;
      int c1 = 0, c2 = 0;
      rados_write_op_omap_cmp2(op.op, uk.data(), LIBRADOS_CMPXATTR_OP_EQ, up.raw.data(), uk.size(),
                               up.raw.size(), &c1);
      rados_write_op_omap_cmp2(op.op, pk.data(), LIBRADOS_CMPXATTR_OP_EQ, expected.data(),
                               pk.size(), expected.size(), &c2);
      const char* keys[] = {pk.data()};
      const char* vals[] = {value.data()};
      const size_t klens[] = {pk.size()}, vlens[] = {value.size()};
      rados_write_op_omap_set2(op.op, keys, vals, klens, vlens, 1);
      const int r = io_->Write(op, oid);
      if (r == 0) {
        if (!expected.empty()) {
          auto old = DecodePart(expected);
          if (old.ok()) (void)io_->RemoveAll(StripeObjects(b.id, {old->segment}));
        }
        store::ObjectMeta m;
        m.key = k;
        m.size = part->info.size;
        m.etag = part->info.etag;
        m.sha256 = part->sha256;
        m.last_modified_ms = part->info.last_modified_ms;
        return m;
      }
      if (r != -ECANCELED) return RadosError(r, "recording a part", StoreError::kNoSuchBucket);
      KVCS_ASSIGN_OR_RETURN(auto cur_up, io_->OmapGet(oid, uk, StoreError::kNoSuchBucket));
      if (!cur_up || *cur_up != up.raw) return NoSuchUpload(id);  // aborted or completed
      KVCS_ASSIGN_OR_RETURN(auto cur, io_->OmapGet(oid, pk, StoreError::kNoSuchBucket));
      expected = cur ? std::move(*cur) : std::string();
    }
    return StoreErr(Code::kUnavailable, StoreError::kIo, "rados: too many concurrent part writers");
  };
  return std::unique_ptr<store::ObjectWriter>(
      new RadosWriter(io_, b.id, std::string(key), std::move(options), options_.stripe_bytes,
                      store::kMaxPartBytes, describe, publish));
}

Result<std::vector<store::PartInfo>> RadosStore::ListParts(std::string_view bucket,
                                                           std::string_view key,
                                                           std::string_view upload_id) {
  KVCS_ASSIGN_OR_RETURN(BucketRecord b, Bucket(bucket));
  KVCS_RETURN_IF_ERROR(GetUpload(b, key, upload_id).status());
  KVCS_ASSIGN_OR_RETURN(auto parts, Parts(b, upload_id));
  std::vector<store::PartInfo> out;
  for (const PartRecord& p : parts) out.push_back(p.info);
  return out;
}

Result<store::ObjectMeta> RadosStore::CompleteMultipart(
    std::string_view bucket, std::string_view key, std::string_view upload_id,
    std::span<const store::CompletePart> parts) {
  KVCS_ASSIGN_OR_RETURN(BucketRecord b, Bucket(bucket));
  KVCS_ASSIGN_OR_RETURN(Upload up, GetUpload(b, key, upload_id));
  if (parts.empty()) {
    return StoreErr(Code::kInvalidArgument, StoreError::kInvalidPart, "no parts given");
  }
  KVCS_ASSIGN_OR_RETURN(auto stored, Parts(b, upload_id));
  std::map<int, const PartRecord*> by_number;
  for (const PartRecord& p : stored) by_number[p.info.part_number] = &p;
  std::vector<const PartRecord*> chosen;
  int last = 0;
  for (const store::CompletePart& cp : parts) {
    if (cp.part_number <= last) {
      return StoreErr(Code::kInvalidArgument, StoreError::kInvalidPartOrder,
                      "part numbers must be strictly ascending");
    }
    last = cp.part_number;
    auto it = by_number.find(cp.part_number);
    if (it == by_number.end() || it->second->info.etag != Unquote(cp.etag)) {
      return StoreErr(Code::kInvalidArgument, StoreError::kInvalidPart,
                      "part " + std::to_string(cp.part_number) + " missing or ETag mismatch");
    }
    chosen.push_back(it->second);
  }
  for (size_t i = 0; i + 1 < chosen.size(); ++i) {
    if (chosen[i]->info.size < store::kMinPartBytes) {
      return StoreErr(Code::kInvalidArgument, StoreError::kEntityTooSmall,
                      "part " + std::to_string(chosen[i]->info.part_number) +
                          " is smaller than 5 MiB and not the last part");
    }
  }
  ObjectRecord rec;
  rec.meta = MetaFromOptions(key, up.record.options);
  std::vector<store::Md5> md5s;
  for (const PartRecord* p : chosen) {
    rec.segments.push_back(p->segment);
    rec.meta.size += p->info.size;
    md5s.push_back(p->md5);
  }
  rec.meta.etag = store::MultipartEtag(md5s);
  rec.meta.parts_count = static_cast<int>(chosen.size());
  if (chosen.size() == 1) rec.meta.sha256 = chosen[0]->sha256;  // the whole object's digest
  rec.meta.last_modified_ms = NowMs();
  const std::string value = EncodeObject(rec);
  const std::string oid = UploadsObject(b.id), uk = UploadKey(upload_id);
  // 1. Mark the upload done (its parts now belong to the object: no abort may remove them).
  UploadRecord done = up.record;
  done.done = true;
  const std::string done_raw = EncodeUpload(done);
  auto swap_upload = [&](const std::string& from, const std::string& to) {
    return io_->OmapCompareAndSet(oid, uk, from, to);
  };
  int r = swap_upload(up.raw, done_raw);
  if (r == -ECANCELED) return NoSuchUpload(upload_id);
  if (r < 0) return RadosError(r, "completing an upload of " + std::string(key));
  // 2. The object's metadata on its first stripe (as a PUT's carries it), then publish.
  {
    WriteOp op;
    rados_write_op_setxattr(op.op, kKeyXattr, key.data(), key.size());
    rados_write_op_setxattr(op.op, kMetaXattr, value.data(), value.size());
    r = io_->Write(op, StripeObject(b.id, rec.segments[0].version, 0));
  }
  Status published =
      r < 0 ? RadosError(r, "describing " + std::string(key)) : Publish(b, key, value);
  if (!published.ok()) {
    (void)swap_upload(done_raw, up.raw);  // the upload may be completed (or aborted) again
    return published;
  }
  // 3. Forget the upload and remove the parts the object does not use.
  std::vector<std::string> rm = {uk};
  std::vector<std::string> unused;
  for (const PartRecord& p : stored) {
    rm.push_back(PartKey(upload_id, p.info.part_number));
    if (std::find(chosen.begin(), chosen.end(), &p) == chosen.end()) {
      for (auto& o : StripeObjects(b.id, {p.segment})) unused.push_back(std::move(o));
    }
  }
  {
    WriteOp op;
    OmapRemoveKeys(op, rm);
    (void)io_->Write(op, oid);  // a leftover done record is never listed
  }
  (void)io_->RemoveAll(unused);
  return rec.meta;
}

Status RadosStore::AbortMultipart(std::string_view bucket, std::string_view key,
                                  std::string_view upload_id) {
  KVCS_ASSIGN_OR_RETURN(BucketRecord b, Bucket(bucket));
  KVCS_ASSIGN_OR_RETURN(Upload up, GetUpload(b, key, upload_id));
  KVCS_ASSIGN_OR_RETURN(auto stored, Parts(b, upload_id));
  const std::string oid = UploadsObject(b.id), uk = UploadKey(upload_id);
  std::vector<std::string> rm = {uk};
  std::vector<std::string> data;
  for (const PartRecord& p : stored) {
    rm.push_back(PartKey(upload_id, p.info.part_number));
    for (auto& o : StripeObjects(b.id, {p.segment})) data.push_back(std::move(o));
  }
  WriteOp op;
  int cmp = 0;
  rados_write_op_omap_cmp2(op.op, uk.data(), LIBRADOS_CMPXATTR_OP_EQ, up.raw.data(), uk.size(),
                           up.raw.size(), &cmp);
  OmapRemoveKeys(op, rm);
  const int r = io_->Write(op, oid);
  if (r == -ECANCELED) return NoSuchUpload(upload_id);
  if (r < 0) return RadosError(r, "aborting an upload of " + std::string(key));
  (void)io_->RemoveAll(data);
  return Status::Ok();
}

Result<std::vector<store::UploadInfo>> RadosStore::ListMultipartUploads(std::string_view bucket,
                                                                        std::string_view prefix) {
  KVCS_ASSIGN_OR_RETURN(BucketRecord b, Bucket(bucket));
  KVCS_ASSIGN_OR_RETURN(auto all,
                        OmapAll(UploadsObject(b.id), "u/", 1 << 20, StoreError::kNoSuchBucket));
  std::vector<store::UploadInfo> out;
  for (const auto& [k, v] : all) {
    KVCS_ASSIGN_OR_RETURN(UploadRecord u, DecodeUpload(v));
    if (u.done || u.key.compare(0, prefix.size(), prefix) != 0) continue;
    out.push_back({u.key, k.substr(2), u.initiated_ms});
  }
  std::sort(out.begin(), out.end(), [](const store::UploadInfo& a, const store::UploadInfo& b) {
    return std::tie(a.key, a.initiated_ms) < std::tie(b.key, b.initiated_ms);
  });
  if (out.size() > static_cast<size_t>(store::kMaxListKeys)) out.resize(store::kMaxListKeys);
  return out;
}

}  // namespace kvcs::rados_store
