#include "moqt/moqt_parameters.h"

#include <algorithm>
#include <initializer_list>

#include "moqt/moqt_error.h"
#include "moqt/moqt_fields.h"
#include "moqt/moqt_limits.h"

namespace kvcs::moqt {
namespace {

constexpr uint64_t Bits(std::initializer_list<int> types) {
  uint64_t m = 0;
  for (int t : types) m |= uint64_t{1} << t;
  return m;
}

constexpr uint64_t kKnownParameters =
    Bits({0x02, 0x03, 0x04, 0x06, 0x08, 0x09, 0x0A, 0x10, 0x20, 0x21,
          0x22, 0x23, 0x25, 0x26, 0x27, 0x28, 0x29, 0x32, 0x34, 0x35});
constexpr uint64_t kRepeatable = Bits({0x03, 0x25, 0x26, 0x27, 0x28, 0x29});

bool IsBitSet(uint64_t mask, uint64_t type) { return type < 64 && ((mask >> type) & 1); }

Status LengthMismatch(std::string_view what) {
  return MalformedError(WireError::kLengthMismatch, what);
}

// Converts "ran out" inside a value with a declared length into a malformed error.
Status Bounded(Status s, std::string_view what) {
  if (s.code() == Code::kNeedMoreData) return LengthMismatch(what);
  return s;
}

std::vector<RangeFilter>* FilterSlot(RangeFilters* f, uint64_t type) {
  switch (type) {
    case 0x25:
      return &f->subgroup;
    case 0x26:
      return &f->object_id;
    case 0x27:
      return &f->priority;
    case 0x28:
      return &f->object_property;
    default:
      return &f->track_property;
  }
}
const std::vector<RangeFilter>& FilterSlot(const RangeFilters& f, uint64_t type) {
  return *FilterSlot(const_cast<RangeFilters*>(&f), type);
}

Status InvalidFilter(std::string_view what) {
  return MalformedError(WireError::kInvalidFilter, what);
}

// Checks the per-type uniqueness rules of a filter list: one removal or distinct
// (SetID, property type) pairs.
Status CheckFilterSet(const std::vector<RangeFilter>& list) {
  bool removal = false;
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i].remove) removal = true;
    for (size_t j = 0; j < i; ++j) {
      if (list[i].set_id == list[j].set_id && list[i].property_type == list[j].property_type) {
        return InvalidFilter("repeated (type, SetID, property type)");
      }
    }
  }
  if (removal && list.size() > 1) return InvalidFilter("removal combined with another instance");
  return Status::Ok();
}

Status ReadRangeFilter(ByteSpan value, uint64_t type, RangeFilter* out) {
  *out = RangeFilter{};
  if (value.empty()) {
    out->remove = true;
    return Status::Ok();
  }
  WireReader r(value);
  MOQT_READ(r.U8(&out->set_id));
  if (type == 0x28 || type == 0x29) {
    MOQT_READ(r.Varint(&out->property_type));
    if (out->property_type & 1) return InvalidFilter("odd property type");
  }
  uint64_t prev_end = 0;
  while (!r.empty()) {
    if (out->ranges.size() >= kMaxRangesPerFilter) return InvalidFilter("too many ranges");
    uint64_t start_delta;
    MOQT_READ(r.Varint(&start_delta));
    if (start_delta > UINT64_MAX - prev_end) return InvalidFilter("range start overflow");
    FilterRange range;
    range.start = prev_end + start_delta;
    if (!r.empty()) {
      uint64_t end_delta;
      MOQT_READ(r.Varint(&end_delta));
      if (end_delta > UINT64_MAX - range.start) return InvalidFilter("range end overflow");
      range.end = range.start + end_delta;
      prev_end = *range.end;
    }
    if (type == 0x27 && (range.start > kMaxPriority || range.end.value_or(0) > kMaxPriority)) {
      return InvalidFilter("priority above 255");
    }
    out->ranges.push_back(range);
  }
  if (out->ranges.empty()) return InvalidFilter("no ranges");
  return Status::Ok();
}

