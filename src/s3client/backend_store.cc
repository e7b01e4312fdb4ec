#include "s3client/backend_store.h"

#include <algorithm>

#include "s3client/backend_mapping.h"
#include "s3client/backend_part_writer.h"
#include "s3client/backend_reader.h"
#include "s3client/backend_writer.h"

namespace kvcs::s3client {

using store::StoreError;

struct S3BackendStore::Impl {
  S3BackendOptions options;
  std::unique_ptr<S3Client> client;
  // The read-ahead all readers may still hold (starts at options.read_ahead_budget).
  std::unique_ptr<ReadAheadBudget> read_ahead;

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
  impl->read_ahead = std::make_unique<ReadAheadBudget>(impl->options.read_ahead_budget);
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

namespace {

// Whether the backend may evaluate o's condition (S3BackendOptions::conditional_writes).
Status CheckBackendCondition(const store::PutOptions& o, const S3BackendOptions& options) {
  const store::WriteCondition& c = o.condition;
  if (c.empty()) return Status::Ok();
  auto refuse = [](std::string why) {
    return StoreErr(Code::kUnsupported, StoreError::kNotImplemented,
                    "conditional PUT on the S3 backend: " + why);
  };
  if (!options.conditional_writes) {
    return refuse(
        "not enabled (set \"conditional_writes\": true in the backend config when the "
        "service evaluates If-Match / If-None-Match on PUT)");
  }
  const bool none_star = c.if_none_match.size() == 1 && c.if_none_match[0] == "*";
  if (c.if_match.size() > 1 || (!c.if_none_match.empty() && !none_star) ||
      (!c.if_match.empty() && !c.if_none_match.empty())) {
    return refuse("only If-None-Match: * or one If-Match ETag is passed on");
  }
  // One backend PUT evaluates the condition atomically; a multipart upload's completion would
  // not (radosgw ignores conditions on CompleteMultipartUpload).
  if (!o.expected_size || *o.expected_size > options.multipart_threshold) {
    return refuse("the object must fit one backend PUT (at most " +
                  std::to_string(options.multipart_threshold) + " bytes, length declared)");
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<store::ObjectWriter>> S3BackendStore::Put(std::string_view bucket,
                                                                 std::string_view key,
                                                                 store::PutOptions options) {
  KVCS_ASSIGN_OR_RETURN(std::string b, impl_->Backend(bucket));
  KVCS_RETURN_IF_ERROR(store::ValidateKey(key));
  if (options.expected_size && *options.expected_size > store::kMaxObjectBytes) {
    return StoreErr(Code::kResourceExhausted, StoreError::kEntityTooLarge, "object exceeds 5 TiB");
  }
  // Conditional writes are the backend's to evaluate; ACLs are not kept there. Either is refused
  // rather than silently unconditional (docs/protocols/s3-backend.md).
  KVCS_RETURN_IF_ERROR(CheckBackendCondition(options, impl_->options));
  if (!options.acl.empty()) {
    return StoreErr(Code::kUnsupported, StoreError::kNotImplemented,
                    "object ACLs are not kept on the S3 backend");
  }
  return std::unique_ptr<store::ObjectWriter>(new BackendWriter(
      impl_->client.get(), impl_->options.part_bytes, impl_->options.multipart_threshold,
      std::move(b), std::string(key), std::move(options)));
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
      std::make_shared<BackendReader>(client.get(), read_ahead.get(), options.read_ahead_factor,
                                      bucket, std::move(m), std::move(prefix)));
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
      new BackendPartWriter(impl_->client.get(), std::move(b), std::string(key),
                            std::string(upload_id), part_number, std::move(options)));
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
