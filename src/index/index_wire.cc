// KVSP v1 as defined by the project: the Index Service's JSON messages (§7).
#include "index/index_wire.h"

#include <algorithm>
#include <array>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "common/hex.h"
#include "common/strict_json.h"
#include "index/wire_json.h"
#include "kvsp/descriptor.h"

namespace kvcs::index {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;
using Kind = WireJson::Kind;
using NodeId = WireJson::NodeId;

Status Err(IndexError e, std::string msg) { return IndexStatus(e, "index: " + std::move(msg)); }

// One JSON document of at most `max_bytes` (requests: kMaxRequestBytes; responses:
// kMaxResponseBytes), no duplicate members, at most kMaxJsonDepth deep.
Result<WireJson> ParseStrict(std::string_view text, size_t max_bytes = kMaxRequestBytes) {
  auto j = WireJson::Parse(text, max_bytes, kMaxJsonDepth);
  if (j.ok()) return j;
  IndexError e = IndexError::kSyntax;
  if (j.status().Is(JsonError::kTooLarge)) e = IndexError::kTooLarge;
  if (j.status().Is(JsonError::kDuplicateKey)) e = IndexError::kDuplicateKey;
  return Err(e, j.status().message());
}

// A value of the tree: the checks below read members and elements through it.
struct Val {
  const WireJson& j;
  NodeId n;
  Kind kind() const { return j.kind(n); }
  bool is_string() const { return kind() == Kind::kString; }
  std::string_view str() const { return j.string(n); }
  uint32_t size() const { return j.size(n); }
  const Val* get() const { return this; }
  // Elements or members, in document order.
  template <typename F>
  Status Each(F f) const {
    NodeId c = j.first_child(n);
    for (uint32_t i = 0; i < size(); ++i, c = j.next(c)) KVCS_RETURN_IF_ERROR(f(Val{j, c}));
    return Status::Ok();
  }
};
using OptVal = std::optional<Val>;

Status CheckObject(const Val& v, std::string_view what,
                   std::initializer_list<std::string_view> allowed) {
  if (v.kind() != Kind::kObject) {
    return Err(IndexError::kNotObject, std::string(what) + " is not an object");
  }
  return v.Each([&](const Val& m) {
    std::string_view k = v.j.key(m.n);
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
      return Err(IndexError::kUnknownField,
                 std::string(what) + " has unknown member \"" + std::string(k) + "\"");
    }
    return Status::Ok();
  });
}

OptVal Member(const Val& v, std::string_view name) {
  NodeId m = v.j.member(v.n, name);
  if (m == WireJson::npos) return std::nullopt;
  return Val{v.j, m};
}

Result<Val> Required(const Val& v, std::string_view name) {
  OptVal m = Member(v, name);
  if (!m) return Err(IndexError::kMissingField, "missing member \"" + std::string(name) + "\"");
  return *m;
}

// 0..15 for a lowercase hex digit, 16 for any other byte.
constexpr std::array<uint8_t, 256> kLowerHexValue = [] {
  std::array<uint8_t, 256> t{};
  t.fill(16);
  for (int c = 0; c < 10; ++c) t['0' + c] = uint8_t(c);
  for (int c = 0; c < 6; ++c) t['a' + c] = uint8_t(10 + c);
  return t;
}();

// Exactly 64 lowercase hex characters, decoded in one pass.
Result<Digest> Hex32(std::string_view s, std::string_view name) {
  Digest d{};
  bool ok = s.size() == 2 * kDigestSize;
  for (size_t i = 0; ok && i < kDigestSize; ++i) {
    uint8_t hi = kLowerHexValue[uint8_t(s[2 * i])], lo = kLowerHexValue[uint8_t(s[2 * i + 1])];
    ok = hi < 16 && lo < 16;
    d[i] = uint8_t(hi << 4 | lo);
  }
  if (!ok) {
    return Err(IndexError::kBadHex,
               std::string(name) + " is not 64 lowercase hex characters (32 bytes)");
  }
  return d;
}

Result<Digest> Hex32(const Val& v, std::string_view name) {
  if (!v.is_string()) return Err(IndexError::kWrongType, std::string(name) + " is not a string");
  return Hex32(v.str(), name);
}

Result<Digest> GetHex32(const Val& j, std::string_view name) {
  KVCS_ASSIGN_OR_RETURN(Val v, Required(j, name));
  return Hex32(v, name);
}

