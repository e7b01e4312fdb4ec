// The RADOS backend's pure parts, without a cluster: the record encodings, the shard function,
// the sharded list merge (against a one-map reference, with prefixes, delimiters and
// continuation) and the config parser. The backend itself runs against the one-node Ceph in
// tests/ceph (rados_store_ceph_test.cc).
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "rados_store/rados_config.h"
#include "rados_store/rados_layout.h"
#include "rados_store/rados_list_merge.h"

namespace kvcs::rados_store {
namespace {

TEST(RadosLayout, ObjectRecordRoundTrips) {
  ObjectRecord r;
  r.meta.size = 10;
  r.meta.etag = "abc-2";
  r.meta.sha256 = Sha256::Hash(std::string_view("x"));
  r.meta.content_type = "text/plain";
  r.meta.user_meta = {{"a", std::string("\xff\x01", 2)}, {"b", "c"}};
  r.meta.last_modified_ms = 1234;
  r.meta.parts_count = 2;
  r.segments = {{"v1", 4, 65536}, {"v2", 6, 65536}};
  auto back = DecodeObject("k", EncodeObject(r));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->meta.key, "k");
  EXPECT_EQ(back->meta.size, 10u);
  EXPECT_EQ(back->meta.sha256, r.meta.sha256);
  EXPECT_EQ(back->meta.user_meta, r.meta.user_meta);
  EXPECT_EQ(back->segments.size(), 2u);
  EXPECT_EQ(back->segments[1].version, "v2");
  // Segments that do not add up to the size are a damaged record.
  r.meta.size = 11;
  EXPECT_TRUE(DecodeObject("k", EncodeObject(r)).status().Is(store::StoreError::kCorrupt));
  EXPECT_TRUE(DecodeObject("k", "{").status().Is(store::StoreError::kCorrupt));
}

TEST(RadosLayout, UploadPartAndBucketRoundTrip) {
  UploadRecord u{std::string("k\xe9y", 3), {}, 5, true};
  u.options.user_meta = {{"m", "v"}};
  auto ub = DecodeUpload(EncodeUpload(u));
  ASSERT_TRUE(ub.ok());
  EXPECT_EQ(ub->key, u.key);
  EXPECT_TRUE(ub->done);
  PartRecord p;
  p.info = {3, 7, "etag", 9};
  p.md5[0] = 1;
  p.segment = {"v", 7, 65536};
  auto pb = DecodePart(EncodePart(p));
  ASSERT_TRUE(pb.ok());
  EXPECT_EQ(pb->info.part_number, 3);
  EXPECT_EQ(pb->md5, p.md5);
  EXPECT_FALSE(pb->sha256.has_value());
  auto bb = DecodeBucket(EncodeBucket({"id1", 3, "owner", 16}));
  ASSERT_TRUE(bb.ok());
  EXPECT_EQ(bb->shards, 16u);
  EXPECT_EQ(PartKey("u1", 7), "p/u1/00007");
}

// The ACLs and Expires are kept in the object, upload and bucket records; a record without them
// (written before they were) decodes with them empty.
TEST(RadosLayout, AclsAndExpiresRoundTrip) {
  ObjectRecord r;
  r.meta.size = 1;
  r.meta.etag = "e";
  r.meta.expires = "Thu, 01 Dec 2044 16:00:00 GMT";
  r.meta.acl = "acl-text";
  r.segments = {{"v", 1, 65536}};
  auto back = DecodeObject("k", EncodeObject(r));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->meta.acl, "acl-text");
  EXPECT_EQ(back->meta.expires, r.meta.expires);
  UploadRecord u{"k", {}, 5, false};
  u.options.acl = "upload-acl";
  u.options.expires = "x";
  auto ub = DecodeUpload(EncodeUpload(u));
  ASSERT_TRUE(ub.ok());
  EXPECT_EQ(ub->options.acl, "upload-acl");
  EXPECT_EQ(ub->options.expires, "x");
  BucketRecord b{"id1", 3, "alice", 8, "bucket-acl"};
  auto bb = DecodeBucket(EncodeBucket(b));
  ASSERT_TRUE(bb.ok());
  EXPECT_EQ(bb->acl, "bucket-acl");
  EXPECT_EQ(bb->owner, "alice");
  // Records written before ACLs existed (no "acl" member): private.
  auto old_bucket = DecodeBucket(R"({"id":"i","created_ms":1,"owner":"","shards":8})");
  ASSERT_TRUE(old_bucket.ok());
  EXPECT_EQ(old_bucket->acl, "");
  auto old_object =
      DecodeObject("k", R"({"size":0,"etag":"e","opt":{"ct":"","ce":"","cd":"","cc":"","um":[]},)"
                        R"("mtime":1,"parts":0,"seg":[{"v":"v","n":0,"s":65536}]})");
  ASSERT_TRUE(old_object.ok()) << old_object.status().ToString();
  EXPECT_EQ(old_object->meta.acl, "");
  // An empty ACL is not written at all (records stay as they were).
  EXPECT_EQ(EncodeBucket({"i", 1, "", 8}).find("acl"), std::string::npos);
}

