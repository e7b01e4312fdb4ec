// The shared ObjectCache extension cases (see extension_cases.h): the fixture, then every case,
// each stating the behaviour it pins. Run on local disk by tests/objcache and on radosgw by
// tests/ceph.
#include "extension_cases.h"

#include <unistd.h>

#include <map>
#include <mutex>
#include <set>

#include <nlohmann/json.hpp>

#include "common/hex.h"
#include "kvsp/container.h"
#include "objcache/aggregate_wire.h"
#include "objcache/aggregated_put_handler.h"
#include "objcache/block_layout.h"
#include "s3/config.h"

namespace kvcs::objcache {

const std::string ExtensionFixture::kBucket = kDefaultKvBucket;

void ExtensionFixture::Start(std::unique_ptr<ExtensionBackend> backend, uint32_t blocks,
                             uint32_t layers, ServiceOptions service_options, bool shm) {
  backend_ = std::move(backend);
  ASSERT_NE(backend_, nullptr);
  blocks_ = blocks;
  layers_ = layers;
  s3::ServerConfig cfg;
  cfg.port = 0;
  cfg.secrets[s3::kDevAccessKey] = s3::kDevSecretKey;
  // Another user, owner of none of the buckets; only where the store keeps owners (the S3 server
  // refuses several users over one that does not, e.g. the S3 backend).
  if (backend_->store().RecordsOwners()) cfg.secrets[kOtherAccessKey] = kOtherSecretKey;
  cfg.io_threads = 2;
  server_ = std::make_unique<s3::Server>(cfg, backend_->store());
  service_ = std::make_unique<Service>(service_options);
  for (auto& e : service_->Extensions()) server_->AddExtension(std::move(e));
  if (shm) {
    static int counter = 0;
    shm_path_ = "/tmp/kvcs-shm-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++) +
                ".sock";
    Status s = service_->ListenShm(shm_path_);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  ASSERT_TRUE(server_->Start().ok());
  runner_ = std::thread([this] { server_->Run(false); });
  client_ = std::make_unique<Client>(Options(s3::kDevSecretKey));
  ASSERT_TRUE(client_->CreateBucket(kBucket).ok());
  auto cache = MakeSyntheticCache(blocks, layers);
  ASSERT_TRUE(cache.ok());
  cache_ = *cache;
  for (uint32_t i = 0; i < blocks; ++i) {
    auto c = MakeSyntheticContainer(cache_, i);
    ASSERT_TRUE(c.ok());
    containers_.push_back(*c);
  }
}

void ExtensionFixture::TearDown() {
  client_.reset();
  if (server_) server_->Stop();
  if (runner_.joinable()) runner_.join();
  server_.reset();
  service_.reset();
  backend_.reset();
}

ClientOptions ExtensionFixture::Options(const std::string& secret) const {
  ClientOptions o;
  o.port = server_->port();
  o.access_key = s3::kDevAccessKey;
  o.secret_key = secret;
  if (!shm_path_.empty()) {
    o.shm_socket = shm_path_;
    o.shm_buffer_bytes = 4u << 20;  // 2 slots of 2 MiB: a layer of these cases is ≤ 1.1 MiB
    o.shm_slots = 2;
  }
  return o;
}

void ExtensionFixture::PutAll() {
  std::vector<ByteSpan> spans(containers_.begin(), containers_.end());
  auto r = client_->AggregatePut(kBucket, cache_.scope_id, spans, true);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->stored, blocks_);
  ASSERT_FALSE(r->prefix_record.empty());
}

AggregateRequest ExtensionFixture::Req(std::vector<Digest> keys, uint32_t first, uint32_t count,
                                       Components c) const {
  AggregateRequest r = SyntheticRequest(cache_, 1, first, count);
  r.components = c;
  r.block_keys = std::move(keys);
  r.compute_us_per_layer = 500;
  r.stall_target_us = 100;
  return r;
}

Result<std::vector<ExtensionFixture::Got>> ExtensionFixture::Get(const AggregateRequest& r,
                                                                 AggregateStats* stats) {
  std::vector<Got> got;
  std::mutex mu;  // the block callback runs on the client's verify threads
  std::map<std::pair<uint16_t, uint32_t>, Bytes> seen;
  bool twice = false;
  auto s = client_->AggregateGet(
      kBucket, r,
      [&](const DeliveredLayer& l) {
        Got g{l.layer, {}, {}, {}};
        std::lock_guard<std::mutex> lock(mu);
        for (uint32_t i = 0; i < l.blocks.size(); ++i) {
          const DeliveredBlock& b = l.blocks[i];
          g.status.push_back(b.status);
          g.data.emplace_back(b.data.begin(), b.data.end());
          auto it = seen.find({l.layer, i});
          g.verified.push_back(it == seen.end() ? Bytes{} : std::move(it->second));
          if (it != seen.end()) seen.erase(it);
        }
        got.push_back(std::move(g));
        return Status::Ok();
      },
      [&](uint16_t layer, uint32_t block, const DeliveredBlock& b) {
        std::lock_guard<std::mutex> lock(mu);
        twice |=
            !seen.emplace(std::make_pair(layer, block), Bytes(b.data.begin(), b.data.end())).second;
      });
  if (!s.ok()) return s.status();
  if (twice || !seen.empty()) return Internal("block callback twice, or after its layer's");
  if (stats) *stats = *s;
  return got;
}

Bytes ExtensionFixture::K(uint32_t block, uint32_t layer) const {
  Bytes b = SyntheticLayerBytes(cache_, block, layer);
  return Bytes(b.begin(), b.begin() + static_cast<ptrdiff_t>(cache_.section_bytes));
}

Bytes ExtensionFixture::V(uint32_t block, uint32_t layer) const {
  Bytes b = SyntheticLayerBytes(cache_, block, layer);
  return Bytes(b.begin() + static_cast<ptrdiff_t>(cache_.section_bytes), b.end());
}

std::string ExtensionFixture::BlockKey(uint32_t block) const {
  return BlockObjectKey(cache_.scope_id, cache_.compat_id, cache_.block_keys[block], "raw");
}

void ExtensionFixture::CorruptStored(uint32_t block, uint32_t layer) {
  const Bytes& stored = containers_[block];
  Bytes needle = SyntheticLayerBytes(cache_, block, layer);
  auto it = std::search(stored.begin(), stored.end(), needle.begin(), needle.begin() + 64);
  ASSERT_NE(it, stored.end());
  backend_->Corrupt(kBucket, BlockKey(block), stored,
                    static_cast<size_t>(it - stored.begin()) + 100);
}

namespace {

// One aggregated PUT stores every block; one aggregated GET returns them layer-major, in order,
// byte-exact.
TEST_P(ExtensionCases, PutThenGetAllPresentLayerMajor) {
  PutAll();
  AggregateStats stats;
  auto got = Get(Req(cache_.block_keys, 0, kLayers), &stats);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), kLayers);
  for (uint32_t l = 0; l < kLayers; ++l) {
    EXPECT_EQ((*got)[l].layer, l);
    ASSERT_EQ((*got)[l].status.size(), kBlocks);
    for (uint32_t b = 0; b < kBlocks; ++b) {
      EXPECT_EQ((*got)[l].status[b], BlockStatus::kPresent);
      EXPECT_EQ((*got)[l].data[b], SyntheticLayerBytes(cache_, b, l)) << "block " << b;
      EXPECT_EQ((*got)[l].verified[b], (*got)[l].data[b]) << "block " << b;
    }
  }
  EXPECT_EQ(stats.corrupt_blocks, 0u);
  EXPECT_EQ(stats.payload_bytes, uint64_t{kBlocks} * kLayers * 2 * cache_.section_bytes);
  EXPECT_EQ(stats.layer_seconds.size(), kLayers);
}