Result<uint64_t> GetUint(const Val& j, std::string_view name, uint64_t min, uint64_t max) {
  KVCS_ASSIGN_OR_RETURN(Val v, Required(j, name));
  if (v.kind() == Kind::kUnsigned) {
    uint64_t x = v.j.unsigned_value(v.n);
    if (x >= min && x <= max) return x;
  } else if (v.kind() != Kind::kNegative) {
    return Err(IndexError::kWrongType, std::string(name) + " is not an integer");
  }
  return Err(IndexError::kOutOfRange,
             std::string(name) + " is outside " + std::to_string(min) + ".." + std::to_string(max));
}

Result<std::string_view> GetString(const Val& j, std::string_view name) {
  KVCS_ASSIGN_OR_RETURN(Val v, Required(j, name));
  if (!v.is_string()) return Err(IndexError::kWrongType, std::string(name) + " is not a string");
  return v.str();
}

Result<Val> GetArray(const Val& j, std::string_view name, size_t min, size_t max) {
  KVCS_ASSIGN_OR_RETURN(Val v, Required(j, name));
  if (v.kind() != Kind::kArray) {
    return Err(IndexError::kWrongType, std::string(name) + " is not an array");
  }
  if (v.size() > max) {
    return Err(IndexError::kTooMany, std::string(name) + " has " + std::to_string(v.size()) +
                                         " elements, above the limit of " + std::to_string(max));
  }
  if (v.size() < min) return Err(IndexError::kEmpty, std::string(name) + " is empty");
  return v;
}

Result<std::vector<Digest>> GetKeys(const Val& j, std::string_view name) {
  KVCS_ASSIGN_OR_RETURN(Val a, GetArray(j, name, 1, kMaxKeysPerRequest));
  std::vector<Digest> keys;
  keys.reserve(a.size());
  KVCS_RETURN_IF_ERROR(a.Each([&](const Val& v) {
    KVCS_ASSIGN_OR_RETURN(Digest d, Hex32(v, name));
    keys.push_back(d);
    return Status::Ok();
  }));
  return keys;
}

Result<std::vector<kvsp::Codec>> GetCodecs(const Val& j) {
  KVCS_ASSIGN_OR_RETURN(Val a, GetArray(j, "codecs", 1, kMaxCodecs));
  std::vector<kvsp::Codec> out;
  KVCS_RETURN_IF_ERROR(a.Each([&](const Val& v) {
    if (!v.is_string()) return Err(IndexError::kWrongType, "codecs element is not a string");
    auto c = kvsp::CodecFromName(v.str());
    if (!c.ok()) return Err(IndexError::kBadCodec, "codec is not in the KVSP registry");
    if (std::find(out.begin(), out.end(), *c) != out.end()) {
      return Err(IndexError::kBadCodec, "codec \"" + std::string(v.str()) + "\" listed twice");
    }
    out.push_back(*c);
    return Status::Ok();
  }));
  return out;
}

Status CheckLayers(uint64_t first, uint64_t count) {
  if (count == 0 || first + count > kMaxLayerEnd) {
    return Err(IndexError::kOutOfRange, "layer range is empty or ends past layer 65535");
  }
  return Status::Ok();
}

// holder, tier, codecs, layer_first, layer_count of a register request or a replica.
Result<ReplicaInfo> GetReplicaInfo(const Val& j) {
  ReplicaInfo r;
  KVCS_ASSIGN_OR_RETURN(std::string_view holder, GetString(j, "holder"));
  KVCS_RETURN_IF_ERROR(CheckHolder(holder));
  r.holder = std::string(holder);
  KVCS_ASSIGN_OR_RETURN(std::string_view tier, GetString(j, "tier"));
  auto t = TierFromName(tier);
  if (!t.ok()) return Err(IndexError::kBadTier, t.status().message());
  r.tier = *t;
  KVCS_ASSIGN_OR_RETURN(r.codecs, GetCodecs(j));
  KVCS_ASSIGN_OR_RETURN(uint64_t first, GetUint(j, "layer_first", 0, kMaxLayerEnd - 1));
  KVCS_ASSIGN_OR_RETURN(uint64_t count, GetUint(j, "layer_count", 1, kMaxLayerEnd));
  KVCS_RETURN_IF_ERROR(CheckLayers(first, count));
  r.layer_first = uint32_t(first);
  r.layer_count = uint32_t(count);
  return r;
}

