#include "store/local_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "common/crypto.h"
#include "common/hex.h"
#include "store/object_file.h"

namespace kvcs::store {
namespace {
namespace fs = std::filesystem;

class LocalStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("kvcs-store-test-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    Reopen();
  }
  void TearDown() override {
    store_.reset();
    fs::remove_all(root_);
  }
  void Reopen() {
    store_.reset();
    auto s = LocalStore::Open(root_.string());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
  }
  ObjectMeta PutBytes(const std::string& b, const std::string& k, const std::string& data,
                      PutOptions o = {}) {
    auto w = store_->Put(b, k, std::move(o));
    EXPECT_TRUE(w.ok()) << w.status().ToString();
    EXPECT_TRUE((*w)->Write(AsBytes(data)).ok());
    auto m = (*w)->Commit();
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    return m.ok() ? *m : ObjectMeta{};
  }
  std::string GetBytes(const std::string& b, const std::string& k) {
    auto r = store_->Open(b, k);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return "";
    std::string out((*r)->meta().size, '\0');
    auto n =
        (*r)->ReadAt(0, std::span<uint8_t>(reinterpret_cast<uint8_t*>(out.data()), out.size()));
    EXPECT_TRUE(n.ok());
    return out;
  }
  fs::path root_;
  std::unique_ptr<LocalStore> store_;
};

TEST(ObjectStoreHelpers, BucketNames) {
  EXPECT_TRUE(ValidateBucketName("my-bucket.1").ok());
  for (const char* bad : {"ab", "-abc", "abc-", "ABC", "a..b", "192.168.1.1", "a_b", "a.-b", "a-.b",
                          "xn--abc", "sthree-abc", "abc-s3alias", "abc--ol-s3",
                          "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}) {
    EXPECT_TRUE(ValidateBucketName(bad).Is(StoreError::kInvalidBucketName)) << bad;
  }
  EXPECT_TRUE(ValidateKey(std::string(kMaxKeyBytes, 'k')).ok());
  EXPECT_TRUE(ValidateKey(std::string(kMaxKeyBytes + 1, 'k')).Is(StoreError::kKeyTooLong));
  EXPECT_TRUE(ValidateKey("").Is(StoreError::kInvalidKey));
}

TEST(ObjectStoreHelpers, Md5AndMultipartEtag) {
  Md5Hasher h;
  h.Update(AsBytes("abc"));
  EXPECT_EQ(ToHex(h.Finish()), "900150983cd24fb0d6963f7d28e17f72");
  h.Update(AsBytes(""));
  Md5 empty = h.Finish();
  EXPECT_EQ(ToHex(empty), "d41d8cd98f00b204e9800998ecf8427e");
  // md5(md5("")) = md5 of the 16 raw bytes.
  Md5 one[] = {empty};
  EXPECT_EQ(MultipartEtag(one), "59adb24ef3cdbe0297f05b395827453f-1");
}

TEST(ObjectFile, TrailerRoundTripAndCorruption) {
  ObjectMeta m;
  m.key = "a/b\xff";
  m.size = 5;
  m.etag = "abc";
  m.sha256 = Sha256::Hash("hello");
  m.content_type = "text/plain";
  m.user_meta = {{"x", "y"}};
  m.last_modified_ms = 1234;
  Bytes file = {'h', 'e', 'l', 'l', 'o'};
  Bytes t = EncodeObjectTrailer(m);
  file.insert(file.end(), t.begin(), t.end());
  ByteSpan footer(file.data() + file.size() - kObjectFooterBytes, kObjectFooterBytes);
  auto mlen = DecodeObjectFooter(footer, file.size());
  ASSERT_TRUE(mlen.ok());
  ByteSpan meta(file.data() + 5, *mlen);
  auto d = DecodeObjectMeta(meta, footer, file.size());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->key, m.key);
  EXPECT_EQ(d->user_meta, m.user_meta);
  EXPECT_EQ(d->sha256, m.sha256);
  // Every bit flip in the trailer is caught.
  for (size_t i = 5; i < file.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      Bytes bad = file;
      bad[i] ^= uint8_t(1 << bit);
      ByteSpan f(bad.data() + bad.size() - kObjectFooterBytes, kObjectFooterBytes);
      auto l = DecodeObjectFooter(f, bad.size());
      if (!l.ok()) continue;
      if (*l > bad.size() - kObjectFooterBytes) continue;
      ByteSpan mb(bad.data() + bad.size() - kObjectFooterBytes - *l, *l);
      EXPECT_FALSE(DecodeObjectMeta(mb, f, bad.size()).ok()) << i << " " << bit;
    }
  }
  // Every truncation fails.
  for (size_t n = 0; n < file.size(); ++n) {
    if (n < kObjectFooterBytes) {
      EXPECT_FALSE(DecodeObjectFooter(ByteSpan(file.data(), n), n).ok());
      continue;
    }
    ByteSpan f(file.data() + n - kObjectFooterBytes, kObjectFooterBytes);
    auto l = DecodeObjectFooter(f, n);
    if (!l.ok()) continue;
    ByteSpan mb(file.data() + n - kObjectFooterBytes - *l, *l);
    EXPECT_FALSE(DecodeObjectMeta(mb, f, n).ok()) << n;
  }
}

