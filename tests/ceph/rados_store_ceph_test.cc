// The ObjectStore contract, run against RadosStore on the fixture's one-node Ceph (librados, no
// radosgw): the behaviours src/store/local_store_test.cc pins for local disk, plus the RADOS
// backend's own (docs/protocols/rados-backend.md): striping, versions that never change under a
// reader, nothing left behind by a refused or dropped write, zero-copy multipart, two stores on
// one pool seeing each other's writes at once. Each test states the behaviour it pins.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>

#include "common/crypto.h"
#include "common/hex.h"
#include "rados_env.h"
#include "rados_store/rados_reader.h"
#include "rados_store/rados_store.h"

namespace kvcs::rados_store {
namespace {

using store::StoreError;

Bytes Pattern(size_t n, uint64_t seed) {
  Bytes b(n);
  std::mt19937_64 rng(seed);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

class RadosStoreCeph : public ::testing::Test {
 protected:
  void SetUp() override {
    auto env = ceph_test::LoadRadosEnv();
    ASSERT_TRUE(env.ok()) << env.status().ToString();
    env_ = *env;
    ns_ = ceph_test::UniqueNamespace("store");
    store_ = OpenStore();
    ASSERT_NE(store_, nullptr);
    ASSERT_TRUE(store_->CreateBucket(bucket_).ok());
  }
  void TearDown() override {
    if (!store_) return;
    // Everything a test made goes: the namespace is the test's own.
    (void)store_->io().RemoveAll(ceph_test::ObjectsIn(store_->io()));
  }
  std::unique_ptr<RadosStore> OpenStore(uint64_t stripe_bytes = 64 << 10) {
    RadosStoreOptions o = ceph_test::RadosTestOptions(env_, ns_);
    o.stripe_bytes = stripe_bytes;  // small, so tests exercise striping
    auto s = RadosStore::Open(o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }
  Result<store::ObjectMeta> PutBytes(RadosStore& s, const std::string& key, ByteSpan data,
                                     store::PutOptions o = {}, size_t chunk = 100000) {
    KVCS_ASSIGN_OR_RETURN(auto w, s.Put(bucket_, key, std::move(o)));
    for (size_t off = 0; off < data.size(); off += chunk) {
      KVCS_RETURN_IF_ERROR(w->Write(data.subspan(off, std::min(chunk, data.size() - off))));
    }
    return w->Commit();
  }
  Result<store::ObjectMeta> PutBytes(const std::string& key, ByteSpan data,
                                     store::PutOptions o = {}) {
    return PutBytes(*store_, key, data, std::move(o));
  }
  Bytes ReadAll(RadosStore& s, const std::string& key) {
    auto r = s.Open(bucket_, key);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return {};
    Bytes out((*r)->meta().size);
    auto n = (*r)->ReadAt(0, out);
    EXPECT_TRUE(n.ok() && *n == out.size()) << (n.ok() ? "" : n.status().ToString());
    return out;
  }
  // Data objects (stripes) in the namespace.
  size_t StripeCount() {
    size_t n = 0;
    for (const auto& o : ceph_test::ObjectsIn(store_->io()))
      n += o.find(".d.") != std::string::npos;
    return n;
  }

  ceph_test::RadosEnv env_;
  std::string ns_;
  std::unique_ptr<RadosStore> store_;
  const std::string bucket_ = "bkt";
};

// Buckets: create, duplicate refused, owner kept, head, list, not-empty refused, delete; a
// deleted bucket's objects are all gone.
TEST_F(RadosStoreCeph, BucketLifecycle) {
  EXPECT_TRUE(store_->CreateBucket(bucket_).Is(StoreError::kBucketAlreadyExists));
  EXPECT_TRUE(store_->CreateBucket("Bad_Name").Is(StoreError::kInvalidBucketName));
  ASSERT_TRUE(store_->CreateBucketOwnedBy("owned", "alice").ok());
  auto h = store_->HeadBucket("owned");
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->owner, "alice");
  EXPECT_GT(h->created_ms, 0);
  auto all = store_->ListBuckets();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].name, bucket_);
  EXPECT_EQ((*all)[1].name, "owned");
  ASSERT_TRUE(PutBytes("k", AsBytes("v")).ok());
  EXPECT_TRUE(store_->DeleteBucket(bucket_).Is(StoreError::kBucketNotEmpty));
  auto up = store_->CreateMultipart("owned", "m", {});
  ASSERT_TRUE(up.ok());
  EXPECT_TRUE(store_->DeleteBucket("owned").Is(StoreError::kBucketNotEmpty));
  ASSERT_TRUE(store_->AbortMultipart("owned", "m", *up).ok());
  ASSERT_TRUE(store_->DeleteBucket("owned").ok());
  ASSERT_TRUE(store_->Delete(bucket_, "k").ok());
  ASSERT_TRUE(store_->DeleteBucket(bucket_).ok());
  EXPECT_TRUE(store_->HeadBucket(bucket_).status().Is(StoreError::kNoSuchBucket));
  EXPECT_TRUE(store_->Head(bucket_, "k").status().Is(StoreError::kNoSuchBucket));
  EXPECT_TRUE(store_->Delete(bucket_, "k").Is(StoreError::kNoSuchBucket));
  EXPECT_TRUE(store_->List(bucket_, {}).status().Is(StoreError::kNoSuchBucket));
  EXPECT_TRUE(store_->Put(bucket_, "k", {}).status().Is(StoreError::kNoSuchBucket));
  // Only the (empty) bucket registry is left.
  EXPECT_EQ(ceph_test::ObjectsIn(store_->io()), std::vector<std::string>{kBucketRegistryObject});
}

// Objects: metadata, user metadata, SHA-256 and MD5 ETag come back on Head and Open; a striped
// object (stripes of 64 KiB, written in 100,000-byte chunks) reads back byte-exact whole and in
// ranges across stripe boundaries; a missing key is kNoSuchKey; Delete removes every stripe.
TEST_F(RadosStoreCeph, PutOpenReadStripedMetadataAndDelete) {
  Bytes data = Pattern(300000, 3);
  store::PutOptions o;
  o.content_type = "application/x-kv";
  o.cache_control = "no-cache";
  o.user_meta = {{"color", "blue"}};
  auto m = PutBytes("obj", data, o);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->size, data.size());
  EXPECT_EQ(*m->sha256, Sha256::Hash(data));
  store::Md5Hasher md5;
  md5.Update(data);
  EXPECT_EQ(m->etag, ToHex(md5.Finish()));
  EXPECT_EQ(StripeCount(), 5u);  // ceil(300000 / 65536)
  auto h = store_->Head(bucket_, "obj");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->etag, m->etag);
  EXPECT_EQ(h->content_type, "application/x-kv");
  EXPECT_EQ(h->cache_control, "no-cache");
  EXPECT_EQ(h->sha256, m->sha256);
  ASSERT_EQ(h->user_meta.size(), 1u);
  EXPECT_EQ(ReadAll(*store_, "obj"), data);
  auto r = store_->Open(bucket_, "obj");
  ASSERT_TRUE(r.ok());
  Bytes out(70000);
  auto n = (*r)->ReadAt(65000, out);  // spans stripes 0, 1 and 2
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, out.size());
  EXPECT_TRUE(std::equal(out.begin(), out.end(), data.begin() + 65000));
  n = (*r)->ReadAt(299500, out);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 500u);
  n = (*r)->ReadAt(300000, out);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0u);
  EXPECT_TRUE(store_->Open(bucket_, "nope").status().Is(StoreError::kNoSuchKey));
  EXPECT_TRUE(store_->Head(bucket_, "nope").status().Is(StoreError::kNoSuchKey));
  ASSERT_TRUE(PutBytes("empty", {}).ok());
  EXPECT_EQ(ReadAll(*store_, "empty").size(), 0u);
  ASSERT_TRUE(store_->Delete(bucket_, "obj").ok());
  ASSERT_TRUE(store_->Delete(bucket_, "empty").ok());
  ASSERT_TRUE(store_->Delete(bucket_, "obj").ok());  // missing: fine
  EXPECT_EQ(StripeCount(), 0u);
}