Result<Replica> GetReplica(const Val& j) {
  KVCS_RETURN_IF_ERROR(CheckObject(
      j, "replica", {"holder", "tier", "codecs", "layer_first", "layer_count", "expires_ms"}));
  Replica r;
  KVCS_ASSIGN_OR_RETURN(r.info, GetReplicaInfo(j));
  KVCS_ASSIGN_OR_RETURN(r.expires_ms, GetUint(j, "expires_ms", 0, kvsp::kMaxJsonInteger));
  return r;
}

Result<std::vector<Replica>> GetReplicas(const Val& j, size_t max) {
  KVCS_ASSIGN_OR_RETURN(Val a, GetArray(j, "replicas", 0, max));
  std::vector<Replica> out;
  out.reserve(a.size());
  KVCS_RETURN_IF_ERROR(a.Each([&](const Val& v) {
    KVCS_ASSIGN_OR_RETURN(Replica r, GetReplica(v));
    out.push_back(std::move(r));
    return Status::Ok();
  }));
  return out;
}

std::string Dump(const ojson& o) {
  return o.dump(-1, ' ', /*ensure_ascii=*/true, json::error_handler_t::replace);
}

// Messages are written directly (a 4,096-key lookup answer is ~1 MB; building it as a DOM first
// cost more than the lookup itself), byte for byte as Dump would write them.
void AppendString(std::string* out, std::string_view v) {
  bool plain = std::all_of(v.begin(), v.end(),
                           [](char c) { return c >= 0x20 && c <= 0x7e && c != '"' && c != '\\'; });
  if (!plain) {
    *out += Dump(ojson(std::string(v)));  // escapes as Dump does (ensure_ascii, replace)
    return;
  }
  *out += '"';
  *out += v;
  *out += '"';
}

// 64 lowercase hex characters, written in place.
void AppendHex(std::string* out, const Digest& d) {
  static constexpr char kDigits[] = "0123456789abcdef";
  size_t at = out->size();
  out->resize(at + 2 * d.size());
  char* p = out->data() + at;
  for (uint8_t b : d) {
    *p++ = kDigits[b >> 4];
    *p++ = kDigits[b & 15];
  }
}

void AppendCodecs(std::string* out, const std::vector<kvsp::Codec>& codecs) {
  *out += '[';
  for (size_t i = 0; i < codecs.size(); ++i) {
    if (i) *out += ',';
    *out += '"';
    *out += kvsp::CodecName(codecs[i]);
    *out += '"';
  }
  *out += ']';
}

void AppendKeys(std::string* out, const std::vector<Digest>& keys) {
  *out += '[';
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i) *out += ',';
    *out += '"';
    AppendHex(out, keys[i]);
    *out += '"';
  }
  *out += ']';
}

// `{"compat_id":"…","scope_id":"…"` (the object left open).
void AppendIds(std::string* out, const Digest& compat_id, const Digest& scope_id) {
  *out += "{\"compat_id\":\"";
  AppendHex(out, compat_id);
  *out += "\",\"scope_id\":\"";
  AppendHex(out, scope_id);
  *out += '"';
}

void AppendReplica(std::string* out, const Replica& r) {
  *out += "{\"holder\":";
  AppendString(out, r.info.holder);
  *out += ",\"tier\":\"";
  *out += TierName(r.info.tier);
  *out += "\",\"codecs\":";
  AppendCodecs(out, r.info.codecs);
  *out += ",\"layer_first\":" + std::to_string(r.info.layer_first) +
          ",\"layer_count\":" + std::to_string(r.info.layer_count) +
          ",\"expires_ms\":" + std::to_string(r.expires_ms) + "}";
}

void AppendReplicas(std::string* out, const std::vector<Replica>& rs) {
  *out += '[';
  for (size_t i = 0; i < rs.size(); ++i) {
    if (i) *out += ',';
    AppendReplica(out, rs[i]);
  }
  *out += ']';
}

}  // namespace

std::string_view IndexErrorName(IndexError e) {
  switch (e) {
    case IndexError::kNone:
      return "none";
    case IndexError::kTooLarge:
      return "too_large";
    case IndexError::kSyntax:
      return "syntax";
    case IndexError::kNotObject:
      return "not_object";
    case IndexError::kDuplicateKey:
      return "duplicate_key";
    case IndexError::kUnknownField:
      return "unknown_field";
    case IndexError::kMissingField:
      return "missing_field";
    case IndexError::kWrongType:
      return "wrong_type";
    case IndexError::kBadHex:
      return "bad_hex";
    case IndexError::kTooMany:
      return "too_many";
    case IndexError::kEmpty:
      return "empty";
    case IndexError::kOutOfRange:
      return "out_of_range";
    case IndexError::kBadHolder:
      return "bad_holder";
    case IndexError::kBadTier:
      return "bad_tier";
    case IndexError::kBadCodec:
      return "bad_codec";
    case IndexError::kForbidden:
      return "forbidden";
    case IndexError::kUnknownCompat:
      return "unknown_compat";
    case IndexError::kHolderFull:
      return "holder_full";
    case IndexError::kKeyFull:
      return "key_full";
    case IndexError::kStoreFailed:
      return "store_failed";
  }
  return "unknown";
}

