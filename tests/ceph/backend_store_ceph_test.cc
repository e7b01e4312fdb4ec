// The ObjectStore contract, run against S3BackendStore over a real radosgw: the same behaviours
// the local-disk store pins (src/store/local_store_test.cc), where S3 allows them, plus the
// backend's own: digests kept in object metadata, multipart streaming of large objects, pinned
// readers, bucket-prefix mapping. Each test states the behaviour it pins.
#include <gtest/gtest.h>

#include <random>

#include "ceph_env.h"
#include "common/crypto.h"
#include "s3client/backend_store.h"

namespace kvcs::s3client {
namespace {

using store::StoreError;

Bytes Pattern(size_t n, uint64_t seed) {
  Bytes b(n);
  std::mt19937_64 rng(seed);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

class BackendStoreCeph : public ::testing::Test {
 protected:
  void SetUp() override {
    auto env = ceph_test::LoadCephEnv();
    ASSERT_TRUE(env.ok()) << env.status().ToString();
    env_ = *env;
    store_ = OpenStore("t" + std::to_string(::getpid()) + "-");
    ASSERT_NE(store_, nullptr);
    bucket_ = "bkt" + std::to_string(counter_++);
    ASSERT_TRUE(store_->CreateBucket(bucket_).ok());
  }
  void TearDown() override {
    if (!store_) return;
    for (const auto& b : store_->ListBuckets().value()) {
      for (int i = 0; i < 20; ++i) {
        auto l = store_->List(b.name, {});
        if (!l.ok() || l->objects.empty()) break;
        for (const auto& o : l->objects) (void)store_->Delete(b.name, o.key);
      }
      auto ups = store_->ListMultipartUploads(b.name, "");
      if (ups.ok()) {
        for (const auto& u : *ups) (void)store_->AbortMultipart(b.name, u.key, u.upload_id);
      }
      (void)store_->DeleteBucket(b.name);
    }
  }
  std::unique_ptr<S3BackendStore> OpenStore(const std::string& prefix) {
    S3BackendOptions o;
    o.client = ceph_test::RgwClientOptions(env_);
    o.bucket_prefix = prefix;
    o.multipart_threshold = store::kMinPartBytes;  // small, so tests exercise multipart
    o.part_bytes = store::kMinPartBytes;
    auto s = S3BackendStore::Open(o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }
  Result<store::ObjectMeta> PutBytes(const std::string& key, ByteSpan data,
                                     store::PutOptions o = {}, size_t chunk = 100000) {
    KVCS_ASSIGN_OR_RETURN(auto w, store_->Put(bucket_, key, std::move(o)));
    for (size_t off = 0; off < data.size(); off += chunk) {
      KVCS_RETURN_IF_ERROR(w->Write(data.subspan(off, std::min(chunk, data.size() - off))));
    }
    return w->Commit();
  }
  Bytes ReadAll(const std::string& key) {
    auto r = store_->Open(bucket_, key);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return {};
    Bytes out((*r)->meta().size);
    auto n = (*r)->ReadAt(0, out);
    EXPECT_TRUE(n.ok() && *n == out.size());
    return out;
  }

  static inline int counter_ = 0;
  ceph_test::CephEnv env_;
  std::unique_ptr<S3BackendStore> store_;
  std::string bucket_;
};

// Buckets: create, duplicate refused, head, list (prefix-mapped), not-empty refused, delete.
TEST_F(BackendStoreCeph, BucketLifecycle) {
  EXPECT_TRUE(store_->CreateBucket(bucket_).Is(StoreError::kBucketAlreadyExists));
  EXPECT_TRUE(store_->CreateBucket("Bad_Name").Is(StoreError::kInvalidBucketName));
  auto h = store_->HeadBucket(bucket_);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->name, bucket_);
  EXPECT_GT(h->created_ms, 0);
  auto all = store_->ListBuckets();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);  // only this store's prefix
  EXPECT_EQ((*all)[0].name, bucket_);
  ASSERT_TRUE(PutBytes("k", AsBytes("v")).ok());
  EXPECT_TRUE(store_->DeleteBucket(bucket_).Is(StoreError::kBucketNotEmpty));
  ASSERT_TRUE(store_->Delete(bucket_, "k").ok());
  ASSERT_TRUE(store_->DeleteBucket(bucket_).ok());
  EXPECT_TRUE(store_->HeadBucket(bucket_).status().Is(StoreError::kNoSuchBucket));
  EXPECT_TRUE(store_->Head(bucket_, "k").status().Is(StoreError::kNoSuchBucket));
  EXPECT_TRUE(store_->Delete(bucket_, "k").Is(StoreError::kNoSuchBucket));
  EXPECT_TRUE(store_->List(bucket_, {}).status().Is(StoreError::kNoSuchBucket));
}

// A small object: one PUT; metadata, content type, user metadata and the SHA-256 come back on
// Open/Head; ranges read byte-exact; the reserved digest name cannot be forged by a caller.
TEST_F(BackendStoreCeph, PutOpenReadMetadataAndDigest) {
  Bytes data = Pattern(300000, 3);
  store::PutOptions o;
  o.content_type = "application/octet-stream";
  o.cache_control = "no-cache";
  o.user_meta = {{"color", "blue"}, {kSha256MetaName, "forged"}};
  auto m = PutBytes("obj", data, o);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->size, data.size());
  ASSERT_TRUE(m->sha256.has_value());
  EXPECT_EQ(*m->sha256, Sha256::Hash(data));
  auto h = store_->Head(bucket_, "obj");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->etag, m->etag);
  EXPECT_EQ(h->content_type, "application/octet-stream");
  EXPECT_EQ(h->cache_control, "no-cache");
  ASSERT_TRUE(h->sha256.has_value());
  EXPECT_EQ(*h->sha256, Sha256::Hash(data));
  ASSERT_EQ(h->user_meta.size(), 1u);
  EXPECT_EQ(h->user_meta[0].first, "color");
  EXPECT_EQ(ReadAll("obj"), data);
  auto r = store_->Open(bucket_, "obj");
  ASSERT_TRUE(r.ok());
  Bytes out(1000);
  auto n = (*r)->ReadAt(299500, out);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 500u);
  EXPECT_TRUE(std::equal(out.begin(), out.begin() + 500, data.begin() + 299500));
  n = (*r)->ReadAt(300000, out);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0u);
  EXPECT_TRUE(store_->Open(bucket_, "nope").status().Is(StoreError::kNoSuchKey));
}