// A refused write (wrong MD5, wrong SHA-256, short body) and a dropped writer publish nothing
// and leave no stripe behind; the previous version stays readable.
TEST_F(RadosStoreCeph, RefusedAndDroppedWritesLeaveNothing) {
  Bytes old = Pattern(1000, 1), data = Pattern(200000, 2);
  ASSERT_TRUE(PutBytes("k", old).ok());
  store::PutOptions bad_md5;
  bad_md5.expected_md5 = store::Md5{};
  EXPECT_TRUE(PutBytes("k", data, bad_md5).status().Is(StoreError::kBadDigest));
  store::PutOptions bad_sha;
  bad_sha.expected_sha256 = Digest{};
  EXPECT_TRUE(PutBytes("k", data, bad_sha).status().Is(StoreError::kSha256Mismatch));
  store::PutOptions longer;
  longer.expected_size = data.size() + 1;
  EXPECT_TRUE(PutBytes("k", data, longer).status().Is(StoreError::kIncompleteBody));
  {
    auto w = store_->Put(bucket_, "k", {});
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Write(data).ok());  // three stripes written, never committed
  }
  EXPECT_EQ(StripeCount(), 1u);
  EXPECT_EQ(ReadAll(*store_, "k"), old);
  auto l = store_->List(bucket_, {});
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->objects.size(), 1u);
}