TEST_F(LocalStoreTest, BucketLifecycle) {
  EXPECT_TRUE(store_->CreateBucket("b1").Is(StoreError::kInvalidBucketName));
  ASSERT_TRUE(store_->CreateBucket("bucket-one").ok());
  EXPECT_TRUE(store_->CreateBucket("bucket-one").Is(StoreError::kBucketAlreadyExists));
  ASSERT_TRUE(store_->CreateBucket("bucket-two").ok());
  auto l = store_->ListBuckets();
  ASSERT_TRUE(l.ok());
  ASSERT_EQ(l->size(), 2u);
  EXPECT_EQ((*l)[0].name, "bucket-one");
  PutBytes("bucket-one", "k", "v");
  EXPECT_TRUE(store_->DeleteBucket("bucket-one").Is(StoreError::kBucketNotEmpty));
  ASSERT_TRUE(store_->Delete("bucket-one", "k").ok());
  EXPECT_TRUE(store_->DeleteBucket("bucket-one").ok());
  EXPECT_TRUE(store_->HeadBucket("bucket-one").status().Is(StoreError::kNoSuchBucket));
  Reopen();
  EXPECT_TRUE(store_->HeadBucket("bucket-two").ok());
  EXPECT_FALSE(store_->HeadBucket("bucket-one").ok());
}

// A bucket's owner is persisted with it; CreateBucket alone records none.
TEST_F(LocalStoreTest, BucketOwnerSurvivesRestart) {
  ASSERT_TRUE(store_->CreateBucketOwnedBy("owned-bucket", "alice").ok());
  EXPECT_TRUE(
      store_->CreateBucketOwnedBy("owned-bucket", "bob").Is(StoreError::kBucketAlreadyExists));
  ASSERT_TRUE(store_->CreateBucket("ownerless").ok());
  EXPECT_EQ(store_->HeadBucket("owned-bucket")->owner, "alice");
  Reopen();
  EXPECT_EQ(store_->HeadBucket("owned-bucket")->owner, "alice");
  EXPECT_EQ(store_->HeadBucket("ownerless")->owner, "");
  auto l = store_->ListBuckets();
  ASSERT_TRUE(l.ok());
  ASSERT_EQ(l->size(), 2u);
  EXPECT_EQ((*l)[0].owner, "alice");
  EXPECT_TRUE(store_->CreateBucketOwnedBy("long-owner", std::string(129, 'x'))
                  .Is(StoreError::kInvalidArgument));
}