Status IndexStatus(IndexError e, std::string message) {
  Code code = Code::kInvalidArgument;
  switch (e) {
    case IndexError::kTooLarge:
    case IndexError::kTooMany:
    case IndexError::kHolderFull:
    case IndexError::kKeyFull:
      code = Code::kResourceExhausted;
      break;
    case IndexError::kForbidden:
      code = Code::kPermissionDenied;
      break;
    case IndexError::kUnknownCompat:
      code = Code::kNotFound;
      break;
    case IndexError::kStoreFailed:
      code = Code::kUnavailable;
      break;
    default:
      break;
  }
  return Status(code, std::move(message), static_cast<int>(e));
}

int HttpStatusFor(const Status& s) {
  switch (s.code()) {
    case Code::kOk:
      return 200;
    case Code::kInvalidArgument:
    case Code::kResourceExhausted:
    case Code::kOutOfRange:
      return 400;
    case Code::kPermissionDenied:
      return 403;
    case Code::kNotFound:
      return 404;
    case Code::kUnavailable:
    case Code::kIoError:
      return 503;
    default:
      return 500;
  }
}

Status CheckHolder(std::string_view holder) {
  if (holder.size() > kMaxHolderBytes) {
    return Err(IndexError::kTooLarge,
               "holder is longer than " + std::to_string(kMaxHolderBytes) + " bytes");
  }
  size_t rest = 0;
  for (std::string_view scheme : {"https://", "http://", "moqt://"}) {
    if (holder.substr(0, scheme.size()) == scheme) rest = scheme.size();
  }
  if (rest == 0 || rest == holder.size()) {
    return Err(IndexError::kBadHolder, "holder is not an https://, http:// or moqt:// URI");
  }
  for (char c : holder) {
    if (c <= ' ' || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>') {
      return Err(IndexError::kBadHolder, "holder has a byte that is not allowed in a URI");
    }
  }
  return Status::Ok();
}

Status ValidateReplicaInfo(const ReplicaInfo& r) {
  KVCS_RETURN_IF_ERROR(CheckHolder(r.holder));
  if (static_cast<int>(r.tier) >= kTierCount) return Err(IndexError::kBadTier, "unknown tier");
  if (r.codecs.empty()) return Err(IndexError::kEmpty, "codecs is empty");
  if (r.codecs.size() > kMaxCodecs) return Err(IndexError::kTooMany, "too many codecs");
  for (size_t i = 0; i < r.codecs.size(); ++i) {
    if (!kvsp::CodecFromValue(kvsp::CodecValue(r.codecs[i])).ok() ||
        std::find(r.codecs.begin(), r.codecs.begin() + std::ptrdiff_t(i), r.codecs[i]) !=
            r.codecs.begin() + std::ptrdiff_t(i)) {
      return Err(IndexError::kBadCodec, "unknown or repeated codec");
    }
  }
  return CheckLayers(r.layer_first, r.layer_count);
}

Result<LookupRequest> ParseLookupRequest(std::string_view text) {
  KVCS_ASSIGN_OR_RETURN(WireJson doc, ParseStrict(text));
  const Val j{doc, doc.root()};
  KVCS_RETURN_IF_ERROR(
      CheckObject(j, "lookup", {"compat_id", "scope_id", "block_keys", "max_replicas"}));
  LookupRequest r;
  KVCS_ASSIGN_OR_RETURN(r.compat_id, GetHex32(j, "compat_id"));
  KVCS_ASSIGN_OR_RETURN(r.scope_id, GetHex32(j, "scope_id"));
  KVCS_ASSIGN_OR_RETURN(r.block_keys, GetKeys(j, "block_keys"));
  if (Member(j, "max_replicas")) {
    KVCS_ASSIGN_OR_RETURN(uint64_t m, GetUint(j, "max_replicas", 1, kMaxReplicasPerKey));
    r.max_replicas = uint32_t(m);
  }
  return r;
}

