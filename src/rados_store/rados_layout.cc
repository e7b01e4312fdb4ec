#include "rados_store/rados_layout.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "common/hex.h"
#include "common/strings.h"
#include "rados_store/rados_io.h"

namespace kvcs::rados_store {

using nlohmann::json;
using store::StoreError;

namespace {

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }
Status Bad(std::string_view what, const std::string& why) {
  return StoreErr(Code::kCorruption, StoreError::kCorrupt,
                  "rados: damaged " + std::string(what) + " record: " + why);
}
std::string Hex(std::string_view s) { return ToHex(AsBytes(s)); }
std::string Unhex(const std::string& h) {
  auto b = FromHex(h);
  if (!b.ok()) throw std::runtime_error("bad hex");
  return std::string(b->begin(), b->end());
}

json OptionsJson(const store::PutOptions& o) {
  json j;
  j["ct"] = o.content_type;
  j["ce"] = o.content_encoding;
  j["cd"] = o.content_disposition;
  j["cc"] = o.cache_control;
  if (!o.expires.empty()) j["ex"] = o.expires;
  if (!o.acl.empty()) j["acl"] = o.acl;
  json um = json::array();
  for (const auto& [k, v] : o.user_meta) um.push_back({Hex(k), Hex(v)});
  j["um"] = um;
  return j;
}
store::PutOptions OptionsFrom(const json& j) {
  store::PutOptions o;
  o.content_type = j.at("ct").get<std::string>();
  o.content_encoding = j.at("ce").get<std::string>();
  o.content_disposition = j.at("cd").get<std::string>();
  o.cache_control = j.at("cc").get<std::string>();
  o.expires = j.value("ex", "");
  o.acl = j.value("acl", "");
  for (const auto& kv : j.at("um")) {
    o.user_meta.emplace_back(Unhex(kv.at(0).get<std::string>()),
                             Unhex(kv.at(1).get<std::string>()));
  }
  return o;
}
json SegmentJson(const Segment& s) {
  return {{"v", s.version}, {"n", s.size}, {"s", s.stripe_bytes}};
}
Segment SegmentFrom(const json& j) {
  Segment s{j.at("v").get<std::string>(), j.at("n").get<uint64_t>(), j.at("s").get<uint64_t>()};
  if (s.stripe_bytes == 0 || s.version.empty()) throw std::runtime_error("bad segment");
  return s;
}
std::optional<Digest> DigestFrom(const json& j, const char* name) {
  if (!j.contains(name)) return std::nullopt;
  auto d = FromHexFixed<kDigestSize>(j.at(name).get<std::string>());
  if (!d.ok()) throw std::runtime_error("bad digest");
  return *d;
}

}  // namespace

std::string IndexShardObject(std::string_view bucket_id, uint32_t shard) {
  return "b." + std::string(bucket_id) + ".idx." + std::to_string(shard);
}
std::string UploadsObject(std::string_view bucket_id) {
  return "b." + std::string(bucket_id) + ".mpu";
}
std::string StripeObject(std::string_view bucket_id, std::string_view version, uint64_t stripe) {
  return "b." + std::string(bucket_id) + ".d." + std::string(version) + "." +
         std::to_string(stripe);
}

uint32_t ShardOf(std::string_view key, uint32_t shards) {
  const Digest d = Sha256::Hash(key);
  const uint32_t h = (uint32_t{d[0]} << 24) | (uint32_t{d[1]} << 16) | (uint32_t{d[2]} << 8) | d[3];
  return shards == 0 ? 0 : h % shards;
}

std::string NewId(size_t bytes) {
  std::vector<uint8_t> raw(bytes);
  RandomBytes(raw.data(), raw.size());
  return ToHex(ByteSpan(raw.data(), raw.size()));
}

std::string EncodeBucket(const BucketRecord& b) {
  json j = {{"id", b.id}, {"created_ms", b.created_ms}, {"owner", b.owner}, {"shards", b.shards}};
  if (!b.acl.empty()) j["acl"] = b.acl;
  return Dump(j);
}
Result<BucketRecord> DecodeBucket(std::string_view text) {
  try {
    json j = json::parse(text);
    BucketRecord b;
    b.id = j.at("id").get<std::string>();
    b.created_ms = j.at("created_ms").get<int64_t>();
    b.owner = j.at("owner").get<std::string>();
    b.shards = j.at("shards").get<uint32_t>();
    b.acl = j.value("acl", "");
    if (b.id.empty() || b.shards == 0 || b.shards > kMaxIndexShards) return Bad("bucket", "fields");
    return b;
  } catch (const std::exception& e) {
    return Bad("bucket", e.what());
  }
}

std::optional<ObjectName> ParseObjectName(std::string_view oid) {
  if (oid.substr(0, 2) != "b.") return std::nullopt;
  oid.remove_prefix(2);
  const size_t dot = oid.find('.');
  if (dot == 0 || dot == std::string_view::npos || dot + 1 == oid.size()) return std::nullopt;
  ObjectName n;
  n.bucket_id = std::string(oid.substr(0, dot));
  std::string_view rest = oid.substr(dot + 1);
  if (rest.substr(0, 2) != "d.") return n;
  rest.remove_prefix(2);
  const size_t vdot = rest.find('.');
  if (vdot == 0 || vdot == std::string_view::npos) return std::nullopt;
  auto index = ParseDecimal<uint64_t>(rest.substr(vdot + 1));
  if (!index) return std::nullopt;
  n.stripe = true;
  n.version = std::string(rest.substr(0, vdot));
  n.stripe_index = *index;
  return n;
}