Status WriteRangeFilter(WireWriter& w, uint64_t type, const RangeFilter& f) {
  if (f.remove) {
    if (f.set_id != 0 || f.property_type != 0 || !f.ranges.empty()) {
      return InvalidFilter("removal form carries fields");
    }
    w.Varint(0);
    return Status::Ok();
  }
  if (f.ranges.empty() || f.ranges.size() > kMaxRangesPerFilter) {
    return InvalidFilter("range count");
  }
  Bytes tmp;
  WireWriter v(&tmp, w.varint_extra_bytes());
  v.U8(f.set_id);
  if (type == 0x28 || type == 0x29) {
    if (f.property_type & 1) return InvalidFilter("odd property type");
    v.Varint(f.property_type);
  } else if (f.property_type != 0) {
    return InvalidFilter("property type on a non-property filter");
  }
  uint64_t prev_end = 0;
  for (size_t i = 0; i < f.ranges.size(); ++i) {
    const FilterRange& range = f.ranges[i];
    if (range.start < prev_end) return InvalidFilter("ranges not ascending");
    if (!range.end && i + 1 != f.ranges.size()) return InvalidFilter("open range not last");
    if (range.end && *range.end < range.start) return InvalidFilter("range end below start");
    if (type == 0x27 && (range.start > kMaxPriority || range.end.value_or(0) > kMaxPriority)) {
      return InvalidFilter("priority above 255");
    }
    v.Varint(range.start - prev_end);
    if (range.end) {
      v.Varint(*range.end - range.start);
      prev_end = *range.end;
    }
  }
  w.LengthPrefixed(ByteSpan(tmp));
  return Status::Ok();
}

Status ReadUint8Enum(WireReader& r, uint8_t lo, uint8_t hi, uint8_t* out, std::string_view what) {
  MOQT_READ(r.U8(out));
  if (*out < lo || *out > hi) return MalformedError(WireError::kBadEnumValue, what);
  return Status::Ok();
}

Status ReadLengthPrefixedSpan(WireReader& r, ByteSpan* out) {
  uint64_t len;
  MOQT_READ(r.Varint(&len));
  if (len > kMaxKvpValueBytes) return MalformedError(WireError::kValueTooLong, "parameter");
  MOQT_READ(r.Span(len, out));
  return Status::Ok();
}

void FillToParams(const FillParameters& f, MessageParameters* p) {
  p->fill_timeout_ms = f.fill_timeout_ms;
  p->subscriber_priority = f.subscriber_priority;
  p->location_filter = f.location_filter;
  p->group_order = f.group_order;
  p->range_filters = f.range_filters;
}

FillParameters ParamsToFill(const MessageParameters& p) {
  FillParameters f;
  f.fill_timeout_ms = p.fill_timeout_ms;
  f.subscriber_priority = p.subscriber_priority;
  f.location_filter = p.location_filter;
  f.group_order = p.group_order;
  f.range_filters = p.range_filters;
  return f;
}

// Writes parameters in ascending type order, counting them.
class ParamEmitter {
 public:
  explicit ParamEmitter(size_t extra) : w_(&buf_, extra) {}
  WireWriter& Begin(uint64_t type) {
    w_.Varint(type - prev_);
    prev_ = type;
    ++count_;
    return w_;
  }
  size_t count() const { return count_; }
  const Bytes& bytes() const { return buf_; }

 private:
  Bytes buf_;
  WireWriter w_;
  uint64_t prev_ = 0;
  size_t count_ = 0;
};

}  // namespace