TEST(RadosLayout, ShardsAndStripeNamesAreStable) {
  // The shard function is part of the on-pool format: these values must never change.
  EXPECT_EQ(ShardOf("", 8), 2u);  // SHA-256("") = e3b0c442...: 0xe3b0c442 % 8
  EXPECT_EQ(ShardOf("a", 1), 0u);
  std::set<uint32_t> seen;
  for (int i = 0; i < 200; ++i) seen.insert(ShardOf("key" + std::to_string(i), 8));
  EXPECT_EQ(seen.size(), 8u);
  EXPECT_EQ(StripeObject("b1", "v1", 2), "b.b1.d.v1.2");
  EXPECT_EQ(StripeObjects("b1", {{"v", 0, 100}, {"w", 250, 100}}).size(), 4u);  // 1 + 3
}

// A sharded index in memory, and the reference answer from one sorted map.
struct MemIndex {
  uint32_t shards;
  std::vector<std::map<std::string, std::string>> maps;
  std::map<std::string, std::string> all;
  int fetches = 0;
  explicit MemIndex(uint32_t n) : shards(n), maps(n) {}
  void Add(const std::string& k) {
    maps[ShardOf(k, shards)].insert_or_assign(k, std::string(1, 'v'));
    all.insert_or_assign(k, std::string(1, 'v'));
  }
  Result<store::ListResult> List(const store::ListOptions& o) {
    auto fetch = [&](std::span<ShardQuery> qs) {
      for (ShardQuery& q : qs) {
        ++fetches;
        OmapPage p;
        auto& m = maps[q.shard];
        for (auto it = m.upper_bound(q.start_after); it != m.end(); ++it) {
          if (it->first.compare(0, q.prefix.size(), q.prefix) != 0) {
            if (it->first > q.prefix) break;
            continue;
          }
          if (p.entries.size() == q.max) {
            p.more = true;
            break;
          }
          p.entries.push_back(*it);
        }
        q.page = p;
      }
    };
    auto decode = [](const std::string& k, const std::string&) -> Result<store::ObjectMeta> {
      store::ObjectMeta m;
      m.key = k;
      return m;
    };
    return MergeShardLists(shards, o, fetch, decode);
  }
  // The reference: S3 semantics over the one sorted map.
  store::ListResult Want(const store::ListOptions& o) {
    store::ListResult r;
    int n = 0;
    std::string last;
    for (const auto& [k, v] : all) {
      if (k.compare(0, o.prefix.size(), o.prefix) != 0) continue;
      if (!o.start_after.empty() && k <= o.start_after) continue;
      std::string cp;
      if (!o.delimiter.empty()) {
        auto pos = k.find(o.delimiter, o.prefix.size());
        if (pos != std::string::npos) cp = k.substr(0, pos + o.delimiter.size());
      }
      if (!cp.empty()) {
        if (cp <= o.start_after || (!r.common_prefixes.empty() && r.common_prefixes.back() == cp))
          continue;
      }
      if (n == o.max_keys) {
        r.truncated = true;
        break;
      }
      ++n;
      if (cp.empty()) {
        r.objects.push_back({});
        r.objects.back().key = k;
        last = k;
      } else {
        r.common_prefixes.push_back(cp);
        last = cp;
      }
    }
    if (r.truncated) r.next_marker = last;
    return r;
  }
};

std::vector<std::string> Keys(const store::ListResult& r) {
  std::vector<std::string> out;
  for (const auto& o : r.objects) out.push_back(o.key);
  return out;
}

