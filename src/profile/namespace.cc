#include "profile/namespace.h"

#include <algorithm>

#include "common/hex.h"

namespace kvcs::profile {
namespace {

Bytes ToBytes(ByteSpan s) { return Bytes(s.begin(), s.end()); }

template <size_t N>
Status CopyFixed(ByteSpan field, std::array<uint8_t, N>* out, NamespaceError err,
                 std::string_view what) {
  if (field.size() != N) {
    return InvalidArgument("namespace: " + std::string(what) + " must be " + std::to_string(N) +
                               " bytes, got " + std::to_string(field.size()),
                           static_cast<int>(err));
  }
  std::copy(field.begin(), field.end(), out->begin());
  return Status::Ok();
}

}  // namespace

std::string_view NamespaceErrorName(NamespaceError e) {
  switch (e) {
    case NamespaceError::kNone:
      return "none";
    case NamespaceError::kWrongFieldCount:
      return "wrong_field_count";
    case NamespaceError::kBadTag:
      return "bad_tag";
    case NamespaceError::kBadScopeIdSize:
      return "bad_scope_id_size";
    case NamespaceError::kBadCompatIdSize:
      return "bad_compat_id_size";
    case NamespaceError::kBadAnchorKeySize:
      return "bad_anchor_key_size";
    case NamespaceError::kBadPubIdSize:
      return "bad_pub_id_size";
    case NamespaceError::kBadHex:
      return "bad_hex";
  }
  return "unknown";
}

TrackNamespace BuildNamespace(const Namespace& ns) {
  return {ToBytes(AsBytes(kNamespaceTag)), ToBytes(ns.scope_id), ToBytes(ns.compat_id),
          ToBytes(ns.anchor_key), ToBytes(ns.pub_id)};
}

Result<Namespace> ParseNamespace(std::span<const ByteSpan> fields) {
  if (fields.size() != kNamespaceFieldCount) {
    return InvalidArgument(
        "namespace: expected 5 fields (\"kvcs-1\", scope_id, compat_id, "
        "anchor_key, pub_id), got " +
            std::to_string(fields.size()),
        static_cast<int>(NamespaceError::kWrongFieldCount));
  }
  if (AsStringView(fields[0]) != kNamespaceTag) {
    return InvalidArgument("namespace: field 0 is not \"kvcs-1\"",
                           static_cast<int>(NamespaceError::kBadTag));
  }
  Namespace ns;
  KVCS_RETURN_IF_ERROR(
      CopyFixed(fields[1], &ns.scope_id, NamespaceError::kBadScopeIdSize, "scope_id"));
  KVCS_RETURN_IF_ERROR(
      CopyFixed(fields[2], &ns.compat_id, NamespaceError::kBadCompatIdSize, "compat_id"));
  KVCS_RETURN_IF_ERROR(
      CopyFixed(fields[3], &ns.anchor_key, NamespaceError::kBadAnchorKeySize, "anchor_key"));
  KVCS_RETURN_IF_ERROR(CopyFixed(fields[4], &ns.pub_id, NamespaceError::kBadPubIdSize, "pub_id"));
  return ns;
}

Result<Namespace> ParseNamespace(const TrackNamespace& fields) {
  std::vector<ByteSpan> spans(fields.begin(), fields.end());
  return ParseNamespace(std::span<const ByteSpan>(spans));
}

TrackNamespace ScopePrefix(const Digest& scope_id) {
  return {ToBytes(AsBytes(kNamespaceTag)), ToBytes(scope_id)};
}

TrackNamespace AnchorPrefix(const Digest& scope_id, const Digest& compat_id,
                            const Digest& anchor_key) {
  return {ToBytes(AsBytes(kNamespaceTag)), ToBytes(scope_id), ToBytes(compat_id),
          ToBytes(anchor_key)};
}

bool HasPrefix(const TrackNamespace& ns, const TrackNamespace& prefix) {
  return prefix.size() <= ns.size() && std::equal(prefix.begin(), prefix.end(), ns.begin());
}

PubId NewPubId() {
  PubId id;
  RandomBytes(id.data(), id.size());
  return id;
}

std::string ToString(const Namespace& ns) { return *NamespaceText(BuildNamespace(ns)); }

namespace {

// Fields 1..4: their name, their size, and the error for a wrong size.
struct FieldSpec {
  const char* name;
  size_t size;
  NamespaceError error;
};
constexpr FieldSpec kHexFields[kNamespaceFieldCount - 1] = {
    {"scope_id", 32, NamespaceError::kBadScopeIdSize},
    {"compat_id", 32, NamespaceError::kBadCompatIdSize},
    {"anchor_key", 32, NamespaceError::kBadAnchorKeySize},
    {"pub_id", kPubIdSize, NamespaceError::kBadPubIdSize},
};

}  // namespace

Result<TrackNamespace> ParseNamespaceText(std::string_view text) {
  TrackNamespace out;
  size_t start = 0;
  for (;;) {
    const size_t slash = text.find('/', start);
    std::string_view field = text.substr(
        start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    const size_t i = out.size();
    if (i == 0) {
      if (field != kNamespaceTag) {
        return InvalidArgument("namespace '" + std::string(text) + "': field 0 is not \"kvcs-1\"",
                               static_cast<int>(NamespaceError::kBadTag));
      }
      out.push_back(ToBytes(AsBytes(kNamespaceTag)));
    } else if (i >= kNamespaceFieldCount) {
      return InvalidArgument("namespace '" + std::string(text) + "': more than 5 fields",
                             static_cast<int>(NamespaceError::kWrongFieldCount));
    } else {
      const FieldSpec& f = kHexFields[i - 1];
      if (field.size() != 2 * f.size) {
        return InvalidArgument(std::string("namespace: ") + f.name + " must be " +
                                   std::to_string(2 * f.size) + " hex characters, got " +
                                   std::to_string(field.size()),
                               static_cast<int>(f.error));
      }
      auto bytes = FromHex(field);
      if (!bytes.ok()) {
        return InvalidArgument(std::string("namespace: ") + f.name + " is not hex",
                               static_cast<int>(NamespaceError::kBadHex));
      }
      out.push_back(std::move(*bytes));
    }
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return out;
}

std::optional<std::string> NamespaceText(const TrackNamespace& fields) {
  if (fields.empty() || fields.size() > kNamespaceFieldCount ||
      AsStringView(fields[0]) != kNamespaceTag) {
    return std::nullopt;
  }
  std::string s(kNamespaceTag);
  for (size_t i = 1; i < fields.size(); ++i) {
    if (fields[i].size() != kHexFields[i - 1].size) return std::nullopt;
    s += '/';
    s += ToHex(fields[i]);
  }
  return s;
}

}  // namespace kvcs::profile