uint64_t AllowedParameters(ParamScope scope, const WireOptions& options, bool receiving) {
  switch (scope) {
    case ParamScope::kSubscribe:
      return Bits({0x02, 0x03, 0x04, 0x06, 0x10, 0x20, 0x21, 0x22, 0x23, 0x25, 0x26, 0x27, 0x28,
                   0x32, 0x35});
    case ParamScope::kPublish:
      return Bits({0x02, 0x03, 0x06, 0x08, 0x09, 0x10, 0x20, 0x21, 0x22});
    case ParamScope::kFetch:
      return Bits({0x03, 0x0A, 0x20, 0x21, 0x22, 0x25, 0x26, 0x27, 0x28, 0x35});
    case ParamScope::kSubscribeOk:
    case ParamScope::kRequestOk:
      return Bits({0x08, 0x09});
    case ParamScope::kRequestUpdate:
      return Bits(
          {0x02, 0x03, 0x06, 0x10, 0x20, 0x21, 0x23, 0x25, 0x26, 0x27, 0x28, 0x29, 0x32, 0x34});
    case ParamScope::kPublishStateNotify:
      return Bits({0x09, 0x10, 0x21});
    case ParamScope::kSubscribeTracks: {
      uint64_t m = Bits({0x03, 0x10, 0x22, 0x25, 0x26, 0x27, 0x28, 0x29, 0x35});
      if (receiving && options.accept_filter_and_fill_in_subscribe_tracks) {
        m |= Bits({0x21, 0x23});
      }
      return m;
    }
    case ParamScope::kSubscribeNamespace:
    case ParamScope::kPublishNamespace:
      return Bits({0x03});
    case ParamScope::kTrackStatus:
      return Bits({0x03, 0x35});
    case ParamScope::kFetchOk:
      return 0;
    case ParamScope::kFill:
      return Bits({0x0A, 0x20, 0x21, 0x22, 0x25, 0x26, 0x27, 0x28});
  }
  return 0;
}

Status ReadLocationFilter(WireReader& r, LocationFilter* out) {
  *out = LocationFilter{};
  uint64_t type;
  MOQT_READ(r.Varint(&type));
  if (type > 0x05) {
    return MalformedError(WireError::kInvalidLocationFilter, "type " + std::to_string(type));
  }
  out->type = static_cast<LocationFilterType>(type);
  if (type >= 0x01 && type <= 0x04) MOQT_READ(r.Varint(&out->start_group));
  if (type >= 0x02 && type <= 0x04) MOQT_READ(r.Varint(&out->start_object));
  if (type >= 0x03 && type <= 0x04) {
    MOQT_READ(r.Varint(&out->end_group_delta));
    if (out->end_group_delta > UINT64_MAX - out->start_group) {
      return MalformedError(WireError::kInvalidLocationFilter, "end group overflow");
    }
  }
  if (type == 0x04) MOQT_READ(r.Varint(&out->end_object));
  return Status::Ok();
}

void WriteLocationFilter(WireWriter& w, const LocationFilter& f) {
  uint64_t type = static_cast<uint64_t>(f.type);
  w.Varint(type);
  if (type >= 0x01 && type <= 0x04) w.Varint(f.start_group);
  if (type >= 0x02 && type <= 0x04) w.Varint(f.start_object);
  if (type >= 0x03 && type <= 0x04) w.Varint(f.end_group_delta);
  if (type == 0x04) w.Varint(f.end_object);
}

