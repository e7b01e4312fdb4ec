#include "store/object_file.h"

#include <cstring>
#include <nlohmann/json.hpp>

#include "common/crypto.h"
#include "common/hex.h"

namespace kvcs::store {
namespace {

Status Corrupt(std::string message) {
  return Status(Code::kCorruption, "object file: " + std::move(message),
                static_cast<int>(StoreError::kCorrupt));
}

std::string Str(ByteSpan b) { return std::string(AsStringView(b)); }

}  // namespace

Bytes EncodeObjectTrailer(const ObjectMeta& meta) {
  nlohmann::json j;
  j["v"] = 1;
  j["key_hex"] = ToHex(AsBytes(meta.key));
  j["size"] = meta.size;
  j["etag"] = meta.etag;
  if (meta.sha256) j["sha256"] = ToHex(*meta.sha256);
  j["content_type"] = meta.content_type;
  if (!meta.content_encoding.empty()) j["content_encoding"] = meta.content_encoding;
  if (!meta.content_disposition.empty()) j["content_disposition"] = meta.content_disposition;
  if (!meta.cache_control.empty()) j["cache_control"] = meta.cache_control;
  if (!meta.expires.empty()) j["expires"] = meta.expires;
  if (!meta.acl.empty()) j["acl"] = meta.acl;
  nlohmann::json um = nlohmann::json::array();
  for (const auto& [k, v] : meta.user_meta) um.push_back({ToHex(AsBytes(k)), ToHex(AsBytes(v))});
  j["user_meta_hex"] = um;
  j["last_modified_ms"] = meta.last_modified_ms;
  j["parts"] = meta.parts_count;
  std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  Bytes out(text.begin(), text.end());
  uint8_t len[4];
  StoreBe32(len, static_cast<uint32_t>(text.size()));
  out.insert(out.end(), len, len + 4);
  Digest d = Sha256::Hash(text);
  out.insert(out.end(), d.begin(), d.end());
  out.insert(out.end(), kObjectFileMagic, kObjectFileMagic + 8);
  return out;
}

Result<uint32_t> DecodeObjectFooter(ByteSpan footer, uint64_t file_size) {
  if (footer.size() != kObjectFooterBytes || file_size < kObjectFooterBytes) {
    return Corrupt("file shorter than its footer");
  }
  if (std::memcmp(footer.data() + 36, kObjectFileMagic, 8) != 0) return Corrupt("bad magic");
  uint32_t m = LoadBe32(footer.data());
  if (m == 0 || m > kMaxObjectMetaBytes || m > file_size - kObjectFooterBytes) {
    return Corrupt("bad metadata length");
  }
  return m;
}

Result<ObjectMeta> DecodeObjectMeta(ByteSpan meta_bytes, ByteSpan footer, uint64_t file_size) {
  KVCS_ASSIGN_OR_RETURN(uint32_t m, DecodeObjectFooter(footer, file_size));
  if (meta_bytes.size() != m) return Corrupt("metadata length mismatch");
  Digest d = Sha256::Hash(meta_bytes);
  if (!ConstantTimeEqual(AsBytes(d), footer.subspan(4, 32))) {
    return Corrupt("metadata digest mismatch");
  }
  auto j = nlohmann::json::parse(meta_bytes.begin(), meta_bytes.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Corrupt("metadata is not a JSON object");
  ObjectMeta meta;
  try {
    if (j.at("v").get<int>() != 1) return Corrupt("unknown metadata version");
    KVCS_ASSIGN_OR_RETURN(Bytes key, FromHex(j.at("key_hex").get<std::string>()));
    meta.key = Str(key);
    meta.size = j.at("size").get<uint64_t>();
    meta.etag = j.at("etag").get<std::string>();
    if (j.contains("sha256")) {
      KVCS_ASSIGN_OR_RETURN(Digest sd, FromHexFixed<32>(j["sha256"].get<std::string>()));
      meta.sha256 = sd;
    }
    meta.content_type = j.at("content_type").get<std::string>();
    meta.content_encoding = j.value("content_encoding", "");
    meta.content_disposition = j.value("content_disposition", "");
    meta.cache_control = j.value("cache_control", "");
    meta.expires = j.value("expires", "");
    meta.acl = j.value("acl", "");
    for (const auto& kv : j.at("user_meta_hex")) {
      KVCS_ASSIGN_OR_RETURN(Bytes k, FromHex(kv.at(0).get<std::string>()));
      KVCS_ASSIGN_OR_RETURN(Bytes v, FromHex(kv.at(1).get<std::string>()));
      meta.user_meta.emplace_back(Str(k), Str(v));
    }
    meta.last_modified_ms = j.at("last_modified_ms").get<int64_t>();
    meta.parts_count = j.at("parts").get<int>();
  } catch (const nlohmann::json::exception& e) {
    return Corrupt(std::string("bad metadata field: ") + e.what());
  }
  if (meta.size > file_size || meta.size + m + kObjectFooterBytes != file_size)
    return Corrupt("size mismatch");
  return meta;
}

}  // namespace kvcs::store
