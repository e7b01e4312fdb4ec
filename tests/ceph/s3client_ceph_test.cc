// The S3 client against a real Ceph radosgw (started by the ctest fixture ceph_up): object and
// bucket lifecycle, ranges, listing with delimiters and continuation, multipart, typed 4xx errors,
// parallel range GETs. Each test states the behaviour it pins.
#include <gtest/gtest.h>

#include <random>

#include "ceph_env.h"
#include "common/crypto.h"
#include "store/object_store.h"

namespace kvcs::s3client {
namespace {

using ceph_test::CephEnv;

Bytes Pattern(size_t n, uint64_t seed) {
  Bytes b(n);
  std::mt19937_64 rng(seed);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

class S3ClientCeph : public ::testing::Test {
 protected:
  void SetUp() override {
    auto env = ceph_test::LoadCephEnv();
    ASSERT_TRUE(env.ok()) << env.status().ToString();
    env_ = *env;
    auto c = S3Client::Create(ceph_test::RgwClientOptions(env_));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    client_ = std::move(*c);
    bucket_ = ceph_test::UniqueBucket("client");
    ASSERT_TRUE(client_->CreateBucket(bucket_).ok());
  }
  void TearDown() override {
    if (!client_) return;
    // Best-effort cleanup so the memstore does not fill up.
    for (int i = 0; i < 20; ++i) {
      auto page = client_->ListObjectsV2(bucket_, "", "", "", "", 1000);
      if (!page.ok() || page->objects.empty()) break;
      for (const auto& o : page->objects) (void)client_->DeleteObject(bucket_, o.key);
    }
    auto ups = client_->ListMultipartUploads(bucket_, "", "", "");
    if (ups.ok()) {
      for (const auto& u : ups->uploads) {
        (void)client_->AbortMultipartUpload(bucket_, u.key, u.upload_id);
      }
    }
    (void)client_->DeleteBucket(bucket_);
  }

  CephEnv env_;
  std::unique_ptr<S3Client> client_;
  std::string bucket_;
};

// PUT then HEAD, whole GET, ranges (first, middle, last, past the end), DELETE; metadata and
// content type come back as written.
TEST_F(S3ClientCeph, PutHeadGetRangeDelete) {
  Bytes data = Pattern(100000, 1);
  PutObjectOptions o;
  o.content_type = "application/x-kvsp";
  o.user_meta = {{"kvcs-test", "yes"}};
  auto etag = client_->PutObject(bucket_, "dir/a b+c", data, o);
  ASSERT_TRUE(etag.ok()) << etag.status().ToString();
  auto h = client_->HeadObject(bucket_, "dir/a b+c");
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->size, data.size());
  EXPECT_EQ(h->etag, *etag);
  EXPECT_EQ(h->content_type, "application/x-kvsp");
  ASSERT_EQ(h->user_meta.size(), 1u);
  EXPECT_EQ(h->user_meta[0].first, "kvcs-test");
  EXPECT_EQ(h->user_meta[0].second, "yes");

  auto whole = client_->GetObject(bucket_, "dir/a b+c", 1 << 20);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(*whole, data);

  struct Case {
    uint64_t offset;
    size_t len;
    size_t expect;
  };
  for (Case c : {Case{0, 10, 10}, Case{5000, 65536, 65536}, Case{99990, 100, 10},
                 Case{100000, 10, 0}, Case{200000, 10, 0}}) {
    Bytes out(c.len);
    auto n = client_->GetRange(bucket_, "dir/a b+c", c.offset, out, *etag);
    ASSERT_TRUE(n.ok()) << c.offset << ": " << n.status().ToString();
    ASSERT_EQ(*n, c.expect) << c.offset;
    EXPECT_TRUE(std::equal(
        out.begin(), out.begin() + static_cast<ptrdiff_t>(*n),
        data.begin() + static_cast<ptrdiff_t>(std::min<uint64_t>(c.offset, data.size()))));
  }
  ASSERT_TRUE(client_->DeleteObject(bucket_, "dir/a b+c").ok());
  auto gone = client_->HeadObject(bucket_, "dir/a b+c");
  ASSERT_FALSE(gone.ok());
  EXPECT_TRUE(gone.status().Is(ClientError::kNoSuchKey));
  // Deleting a missing key succeeds (S3 semantics).
  EXPECT_TRUE(client_->DeleteObject(bucket_, "dir/a b+c").ok());
}

// 4xx answers come back at once, typed from S3's <Code>, and are never retried.
TEST_F(S3ClientCeph, TypedErrorsAreNotRetried) {
  auto before = client_->stats();
  Bytes out(10);
  auto r = client_->GetRange(bucket_, "missing", 0, out);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().Is(ClientError::kNoSuchKey)) << r.status().ToString();
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  auto nb = client_->ListObjectsV2("kvcs-no-such-bucket-xyz", "", "", "", "", 10);
  ASSERT_FALSE(nb.ok());
  EXPECT_TRUE(nb.status().Is(ClientError::kNoSuchBucket)) << nb.status().ToString();
  EXPECT_TRUE(client_->HeadBucket("kvcs-no-such-bucket-xyz").Is(ClientError::kNoSuchBucket));
  EXPECT_EQ(client_->stats().retries, before.retries);