TEST_F(LocalStoreTest, PutGetMetadataSurviveRestart) {
  ASSERT_TRUE(store_->CreateBucket("bkt").ok());
  PutOptions o;
  o.content_type = "text/plain";
  o.user_meta = {{"color", "blue"}};
  ObjectMeta m = PutBytes("bkt", "dir/file.txt", "hello world", o);
  EXPECT_EQ(m.etag, "5eb63bbbe01eeed093cb22bb8f5acdc3");
  Reopen();
  auto h = store_->Head("bkt", "dir/file.txt");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->size, 11u);
  EXPECT_EQ(h->etag, m.etag);
  EXPECT_EQ(h->content_type, "text/plain");
  EXPECT_EQ(h->user_meta, o.user_meta);
  EXPECT_EQ(GetBytes("bkt", "dir/file.txt"), "hello world");
  EXPECT_TRUE(store_->Head("bkt", "nope").status().Is(StoreError::kNoSuchKey));
  EXPECT_TRUE(store_->Open("bkt", "nope").status().Is(StoreError::kNoSuchKey));
  EXPECT_TRUE(store_->Open("nobkt", "x").status().Is(StoreError::kNoSuchBucket));
}

TEST_F(LocalStoreTest, DigestChecksRejectAndLeaveNothing) {
  ASSERT_TRUE(store_->CreateBucket("bkt").ok());
  PutOptions o;
  o.expected_md5 = Md5{};
  auto w = store_->Put("bkt", "k", o);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Write(AsBytes("data")).ok());
  EXPECT_TRUE((*w)->Commit().status().Is(StoreError::kBadDigest));
  w->reset();
  PutOptions o2;
  o2.expected_sha256 = Sha256::Hash("other");
  w = store_->Put("bkt", "k", o2);
  ASSERT_TRUE((*w)->Write(AsBytes("data")).ok());
  EXPECT_TRUE((*w)->Commit().status().Is(StoreError::kSha256Mismatch));
  w->reset();
  PutOptions o3;
  o3.expected_size = 10;
  w = store_->Put("bkt", "k", o3);
  ASSERT_TRUE((*w)->Write(AsBytes("data")).ok());
  EXPECT_TRUE((*w)->Commit().status().Is(StoreError::kIncompleteBody));
  w->reset();
  EXPECT_TRUE(store_->Head("bkt", "k").status().Is(StoreError::kNoSuchKey));
  EXPECT_TRUE(fs::is_empty(root_ / "tmp"));
}

TEST_F(LocalStoreTest, UncommittedWriterIsInvisibleAndLeftoversAreCleaned) {
  ASSERT_TRUE(store_->CreateBucket("bkt").ok());
  PutBytes("bkt", "k", "old");
  auto w = store_->Put("bkt", "k", {});
  ASSERT_TRUE((*w)->Write(AsBytes("new-but-never-committed")).ok());
  EXPECT_EQ(GetBytes("bkt", "k"), "old");
  // Simulate a crash: a temp file left behind (as a killed process would).
  { std::ofstream(root_ / "tmp" / "deadbeef.obj") << "partial"; }
  w->release();  // leak on purpose: the "crashed" writer never cleans up
  Reopen();
  EXPECT_GE(store_->removed_temp_files(), 2);
  EXPECT_TRUE(fs::is_empty(root_ / "tmp"));
  EXPECT_EQ(GetBytes("bkt", "k"), "old");
}

TEST_F(LocalStoreTest, DamagedObjectFileIsNeverServed) {
  ASSERT_TRUE(store_->CreateBucket("bkt").ok());
  PutBytes("bkt", "k", "payload");
  std::string h = ToHex(Sha256::Hash("k"));
  fs::path p = root_ / "buckets" / "bkt" / "obj" / h.substr(0, 2) / h;
  ASSERT_TRUE(fs::exists(p));
  fs::resize_file(p, fs::file_size(p) - 3);  // a torn write
  EXPECT_TRUE(store_->Open("bkt", "k").status().Is(StoreError::kCorrupt));
  Reopen();
  EXPECT_EQ(store_->corrupt_files(), 1);
  EXPECT_TRUE(store_->Head("bkt", "k").status().Is(StoreError::kNoSuchKey));
}

TEST_F(LocalStoreTest, ReaderIsASnapshot) {
  ASSERT_TRUE(store_->CreateBucket("bkt").ok());
  PutBytes("bkt", "k", "version-1");
  auto r = store_->Open("bkt", "k");
  ASSERT_TRUE(r.ok());
  PutBytes("bkt", "k", "version-2-longer");
  ASSERT_TRUE(store_->Delete("bkt", "k").ok());
  uint8_t buf[64];
  auto n = (*r)->ReadAt(0, buf);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(std::string(reinterpret_cast<char*>(buf), *n), "version-1");
  auto n2 = (*r)->ReadAt(8, buf);
  EXPECT_EQ(*n2, 1u);
  EXPECT_EQ(*(*r)->ReadAt(100, buf), 0u);
}