// A reader keeps the version it opened: after an overwrite its reads fail cleanly ("changed
// since it was opened") instead of returning the new bytes; a new Open reads the new version;
// the replaced version's stripes are removed.
TEST_F(RadosStoreCeph, ReaderNeverMixesVersions) {
  Bytes v1 = Pattern(150000, 1), v2 = Pattern(150000, 2);
  ASSERT_TRUE(PutBytes("k", v1).ok());
  auto r1 = store_->Open(bucket_, "k");
  ASSERT_TRUE(r1.ok());
  Bytes part(1000);
  ASSERT_TRUE((*r1)->ReadAt(0, part).ok());
  ASSERT_TRUE(PutBytes("k", v2).ok());
  auto again = (*r1)->ReadAt(0, part);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), Code::kFailedPrecondition) << again.status().ToString();
  EXPECT_EQ((*r1)->meta().size, v1.size());
  EXPECT_EQ(ReadAll(*store_, "k"), v2);
  EXPECT_EQ(StripeCount(), 3u);
}

// List: prefix, delimiter and continuation over a bucket whose index spans 8 shards, in key
// order, every key once; max_keys 0 and a missing bucket.
TEST_F(RadosStoreCeph, ListPrefixDelimiterContinuation) {
  std::vector<std::string> keys;
  for (int i = 0; i < 30; ++i) keys.push_back("a/" + std::to_string(100 + i));
  for (int i = 0; i < 10; ++i) keys.push_back("b/x/" + std::to_string(i));
  for (int i = 0; i < 5; ++i) keys.push_back("c" + std::to_string(i));
  for (const auto& k : keys) ASSERT_TRUE(PutBytes(k, AsBytes(k)).ok());
  std::sort(keys.begin(), keys.end());
  std::vector<std::string> seen;
  store::ListOptions o;
  o.max_keys = 7;
  for (int page = 0; page < 20; ++page) {
    auto l = store_->List(bucket_, o);
    ASSERT_TRUE(l.ok()) << l.status().ToString();
    for (const auto& m : l->objects) {
      seen.push_back(m.key);
      EXPECT_EQ(m.size, m.key.size());
    }
    if (!l->truncated) break;
    o.start_after = l->next_marker;
  }
  EXPECT_EQ(seen, keys);
  store::ListOptions d;
  d.delimiter = "/";
  auto l = store_->List(bucket_, d);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->common_prefixes, (std::vector<std::string>{"a/", "b/"}));
  EXPECT_EQ(l->objects.size(), 5u);
  d.prefix = "b/";
  l = store_->List(bucket_, d);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->common_prefixes, std::vector<std::string>{"b/x/"});
  d.max_keys = 1;
  d.prefix = "";
  l = store_->List(bucket_, d);
  ASSERT_TRUE(l.ok());
  EXPECT_TRUE(l->truncated);
  EXPECT_EQ(l->next_marker, "a/");
  d.start_after = "a/";
  l = store_->List(bucket_, d);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->common_prefixes, std::vector<std::string>{"b/"});
  store::ListOptions zero;
  zero.max_keys = 0;
  l = store_->List(bucket_, zero);
  ASSERT_TRUE(l.ok());
  EXPECT_TRUE(l->objects.empty());
}