// Digest and size expectations fail the commit and store nothing (single PUT and multipart).
TEST_F(BackendStoreCeph, DigestChecksRejectAndLeaveNothing) {
  for (size_t size : {size_t{1000}, size_t{12} << 20}) {
    Bytes data = Pattern(size, size);
    store::PutOptions bad_sha;
    bad_sha.expected_sha256 = Digest{};
    auto a = PutBytes("x", data, bad_sha, 1 << 20);
    ASSERT_FALSE(a.ok());
    EXPECT_TRUE(a.status().Is(StoreError::kSha256Mismatch)) << a.status().ToString();
    store::PutOptions bad_md5;
    bad_md5.expected_md5 = store::Md5{};
    auto b = PutBytes("x", data, bad_md5, 1 << 20);
    ASSERT_FALSE(b.ok());
    EXPECT_TRUE(b.status().Is(StoreError::kBadDigest));
    store::PutOptions bad_size;
    bad_size.expected_size = size + 1;
    auto c = PutBytes("x", data, bad_size, 1 << 20);
    ASSERT_FALSE(c.ok());
    EXPECT_TRUE(c.status().Is(StoreError::kIncompleteBody));
    EXPECT_TRUE(store_->Head(bucket_, "x").status().Is(StoreError::kNoSuchKey));
    auto ups = store_->ListMultipartUploads(bucket_, "");
    ASSERT_TRUE(ups.ok());
    EXPECT_TRUE(ups->empty()) << "a failed multipart write must abort its upload";
  }
}