Result<RegisterRequest> ParseRegisterRequest(std::string_view text) {
  KVCS_ASSIGN_OR_RETURN(WireJson doc, ParseStrict(text));
  const Val j{doc, doc.root()};
  KVCS_RETURN_IF_ERROR(
      CheckObject(j, "register",
                  {"compat_id", "scope_id", "holder", "tier", "codecs", "layer_first",
                   "layer_count", "block_keys", "anchor_key", "ttl_ms"}));
  RegisterRequest r;
  KVCS_ASSIGN_OR_RETURN(r.compat_id, GetHex32(j, "compat_id"));
  KVCS_ASSIGN_OR_RETURN(r.scope_id, GetHex32(j, "scope_id"));
  KVCS_ASSIGN_OR_RETURN(r.replica, GetReplicaInfo(j));
  KVCS_ASSIGN_OR_RETURN(r.block_keys, GetKeys(j, "block_keys"));
  if (Member(j, "anchor_key")) {
    KVCS_ASSIGN_OR_RETURN(Digest a, GetHex32(j, "anchor_key"));
    r.anchor_key = a;
  }
  KVCS_ASSIGN_OR_RETURN(r.ttl_ms, GetUint(j, "ttl_ms", 1, kMaxTtlMs));
  return r;
}

Result<WithdrawRequest> ParseWithdrawRequest(std::string_view text) {
  KVCS_ASSIGN_OR_RETURN(WireJson doc, ParseStrict(text));
  const Val j{doc, doc.root()};
  KVCS_RETURN_IF_ERROR(
      CheckObject(j, "withdraw", {"compat_id", "scope_id", "holder", "block_keys"}));
  WithdrawRequest r;
  KVCS_ASSIGN_OR_RETURN(r.compat_id, GetHex32(j, "compat_id"));
  KVCS_ASSIGN_OR_RETURN(r.scope_id, GetHex32(j, "scope_id"));
  KVCS_ASSIGN_OR_RETURN(std::string_view holder, GetString(j, "holder"));
  KVCS_RETURN_IF_ERROR(CheckHolder(holder));
  r.holder = std::string(holder);
  KVCS_ASSIGN_OR_RETURN(r.block_keys, GetKeys(j, "block_keys"));
  return r;
}

Result<AnchorsRequest> ParseAnchorsRequest(std::string_view compat_hex, std::string_view anchor_hex,
                                           std::string_view scope_hex) {
  AnchorsRequest r;
  KVCS_ASSIGN_OR_RETURN(r.compat_id, Hex32(compat_hex, "compat_id"));
  KVCS_ASSIGN_OR_RETURN(r.anchor_key, Hex32(anchor_hex, "anchor_key"));
  KVCS_ASSIGN_OR_RETURN(r.scope_id, Hex32(scope_hex, "scope_id"));
  return r;
}

Result<LookupResponse> ParseLookupResponse(std::string_view text) {
  KVCS_ASSIGN_OR_RETURN(WireJson doc, ParseStrict(text, kMaxResponseBytes));
  const Val j{doc, doc.root()};
  KVCS_RETURN_IF_ERROR(CheckObject(j, "lookup response", {"matched", "entries"}));
  LookupResponse r;
  KVCS_ASSIGN_OR_RETURN(uint64_t matched, GetUint(j, "matched", 0, kMaxKeysPerRequest));
  r.matched = uint32_t(matched);
  KVCS_ASSIGN_OR_RETURN(Val entries, GetArray(j, "entries", 0, kMaxKeysPerRequest));
  if (entries.size() != matched) {
    return Err(IndexError::kOutOfRange, "entries does not have one element per matched key");
  }
  r.entries.reserve(entries.size());
  KVCS_RETURN_IF_ERROR(entries.Each([&](const Val& e) {
    KVCS_RETURN_IF_ERROR(CheckObject(e, "entry", {"block_key", "replicas"}));
    LookupEntry entry;
    KVCS_ASSIGN_OR_RETURN(entry.block_key, GetHex32(e, "block_key"));
    KVCS_ASSIGN_OR_RETURN(entry.replicas, GetReplicas(e, kMaxReplicasPerKey));
    if (entry.replicas.empty()) return Err(IndexError::kEmpty, "a matched key has no replica");
    r.entries.push_back(std::move(entry));
    return Status::Ok();
  }));
  return r;
}