TEST(RadosListMerge, MatchesOneSortedMapPageByPage) {
  std::mt19937 rng(7);
  MemIndex idx(5);
  const char* parts[] = {"a", "b", "a/", "b/", "c/d", "/", "x"};
  for (int i = 0; i < 600; ++i) {
    std::string k;
    const int n = 1 + static_cast<int>(rng() % 4);
    for (int j = 0; j < n; ++j) k += parts[rng() % 7];
    idx.Add(k + std::to_string(rng() % 50));
  }
  for (const std::string prefix : {"", "a", "a/", "b/c", "zz"}) {
    for (const std::string delim : {"", "/"}) {
      for (int max_keys : {1, 7, 1000}) {
        store::ListOptions o;
        o.prefix = prefix;
        o.delimiter = delim;
        o.max_keys = max_keys;
        for (int page = 0; page < 2000; ++page) {
          auto got = idx.List(o);
          ASSERT_TRUE(got.ok());
          auto want = idx.Want(o);
          ASSERT_EQ(Keys(*got), Keys(want)) << prefix << " " << delim << " " << max_keys;
          ASSERT_EQ(got->common_prefixes, want.common_prefixes);
          ASSERT_EQ(got->truncated, want.truncated);
          ASSERT_EQ(got->next_marker, want.next_marker);
          if (!got->truncated) break;
          o.start_after = got->next_marker;
        }
      }
    }
  }
}

TEST(RadosListMerge, SkipsAWholeCommonPrefixInOneRead) {
  MemIndex idx(4);
  for (int i = 0; i < 3000; ++i) idx.Add("dir/" + std::to_string(i));
  idx.Add("zeta");
  store::ListOptions o;
  o.delimiter = "/";
  auto r = idx.List(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->common_prefixes, std::vector<std::string>{"dir/"});
  EXPECT_EQ(Keys(*r), std::vector<std::string>{"zeta"});
  // One read per shard to find the group, one per shard to jump past it: not 3000 / page.
  EXPECT_LE(idx.fetches, 8);
}

TEST(RadosConfig, ParsesAndRefuses) {
  RadosStoreOptions o;
  const std::string text =
      R"({"backend":"rados","pool":"p","namespace":"n","ceph_conf":"/c","keyring":"/k",)"
      R"("index_shards":16,"stripe_bytes":1048576,"op_timeout_s":5})";
  EXPECT_TRUE(IsRadosBackendConfig(text));
  EXPECT_FALSE(IsRadosBackendConfig(R"({"backend":"s3"})"));
  ASSERT_TRUE(ParseRadosBackendConfig(text, &o).ok());
  EXPECT_EQ(o.connect.pool, "p");
  EXPECT_EQ(o.connect.rados_namespace, "n");
  EXPECT_EQ(o.connect.keyring, "/k");
  EXPECT_EQ(o.index_shards, 16u);
  EXPECT_EQ(o.stripe_bytes, 1u << 20);
  EXPECT_EQ(o.connect.op_timeout_s, 5);
  EXPECT_TRUE(FinishRadosBackendConfig(o).ok());
  EXPECT_FALSE(ParseRadosBackendConfig(R"({"backend":"rados","pol":"p"})", &o).ok());
  EXPECT_FALSE(ParseRadosBackendConfig(R"({"stripe_bytes":1})", &o).ok());
  EXPECT_FALSE(FinishRadosBackendConfig(RadosStoreOptions{}).ok());
}

}  // namespace
}  // namespace kvcs::rados_store

namespace kvcs::rados_store {
namespace {

// The sweep tells stripes from index shards and upload objects by name (rados_sweep.h); a name
// the layout does not make is none of them.
TEST(RadosLayout, ParseObjectNameTakesLayoutNamesApart) {
  const std::string v(32, 'a');
  auto s = ParseObjectName(StripeObject("0123456789abcdef", v, 17));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->bucket_id, "0123456789abcdef");
  EXPECT_TRUE(s->stripe);
  EXPECT_EQ(s->version, v);
  EXPECT_EQ(s->stripe_index, 17u);
  for (const std::string& other :
       {IndexShardObject("0123456789abcdef", 3), UploadsObject("0123456789abcdef")}) {
    auto o = ParseObjectName(other);
    ASSERT_TRUE(o.has_value()) << other;
    EXPECT_EQ(o->bucket_id, "0123456789abcdef");
    EXPECT_FALSE(o->stripe);
  }
  for (const char* bad : {"kvcs.buckets", "b.", "b..d.x.1", "b.id", "b.id.d.v.", "b.id.d.v.x1",
                          "b.id.d..1", "x.id.d.v.1"}) {
    EXPECT_FALSE(ParseObjectName(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace kvcs::rados_store
