#include "moqt/moqt_fields.h"

#include "moqt/moqt_limits.h"

namespace kvcs::moqt {

Status ReadNamespace(WireReader& r, TrackNamespace* ns, size_t* total_bytes) {
  *total_bytes = 0;
  uint64_t count;
  MOQT_READ(r.Varint(&count));
  if (count > kMaxNamespaceFields) {
    return MalformedError(WireError::kTooManyNamespaceFields, std::to_string(count) + " fields");
  }
  ns->clear();
  size_t total = 0;
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t len;
    MOQT_READ(r.Varint(&len));
    if (len == 0) return MalformedError(WireError::kEmptyNamespaceField, "");
    if (len > kMaxFullTrackNameBytes - total) {
      return MalformedError(WireError::kFullTrackNameTooLong, "namespace");
    }
    total += len;
    std::string field;
    MOQT_READ(r.String(len, &field));
    ns->push_back(std::move(field));
  }
  *total_bytes = total;
  return Status::Ok();
}

Status ValidateNamespace(const TrackNamespace& ns, size_t* total_bytes) {
  if (ns.size() > kMaxNamespaceFields) {
    return MalformedError(WireError::kTooManyNamespaceFields, "");
  }
  size_t total = 0;
  for (const auto& f : ns) {
    if (f.empty()) return MalformedError(WireError::kEmptyNamespaceField, "");
    total += f.size();
  }
  if (total > kMaxFullTrackNameBytes) {
    return MalformedError(WireError::kFullTrackNameTooLong, "namespace");
  }
  *total_bytes = total;
  return Status::Ok();
}

void WriteNamespace(WireWriter& w, const TrackNamespace& ns) {
  w.Varint(ns.size());
  for (const auto& f : ns) w.LengthPrefixed(f);
}

Status ReadFullTrackName(WireReader& r, FullTrackName* ftn) {
  size_t total = 0;
  KVCS_RETURN_IF_ERROR(ReadNamespace(r, &ftn->track_namespace, &total));
  uint64_t len;
  MOQT_READ(r.Varint(&len));
  if (len > kMaxFullTrackNameBytes - total) {
    return MalformedError(WireError::kFullTrackNameTooLong, "track name");
  }
  MOQT_READ(r.String(len, &ftn->name));
  return Status::Ok();
}

Status ValidateFullTrackName(const FullTrackName& ftn) {
  size_t total = 0;
  KVCS_RETURN_IF_ERROR(ValidateNamespace(ftn.track_namespace, &total));
  if (ftn.name.size() > kMaxFullTrackNameBytes - total) {
    return MalformedError(WireError::kFullTrackNameTooLong, "track name");
  }
  return Status::Ok();
}

void WriteFullTrackName(WireWriter& w, const FullTrackName& ftn) {
  WriteNamespace(w, ftn.track_namespace);
  w.LengthPrefixed(ftn.name);
}

Status ReadBoundedString(WireReader& r, size_t max, WireError too_long, std::string* out) {
  uint64_t len;
  MOQT_READ(r.Varint(&len));
  if (len > max) return MalformedError(too_long, std::to_string(len) + " bytes");
  MOQT_READ(r.String(len, out));
  return Status::Ok();
}

Status ReadLocation(WireReader& r, Location* loc) {
  MOQT_READ(r.Varint(&loc->group));
  MOQT_READ(r.Varint(&loc->object));
  return Status::Ok();
}

void WriteLocation(WireWriter& w, const Location& loc) {
  w.Varint(loc.group);
  w.Varint(loc.object);
}

Status ParseAuthToken(ByteSpan value, AuthToken* token) {
  WireReader r(value);
  auto bad = [](std::string_view what) {
    return MalformedError(WireError::kMalformedAuthToken, what);
  };
  uint64_t alias_type;
  if (!r.Varint(&alias_type)) return bad("alias type");
  if (alias_type > 3) return bad("unknown alias type");
  *token = AuthToken{};
  token->alias_type = static_cast<AuthTokenAliasType>(alias_type);
  bool has_alias = alias_type != 3;
  bool has_value = alias_type == 1 || alias_type == 3;
  if (has_alias && !r.Varint(&token->alias)) return bad("alias");
  if (has_value) {
    if (!r.Varint(&token->token_type)) return bad("token type");
    ByteSpan rest = r.rest();
    token->value.assign(reinterpret_cast<const char*>(rest.data()), rest.size());
  } else if (!r.empty()) {
    return bad("trailing bytes");
  }
  return Status::Ok();
}

void WriteAuthToken(WireWriter& w, const AuthToken& token) {
  uint64_t t = static_cast<uint64_t>(token.alias_type);
  w.Varint(t);
  if (t != 3) w.Varint(token.alias);
  if (t == 1 || t == 3) {
    w.Varint(token.token_type);
    w.Raw(token.value);
  }
}

}  // namespace kvcs::moqt