// Missing blocks are reported as missing, the others still delivered.
TEST_P(ExtensionCases, SomeMissing) {
  PutAll();
  Digest unknown1{}, unknown2{};
  unknown1.fill(0x5a);
  unknown2.fill(0xa5);
  std::vector<Digest> keys = {cache_.block_keys[0], unknown1, cache_.block_keys[2], unknown2};
  auto got = Get(Req(keys, 0, kLayers));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), kLayers);
  for (const auto& g : *got) {
    EXPECT_EQ(g.status[0], BlockStatus::kPresent);
    EXPECT_EQ(g.status[1], BlockStatus::kMissing);
    EXPECT_EQ(g.status[2], BlockStatus::kPresent);
    EXPECT_EQ(g.status[3], BlockStatus::kMissing);
    EXPECT_TRUE(g.data[1].empty());
    EXPECT_EQ(g.data[2], SyntheticLayerBytes(cache_, 2, g.layer));
  }
}

// The existence query (§4a): every block's status and the held prefix, in one request.
TEST_P(ExtensionCases, AggregateExistsAnswersEveryBlock) {
  PutAll();
  Digest unknown{};
  unknown.fill(0x5a);
  std::vector<Digest> keys = {cache_.block_keys[0], cache_.block_keys[1], unknown,
                              cache_.block_keys[2]};
  auto r = client_->AggregateExists(kBucket, Req(keys, 0, kLayers));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->leading, 2u);
  ASSERT_EQ(r->status.size(), 4u);
  EXPECT_EQ(r->status[0], BlockStatus::kPresent);
  EXPECT_EQ(r->status[1], BlockStatus::kPresent);
  EXPECT_EQ(r->status[2], BlockStatus::kMissing);
  EXPECT_EQ(r->status[3], BlockStatus::kPresent);
  auto beyond = client_->AggregateExists(kBucket, Req(keys, 0, kLayers + 1));
  ASSERT_TRUE(beyond.ok()) << beyond.status().ToString();
  EXPECT_EQ(beyond->leading, 0u);
  EXPECT_EQ(beyond->status[0], BlockStatus::kLayerNotHeld);
  EXPECT_FALSE(client_->AggregateExists("no-such-bucket", Req(keys, 0, kLayers)).ok());
  auto bad = client_->Request("POST", "/" + kBucket, "kvcs-aggregate-exists", AsBytes("{\"v\":1}"));
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->status, 400);
}