  // A wrong secret: SignatureDoesNotMatch; an unknown key id: InvalidAccessKeyId.
  auto o = ceph_test::RgwClientOptions(env_);
  o.credentials.secret_key = "wrong-secret-wrong-secret-wrong-secret00";
  auto bad = S3Client::Create(o);
  ASSERT_TRUE(bad.ok());
  auto lb = (*bad)->ListBuckets();
  ASSERT_FALSE(lb.ok());
  EXPECT_TRUE(lb.status().Is(ClientError::kSignatureDoesNotMatch)) << lb.status().ToString();
  EXPECT_EQ(lb.status().code(), Code::kPermissionDenied);
  o.credentials.access_key = "NOSUCHKEYNOSUCHKEY00";
  auto unknown = S3Client::Create(o);
  ASSERT_TRUE(unknown.ok());
  auto lb2 = (*unknown)->ListBuckets();
  ASSERT_FALSE(lb2.ok());
  EXPECT_TRUE(lb2.status().Is(ClientError::kInvalidAccessKeyId)) << lb2.status().ToString();

  // If-Match on a changed object: PreconditionFailed.
  ASSERT_TRUE(client_->PutObject(bucket_, "k", AsBytes("one"), {}).ok());
  auto h = client_->HeadObject(bucket_, "k");
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE(client_->PutObject(bucket_, "k", AsBytes("two!"), {}).ok());
  auto stale = client_->GetRange(bucket_, "k", 0, out, h->etag);
  ASSERT_FALSE(stale.ok());
  EXPECT_TRUE(stale.status().Is(ClientError::kPreconditionFailed)) << stale.status().ToString();
}

// ListObjectsV2: prefix, delimiter (common prefixes), max-keys pages and continuation tokens
// visit every key exactly once in order.
TEST_F(S3ClientCeph, ListDelimiterAndContinuation) {
  std::vector<std::string> keys;
  for (int i = 0; i < 7; ++i) keys.push_back("p/k" + std::to_string(i));
  keys.push_back("p/sub/x");
  keys.push_back("p/sub/y");
  keys.push_back("q");
  for (const auto& k : keys) ASSERT_TRUE(client_->PutObject(bucket_, k, AsBytes(k), {}).ok());

  auto top = client_->ListObjectsV2(bucket_, "", "/", "", "", 1000);
  ASSERT_TRUE(top.ok()) << top.status().ToString();
  ASSERT_EQ(top->objects.size(), 1u);
  EXPECT_EQ(top->objects[0].key, "q");
  ASSERT_EQ(top->common_prefixes.size(), 1u);
  EXPECT_EQ(top->common_prefixes[0], "p/");

  auto p = client_->ListObjectsV2(bucket_, "p/", "/", "", "", 1000);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->objects.size(), 7u);
  ASSERT_EQ(p->common_prefixes.size(), 1u);
  EXPECT_EQ(p->common_prefixes[0], "p/sub/");