TEST_F(LocalStoreTest, ListPrefixDelimiterContinuation) {
  ASSERT_TRUE(store_->CreateBucket("bkt").ok());
  for (const char* k : {"a/1", "a/2", "a/b/3", "b/1", "c", "d/x/y"}) PutBytes("bkt", k, k);
  ListOptions o;
  o.delimiter = "/";
  auto r = store_->List("bkt", o);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->objects.size(), 1u);
  EXPECT_EQ(r->objects[0].key, "c");
  EXPECT_EQ(r->common_prefixes, (std::vector<std::string>{"a/", "b/", "d/"}));
  // Page through with max_keys = 1: a/, b/, c, d/.
  std::vector<std::string> seen;
  o.max_keys = 1;
  for (int i = 0; i < 10; ++i) {
    auto p = store_->List("bkt", o);
    ASSERT_TRUE(p.ok());
    for (auto& m : p->objects) seen.push_back(m.key);
    for (auto& c : p->common_prefixes) seen.push_back(c);
    if (!p->truncated) break;
    o.start_after = p->next_marker;
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"a/", "b/", "c", "d/"}));
  ListOptions o2;
  o2.prefix = "a/";
  o2.delimiter = "/";
  r = store_->List("bkt", o2);
  ASSERT_EQ(r->objects.size(), 2u);
  EXPECT_EQ(r->common_prefixes, (std::vector<std::string>{"a/b/"}));
  ListOptions o3;
  o3.start_after = "a/2";
  r = store_->List("bkt", o3);
  ASSERT_EQ(r->objects.size(), 4u);
  EXPECT_EQ(r->objects[0].key, "a/b/3");
}

TEST_F(LocalStoreTest, MultipartCompleteAbortAndRestart) {
  ASSERT_TRUE(store_->CreateBucket("bkt").ok());
  PutOptions o;
  o.content_type = "application/x-test";
  auto id = store_->CreateMultipart("bkt", "big", o);
  ASSERT_TRUE(id.ok());
  std::string p1(kMinPartBytes, 'a'), p2 = "tail";
  std::vector<std::string> etags;
  for (auto [n, data] : {std::pair<int, std::string*>{1, &p1}, {2, &p2}}) {
    auto w = store_->PutPart("bkt", "big", *id, n, {});
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Write(AsBytes(*data)).ok());
    auto m = (*w)->Commit();
    ASSERT_TRUE(m.ok());
    etags.push_back(m->etag);
  }
  Reopen();  // uploads and parts survive a restart
  auto parts = store_->ListParts("bkt", "big", *id);
  ASSERT_TRUE(parts.ok());
  ASSERT_EQ(parts->size(), 2u);
  auto ups = store_->ListMultipartUploads("bkt", "");
  ASSERT_EQ(ups->size(), 1u);
  std::vector<CompletePart> bad_order = {{2, etags[1]}, {1, etags[0]}};
  EXPECT_TRUE(store_->CompleteMultipart("bkt", "big", *id, bad_order)
                  .status()
                  .Is(StoreError::kInvalidPartOrder));
  std::vector<CompletePart> bad_etag = {{1, etags[1]}, {2, etags[1]}};
  EXPECT_TRUE(
      store_->CompleteMultipart("bkt", "big", *id, bad_etag).status().Is(StoreError::kInvalidPart));
  std::vector<CompletePart> small = {{2, etags[1]}};
  std::vector<CompletePart> good = {{1, "\"" + etags[0] + "\""}, {2, etags[1]}};
  auto m = store_->CompleteMultipart("bkt", "big", *id, good);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  Md5 md5s[] = {*FromHexFixed<16>(etags[0]), *FromHexFixed<16>(etags[1])};
  EXPECT_EQ(m->etag, MultipartEtag(md5s));
  EXPECT_EQ(m->size, p1.size() + p2.size());
  EXPECT_EQ(m->content_type, "application/x-test");
  EXPECT_TRUE(store_->ListParts("bkt", "big", *id).status().Is(StoreError::kNoSuchUpload));
  Reopen();
  EXPECT_EQ(GetBytes("bkt", "big"), p1 + p2);
  // EntityTooSmall: a small non-last part.
  auto id2 = store_->CreateMultipart("bkt", "small", {});
  for (int n = 1; n <= 2; ++n) {
    auto w = store_->PutPart("bkt", "small", *id2, n, {});
    ASSERT_TRUE((*w)->Write(AsBytes("x")).ok());
    ASSERT_TRUE((*w)->Commit().ok());
  }
  auto pl = store_->ListParts("bkt", "small", *id2);
  std::vector<CompletePart> two = {{1, (*pl)[0].etag}, {2, (*pl)[1].etag}};
  EXPECT_TRUE(store_->CompleteMultipart("bkt", "small", *id2, two)
                  .status()
                  .Is(StoreError::kEntityTooSmall));
  EXPECT_TRUE(store_->AbortMultipart("bkt", "small", *id2).ok());
  EXPECT_TRUE(store_->AbortMultipart("bkt", "small", *id2).Is(StoreError::kNoSuchUpload));
  Reopen();
  EXPECT_TRUE(store_->ListMultipartUploads("bkt", "")->empty());
}