// Layer subsets and components: k only, v only; layers past the container are "not held".
TEST_P(ExtensionCases, LayerRangesAndComponents) {
  PutAll();
  std::vector<Digest> keys(cache_.block_keys.begin(), cache_.block_keys.begin() + 3);
  auto k = Get(Req(keys, 1, 2, Components::kK));
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  ASSERT_EQ(k->size(), 2u);
  EXPECT_EQ((*k)[0].layer, 1);
  EXPECT_EQ((*k)[1].layer, 2);
  for (const auto& g : *k)
    for (uint32_t b = 0; b < 3; ++b) EXPECT_EQ(g.data[b], K(b, g.layer));
  auto v = Get(Req(keys, 3, 1, Components::kV));
  ASSERT_TRUE(v.ok());
  ASSERT_EQ(v->size(), 1u);
  for (uint32_t b = 0; b < 3; ++b) EXPECT_EQ((*v)[0].data[b], V(b, 3));
  auto beyond = Get(Req(keys, 2, 4));
  ASSERT_TRUE(beyond.ok());
  ASSERT_EQ(beyond->size(), 4u);
  EXPECT_EQ((*beyond)[1].status[0], BlockStatus::kPresent);
  EXPECT_EQ((*beyond)[2].status[0], BlockStatus::kLayerNotHeld);
  EXPECT_EQ((*beyond)[3].status[2], BlockStatus::kLayerNotHeld);
}

// A byte flipped in the stored object is caught: the client never hands that block-layer to the
// callback (kv: by the client's end-to-end digest check; k only: by the server's check).
TEST_P(ExtensionCases, StoredCorruptionNeverReachesTheCallback) {
  PutAll();
  CorruptStored(3, 2);
  AggregateStats stats;
  auto got = Get(Req(cache_.block_keys, 0, kLayers), &stats);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(stats.corrupt_blocks, 1u);
  for (const auto& g : *got)
    for (uint32_t b = 0; b < kBlocks; ++b) {
      if (g.layer == 2 && b == 3) {
        EXPECT_EQ(g.status[b], BlockStatus::kCorrupt);
        EXPECT_TRUE(g.data[b].empty());
        EXPECT_TRUE(g.verified[b].empty());  // never handed to the block callback either
      } else {
        EXPECT_EQ(g.data[b], SyntheticLayerBytes(cache_, b, g.layer));
        EXPECT_EQ(g.verified[b], g.data[b]);
      }
    }
  auto k = Get(Req({cache_.block_keys[3]}, 2, 1, Components::kK));
  ASSERT_TRUE(k.ok());
  EXPECT_EQ((*k)[0].status[0], BlockStatus::kCorrupt);
  EXPECT_TRUE((*k)[0].data[0].empty());
  EXPECT_TRUE((*k)[0].verified[0].empty());
}