// A writer dropped before Commit leaves nothing visible and no upload behind.
TEST_F(BackendStoreCeph, UncommittedWriterIsInvisible) {
  {
    auto w = store_->Put(bucket_, "gone", {});
    ASSERT_TRUE(w.ok());
    Bytes big = Pattern(11 << 20, 5);  // past the threshold: a multipart upload is open
    ASSERT_TRUE((*w)->Write(big).ok());
    auto ups = store_->ListMultipartUploads(bucket_, "");
    ASSERT_TRUE(ups.ok());
    EXPECT_EQ(ups->size(), 1u);
  }
  EXPECT_TRUE(store_->Head(bucket_, "gone").status().Is(StoreError::kNoSuchKey));
  auto ups = store_->ListMultipartUploads(bucket_, "");
  ASSERT_TRUE(ups.ok());
  EXPECT_TRUE(ups->empty());
}

// Large objects stream out as multipart (the ETag says "-N"), read back byte-exact; the digest is
// kept when it is known up front.
TEST_F(BackendStoreCeph, LargeObjectStreamsAsMultipart) {
  Bytes data = Pattern((17 << 20) + 333, 9);
  store::PutOptions o;
  o.expected_sha256 = Sha256::Hash(data);
  auto m = PutBytes("large", data, o, 3 << 20);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->parts_count, 4);
  auto h = store_->Head(bucket_, "large");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->size, data.size());
  EXPECT_EQ(h->parts_count, 4);
  EXPECT_EQ(h->etag, m->etag);
  ASSERT_TRUE(h->sha256.has_value());
  EXPECT_EQ(*h->sha256, Sha256::Hash(data));
  EXPECT_EQ(ReadAll("large"), data);
}

// An open reader is pinned to the version it opened: after an overwrite it returns bytes of
// that version only (the first bytes kept from the opening GET) or fails, never bytes of another
// version, through ReadAt and ReadMany alike.
TEST_F(BackendStoreCeph, ReaderNeverMixesVersions) {
  const Bytes v1 = Pattern(10000, 1);
  ASSERT_TRUE(PutBytes("v", v1).ok());
  auto r = store_->Open(bucket_, "v");
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(PutBytes("v", Pattern(10000, 2)).ok());
  Bytes head(100);
  auto n = (*r)->ReadAt(0, head);  // inside the opened prefix: the old version's bytes
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(head, Bytes(v1.begin(), v1.begin() + 100));
  Bytes out(100);
  n = (*r)->ReadAt(6000, out);  // past it: If-Match fails, the reader says so
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), Code::kFailedPrecondition) << n.status().ToString();
  Bytes across(200);  // straddles the prefix end: one GET, refused as a whole
  std::vector<store::RangeRead> rr(3);
  rr[0].reader = r->get();
  rr[0].offset = 6000;
  rr[0].out = out;
  rr[1].reader = r->get();
  rr[1].offset = 4000;
  rr[1].out = across;
  rr[2].reader = r->get();
  rr[2].offset = 6100;  // adjacent to rr[0]: coalesced, refused too
  Bytes out2(100);
  rr[2].out = out2;
  store_->ReadMany(rr);
  for (const auto& x : rr) {
    EXPECT_FALSE(x.result.ok());
    if (!x.result.ok()) EXPECT_EQ(x.result.status().code(), Code::kFailedPrecondition);
  }
  EXPECT_EQ(out, Bytes(100, 0)) << "no byte of the new version may land in the caller's buffer";
}

