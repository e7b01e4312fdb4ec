// Block layout in the store. See block_layout.h.
#include "objcache/block_layout.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "common/hex.h"

namespace kvcs::objcache {
namespace {

std::string Base(const Digest& scope_id, const Digest& compat_id) {
  return "kvsp/" + ToHex(scope_id) + "/" + ToHex(compat_id) + "/";
}

Result<Digest> HexKey(const nlohmann::json& v) {
  if (!v.is_string()) return Corruption("prefix record: key is not a string");
  const std::string& s = v.get_ref<const std::string&>();
  if (!IsLowerHex(s, 64))
    return Corruption("prefix record: key is not 64 lowercase hex characters");
  auto d = FromHexFixed<32>(s);
  if (!d.ok()) return Corruption("prefix record: bad hex");
  return *d;
}

}  // namespace

std::string BlockObjectKey(const Digest& scope_id, const Digest& compat_id, const Digest& block_key,
                           std::string_view codec_name) {
  return BlockObjectKeyPrefix(scope_id, compat_id, block_key) + std::string(codec_name);
}

std::string BlockObjectKeyPrefix(const Digest& scope_id, const Digest& compat_id,
                                 const Digest& block_key) {
  return Base(scope_id, compat_id) + ToHex(block_key) + ".";
}

std::optional<BlockObjectName> ParseBlockObjectKey(std::string_view key) {
  // "kvsp/" 64 "/" 64 "/" 64 "." codec
  constexpr size_t kFixed = 5 + 64 + 1 + 64 + 1 + 64 + 1;
  if (key.size() <= kFixed || key.substr(0, 5) != "kvsp/" || key[69] != '/' || key[134] != '/' ||
      key[199] != '.') {
    return std::nullopt;
  }
  BlockObjectName n;
  Digest* parts[3] = {&n.scope_id, &n.compat_id, &n.block_key};
  for (int i = 0; i < 3; ++i) {
    std::string_view hex = key.substr(5 + size_t(i) * 65, 64);
    if (!IsLowerHex(hex, 64)) return std::nullopt;
    auto d = FromHexFixed<32>(hex);
    if (!d.ok()) return std::nullopt;
    *parts[i] = *d;
  }
  auto codec = kvsp::CodecFromName(key.substr(kFixed));
  if (!codec.ok()) return std::nullopt;
  n.codec = *codec;
  return n;
}

std::string PrefixRecordKey(const Digest& scope_id, const Digest& compat_id,
                            const Digest& anchor_key) {
  return Base(scope_id, compat_id) + "prefix/" + ToHex(anchor_key);
}

std::string EncodePrefixRecord(const PrefixRecord& r) {
  nlohmann::json j;
  j["kvsp_prefix"] = 1;
  j["compat_id"] = ToHex(r.compat_id);
  j["anchor_key"] = ToHex(r.anchor_key);
  auto keys = nlohmann::json::array();
  for (const Digest& k : r.block_keys) keys.push_back(ToHex(k));
  j["block_keys"] = std::move(keys);
  return j.dump();
}

Result<PrefixRecord> ParsePrefixRecord(std::string_view json) {
  if (json.size() > kMaxPrefixRecordBytes) return Corruption("prefix record too large");
  auto j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.size() != 4 || !j.contains("kvsp_prefix") ||
      j["kvsp_prefix"] != 1 || !j.contains("block_keys") || !j["block_keys"].is_array() ||
      !j.contains("compat_id") || !j.contains("anchor_key"))
    return Corruption("prefix record: not a version-1 record");
  PrefixRecord r;
  KVCS_ASSIGN_OR_RETURN(r.compat_id, HexKey(j["compat_id"]));
  KVCS_ASSIGN_OR_RETURN(r.anchor_key, HexKey(j["anchor_key"]));
  const auto& keys = j["block_keys"];
  if (keys.empty() || keys.size() > kMaxPrefixRecordKeys)
    return Corruption("prefix record: key count out of range");
  for (const auto& k : keys) {
    KVCS_ASSIGN_OR_RETURN(Digest d, HexKey(k));
    r.block_keys.push_back(d);
  }
  if (r.block_keys.back() != r.anchor_key)
    return Corruption("prefix record: anchor is not the last key");
  return r;
}

Result<kvsp::ContainerView> ParseViewFromProbe(ByteSpan probe, uint64_t object_size,
                                               uint64_t* need) {
  // The probe holds min(object size, kContainerProbeBytes) >= 92 bytes of any real container,
  // so "need more" here means the object is shorter than a container header.
  auto size = kvsp::ContainerPrefixSize(probe);
  if (!size.ok()) return Corruption("not a container: " + size.status().message());
  if (*size > probe.size()) {
    *need = *size;
    if (*size > object_size) return Corruption("container table runs past the object");
    return Status(Code::kNeedMoreData, "container header+table larger than the probe");
  }
  auto view = kvsp::ParseContainerHeader(probe);
  if (!view.ok()) return Corruption("container header: " + view.status().message());
  if (view->total_size != object_size)
    return Corruption("container size " + std::to_string(view->total_size) +
                      " differs from the object size " + std::to_string(object_size));
  return view;
}

Result<kvsp::ContainerView> ReadContainerView(const store::ObjectReader& reader) {
  const uint64_t size = reader.meta().size;
  Bytes probe(std::min<uint64_t>(size, kContainerProbeBytes));
  KVCS_ASSIGN_OR_RETURN(size_t n, reader.ReadAt(0, probe));
  probe.resize(n);
  uint64_t need = 0;
  auto view = ParseViewFromProbe(probe, size, &need);
  if (view.ok() || view.status().code() != Code::kNeedMoreData) return view;
  // The header+table is bounded by the object size, itself checked against need.
  if (need > kvsp::kMaxContainerBytes) return Corruption("container header+table too large");
  probe.resize(need);
  KVCS_ASSIGN_OR_RETURN(n, reader.ReadAt(0, probe));
  probe.resize(n);
  return ParseViewFromProbe(probe, size, &need);
}

}  // namespace kvcs::objcache