// Bad requests get S3 errors, not streams; a wrong secret is refused by SigV4.
TEST_P(ExtensionCases, ErrorsBeforeStreaming) {
  PutAll();
  auto nobucket = client_->AggregateGet("no-such-bucket", Req(cache_.block_keys, 0, kLayers),
                                        [](const DeliveredLayer&) { return Status::Ok(); });
  EXPECT_EQ(nobucket.status().code(), Code::kNotFound) << nobucket.status().ToString();
  auto bad = client_->Request("POST", "/" + kBucket, "kvcs-aggregate", AsBytes("{\"v\":1}"));
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->status, 400);
  Client wrong(Options("not-the-secret"));
  auto denied = wrong.AggregateGet(kBucket, Req(cache_.block_keys, 0, kLayers),
                                   [](const DeliveredLayer&) { return Status::Ok(); });
  EXPECT_EQ(denied.status().code(), Code::kPermissionDenied) << denied.status().ToString();
}

// An aggregated PUT stores each container atomically and independently: a corrupt one is
// refused, the others are stored.
TEST_P(ExtensionCases, AggregatePutRefusesCorruptContainer) {
  Bytes bad = containers_[1];
  bad[bad.size() - 10] ^= 1;
  std::vector<ByteSpan> spans = {containers_[0], bad, containers_[2]};
  auto r = client_->AggregatePut(kBucket, cache_.scope_id, spans, false);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->stored, 2u);
  ASSERT_EQ(r->blocks.size(), 3u);
  EXPECT_TRUE(r->blocks[0].ok);
  EXPECT_FALSE(r->blocks[1].ok);
  EXPECT_TRUE(r->blocks[2].ok);
  auto got = Get(Req({cache_.block_keys[0], cache_.block_keys[1], cache_.block_keys[2]}, 0, 1));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].status[1], BlockStatus::kMissing);
  EXPECT_EQ((*got)[0].status[2], BlockStatus::kPresent);
}

// Containers of their own synthetic cache (2 layers, ~130 KiB each; `seed` keeps the sets of
// different tests apart), for the aggregated PUT pipeline cases.
struct PutSet {
  SyntheticCache cache;
  std::vector<Bytes> containers;
  std::vector<std::string> keys;  // each container's block object key
};
PutSet MakePutSet(uint32_t n, uint64_t seed) {
  PutSet s;
  auto cache = MakeSyntheticCache(n, 2, seed);
  EXPECT_TRUE(cache.ok());
  if (!cache.ok()) return s;
  s.cache = *cache;
  for (uint32_t i = 0; i < n; ++i) {
    auto c = MakeSyntheticContainer(s.cache, i);
    EXPECT_TRUE(c.ok());
    if (!c.ok()) return s;
    s.containers.push_back(*c);
    s.keys.push_back(
        BlockObjectKey(s.cache.scope_id, s.cache.compat_id, s.cache.block_keys[i], "raw"));
  }
  return s;
}

// A KVAP body (objectcache-aggregated.md §5) announcing `count` containers, then `parts` as
// given (whole length-prefixed containers, or whatever a test cuts).
Bytes PutBody(const Digest& scope, uint32_t count, const std::vector<Bytes>& parts) {
  Bytes body;
  EncodePutHeader(PutHeader{0, scope, count}, &body);
  for (const Bytes& p : parts) body.insert(body.end(), p.begin(), p.end());
  return body;
}
Bytes Framed(const Bytes& container) {
  Bytes out(8 + container.size());
  StoreBe64(out.data(), container.size());
  std::copy(container.begin(), container.end(), out.begin() + 8);
  return out;
}