// List: prefix, delimiter, and continuation through next_marker visit each entry once.
TEST_F(BackendStoreCeph, ListPrefixDelimiterContinuation) {
  std::vector<std::string> keys = {"a/1", "a/2", "a/3", "b/x/1", "b/y", "c"};
  for (const auto& k : keys) ASSERT_TRUE(PutBytes(k, AsBytes(k)).ok());
  store::ListOptions o;
  o.delimiter = "/";
  auto top = store_->List(bucket_, o);
  ASSERT_TRUE(top.ok());
  ASSERT_EQ(top->objects.size(), 1u);
  EXPECT_EQ(top->objects[0].key, "c");
  EXPECT_EQ(top->common_prefixes, (std::vector<std::string>{"a/", "b/"}));

  std::vector<std::string> seen;
  o = {};
  o.max_keys = 2;
  for (int i = 0; i < 10; ++i) {
    auto page = store_->List(bucket_, o);
    ASSERT_TRUE(page.ok());
    for (const auto& m : page->objects) seen.push_back(m.key);
    if (!page->truncated) break;
    o.start_after = page->next_marker;
  }
  EXPECT_EQ(seen, keys);

  o = {};
  o.prefix = "b/";
  o.delimiter = "/";
  o.max_keys = 1;
  std::vector<std::string> entries;
  for (int i = 0; i < 10; ++i) {
    auto page = store_->List(bucket_, o);
    ASSERT_TRUE(page.ok());
    for (const auto& m : page->objects) entries.push_back(m.key);
    for (const auto& p : page->common_prefixes) entries.push_back(p);
    if (!page->truncated) break;
    o.start_after = page->next_marker;
  }
  EXPECT_EQ(entries, (std::vector<std::string>{"b/x/", "b/y"}));
}

// The front-end multipart API passes through: parts, list, complete (atomic), abort.
TEST_F(BackendStoreCeph, MultipartApi) {
  Bytes data = Pattern((5 << 20) + 100, 11);
  auto id = store_->CreateMultipart(bucket_, "mp", {});
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  std::vector<store::CompletePart> parts;
  size_t offs[] = {0, 5 << 20, data.size()};
  for (int n = 1; n <= 2; ++n) {
    auto w = store_->PutPart(bucket_, "mp", *id, n, {});
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Write(ByteSpan(data.data() + offs[n - 1], offs[n] - offs[n - 1])).ok());
    auto m = (*w)->Commit();
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    parts.push_back({n, m->etag});
  }
  auto lp = store_->ListParts(bucket_, "mp", *id);
  ASSERT_TRUE(lp.ok());
  ASSERT_EQ(lp->size(), 2u);
  EXPECT_EQ((*lp)[1].size, 100u);
  EXPECT_TRUE(store_->Head(bucket_, "mp").status().Is(StoreError::kNoSuchKey));
  auto done = store_->CompleteMultipart(bucket_, "mp", *id, parts);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_EQ(done->parts_count, 2);
  EXPECT_EQ(ReadAll("mp"), data);

  auto id2 = store_->CreateMultipart(bucket_, "mp2", {});
  ASSERT_TRUE(id2.ok());
  ASSERT_TRUE(store_->AbortMultipart(bucket_, "mp2", *id2).ok());
  EXPECT_TRUE(store_->ListParts(bucket_, "mp2", *id2).status().Is(StoreError::kNoSuchUpload));
  EXPECT_TRUE(
      store_->AbortMultipart(bucket_, "mp2", "no-such-upload").Is(StoreError::kNoSuchUpload));
}