Status ReadParameters(WireReader& r, ParamScope scope, const WireOptions& options,
                      MessageParameters* out) {
  *out = MessageParameters{};
  const uint64_t allowed = AllowedParameters(scope, options, /*receiving=*/true);
  uint64_t count;
  MOQT_READ(r.Varint(&count));
  if (count > kMaxParameters) {
    return MalformedError(WireError::kTooManyParameters, std::to_string(count));
  }
  uint64_t type = 0;
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t delta;
    MOQT_READ(r.Varint(&delta));
    if (delta > UINT64_MAX - type) {
      return MalformedError(WireError::kIntegerOverflow, "parameter type delta");
    }
    if (i > 0 && delta == 0 && !IsBitSet(kRepeatable, type)) {
      return MalformedError(WireError::kDuplicateParameter, "type " + std::to_string(type));
    }
    type += delta;
    if (!IsBitSet(kKnownParameters, type)) {
      return MalformedError(WireError::kUnknownParameter, "type " + std::to_string(type));
    }
    if (!IsBitSet(allowed, type)) {
      return MalformedError(WireError::kParameterNotAllowed, "type " + std::to_string(type));
    }
    switch (type) {
      case 0x02:
        MOQT_READ(r.Varint(&out->object_delivery_timeout_ms.emplace()));
        break;
      case 0x03: {
        ByteSpan value;
        KVCS_RETURN_IF_ERROR(ReadLengthPrefixedSpan(r, &value));
        AuthToken token;
        KVCS_RETURN_IF_ERROR(ParseAuthToken(value, &token));
        out->authorization_tokens.push_back(std::move(token));
        break;
      }
      case 0x04:
        MOQT_READ(r.Varint(&out->rendezvous_timeout_ms.emplace()));
        break;
      case 0x06:
        MOQT_READ(r.Varint(&out->subgroup_delivery_timeout_ms.emplace()));
        break;
      case 0x08:
        MOQT_READ(r.Varint(&out->expires_ms.emplace()));
        break;
      case 0x09:
        KVCS_RETURN_IF_ERROR(ReadLocation(r, &out->largest_object.emplace()));
        break;
      case 0x0A:
        MOQT_READ(r.Varint(&out->fill_timeout_ms.emplace()));
        break;
      case 0x10: {
        uint8_t v;
        KVCS_RETURN_IF_ERROR(ReadUint8Enum(r, 0, 1, &v, "FORWARD"));
        out->forward = v == 1;
        break;
      }
      case 0x20:
        MOQT_READ(r.U8(&out->subscriber_priority.emplace()));
        break;
      case 0x21:
        KVCS_RETURN_IF_ERROR(ReadLocationFilter(r, &out->location_filter.emplace()));
        break;
      case 0x22: {
        uint8_t v;
        KVCS_RETURN_IF_ERROR(ReadUint8Enum(r, 1, 2, &v, "GROUP_ORDER"));
        out->group_order = static_cast<GroupOrder>(v);
        break;
      }
      case 0x23: {
        MessageParameters inner;
        if (options.fill_parameters == FillParametersEncoding::kLengthCountParams) {
          ByteSpan value;
          KVCS_RETURN_IF_ERROR(ReadLengthPrefixedSpan(r, &value));
          WireReader vr(value);
          KVCS_RETURN_IF_ERROR(
              Bounded(ReadParameters(vr, ParamScope::kFill, options, &inner), "FILL_PARAMETERS"));
          if (!vr.empty()) return LengthMismatch("FILL_PARAMETERS");
        } else {
          KVCS_RETURN_IF_ERROR(ReadParameters(r, ParamScope::kFill, options, &inner));
        }
        out->fill_parameters = ParamsToFill(inner);
        break;
      }
      case 0x25:
      case 0x26:
      case 0x27:
      case 0x28:
      case 0x29: {
        ByteSpan value;
        KVCS_RETURN_IF_ERROR(ReadLengthPrefixedSpan(r, &value));
        RangeFilter f;
        KVCS_RETURN_IF_ERROR(Bounded(ReadRangeFilter(value, type, &f), "range filter"));
        auto* slot = FilterSlot(&out->range_filters, type);
        slot->push_back(std::move(f));
        KVCS_RETURN_IF_ERROR(CheckFilterSet(*slot));
        break;
      }
      case 0x32:
        MOQT_READ(r.Varint(&out->new_group_request.emplace()));
        break;
      case 0x34: {
        size_t total = 0;
        KVCS_RETURN_IF_ERROR(ReadNamespace(r, &out->track_namespace_prefix.emplace(), &total));
        break;
      }
      case 0x35: {
        uint8_t v;
        KVCS_RETURN_IF_ERROR(ReadUint8Enum(r, 0, 1, &v, "INCLUDE_PROPERTIES"));
        out->include_properties = v == 1;
        break;
      }
    }
  }
  return Status::Ok();
}