// The aggregated PUT pipeline (several containers verified and committed at once) still answers
// per container, in index order, with the same JSON shape: three times the in-flight bound, with
// bad containers among them (a layer digest, a cut container, a bad magic, the very last one),
// every good one stored byte-exact at its key and no bad one stored.
TEST_P(ExtensionCases, AggregatePutPipelineAnswersInIndexOrder) {
  const uint32_t n = 3 * kMaxPutInFlight + 1;
  PutSet set = MakePutSet(n, 5);
  ASSERT_EQ(set.containers.size(), n);
  const std::set<uint32_t> bad = {1, 9, 17, n - 1};
  std::vector<Bytes> parts;
  for (uint32_t i = 0; i < n; ++i) {
    Bytes c = set.containers[i];
    if (i == 9) {
      c.resize(200);  // structure: the layer table and payload are missing
    } else if (i == 17) {
      c[0] ^= 0xff;  // magic
    } else if (bad.count(i)) {
      c[c.size() - 10] ^= 1;  // a layer digest no longer matches
    }
    parts.push_back(Framed(c));
  }
  const Bytes body = PutBody(set.cache.scope_id, n, parts);
  // A whole-body signature could only be checked after the blocks were stored: refused before
  // the body is read (sent here with the head of the body only, so that the client's write of it
  // completes before the answer).
  auto signed_body = client_->Request("POST", "/" + kBucket, "kvcs-aggregate-put",
                                      PutBody(set.cache.scope_id, n, {}),
                                      {{"Content-Type", "application/vnd.kvcs.aggregate-put-v1"}});
  ASSERT_TRUE(signed_body.ok()) << signed_body.status().ToString();
  EXPECT_EQ(signed_body->status, 400);
  EXPECT_NE(AsStringView(signed_body->body).find("UNSIGNED-PAYLOAD"), std::string_view::npos);
  auto r = client_->Request("POST", "/" + kBucket, "kvcs-aggregate-put", body,
                            {{"Content-Type", "application/vnd.kvcs.aggregate-put-v1"},
                             {"x-amz-content-sha256", "UNSIGNED-PAYLOAD"}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->status, 200) << AsStringView(r->body);
  auto j = nlohmann::json::parse(AsStringView(r->body), nullptr, false);
  ASSERT_TRUE(j.is_object()) << AsStringView(r->body);
  EXPECT_EQ(j.value("stored", 0u), n - bad.size());
  ASSERT_TRUE(j["blocks"].is_array());
  ASSERT_EQ(j["blocks"].size(), n);
  for (uint32_t i = 0; i < n; ++i) {
    const auto& b = j["blocks"][i];
    EXPECT_EQ(b.value("index", 999999u), i);
    if (bad.count(i)) {
      EXPECT_EQ(b.value("status", ""), "error") << i;
      EXPECT_FALSE(b.value("message", "").empty()) << i;
      EXPECT_FALSE(b.contains("key")) << i;
    } else {
      EXPECT_EQ(b.value("status", ""), "ok") << i;
      EXPECT_EQ(b.value("key", ""), set.keys[i]) << i;
      EXPECT_EQ(b.value("block_key", ""), ToHex(set.cache.block_keys[i])) << i;
    }
    auto got = client_->Request("GET", "/" + kBucket + "/" + set.keys[i], "", {});
    ASSERT_TRUE(got.ok());
    if (bad.count(i)) {
      EXPECT_EQ(got->status, 404) << i;
    } else {
      EXPECT_EQ(got->status, 200) << i;
      EXPECT_EQ(got->body, set.containers[i]) << i;
    }
  }
}

// A body that ends early or carries an impossible length after several containers (more than the
// in-flight bound, so some are still being committed when the reader hits the fault) gives 400
// InvalidRequest, and every whole container before the fault is stored: cut inside a container,
// cut inside a length field, a length below the fixed header, a length above the container bound.
TEST_P(ExtensionCases, AggregatePutMalformedBodyKeepsEarlierContainers) {
  const uint32_t whole = kMaxPutInFlight + 3;
  enum class Cut { kInContainer, kInLength, kLengthTooSmall, kLengthTooLarge };
  uint64_t seed = 11;
  for (Cut cut : {Cut::kInContainer, Cut::kInLength, Cut::kLengthTooSmall, Cut::kLengthTooLarge}) {
    SCOPED_TRACE(static_cast<int>(cut));
    PutSet set = MakePutSet(whole + 1, seed++);
    ASSERT_EQ(set.containers.size(), whole + 1);
    std::vector<Bytes> parts;
    for (uint32_t i = 0; i < whole; ++i) parts.push_back(Framed(set.containers[i]));
    Bytes last = Framed(set.containers[whole]);
    switch (cut) {
      case Cut::kInContainer:
        last.resize(last.size() / 2);
        break;
      case Cut::kInLength:
        last.resize(4);
        break;
      case Cut::kLengthTooSmall:
        StoreBe64(last.data(), kvsp::kFixedHeaderBytes - 1);
        break;
      case Cut::kLengthTooLarge:
        StoreBe64(last.data(), kMaxPutContainerBytes + 1);
        break;
    }
    parts.push_back(last);
    auto r = client_->Request("POST", "/" + kBucket, "kvcs-aggregate-put",
                              PutBody(set.cache.scope_id, whole + 5, parts),
                              {{"Content-Type", "application/vnd.kvcs.aggregate-put-v1"},
                               {"x-amz-content-sha256", "UNSIGNED-PAYLOAD"}});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 400);
    EXPECT_NE(AsStringView(r->body).find("InvalidRequest"), std::string_view::npos);
    // The server closes a connection whose unread body is too large to drain (http/server.cc).
    client_ = std::make_unique<Client>(Options(s3::kDevSecretKey));
    for (uint32_t i = 0; i <= whole; ++i) {
      auto got = client_->Request("GET", "/" + kBucket + "/" + set.keys[i], "", {});
      ASSERT_TRUE(got.ok());
      if (i < whole) {
        EXPECT_EQ(got->status, 200) << i;
        EXPECT_EQ(got->body, set.containers[i]) << i;
      } else {
        EXPECT_EQ(got->status, 404) << i;
      }
    }
  }
}