std::vector<std::string> StripeObjects(std::string_view bucket_id,
                                       const std::vector<Segment>& segments) {
  std::vector<std::string> out;
  for (const Segment& s : segments) {
    const uint64_t n = s.size == 0 ? 1 : (s.size + s.stripe_bytes - 1) / s.stripe_bytes;
    for (uint64_t i = 0; i < n; ++i) out.push_back(StripeObject(bucket_id, s.version, i));
  }
  return out;
}

std::string EncodeObject(const ObjectRecord& r) {
  const store::ObjectMeta& m = r.meta;
  json j;
  j["size"] = m.size;
  j["etag"] = m.etag;
  if (m.sha256) j["sha256"] = ToHex(*m.sha256);
  store::PutOptions o;
  o.content_type = m.content_type;
  o.content_encoding = m.content_encoding;
  o.content_disposition = m.content_disposition;
  o.cache_control = m.cache_control;
  o.user_meta = m.user_meta;
  o.expires = m.expires;
  o.acl = m.acl;
  j["opt"] = OptionsJson(o);
  j["mtime"] = m.last_modified_ms;
  j["parts"] = m.parts_count;
  json segs = json::array();
  for (const Segment& s : r.segments) segs.push_back(SegmentJson(s));
  j["seg"] = segs;
  return Dump(j);
}

Result<ObjectRecord> DecodeObject(std::string_view key, std::string_view text) {
  try {
    json j = json::parse(text);
    ObjectRecord r;
    store::ObjectMeta& m = r.meta;
    m.key = std::string(key);
    m.size = j.at("size").get<uint64_t>();
    m.etag = j.at("etag").get<std::string>();
    m.sha256 = DigestFrom(j, "sha256");
    store::PutOptions o = OptionsFrom(j.at("opt"));
    m.content_type = std::move(o.content_type);
    m.content_encoding = std::move(o.content_encoding);
    m.content_disposition = std::move(o.content_disposition);
    m.cache_control = std::move(o.cache_control);
    m.user_meta = std::move(o.user_meta);
    m.expires = std::move(o.expires);
    m.acl = std::move(o.acl);
    m.last_modified_ms = j.at("mtime").get<int64_t>();
    m.parts_count = j.at("parts").get<int>();
    uint64_t total = 0;
    for (const auto& s : j.at("seg")) {
      r.segments.push_back(SegmentFrom(s));
      total += r.segments.back().size;
    }
    if (r.segments.empty() || total != m.size) return Bad("object", "segments do not add up");
    return r;
  } catch (const std::exception& e) {
    return Bad("object", e.what());
  }
}

std::string EncodeUpload(const UploadRecord& u) {
  return Dump({{"key", Hex(u.key)},
               {"opt", OptionsJson(u.options)},
               {"initiated_ms", u.initiated_ms},
               {"done", u.done}});
}
Result<UploadRecord> DecodeUpload(std::string_view text) {
  try {
    json j = json::parse(text);
    UploadRecord u;
    u.key = Unhex(j.at("key").get<std::string>());
    u.options = OptionsFrom(j.at("opt"));
    u.initiated_ms = j.at("initiated_ms").get<int64_t>();
    u.done = j.at("done").get<bool>();
    return u;
  } catch (const std::exception& e) {
    return Bad("upload", e.what());
  }
}
std::string UploadKey(std::string_view upload_id) { return "u/" + std::string(upload_id); }
std::string PartPrefix(std::string_view upload_id) { return "p/" + std::string(upload_id) + "/"; }
std::string PartKey(std::string_view upload_id, int part_number) {
  char n[16];
  std::snprintf(n, sizeof n, "%05d", part_number);
  return PartPrefix(upload_id) + n;
}

std::string EncodePart(const PartRecord& p) {
  json j;
  j["n"] = p.info.part_number;
  j["size"] = p.info.size;
  j["etag"] = p.info.etag;
  j["mtime"] = p.info.last_modified_ms;
  j["md5"] = ToHex(p.md5);
  if (p.sha256) j["sha256"] = ToHex(*p.sha256);
  j["seg"] = SegmentJson(p.segment);
  return Dump(j);
}
Result<PartRecord> DecodePart(std::string_view text) {
  try {
    json j = json::parse(text);
    PartRecord p;
    p.info.part_number = j.at("n").get<int>();
    p.info.size = j.at("size").get<uint64_t>();
    p.info.etag = j.at("etag").get<std::string>();
    p.info.last_modified_ms = j.at("mtime").get<int64_t>();
    auto md5 = FromHexFixed<16>(j.at("md5").get<std::string>());
    if (!md5.ok()) return Bad("part", "md5");
    p.md5 = *md5;
    p.sha256 = DigestFrom(j, "sha256");
    p.segment = SegmentFrom(j.at("seg"));
    if (p.segment.size != p.info.size) return Bad("part", "segment size");
    return p;
  } catch (const std::exception& e) {
    return Bad("part", e.what());
  }
}

}  // namespace kvcs::rados_store
