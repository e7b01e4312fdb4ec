#include "moqt/moqt_datagram.h"

#include <algorithm>

#include "moqt/moqt_error.h"
#include "moqt/moqt_key_value.h"
#include "moqt/moqt_wire_io.h"

namespace kvcs::moqt {
namespace {

Status ParseInto(WireReader& r, const WireOptions& options, ParsedDatagram* out) {
  uint64_t type;
  MOQT_READ(r.Varint(&type));
  if (type == kPaddingDatagramType) {
    ByteSpan rest = r.rest();
    if (options.strict_padding &&
        std::any_of(rest.begin(), rest.end(), [](uint8_t b) { return b != 0; })) {
      return MalformedError(WireError::kNonZeroPadding, "datagram");
    }
    r.Skip(r.remaining());
    out->padding = true;
    return Status::Ok();
  }
  if (!IsValidDatagramType(type)) {
    return MalformedError(WireError::kInvalidDatagramType, "type " + std::to_string(type));
  }
  ObjectDatagram& d = out->object;
  MOQT_READ(r.Varint(&d.track_alias));
  MOQT_READ(r.Varint(&d.location.group));
  if (!(type & kDatagramFlagZeroObjectId)) MOQT_READ(r.Varint(&d.location.object));
  if (!(type & kDatagramFlagDefaultPriority)) MOQT_READ(r.U8(&d.publisher_priority.emplace()));
  d.end_of_group = type & kDatagramFlagEndOfGroup;
  if (type & kDatagramFlagProperties) {
    KVCS_RETURN_IF_ERROR(ReadLengthPrefixedProperties(r, &d.properties));
    if (d.properties.empty()) {
      return MalformedError(WireError::kEmptyDatagramProperties, "");
    }
  }
  if (type & kDatagramFlagStatus) {
    uint64_t s;
    MOQT_READ(r.Varint(&s));
    if (!IsValidObjectStatus(s)) {
      return MalformedError(WireError::kInvalidObjectStatus, "status " + std::to_string(s));
    }
    d.status = static_cast<ObjectStatus>(s);
    if (*d.status != ObjectStatus::kNormal && !d.properties.empty()) {
      return MalformedError(WireError::kPropertiesOnNonNormal, "");
    }
    if (!r.empty()) return MalformedError(WireError::kPayloadWithStatus, "");
  }
  out->payload = r.rest();
  return Status::Ok();
}

}  // namespace

Result<ParsedDatagram> ParseDatagram(ByteSpan datagram, const WireOptions& options) {
  WireReader r(datagram);
  ParsedDatagram out;
  Status s = ParseInto(r, options, &out);
  if (s.code() == Code::kNeedMoreData) {
    return MalformedError(WireError::kBodyTooShort, "datagram");
  }
  KVCS_RETURN_IF_ERROR(s);
  return out;
}

std::vector<uint8_t> AllDatagramTypes() {
  std::vector<uint8_t> v;
  for (unsigned t = 0; t < 0x80; ++t) {
    if (IsValidDatagramType(t)) v.push_back(static_cast<uint8_t>(t));
  }
  return v;
}

std::vector<uint8_t> AllSubgroupTypes() {
  std::vector<uint8_t> v;
  for (unsigned t = 0; t < 0x80; ++t) {
    if (IsValidSubgroupType(t)) v.push_back(static_cast<uint8_t>(t));
  }
  return v;
}

}  // namespace kvcs::moqt