// Any S3 client can GET a whole block at its predictable key.
TEST_P(ExtensionCases, PlainS3GetOfABlock) {
  PutAll();
  auto r = client_->Request("GET", "/" + kBucket + "/" + BlockKey(4), "", {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, containers_[4]);
}

// KVSP §8 retrieval endpoints: whole container, layer subset, HEAD, 404/406/416/400, prefix.
TEST_P(ExtensionCases, KvspEndpoints) {
  PutAll();
  const std::string scope = ToHex(cache_.scope_id);
  const std::string base = "/_kvsp/blocks/" + ToHex(cache_.compat_id) + "/";
  const std::vector<std::pair<std::string, std::string>> hs = {{"KVSP-Scope-ID", scope}};
  auto get = [&](const std::string& method, const std::string& path, const std::string& q,
                 bool with_scope = true) {
    auto r = client_->Request(method, path, q, {}, with_scope ? hs : decltype(hs){}, false);
    EXPECT_TRUE(r.ok());
    return r.ok() ? *r : HttpResult{};
  };
  const std::string key5 = ToHex(cache_.block_keys[5]);
  auto whole = get("GET", base + key5, "codec=raw");
  EXPECT_EQ(whole.status, 200);
  EXPECT_EQ(whole.body, containers_[5]);
  EXPECT_EQ(whole.Header("ETag").value_or(""), "\"" + key5 + ".raw\"");
  EXPECT_EQ(whole.Header("Content-Type").value_or(""), "application/vnd.kvsp.container");

  auto sub = get("GET", base + key5, "codec=raw&layers=1-2");
  ASSERT_EQ(sub.status, 200);
  kvsp::ContainerExpectation want;
  want.compat_id = cache_.compat_id;
  want.block_key = cache_.block_keys[5];
  want.block_index = 6;
  want.block_tokens = 16;
  want.layer_first = 1;
  want.layer_count = 2;
  auto v = kvsp::VerifyContainer(sub.body, want);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  auto l2 = kvsp::LayerBytes(*v, sub.body, 2);
  ASSERT_TRUE(l2.ok());
  EXPECT_EQ(Bytes(l2->k.begin(), l2->k.end()), K(5, 2));

  auto head = get("HEAD", base + key5, "codec=raw");
  EXPECT_EQ(head.status, 200);
  EXPECT_TRUE(head.body.empty());
  EXPECT_EQ(head.Header("Content-Length").value_or(""), std::to_string(containers_[5].size()));

  EXPECT_EQ(get("GET", base + std::string(64, 'e'), "codec=raw").status, 404);
  EXPECT_EQ(get("GET", base + key5, "codec=zstd").status, 406);
  EXPECT_EQ(get("GET", base + key5, "codec=raw&layers=2-9").status, 416);
  EXPECT_EQ(get("GET", base + key5, "codec=raw", false).status, 400);
  EXPECT_EQ(get("GET", base + key5, "layers=3-1").status, 400);
  for (const char* q :
       {"layers=1-", "layers=-2", "layers=1-x", "layers=123456-123457", "codec=nope"}) {
    EXPECT_EQ(get("GET", base + key5, q).status, 400) << q;
  }
  EXPECT_EQ(get("GET", base + "xyz", "codec=raw").status, 400);

  // The prefix record written by the aggregated PUT lets /prefix stream blocks i..n.
  const std::string anchor = ToHex(cache_.block_keys.back());
  auto pre =
      get("GET", "/_kvsp/prefix/" + ToHex(cache_.compat_id) + "/" + anchor, "from=3&codec=raw");
  ASSERT_EQ(pre.status, 200);
  ByteSpan rest = pre.body;
  uint32_t i = 2;
  while (!rest.empty()) {
    auto view = kvsp::ParseContainerHeader(rest);
    ASSERT_TRUE(view.ok());
    ASSERT_LT(i, kBlocks);
    EXPECT_EQ(view->header.block_key, cache_.block_keys[i]);
    EXPECT_TRUE(kvsp::DecodeContainer(rest.first(view->total_size)).ok());
    rest = rest.subspan(view->total_size);
    ++i;
  }
  EXPECT_EQ(i, kBlocks);
  EXPECT_EQ(get("GET", "/_kvsp/prefix/" + ToHex(cache_.compat_id) + "/" + std::string(64, '0'), "")
                .status,
            404);
  EXPECT_EQ(get("GET", "/_kvsp/prefix/" + ToHex(cache_.compat_id) + "/" + anchor, "from=9").status,
            416);
  // Malformed requests of the prefix endpoint: the same head checks as /blocks, and from is
  // 1..6 decimal digits only.
  for (const char* q : {"from=0", "from=x3", "from=3x", "from=1234567", "from=", "codec=nope"}) {
    EXPECT_EQ(get("GET", "/_kvsp/prefix/" + ToHex(cache_.compat_id) + "/" + anchor, q).status, 400)
        << q;
  }
  EXPECT_EQ(get("GET", "/_kvsp/prefix/" + ToHex(cache_.compat_id) + "/" + anchor, "", false).status,
            400);
}

// Windows far smaller than a layer: a window ends inside a layer, a layer spans several windows,
// missing blocks' records are counted against the window, the window buffers are reused by the
// next requests (three requests in a row, with different components), and every byte still
// arrives in order.
TEST_P(SmallWindowCases, LayersSpanWindowsAndBuffersAreReused) {
  PutAll();
  Digest unknown{};
  unknown.fill(0x77);
  std::vector<Digest> keys = cache_.block_keys;
  keys.insert(keys.begin() + 3, unknown);
  for (Components c : {Components::kKV, Components::kK, Components::kKV, Components::kV}) {
    auto got = Get(Req(keys, 0, kLayers, c));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_EQ(got->size(), kLayers);
    for (uint32_t l = 0; l < kLayers; ++l) {
      const Got& g = (*got)[l];
      EXPECT_EQ(g.layer, l);
      ASSERT_EQ(g.status.size(), keys.size());
      for (uint32_t i = 0; i < keys.size(); ++i) {
        if (i == 3) {
          EXPECT_EQ(g.status[i], BlockStatus::kMissing);
          continue;
        }
        uint32_t b = i < 3 ? i : i - 1;
        ASSERT_EQ(g.status[i], BlockStatus::kPresent) << "layer " << l << " block " << b;
        Bytes want = c == Components::kKV  ? SyntheticLayerBytes(cache_, b, l)
                     : c == Components::kK ? K(b, l)
                                           : V(b, l);
        EXPECT_EQ(g.data[i], want) << "layer " << l << " block " << b;
      }
    }
  }
}

}  // namespace
}  // namespace kvcs::objcache