TEST_F(LocalStoreTest, CopyAndReadMany) {
  ASSERT_TRUE(store_->CreateBucket("bkt").ok());
  PutOptions o;
  o.user_meta = {{"a", "1"}};
  PutBytes("bkt", "src", "0123456789", o);
  auto c = store_->Copy("bkt", "src", "bkt", "dst", std::nullopt);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->user_meta, o.user_meta);
  EXPECT_EQ(GetBytes("bkt", "dst"), "0123456789");
  std::vector<std::shared_ptr<const ObjectReader>> readers;
  for (int i = 0; i < 40; ++i) {
    std::string k = "obj" + std::to_string(i);
    PutBytes("bkt", k, std::string(100, char('A' + i % 26)));
    readers.push_back(*store_->Open("bkt", k));
  }
  std::vector<std::array<uint8_t, 10>> bufs(40);
  std::vector<RangeRead> reads(40);
  for (int i = 0; i < 40; ++i) {
    reads[i].reader = readers[i].get();
    reads[i].offset = 95;
    reads[i].out = bufs[i];
  }
  store_->ReadMany(reads);
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(reads[i].result.ok());
    EXPECT_EQ(*reads[i].result, 5u);
    EXPECT_EQ(bufs[i][0], uint8_t('A' + i % 26));
  }
  // OpenMany (on the same pool): element i is what Open(keys[i]) gives, missing keys included.
  std::vector<std::string> keys;
  for (int i = 0; i < 40; ++i)
    keys.push_back(i % 7 == 3 ? "missing" + std::to_string(i) : "obj" + std::to_string(i));
  auto opened = store_->OpenMany("bkt", keys);
  ASSERT_EQ(opened.size(), keys.size());
  for (int i = 0; i < 40; ++i) {
    if (i % 7 == 3) {
      EXPECT_TRUE(opened[i].status().Is(StoreError::kNoSuchKey)) << i;
    } else {
      ASSERT_TRUE(opened[i].ok()) << i;
      EXPECT_EQ((*opened[i])->meta().size, 100u);
    }
  }
  EXPECT_TRUE(store_->OpenMany("nobkt", keys)[0].status().Is(StoreError::kNoSuchBucket));
}