// Multipart: parts are versions of their own; Complete refuses wrong ETags, wrong order and small
// middle parts; the completed object reads back whole, its ETag is the multipart ETag, and its
// stripes ARE the parts' (no copy: the stripe count is unchanged by Complete, except the unused
// part's, which goes). The upload is no longer listed; Abort removes another upload's stripes.
TEST_F(RadosStoreCeph, MultipartWithoutCopying) {
  store::PutOptions po;
  po.content_type = "text/x-parts";
  auto id = store_->CreateMultipart(bucket_, "mp", po);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  Bytes p1 = Pattern(store::kMinPartBytes, 1), p2 = Pattern(1000, 2), p3 = Pattern(50, 3);
  std::vector<std::string> etags;
  for (auto [n, bytes] : {std::pair<int, Bytes*>{1, &p1}, {2, &p2}, {3, &p3}}) {
    auto w = store_->PutPart(bucket_, "mp", *id, n, {});
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    ASSERT_TRUE((*w)->Write(*bytes).ok());
    auto m = (*w)->Commit();
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    etags.push_back(m->etag);
  }
  auto parts = store_->ListParts(bucket_, "mp", *id);
  ASSERT_TRUE(parts.ok());
  ASSERT_EQ(parts->size(), 3u);
  EXPECT_EQ((*parts)[1].size, 1000u);
  auto ups = store_->ListMultipartUploads(bucket_, "");
  ASSERT_TRUE(ups.ok());
  ASSERT_EQ(ups->size(), 1u);
  EXPECT_EQ((*ups)[0].upload_id, *id);
  std::vector<store::CompletePart> wrong = {{1, "nope"}};
  EXPECT_TRUE(
      store_->CompleteMultipart(bucket_, "mp", *id, wrong).status().Is(StoreError::kInvalidPart));
  std::vector<store::CompletePart> order = {{2, etags[1]}, {1, etags[0]}};
  EXPECT_TRUE(store_->CompleteMultipart(bucket_, "mp", *id, order)
                  .status()
                  .Is(StoreError::kInvalidPartOrder));
  std::vector<store::CompletePart> small = {{2, etags[1]}, {3, etags[2]}};
  EXPECT_TRUE(store_->CompleteMultipart(bucket_, "mp", *id, small)
                  .status()
                  .Is(StoreError::kEntityTooSmall));
  const size_t stripes_before = StripeCount();
  std::vector<store::CompletePart> ok = {{1, "\"" + etags[0] + "\""}, {2, etags[1]}};
  auto m = store_->CompleteMultipart(bucket_, "mp", *id, ok);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->parts_count, 2);
  EXPECT_EQ(m->etag.substr(m->etag.size() - 2), "-2");
  EXPECT_EQ(m->content_type, "text/x-parts");
  EXPECT_EQ(StripeCount(), stripes_before - 1);  // only part 3's stripe went
  Bytes want = p1;
  want.insert(want.end(), p2.begin(), p2.end());
  EXPECT_EQ(ReadAll(*store_, "mp"), want);
  auto h = store_->Head(bucket_, "mp");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->etag, m->etag);
  ups = store_->ListMultipartUploads(bucket_, "");
  ASSERT_TRUE(ups.ok());
  EXPECT_TRUE(ups->empty());
  EXPECT_TRUE(store_->PutPart(bucket_, "mp", *id, 1, {}).status().Is(StoreError::kNoSuchUpload));
  auto other = store_->CreateMultipart(bucket_, "other", {});
  ASSERT_TRUE(other.ok());
  {
    auto w = store_->PutPart(bucket_, "other", *other, 1, {});
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Write(p2).ok());
    ASSERT_TRUE((*w)->Commit().ok());
  }
  const size_t with_other = StripeCount();
  ASSERT_TRUE(store_->AbortMultipart(bucket_, "other", *other).ok());
  EXPECT_EQ(StripeCount(), with_other - 1);
  EXPECT_TRUE(store_->AbortMultipart(bucket_, "other", *other).Is(StoreError::kNoSuchUpload));
}