  std::vector<std::string> seen;
  std::string token;
  int pages = 0;
  do {
    auto page = client_->ListObjectsV2(bucket_, "p/", "", "", token, 3);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    for (const auto& o : page->objects) {
      seen.push_back(o.key);
      EXPECT_EQ(o.size, o.key.size());
    }
    token = page->truncated ? page->next_continuation_token : "";
    ++pages;
  } while (!token.empty() && pages < 10);
  EXPECT_EQ(pages, 3);
  std::vector<std::string> expect(keys.begin(), keys.end() - 1);
  EXPECT_EQ(seen, expect);

  auto after = client_->ListObjectsV2(bucket_, "", "", "p/k5", "", 1000);
  ASSERT_TRUE(after.ok());
  ASSERT_FALSE(after->objects.empty());
  EXPECT_EQ(after->objects[0].key, "p/k6");
}

// Multipart: create, upload parts (5 MiB minimum except the last), list parts, complete; the
// object reads back byte-exact with the "-N" ETag; abort leaves nothing; a wrong part ETag is
// InvalidPart.
TEST_F(S3ClientCeph, MultipartUploadCompleteAbort) {
  const size_t part = store::kMinPartBytes;
  Bytes data = Pattern(2 * part + 12345, 7);
  auto id = client_->CreateMultipartUpload(bucket_, "big", {});
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  std::vector<CompletedPart> parts;
  std::vector<store::Md5> md5s;
  for (int n = 1; n <= 3; ++n) {
    size_t off = (n - 1) * part;
    ByteSpan body(data.data() + off, std::min(part, data.size() - off));
    store::Md5Hasher h;
    h.Update(body);
    md5s.push_back(h.Finish());
    auto etag = client_->UploadPart(bucket_, "big", *id, n, body, md5s.back());
    ASSERT_TRUE(etag.ok()) << etag.status().ToString();
    parts.push_back({n, *etag});
  }
  auto listed = client_->ListParts(bucket_, "big", *id, 0);
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->parts.size(), 3u);
  EXPECT_EQ(listed->parts[2].size, 12345u);
  auto ups = client_->ListMultipartUploads(bucket_, "", "", "");
  ASSERT_TRUE(ups.ok());
  ASSERT_EQ(ups->uploads.size(), 1u);
  EXPECT_EQ(ups->uploads[0].upload_id, *id);

  std::vector<CompletedPart> wrong = parts;
  wrong[1].etag = "00000000000000000000000000000000";
  auto bad = client_->CompleteMultipartUpload(bucket_, "big", *id, wrong);
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(bad.status().Is(ClientError::kInvalidPart)) << bad.status().ToString();

  auto etag = client_->CompleteMultipartUpload(bucket_, "big", *id, parts);
  ASSERT_TRUE(etag.ok()) << etag.status().ToString();
  auto head = client_->HeadObject(bucket_, "big");
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->etag, store::MultipartEtag(md5s));
  EXPECT_EQ(head->size, data.size());
  auto back = client_->GetObject(bucket_, "big", 64 << 20);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, data);

  auto id2 = client_->CreateMultipartUpload(bucket_, "aborted", {});
  ASSERT_TRUE(id2.ok());
  ASSERT_TRUE(client_->UploadPart(bucket_, "aborted", *id2, 1, AsBytes("x")).ok());
  ASSERT_TRUE(client_->AbortMultipartUpload(bucket_, "aborted", *id2).ok());
  auto lp = client_->ListParts(bucket_, "aborted", *id2, 0);
  ASSERT_FALSE(lp.ok());
  EXPECT_TRUE(lp.status().Is(ClientError::kNoSuchUpload)) << lp.status().ToString();
  EXPECT_TRUE(client_->HeadObject(bucket_, "aborted").status().Is(ClientError::kNoSuchKey));
}