// If-None-Match / If-Match as a WriteCondition, checked when the object is published.
TEST_F(LocalStoreTest, ConditionalPut) {
  ASSERT_TRUE(store_->CreateBucket("cond-bucket").ok());
  PutOptions absent;
  absent.condition.if_none_match = {"*"};
  ObjectMeta first = PutBytes("cond-bucket", "k", "one", absent);
  EXPECT_TRUE(store_->Put("cond-bucket", "k", absent).status().Is(StoreError::kPreconditionFailed));
  PutOptions match;
  match.condition.if_match = {first.etag};
  ObjectMeta second = PutBytes("cond-bucket", "k", "two", match);
  EXPECT_TRUE(store_->Put("cond-bucket", "k", match).status().Is(StoreError::kPreconditionFailed));
  match.condition.if_match = {"*"};
  EXPECT_TRUE(store_->Put("cond-bucket", "missing", match).status().Is(StoreError::kNoSuchKey));
  PutOptions not_current;
  not_current.condition.if_none_match = {second.etag};
  EXPECT_TRUE(
      store_->Put("cond-bucket", "k", not_current).status().Is(StoreError::kPreconditionFailed));
  EXPECT_EQ(GetBytes("cond-bucket", "k"), "two");
}

// Writers opened before any commit (so the early check passes for all): the check at publish
// lets exactly one of them commit, every round.
TEST_F(LocalStoreTest, ConditionalPutRaceHasOneWinner) {
  ASSERT_TRUE(store_->CreateBucket("race-bucket").ok());
  constexpr int kRounds = 50, kWriters = 4;
  for (int round = 0; round < kRounds; ++round) {
    std::string key = "k" + std::to_string(round);
    std::vector<std::unique_ptr<ObjectWriter>> writers;
    for (int i = 0; i < kWriters; ++i) {
      PutOptions o;
      o.condition.if_none_match = {"*"};
      auto w = store_->Put("race-bucket", key, o);
      ASSERT_TRUE(w.ok());
      ASSERT_TRUE((*w)->Write(AsBytes("writer " + std::to_string(i))).ok());
      writers.push_back(std::move(*w));
    }
    std::atomic<int> won{0}, refused{0};
    std::atomic<int> winner{-1};
    std::vector<std::thread> threads;
    for (int i = 0; i < kWriters; ++i) {
      threads.emplace_back([&, i] {
        auto m = writers[i]->Commit();
        if (m.ok()) {
          ++won;
          winner = i;
        } else if (m.status().Is(StoreError::kPreconditionFailed)) {
          ++refused;
        }
      });
    }
    for (auto& t : threads) t.join();
    ASSERT_EQ(won.load(), 1) << "round " << round;
    ASSERT_EQ(refused.load(), kWriters - 1);
    EXPECT_EQ(GetBytes("race-bucket", key), "writer " + std::to_string(winner.load()));
  }
  EXPECT_EQ(fs::directory_iterator(root_ / "tmp") == fs::directory_iterator(), true)
      << "losers left temporary files";
}

// Bucket and object ACLs are opaque text the store persists.
TEST_F(LocalStoreTest, AclsSurviveRestart) {
  ASSERT_TRUE(store_->CreateBucketOwnedBy("acl-bucket", "alice").ok());
  ASSERT_TRUE(store_->SetBucketAcl("acl-bucket", "a READ ").ok());
  PutOptions o;
  o.acl = "u READ bob";
  o.expires = "Wed, 02 Jan 2030 03:04:05 GMT";
  ObjectMeta m = PutBytes("acl-bucket", "k", "bytes", o);
  EXPECT_EQ(m.acl, "u READ bob");
  ASSERT_TRUE(store_->SetObjectAcl("acl-bucket", "k", "a READ ").ok());
  EXPECT_TRUE(store_->SetObjectAcl("acl-bucket", "nope", "").Is(StoreError::kNoSuchKey));
  Reopen();
  EXPECT_EQ(store_->HeadBucket("acl-bucket")->acl, "a READ ");
  EXPECT_EQ(store_->HeadBucket("acl-bucket")->owner, "alice");
  auto h = store_->Head("acl-bucket", "k");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->acl, "a READ ");
  EXPECT_EQ(h->etag, m.etag);
  EXPECT_EQ(h->last_modified_ms, m.last_modified_ms);
  EXPECT_EQ(h->expires, o.expires);
  EXPECT_EQ(GetBytes("acl-bucket", "k"), "bytes");
  EXPECT_TRUE(store_->RecordsOwners());
}

}  // namespace
}  // namespace kvcs::store