// ReadMany: ranges of several objects and stripes, adjacent ranges of one stripe share one read
// op (coalesced), results byte-exact; OpenMany opens all keys at once, a missing one kNoSuchKey.
TEST_F(RadosStoreCeph, OpenManyAndReadManyCoalesce) {
  std::vector<Bytes> data;
  std::vector<std::string> keys;
  for (int i = 0; i < 6; ++i) {
    data.push_back(Pattern(100000, 10 + i));
    keys.push_back("blk" + std::to_string(i));
    ASSERT_TRUE(PutBytes(keys.back(), data.back()).ok());
  }
  keys.push_back("missing");
  auto readers = store_->OpenMany(bucket_, keys);
  ASSERT_EQ(readers.size(), keys.size());
  EXPECT_TRUE(readers.back().status().Is(StoreError::kNoSuchKey));
  std::vector<store::RangeRead> ranges;
  std::vector<Bytes> outs(6 * 4, Bytes(16384));
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(readers[i].ok()) << readers[i].status().ToString();
    for (int l = 0; l < 4; ++l) {  // four adjacent 16 KiB "layers" of stripe 0
      store::RangeRead r;
      r.reader = readers[i]->get();
      r.offset = static_cast<uint64_t>(l) * 16384;
      r.out = outs[i * 4 + l];
      ranges.push_back(r);
    }
  }
  store::RangeRead across;  // crosses from stripe 0 into stripe 1
  Bytes across_out(20000);
  across.reader = readers[0]->get();
  across.offset = 60000;
  across.out = across_out;
  ranges.push_back(across);
  const uint64_t ops_before = store_->read_ops();
  store_->ReadMany(ranges);
  for (int i = 0; i < 6; ++i) {
    for (int l = 0; l < 4; ++l) {
      const auto& r = ranges[i * 4 + l];
      ASSERT_TRUE(r.result.ok()) << r.result.status().ToString();
      EXPECT_EQ(*r.result, 16384u);
      EXPECT_TRUE(
          std::equal(outs[i * 4 + l].begin(), outs[i * 4 + l].end(), data[i].begin() + l * 16384));
    }
  }
  ASSERT_TRUE(ranges.back().result.ok());
  EXPECT_TRUE(std::equal(across_out.begin(), across_out.end(), data[0].begin() + 60000));
  EXPECT_EQ(store_->read_ops() - ops_before, 7u);  // one op per stripe object touched
  EXPECT_GE(store_->coalesced_reads(), 19u);
}

// Copy: bytes and metadata (COPY) or new metadata (REPLACE); a new version of its own.
TEST_F(RadosStoreCeph, Copy) {
  Bytes data = Pattern(140000, 5);
  store::PutOptions o;
  o.user_meta = {{"a", "1"}};
  ASSERT_TRUE(PutBytes("src", data, o).ok());
  ASSERT_TRUE(store_->CreateBucket("dst").ok());
  auto c = store_->Copy(bucket_, "src", "dst", "copy", std::nullopt);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->user_meta, o.user_meta);
  store::PutOptions repl;
  repl.content_type = "x/y";
  auto c2 = store_->Copy(bucket_, "src", bucket_, "copy2", repl);
  ASSERT_TRUE(c2.ok());
  EXPECT_EQ(c2->content_type, "x/y");
  EXPECT_TRUE(c2->user_meta.empty());
  ASSERT_TRUE(store_->Delete(bucket_, "src").ok());
  EXPECT_EQ(ReadAll(*store_, "copy2"), data);
}