Result<AnchorsResponse> ParseAnchorsResponse(std::string_view text) {
  KVCS_ASSIGN_OR_RETURN(WireJson doc, ParseStrict(text, kMaxResponseBytes));
  const Val j{doc, doc.root()};
  KVCS_RETURN_IF_ERROR(CheckObject(j, "anchors response", {"replicas"}));
  AnchorsResponse r;
  KVCS_ASSIGN_OR_RETURN(r.replicas, GetReplicas(j, kMaxReplicasPerKey));
  return r;
}

Result<ErrorBody> ParseErrorBody(std::string_view text) {
  KVCS_ASSIGN_OR_RETURN(WireJson doc, ParseStrict(text, kMaxResponseBytes));
  const Val j{doc, doc.root()};
  KVCS_RETURN_IF_ERROR(CheckObject(j, "error body", {"error", "message"}));
  ErrorBody e;
  KVCS_ASSIGN_OR_RETURN(std::string_view error, GetString(j, "error"));
  KVCS_ASSIGN_OR_RETURN(std::string_view message, GetString(j, "message"));
  e.error = std::string(error);
  e.message = std::string(message);
  return e;
}

std::string ToJson(const LookupRequest& r) {
  std::string out;
  out.reserve(160 + r.block_keys.size() * 67);
  AppendIds(&out, r.compat_id, r.scope_id);
  out += ",\"block_keys\":";
  AppendKeys(&out, r.block_keys);
  if (r.max_replicas != kDefaultMaxReplicas) {
    out += ",\"max_replicas\":" + std::to_string(r.max_replicas);
  }
  out += '}';
  return out;
}

std::string ToJson(const LookupResponse& r) {
  std::string out = "{\"matched\":" + std::to_string(r.matched) + ",\"entries\":[";
  out.reserve(out.size() + r.entries.size() * 200);
  for (size_t i = 0; i < r.entries.size(); ++i) {
    if (i) out += ',';
    out += "{\"block_key\":\"";
    AppendHex(&out, r.entries[i].block_key);
    out += "\",\"replicas\":";
    AppendReplicas(&out, r.entries[i].replicas);
    out += '}';
  }
  out += "]}";
  return out;
}

std::string ToJson(const AnchorsResponse& r) {
  std::string out = "{\"replicas\":";
  AppendReplicas(&out, r.replicas);
  out += '}';
  return out;
}

std::string ToJson(const RegisterRequest& r) {
  std::string out;
  out.reserve(400 + r.replica.holder.size() + r.block_keys.size() * 67);
  AppendIds(&out, r.compat_id, r.scope_id);
  out += ",\"holder\":";
  AppendString(&out, r.replica.holder);
  out += ",\"tier\":\"";
  out += TierName(r.replica.tier);
  out += "\",\"codecs\":";
  AppendCodecs(&out, r.replica.codecs);
  out += ",\"layer_first\":" + std::to_string(r.replica.layer_first) +
         ",\"layer_count\":" + std::to_string(r.replica.layer_count) + ",\"block_keys\":";
  AppendKeys(&out, r.block_keys);
  if (r.anchor_key) {
    out += ",\"anchor_key\":\"";
    AppendHex(&out, *r.anchor_key);
    out += '"';
  }
  out += ",\"ttl_ms\":" + std::to_string(r.ttl_ms) + "}";
  return out;
}

std::string ToJson(const WithdrawRequest& r) {
  std::string out;
  out.reserve(200 + r.holder.size() + r.block_keys.size() * 67);
  AppendIds(&out, r.compat_id, r.scope_id);
  out += ",\"holder\":";
  AppendString(&out, r.holder);
  out += ",\"block_keys\":";
  AppendKeys(&out, r.block_keys);
  out += '}';
  return out;
}

std::string ToJson(const ErrorBody& e) {
  ojson o;
  o["error"] = e.error;
  o["message"] = e.message;
  return Dump(o);
}

std::string ErrorJson(const Status& s) {
  ErrorBody e;
  e.error = s.detail() != 0 ? std::string(IndexErrorName(static_cast<IndexError>(s.detail())))
                            : std::string(CodeName(s.code()));
  e.message = s.message();
  return ToJson(e);
}

std::string AnchorsPath(const AnchorsRequest& r) {
  return "/kvsp/v1/anchors/" + ToHex(r.compat_id) + "/" + ToHex(r.anchor_key) +
         "?scope_id=" + ToHex(r.scope_id);
}

}  // namespace kvcs::index