// Copy keeps bytes and digest; ReadMany reads many ranges of many objects in parallel, clamping
// at the end.
TEST_F(BackendStoreCeph, CopyAndReadMany) {
  Bytes a = Pattern(200000, 21), b = Pattern(70000, 22);
  ASSERT_TRUE(PutBytes("a", a).ok());
  ASSERT_TRUE(PutBytes("b", b).ok());
  auto c = store_->Copy(bucket_, "a", bucket_, "a-copy", std::nullopt);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE(c->sha256.has_value());
  EXPECT_EQ(*c->sha256, Sha256::Hash(a));
  store::PutOptions repl;
  repl.content_type = "text/plain";
  auto c2 = store_->Copy(bucket_, "b", bucket_, "b-copy", repl);
  ASSERT_TRUE(c2.ok());
  EXPECT_EQ(c2->content_type, "text/plain");
  ASSERT_TRUE(c2->sha256.has_value());  // REPLACE keeps the digest of the same bytes
  EXPECT_EQ(*c2->sha256, Sha256::Hash(b));

  auto ra = store_->Open(bucket_, "a-copy");
  auto rb = store_->Open(bucket_, "b-copy");
  ASSERT_TRUE(ra.ok() && rb.ok());
  std::vector<Bytes> bufs(40, Bytes(10000));
  std::vector<store::RangeRead> rr(40);
  for (size_t i = 0; i < rr.size(); ++i) {
    rr[i].reader = (i % 2 ? rb : ra)->get();
    rr[i].offset = (i / 2) * 10000;
    rr[i].out = bufs[i];
  }
  const uint64_t requests_before = store_->client().stats().requests;
  const uint64_t coalesced_before = store_->coalesced_reads();
  store_->ReadMany(rr);
  // The 20 adjacent ranges of a-copy and the 7 non-empty ones of b-copy: one GET each.
  EXPECT_EQ(store_->client().stats().requests - requests_before, 2u);
  EXPECT_EQ(store_->coalesced_reads() - coalesced_before, 25u);
  for (size_t i = 0; i < rr.size(); ++i) {
    const Bytes& src = i % 2 ? b : a;
    size_t off = (i / 2) * 10000;
    size_t expect = off >= src.size() ? 0 : std::min<size_t>(10000, src.size() - off);
    ASSERT_TRUE(rr[i].result.ok()) << i << ": " << rr[i].result.status().ToString();
    ASSERT_EQ(*rr[i].result, expect) << i;
    EXPECT_TRUE(std::equal(bufs[i].begin(), bufs[i].begin() + static_cast<ptrdiff_t>(expect),
                           src.begin() + static_cast<ptrdiff_t>(std::min(off, src.size()))));
  }
}

// Open costs one request (a range GET that also brings the first bytes, so reads inside them cost
// none); OpenMany opens concurrently with per-key results: a missing key is kNoSuchKey, an
// invalid one kInvalidKey, a missing bucket kNoSuchBucket; an empty object opens (416 -> HEAD).
TEST_F(BackendStoreCeph, OpenManyAndOpenCost) {
  std::vector<Bytes> data;
  std::vector<std::string> keys;
  for (int i = 0; i < 10; ++i) {
    data.push_back(Pattern(5000 + 3000 * i, 100 + i));
    keys.push_back("p" + std::to_string(i));
    ASSERT_TRUE(PutBytes(keys.back(), data.back()).ok());
  }
  keys.insert(keys.begin() + 3, "missing");
  keys.push_back("");
  const uint64_t before = store_->client().stats().requests;
  auto opened = store_->OpenMany(bucket_, keys);
  EXPECT_EQ(store_->client().stats().requests - before, 11u);  // one per valid key, no HEADs
  ASSERT_EQ(opened.size(), keys.size());
  EXPECT_TRUE(opened[3].status().Is(StoreError::kNoSuchKey)) << opened[3].status().ToString();
  EXPECT_TRUE(opened.back().status().Is(StoreError::kInvalidKey));
  std::vector<store::RangeRead> rr;
  std::vector<Bytes> bufs(10, Bytes(4096));
  for (size_t i = 0, d = 0; i + 1 < keys.size(); ++i) {
    if (i == 3) continue;
    ASSERT_TRUE(opened[i].ok()) << keys[i] << ": " << opened[i].status().ToString();
    EXPECT_EQ((*opened[i])->meta().size, data[d].size());
    EXPECT_EQ((*opened[i])->meta().key, keys[i]);
    ASSERT_TRUE((*opened[i])->meta().sha256.has_value());
    EXPECT_EQ(*(*opened[i])->meta().sha256, Sha256::Hash(data[d]));
    rr.push_back({opened[i]->get(), 0, bufs[d], Status(Code::kInternal, "not run")});
    ++d;
  }
  const uint64_t before_probe = store_->client().stats().requests;
  store_->ReadMany(rr);  // the container-header probe objcache does: inside the opened prefix
  EXPECT_EQ(store_->client().stats().requests, before_probe);
  for (size_t d = 0; d < rr.size(); ++d) {
    ASSERT_TRUE(rr[d].result.ok());
    EXPECT_EQ(bufs[d], Bytes(data[d].begin(), data[d].begin() + 4096));
  }

  ASSERT_TRUE(PutBytes("empty", {}).ok());
  auto e = store_->Open(bucket_, "empty");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ((*e)->meta().size, 0u);
  Bytes one(1);
  auto n = (*e)->ReadAt(0, one);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0u);

  EXPECT_TRUE(store_->Open("no-such-bucket", "k").status().Is(StoreError::kNoSuchBucket));
  keys.pop_back();  // the invalid key
  for (const auto& r : store_->OpenMany("no-such-bucket", keys)) {
    EXPECT_TRUE(r.status().Is(StoreError::kNoSuchBucket)) << r.status().ToString();
  }
}