// ACLs (the store records owners, as LocalStore): the bucket ACL is kept in the bucket record
// and seen by another store; PutOptions::acl is kept with the object and returned by Head, Open
// and List; SetObjectAcl replaces it without rewriting the data (same stripes, same ETag); a copy
// does not take the source's ACL; a multipart upload's ACL is the completed object's.
TEST_F(RadosStoreCeph, AclsAreRecorded) {
  EXPECT_TRUE(store_->RecordsOwners());
  ASSERT_TRUE(store_->SetBucketAcl(bucket_, "bucket-acl").ok());
  auto other = OpenStore();
  ASSERT_NE(other, nullptr);
  auto h = other->HeadBucket(bucket_);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->acl, "bucket-acl");
  auto all = other->ListBuckets();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].acl, "bucket-acl");
  EXPECT_TRUE(store_->SetBucketAcl("no-such-bucket", "x").Is(StoreError::kNoSuchBucket));

  store::PutOptions o;
  o.acl = "object-acl";
  Bytes data = Pattern(150000, 9);
  auto put = PutBytes("k", data, o);
  ASSERT_TRUE(put.ok()) << put.status().ToString();
  EXPECT_EQ(put->acl, "object-acl");
  EXPECT_EQ(other->Head(bucket_, "k")->acl, "object-acl");
  const size_t stripes = StripeCount();
  ASSERT_TRUE(other->SetObjectAcl(bucket_, "k", "new-acl").ok());
  auto head = store_->Head(bucket_, "k");
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->acl, "new-acl");
  EXPECT_EQ(head->etag, put->etag);
  EXPECT_EQ(StripeCount(), stripes);  // no data moved
  auto r = store_->Open(bucket_, "k");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->meta().acl, "new-acl");
  EXPECT_EQ(ReadAll(*store_, "k"), data);
  auto list = store_->List(bucket_, {});
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->objects.size(), 1u);
  EXPECT_EQ(list->objects[0].acl, "new-acl");
  EXPECT_TRUE(store_->SetObjectAcl(bucket_, "absent", "x").Is(StoreError::kNoSuchKey));

  auto copy = store_->Copy(bucket_, "k", bucket_, "copy", std::nullopt);
  ASSERT_TRUE(copy.ok()) << copy.status().ToString();
  EXPECT_EQ(copy->acl, "");
  EXPECT_EQ(store_->Head(bucket_, "copy")->acl, "");

  store::PutOptions mo;
  mo.acl = "multipart-acl";
  auto id = store_->CreateMultipart(bucket_, "mp", mo);
  ASSERT_TRUE(id.ok());
  auto w = store_->PutPart(bucket_, "mp", *id, 1, {});
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Write(AsBytes("part")).ok());
  auto pm = (*w)->Commit();
  ASSERT_TRUE(pm.ok());
  std::vector<store::CompletePart> parts = {{1, pm->etag}};
  auto done = store_->CompleteMultipart(bucket_, "mp", *id, parts);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_EQ(done->acl, "multipart-acl");
  EXPECT_EQ(other->Head(bucket_, "mp")->acl, "multipart-acl");
}