Status WriteParameters(WireWriter& w, ParamScope scope, const WireOptions& options,
                       const MessageParameters& p) {
  const uint64_t allowed = AllowedParameters(scope, options, /*receiving=*/false);
  ParamEmitter e(w.varint_extra_bytes());
  auto check = [&](uint64_t type) -> Status {
    if (!IsBitSet(allowed, type)) {
      return MalformedError(WireError::kParameterNotAllowed, "type " + std::to_string(type));
    }
    return Status::Ok();
  };
  auto varint = [&](uint64_t type, const std::optional<uint64_t>& v) -> Status {
    if (!v) return Status::Ok();
    KVCS_RETURN_IF_ERROR(check(type));
    e.Begin(type).Varint(*v);
    return Status::Ok();
  };
  KVCS_RETURN_IF_ERROR(varint(0x02, p.object_delivery_timeout_ms));
  for (const auto& t : p.authorization_tokens) {
    KVCS_RETURN_IF_ERROR(check(0x03));
    Bytes tmp;
    WireWriter tw(&tmp, w.varint_extra_bytes());
    WriteAuthToken(tw, t);
    if (tmp.size() > kMaxKvpValueBytes) return MalformedError(WireError::kValueTooLong, "token");
    e.Begin(0x03).LengthPrefixed(ByteSpan(tmp));
  }
  KVCS_RETURN_IF_ERROR(varint(0x04, p.rendezvous_timeout_ms));
  KVCS_RETURN_IF_ERROR(varint(0x06, p.subgroup_delivery_timeout_ms));
  KVCS_RETURN_IF_ERROR(varint(0x08, p.expires_ms));
  if (p.largest_object) {
    KVCS_RETURN_IF_ERROR(check(0x09));
    WriteLocation(e.Begin(0x09), *p.largest_object);
  }
  KVCS_RETURN_IF_ERROR(varint(0x0A, p.fill_timeout_ms));
  if (p.forward) {
    KVCS_RETURN_IF_ERROR(check(0x10));
    e.Begin(0x10).U8(*p.forward ? 1 : 0);
  }
  if (p.subscriber_priority) {
    KVCS_RETURN_IF_ERROR(check(0x20));
    e.Begin(0x20).U8(*p.subscriber_priority);
  }
  if (p.location_filter) {
    KVCS_RETURN_IF_ERROR(check(0x21));
    const LocationFilter& f = *p.location_filter;
    if (static_cast<uint64_t>(f.type) > 5) {
      return MalformedError(WireError::kInvalidLocationFilter, "type");
    }
    if ((f.type == LocationFilterType::kAbsoluteStartGroupEnd ||
         f.type == LocationFilterType::kAbsoluteRange) &&
        f.end_group_delta > UINT64_MAX - f.start_group) {
      return MalformedError(WireError::kInvalidLocationFilter, "end group overflow");
    }
    WriteLocationFilter(e.Begin(0x21), f);
  }
  if (p.group_order) {
    KVCS_RETURN_IF_ERROR(check(0x22));
    uint8_t v = static_cast<uint8_t>(*p.group_order);
    if (v != 1 && v != 2) return MalformedError(WireError::kBadEnumValue, "GROUP_ORDER");
    e.Begin(0x22).U8(v);
  }
  if (p.fill_parameters) {
    KVCS_RETURN_IF_ERROR(check(0x23));
    MessageParameters inner;
    FillToParams(*p.fill_parameters, &inner);
    Bytes tmp;
    WireWriter iw(&tmp, w.varint_extra_bytes());
    KVCS_RETURN_IF_ERROR(WriteParameters(iw, ParamScope::kFill, options, inner));
    WireWriter& ow = e.Begin(0x23);
    if (options.fill_parameters == FillParametersEncoding::kLengthCountParams) {
      ow.LengthPrefixed(ByteSpan(tmp));
    } else {
      ow.Raw(ByteSpan(tmp));
    }
  }
  for (uint64_t type = 0x25; type <= 0x29; ++type) {
    const auto& list = FilterSlot(p.range_filters, type);
    if (list.empty()) continue;
    KVCS_RETURN_IF_ERROR(check(type));
    KVCS_RETURN_IF_ERROR(CheckFilterSet(list));
    for (const auto& f : list) KVCS_RETURN_IF_ERROR(WriteRangeFilter(e.Begin(type), type, f));
  }
  KVCS_RETURN_IF_ERROR(varint(0x32, p.new_group_request));
  if (p.track_namespace_prefix) {
    KVCS_RETURN_IF_ERROR(check(0x34));
    size_t total = 0;
    KVCS_RETURN_IF_ERROR(ValidateNamespace(*p.track_namespace_prefix, &total));
    WriteNamespace(e.Begin(0x34), *p.track_namespace_prefix);
  }
  if (p.include_properties) {
    KVCS_RETURN_IF_ERROR(check(0x35));
    e.Begin(0x35).U8(*p.include_properties ? 1 : 0);
  }
  if (e.count() > kMaxParameters) return MalformedError(WireError::kTooManyParameters, "");
  w.Varint(e.count());
  w.Raw(ByteSpan(e.bytes()));
  return Status::Ok();
}

}  // namespace kvcs::moqt