// Read-ahead: ReadMany calls that continue a reader's previous read (a block read layer by layer)
// fetch read_ahead_factor (3) times more and serve the next calls from it: 10 consecutive 10 KB
// reads cost 4 GETs (the first never reads ahead), byte-exact; with no budget, 10 GETs.
TEST_F(BackendStoreCeph, ReadAheadServesConsecutiveReads) {
  const Bytes data = Pattern(200000, 31);
  ASSERT_TRUE(PutBytes("seq", data).ok());
  for (uint64_t budget : {uint64_t{64} << 20, uint64_t{0}}) {
    S3BackendOptions o;
    o.client = ceph_test::RgwClientOptions(env_);
    o.bucket_prefix = "t" + std::to_string(::getpid()) + "-";
    o.read_ahead_budget = budget;
    auto st = S3BackendStore::Open(o);
    ASSERT_TRUE(st.ok()) << st.status().ToString();
    auto r = (*st)->Open(bucket_, "seq");
    ASSERT_TRUE(r.ok());
    const uint64_t before = (*st)->client().stats().requests;
    for (size_t i = 0; i < 10; ++i) {
      Bytes out(10000);
      std::vector<store::RangeRead> rr(1);
      rr[0].reader = r->get();
      rr[0].offset = 10000 * (i + 1);
      rr[0].out = out;
      (*st)->ReadMany(rr);
      ASSERT_TRUE(rr[0].result.ok()) << rr[0].result.status().ToString();
      ASSERT_EQ(*rr[0].result, 10000u);
      ASSERT_TRUE(std::equal(out.begin(), out.end(), data.begin() + 10000 * (i + 1))) << i;
    }
    EXPECT_EQ((*st)->client().stats().requests - before, budget ? 4u : 10u) << budget;
  }
}

// Unreachable endpoint: Open fails with a typed, retry-worthy error instead of hanging.
TEST_F(BackendStoreCeph, UnreachableServiceFailsCleanly) {
  S3BackendOptions o;
  o.client = ceph_test::RgwClientOptions(env_);
  o.client.endpoint = "http://127.0.0.1:1";
  o.client.retry.max_attempts = 3;
  o.client.retry.total_deadline = std::chrono::milliseconds(3000);
  auto s = S3BackendStore::Open(o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kUnavailable) << s.status().ToString();
}

}  // namespace
}  // namespace kvcs::s3client
