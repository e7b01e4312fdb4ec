#include "moqt/moqt_key_value.h"

#include <algorithm>

#include "moqt/moqt_error.h"
#include "moqt/moqt_fields.h"
#include "moqt/moqt_limits.h"

namespace kvcs::moqt {

Status ParseKvpList(ByteSpan list, std::vector<KeyValuePair>* out) {
  WireReader r(list);
  auto short_list = [] { return MalformedError(WireError::kLengthMismatch, "key-value list"); };
  out->clear();
  uint64_t type = 0;
  while (!r.empty()) {
    if (out->size() >= kMaxKvpPairs) return MalformedError(WireError::kTooManyPairs, "");
    uint64_t delta;
    if (!r.Varint(&delta)) return short_list();
    if (delta > UINT64_MAX - type) {
      return MalformedError(WireError::kIntegerOverflow, "key-value type delta");
    }
    type += delta;
    KeyValuePair kvp;
    kvp.type = type;
    if (type & 1) {
      uint64_t len;
      if (!r.Varint(&len)) return short_list();
      if (len > kMaxKvpValueBytes) return MalformedError(WireError::kValueTooLong, "key-value");
      if (!r.String(len, &kvp.bytes)) return short_list();
    } else {
      if (!r.Varint(&kvp.value)) return short_list();
    }
    out->push_back(std::move(kvp));
  }
  return Status::Ok();
}

Status ValidateKvpList(const std::vector<KeyValuePair>& list) {
  if (list.size() > kMaxKvpPairs) return MalformedError(WireError::kTooManyPairs, "");
  uint64_t prev = 0;
  for (const auto& kvp : list) {
    if (kvp.type < prev) return MalformedError(WireError::kBadEnumValue, "types not ascending");
    prev = kvp.type;
    if (kvp.type & 1) {
      if (kvp.value != 0) return MalformedError(WireError::kMalformedKeyValue, "odd type value");
      if (kvp.bytes.size() > kMaxKvpValueBytes) {
        return MalformedError(WireError::kValueTooLong, "key-value");
      }
    } else if (!kvp.bytes.empty()) {
      return MalformedError(WireError::kMalformedKeyValue, "even type bytes");
    }
  }
  return Status::Ok();
}

Status WriteKvpList(WireWriter& w, const std::vector<KeyValuePair>& list) {
  KVCS_RETURN_IF_ERROR(ValidateKvpList(list));
  uint64_t prev = 0;
  for (const auto& kvp : list) {
    w.Varint(kvp.type - prev);
    prev = kvp.type;
    if (kvp.type & 1) {
      w.LengthPrefixed(kvp.bytes);
    } else {
      w.Varint(kvp.value);
    }
  }
  return Status::Ok();
}

Status ReadLengthPrefixedProperties(WireReader& r, Properties* out) {
  uint64_t len;
  MOQT_READ(r.Varint(&len));
  if (len > kMaxObjectPropertiesBytes) {
    return MalformedError(WireError::kValueTooLong, "object properties");
  }
  ByteSpan list;
  MOQT_READ(r.Span(len, &list));
  return ParseKvpList(list, out);
}

Status WriteLengthPrefixedProperties(WireWriter& w, const Properties& props) {
  Bytes tmp;
  WireWriter inner(&tmp, w.varint_extra_bytes());
  KVCS_RETURN_IF_ERROR(WriteKvpList(inner, props));
  if (tmp.size() > kMaxObjectPropertiesBytes) {
    return MalformedError(WireError::kValueTooLong, "object properties");
  }
  w.LengthPrefixed(ByteSpan(tmp));
  return Status::Ok();
}

namespace {

Status SetOnce(std::optional<std::string>* slot, const KeyValuePair& kvp) {
  if (slot->has_value()) {
    return MalformedError(WireError::kDuplicateSetupOption, std::to_string(kvp.type));
  }
  *slot = kvp.bytes;
  return Status::Ok();
}

Status SetOnce(std::optional<uint64_t>* slot, const KeyValuePair& kvp) {
  if (slot->has_value()) {
    return MalformedError(WireError::kDuplicateSetupOption, std::to_string(kvp.type));
  }
  *slot = kvp.value;
  return Status::Ok();
}

}  // namespace

Status SetupOptionsFromKvps(const std::vector<KeyValuePair>& kvps, SetupOptions* out) {
  *out = SetupOptions{};
  for (const auto& kvp : kvps) {
    switch (kvp.type) {
      case 0x01:
        KVCS_RETURN_IF_ERROR(SetOnce(&out->path, kvp));
        break;
      case 0x03: {
        AuthToken token;
        KVCS_RETURN_IF_ERROR(ParseAuthToken(AsBytes(kvp.bytes), &token));
        out->authorization_tokens.push_back(std::move(token));
        break;
      }
      case 0x04:
        KVCS_RETURN_IF_ERROR(SetOnce(&out->max_auth_token_cache_size, kvp));
        break;
      case 0x05:
        KVCS_RETURN_IF_ERROR(SetOnce(&out->authority, kvp));
        break;
      case 0x06:
        KVCS_RETURN_IF_ERROR(SetOnce(&out->max_filter_ranges, kvp));
        break;
      case 0x07:
        KVCS_RETURN_IF_ERROR(SetOnce(&out->implementation, kvp));
        break;
      case 0x08:
        KVCS_RETURN_IF_ERROR(SetOnce(&out->max_request_updates, kvp));
        break;
      default:
        out->unknown.push_back(kvp);
    }
  }
  return Status::Ok();
}

Status SetupOptionsToKvps(const SetupOptions& o, size_t varint_extra_bytes,
                          std::vector<KeyValuePair>* out) {
  out->clear();
  if (o.path) out->push_back(KeyValuePair::Blob(0x01, *o.path));
  for (const auto& t : o.authorization_tokens) {
    Bytes tmp;
    WireWriter w(&tmp, varint_extra_bytes);
    WriteAuthToken(w, t);
    out->push_back(KeyValuePair::Blob(0x03, std::string(AsStringView(tmp))));
  }
  if (o.max_auth_token_cache_size) {
    out->push_back(KeyValuePair::Int(0x04, *o.max_auth_token_cache_size));
  }
  if (o.authority) out->push_back(KeyValuePair::Blob(0x05, *o.authority));
  if (o.max_filter_ranges) out->push_back(KeyValuePair::Int(0x06, *o.max_filter_ranges));
  if (o.implementation) out->push_back(KeyValuePair::Blob(0x07, *o.implementation));
  if (o.max_request_updates) out->push_back(KeyValuePair::Int(0x08, *o.max_request_updates));
  for (const auto& u : o.unknown) {
    if (u.type <= 0x08 && u.type != 0x00 && u.type != 0x02) {
      return MalformedError(WireError::kDuplicateSetupOption, "known type in unknown list");
    }
    out->push_back(u);
  }
  std::stable_sort(out->begin(), out->end(),
                   [](const KeyValuePair& a, const KeyValuePair& b) { return a.type < b.type; });
  return Status::Ok();
}

}  // namespace kvcs::moqt