// Conditional writes (If-Match / If-None-Match) are evaluated against the entry the publishing
// compare-and-set replaces: refused early when already false, and of writers racing from two
// stores with If-None-Match "*", exactly one commits.
TEST_F(RadosStoreCeph, ConditionalWrites) {
  store::PutOptions absent;
  absent.condition.if_none_match = {"*"};
  auto first = PutBytes("k", AsBytes("one"), absent);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(store_->Put(bucket_, "k", absent).status().Is(StoreError::kPreconditionFailed));
  store::PutOptions match;
  match.condition.if_match = {"nope"};
  EXPECT_TRUE(store_->Put(bucket_, "k", match).status().Is(StoreError::kPreconditionFailed));
  match.condition.if_match = {"*"};
  EXPECT_TRUE(store_->Put(bucket_, "missing", match).status().Is(StoreError::kNoSuchKey));
  match.condition.if_match = {first->etag};
  auto second = PutBytes("k", AsBytes("two"), match);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  // A writer opened while its condition held, committed after another PUT: refused at publish,
  // and its stripes are gone.
  match.condition.if_match = {second->etag};
  auto late = store_->Put(bucket_, "k", match);
  ASSERT_TRUE(late.ok());
  ASSERT_TRUE((*late)->Write(AsBytes("late")).ok());
  ASSERT_TRUE(PutBytes("k", AsBytes("three")).ok());
  EXPECT_TRUE((*late)->Commit().status().Is(StoreError::kPreconditionFailed));
  const ByteSpan three = AsBytes("three");
  EXPECT_EQ(ReadAll(*store_, "k"), Bytes(three.begin(), three.end()));
  EXPECT_EQ(StripeCount(), 1u);

  auto other = OpenStore();
  ASSERT_NE(other, nullptr);
  std::vector<std::unique_ptr<store::ObjectWriter>> ws;
  for (int i = 0; i < 8; ++i) {
    auto w = (i % 2 ? *other : *store_).Put(bucket_, "race", absent);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    ASSERT_TRUE((*w)->Write(AsBytes("v" + std::to_string(i))).ok());
    ws.push_back(std::move(*w));
  }
  std::atomic<int> won{0}, refused{0};
  std::vector<std::thread> ts;
  for (auto& w : ws) {
    ts.emplace_back([&, wp = w.get()] {
      auto m = wp->Commit();
      if (m.ok()) {
        ++won;
      } else if (m.status().Is(StoreError::kPreconditionFailed)) {
        ++refused;
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(won.load(), 1);
  EXPECT_EQ(refused.load(), 7);
  EXPECT_EQ(StripeCount(), 2u);  // "k" and the winner of "race"
}

// Two stores on one pool and namespace (two librados clients, as two `kvcs store` processes):
// a write acknowledged by one is read whole by the other at once, overwrites and deletes too,
// and buckets made by one are served by the other.
TEST_F(RadosStoreCeph, TwoStoresSeeEachOthersWritesAtOnce) {
  auto other = OpenStore();
  ASSERT_NE(other, nullptr);
  for (int round = 0; round < 5; ++round) {
    Bytes v = Pattern(90000 + round, round);
    RadosStore& writer = round % 2 ? *store_ : *other;
    RadosStore& reader = round % 2 ? *other : *store_;
    ASSERT_TRUE(PutBytes(writer, "shared", v).ok());
    EXPECT_EQ(ReadAll(reader, "shared"), v) << round;
  }
  ASSERT_TRUE(other->Delete(bucket_, "shared").ok());
  EXPECT_TRUE(store_->Head(bucket_, "shared").status().Is(StoreError::kNoSuchKey));
  ASSERT_TRUE(other->CreateBucket("made-by-other").ok());
  EXPECT_TRUE(store_->HeadBucket("made-by-other").ok());
  EXPECT_TRUE(store_->CreateBucket("made-by-other").Is(StoreError::kBucketAlreadyExists));
}

// Concurrent writers of one key from two stores: every PUT either wins or is replaced, the key
// ends as exactly one whole version, and no replaced version's stripes are left behind.
TEST_F(RadosStoreCeph, ConcurrentOverwritesLeaveOneWholeVersion) {
  auto other = OpenStore();
  ASSERT_NE(other, nullptr);
  std::vector<Bytes> versions;
  for (int i = 0; i < 16; ++i) versions.push_back(Pattern(70000, 100 + i));
  std::thread t([&] {
    for (int i = 0; i < 8; ++i) EXPECT_TRUE(PutBytes(*other, "hot", versions[i]).ok());
  });
  for (int i = 8; i < 16; ++i) EXPECT_TRUE(PutBytes(*store_, "hot", versions[i]).ok());
  t.join();
  Bytes got = ReadAll(*store_, "hot");
  EXPECT_NE(std::find(versions.begin(), versions.end(), got), versions.end());
  EXPECT_EQ(StripeCount(), 2u);  // one version of two stripes
}

// A full pool (the OSD past the monitor's full ratio, as when the disks fill): writes are refused
// at once with a clear, typed error (kInsufficientStorage: 507 InsufficientStorage over S3)
// instead of hanging, a refused write leaves no stripes, every write acknowledged before reads
// back whole, and writes work again once there is room. The fixture's OSD is made full for real
// by lowering the full ratio just above what it holds and writing past it; the ratios are
// restored whatever happens.
TEST_F(RadosStoreCeph, FullPoolRefusesWritesAndKeepsAcknowledged) {
  auto store = OpenStore(4 << 20);  // one RADOS object per 1 MiB object
  ASSERT_NE(store, nullptr);
  auto usage = ceph_test::OsdUsage(env_);
  ASSERT_TRUE(usage.ok()) << usage.status().ToString();
  ASSERT_GT(usage->total, 0u);
  const double full = double(usage->used + (24 << 20)) / double(usage->total);
  ASSERT_LT(full, 0.9) << "the fixture's OSD is nearly full already";
  struct Restore {
    const ceph_test::RadosEnv& env;
    ~Restore() {
      EXPECT_TRUE(ceph_test::SetFullRatios(env, 0.85, 0.90, 0.95).ok());
      EXPECT_TRUE(ceph_test::WaitOsdFull(env, false, 60).ok());
    }
  } restore{env_};
  ASSERT_TRUE(ceph_test::SetFullRatios(env_, full * 0.98, full * 0.99, full).ok());
  // Fill: 1 MiB objects past the ratio. Those written before the monitor marks the OSD full
  // are acknowledged; the first refusal ends the fill.
  std::vector<std::pair<std::string, Bytes>> acked;
  Status refused;
  for (int i = 0; i < 48 && refused.ok(); ++i) {
    Bytes b = Pattern(1 << 20, 1000 + i);
    auto m = PutBytes(*store, "fill/" + std::to_string(i), b);
    if (m.ok()) {
      acked.emplace_back("fill/" + std::to_string(i), std::move(b));
    } else {
      refused = m.status();
    }
  }
  ASSERT_FALSE(acked.empty());
  if (refused.ok()) {  // all 48 MiB went in before the monitor saw the OSD full
    // The OSD may have freed a previous test's deleted objects meanwhile, so that 48 MiB did not
    // reach the ratio (seen once in a full ctest run right after the RADOS S3 tests): the ratio
    // goes just under what the OSD holds now, our acknowledged objects included.
    auto now = ceph_test::OsdUsage(env_);
    ASSERT_TRUE(now.ok()) << now.status().ToString();
    const double held = double(now->used) / double(now->total);
    if (held < full) {
      ASSERT_TRUE(ceph_test::SetFullRatios(env_, held * 0.97, held * 0.98, held * 0.99).ok());
    }
    ASSERT_TRUE(ceph_test::WaitOsdFull(env_, true, 60).ok());
    refused = PutBytes(*store, "after", Pattern(1 << 20, 1)).status();
  }
  EXPECT_TRUE(refused.Is(StoreError::kInsufficientStorage)) << refused.ToString();
  EXPECT_EQ(refused.code(), Code::kResourceExhausted);
  EXPECT_NE(refused.message().find("full"), std::string::npos) << refused.message();
  // Refused at once again, however small; a refused write leaves no stripes behind.
  EXPECT_TRUE(
      PutBytes(*store, "small", Pattern(100, 2)).status().Is(StoreError::kInsufficientStorage));
  EXPECT_EQ(StripeCount(), acked.size());
  // Every acknowledged write reads back whole; nothing else is listed.
  for (const auto& [key, bytes] : acked) EXPECT_EQ(ReadAll(*store, key), bytes) << key;
  auto l = store->List(bucket_, {});
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->objects.size(), acked.size());
  // Room again: writes work.
  ASSERT_TRUE(ceph_test::SetFullRatios(env_, 0.85, 0.90, 0.95).ok());
  ASSERT_TRUE(ceph_test::WaitOsdFull(env_, false, 60).ok());
  EXPECT_TRUE(PutBytes(*store, "after-room", Pattern(1000, 3)).ok());
}

// A missing pool, an unreadable ceph.conf: Open fails with a clear, typed error.
TEST_F(RadosStoreCeph, BadPoolAndConfFailCleanly) {
  RadosStoreOptions o = ceph_test::RadosTestOptions(env_, ns_);
  o.connect.pool = "no-such-pool-kvcs";
  auto s = RadosStore::Open(o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kNotFound);
  EXPECT_NE(s.status().message().find("no-such-pool-kvcs"), std::string::npos);
  o = ceph_test::RadosTestOptions(env_, ns_);
  o.connect.ceph_conf = "/nonexistent/ceph.conf";
  EXPECT_FALSE(RadosStore::Open(o).ok());
}

}  // namespace
}  // namespace kvcs::rados_store