// A body altered after signing is refused by the service (the payload SHA-256 is signed), and a
// wrong Content-MD5 is BadDigest: bytes that are not what we sent are never stored.
TEST_F(S3ClientCeph, ServiceRefusesBadContentMd5) {
  Md5Digest wrong{};
  auto r = client_->PutObject(bucket_, "md5", AsBytes("payload"), {}, wrong);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().Is(ClientError::kBadDigest)) << r.status().ToString();
  EXPECT_TRUE(client_->HeadObject(bucket_, "md5").status().Is(ClientError::kNoSuchKey));
}

// ParallelGet reads many ranges of many objects at once, every one byte-exact.
TEST_F(S3ClientCeph, ParallelRangeGets) {
  constexpr int kObjects = 8;
  constexpr size_t kSize = 256 << 10;
  std::vector<Bytes> objs;
  std::vector<std::string> names;
  for (int i = 0; i < kObjects; ++i) {
    objs.push_back(Pattern(kSize, 100 + i));
    names.push_back("obj" + std::to_string(i));
    ASSERT_TRUE(client_->PutObject(bucket_, names.back(), objs.back(), {}).ok());
  }
  std::vector<Bytes> bufs;
  std::vector<RangeGet> gets;
  for (int i = 0; i < kObjects; ++i) {
    for (size_t off = 0; off < kSize; off += 32 << 10) bufs.emplace_back(32 << 10);
  }
  size_t bi = 0;
  for (int i = 0; i < kObjects; ++i) {
    for (size_t off = 0; off < kSize; off += 32 << 10) {
      RangeGet g;
      g.bucket = bucket_;
      g.key = names[i];
      g.offset = off;
      g.out = bufs[bi++];
      gets.push_back(g);
    }
  }
  client_->ParallelGet(gets);
  bi = 0;
  for (int i = 0; i < kObjects; ++i) {
    for (size_t off = 0; off < kSize; off += 32 << 10, ++bi) {
      ASSERT_TRUE(gets[bi].result.ok()) << gets[bi].result.status().ToString();
      ASSERT_EQ(*gets[bi].result, size_t{32 << 10});
      EXPECT_TRUE(std::equal(bufs[bi].begin(), bufs[bi].end(),
                             objs[i].begin() + static_cast<ptrdiff_t>(off)));
    }
  }
  // Keep-alive: far fewer sockets than requests.
  EXPECT_LT(client_->stats().connections, client_->stats().requests / 4);
}

// Server-side copy keeps the bytes; REPLACE sets new metadata.
TEST_F(S3ClientCeph, CopyObject) {
  PutObjectOptions o;
  o.user_meta = {{"a", "1"}};
  ASSERT_TRUE(client_->PutObject(bucket_, "src", AsBytes("copy me"), o).ok());
  auto c = client_->CopyObject(bucket_, "src", bucket_, "dst", std::nullopt);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  auto h = client_->HeadObject(bucket_, "dst");
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(h->user_meta.size(), 1u);
  PutObjectOptions r;
  r.user_meta = {{"b", "2"}};
  ASSERT_TRUE(client_->CopyObject(bucket_, "src", bucket_, "dst2", r).ok());
  auto h2 = client_->HeadObject(bucket_, "dst2");
  ASSERT_TRUE(h2.ok());
  ASSERT_EQ(h2->user_meta.size(), 1u);
  EXPECT_EQ(h2->user_meta[0].first, "b");
  auto body = client_->GetObject(bucket_, "dst2", 1024);
  ASSERT_TRUE(body.ok());
  EXPECT_EQ(std::string(body->begin(), body->end()), "copy me");
  auto missing = client_->CopyObject(bucket_, "nope", bucket_, "dst3", std::nullopt);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(missing.status().Is(ClientError::kNoSuchKey)) << missing.status().ToString();
}

}  // namespace
}  // namespace kvcs::s3client
