#include "moqt/moqt_data_parser.h"

#include <algorithm>

#include "moqt/moqt_error.h"
#include "moqt/moqt_key_value.h"
#include "moqt/moqt_limits.h"
#include "moqt/moqt_wire_io.h"

namespace kvcs::moqt {
namespace {

Status StreamTypeError(uint64_t type) {
  if (type == kControlStreamType) {
    return MalformedError(WireError::kUnexpectedStreamType, "control stream");
  }
  if (type < 0x80) {
    return MalformedError(WireError::kInvalidSubgroupType, "type " + std::to_string(type));
  }
  return MalformedError(WireError::kUnknownStreamType, "type " + std::to_string(type));
}

bool IsMarker(uint64_t flags) { return flags == 0x8C || flags == 0x10C || flags == 0x20C; }

// prior +/- (delta + 1) in the fetch's group order; false on overflow/underflow.
bool StepGroup(uint64_t prior, uint64_t delta, GroupOrder order, uint64_t* out) {
  if (delta == UINT64_MAX) return false;
  uint64_t step = delta + 1;
  if (order == GroupOrder::kAscending) {
    if (step > UINT64_MAX - prior) return false;
    *out = prior + step;
  } else {
    if (step > prior) return false;
    *out = prior - step;
  }
  return true;
}

// Whether `loc` may follow `prior` on a fetch stream delivered in `order`.
bool ComesAfter(const Location& prior, const Location& loc, GroupOrder order) {
  if (loc.group == prior.group) return loc.object > prior.object;
  return order == GroupOrder::kAscending ? loc.group > prior.group : loc.group < prior.group;
}

}  // namespace

Result<UniStreamKind> PeekUniStreamType(ByteSpan first_bytes) {
  uint64_t type;
  if (DecodeVarint(first_bytes, &type) == 0) return Truncated();
  if (type == kFetchHeaderType) return UniStreamKind::kFetch;
  if (type == kControlStreamType) return UniStreamKind::kControl;
  if (type == kPaddingStreamType) return UniStreamKind::kPadding;
  if (IsValidSubgroupType(type)) return UniStreamKind::kSubgroup;
  if (type < 0x80) {
    return MalformedError(WireError::kInvalidSubgroupType, "type " + std::to_string(type));
  }
  return MalformedError(WireError::kUnknownStreamType, "type " + std::to_string(type));
}

void DataStreamParser::Fail(const Status& s) {
  if (state_ == State::kFailed) return;
  state_ = State::kFailed;
  pending_.clear();
  properties_buf_.clear();
  visitor_->OnError(s);
}

bool DataStreamParser::BetweenObjects() const {
  if (!pending_.empty()) return false;
  return state_ == State::kSubgroupObject || state_ == State::kFetchObject ||
         state_ == State::kPadding;
}

void DataStreamParser::OnData(ByteSpan data, bool fin) {
  if (state_ == State::kFailed || state_ == State::kFinished) return;
  if (processing_) {
    Fail(Internal("moqt: DataStreamParser::OnData re-entered from a visitor callback"));
    return;
  }
  processing_ = true;
  while (!data.empty() && state_ != State::kFailed) {
    switch (state_) {
      case State::kPayload: {
        size_t n = static_cast<size_t>(std::min<uint64_t>(payload_remaining_, data.size()));
        payload_remaining_ -= n;
        bool end = payload_remaining_ == 0;
        visitor_->OnObjectPayload(data.first(n), end);
        data = data.subspan(n);
        if (end) ObjectDone();
        break;
      }
      case State::kProperties: {
        size_t n = static_cast<size_t>(std::min<uint64_t>(properties_remaining_, data.size()));
        properties_buf_.insert(properties_buf_.end(), data.begin(), data.begin() + n);
        properties_remaining_ -= n;
        data = data.subspan(n);
        if (properties_remaining_ == 0) AfterObjectStart(0, true);
        break;
      }
      case State::kPadding: {
        if (options_.strict_padding &&
            std::any_of(data.begin(), data.end(), [](uint8_t b) { return b != 0; })) {
          Fail(MalformedError(WireError::kNonZeroPadding, ""));
          break;
        }
        data = {};
        break;
      }
      case State::kFinished:
        Fail(MalformedError(WireError::kTrailingData, "after FIN"));
        break;
      default:
        ConsumeUnit(&data);
    }
  }
  if (fin && state_ != State::kFailed) {
    if (BetweenObjects()) {
      state_ = State::kFinished;
      visitor_->OnStreamEnd();
    } else {
      Fail(MalformedError(WireError::kFinMidObject, ""));
    }
  }
  processing_ = false;
}

void DataStreamParser::ConsumeUnit(ByteSpan* data) {
  if (pending_.empty()) {
    Result<size_t> r = ParseUnit(*data);
    if (r.ok()) {
      *data = data->subspan(*r);
      return;
    }
    if (r.status().code() != Code::kNeedMoreData) return Fail(r.status());
    if (data->size() >= kMaxDataUnitBytes) {
      return Fail(MalformedError(WireError::kUnitTooLong, ""));
    }
    pending_.assign(data->begin(), data->end());
    *data = {};
    return;
  }
  size_t old = pending_.size();
  size_t take = std::min(data->size(), kMaxDataUnitBytes - old);
  pending_.insert(pending_.end(), data->begin(), data->begin() + take);
  Result<size_t> r = ParseUnit(pending_);
  if (r.ok()) {
    // The unit did not fit in `old` bytes, so it ends inside the newly appended ones.
    *data = data->subspan(*r - old);
    pending_.clear();
    return;
  }
  if (r.status().code() != Code::kNeedMoreData) return Fail(r.status());
  if (pending_.size() >= kMaxDataUnitBytes) {
    return Fail(MalformedError(WireError::kUnitTooLong, ""));
  }
  *data = data->subspan(take);
}

Result<size_t> DataStreamParser::ParseUnit(ByteSpan in) {
  switch (state_) {
    case State::kStreamHeader:
      return ParseStreamHeader(in);
    case State::kSubgroupObject:
      return ParseSubgroupObject(in);
    case State::kFetchObject:
      return ParseFetchObject(in);
    case State::kObjectTail:
      return ParseObjectTail(in);
    default:
      return Internal("moqt: ParseUnit in a non-unit state");
  }
}

Result<size_t> DataStreamParser::ParseStreamHeader(ByteSpan in) {
  WireReader r(in);
  uint64_t type;
  MOQT_READ(r.Varint(&type));
  if (type == kFetchHeaderType) {
    FetchHeader h;
    MOQT_READ(r.Varint(&h.request_id));
    kind_ = StreamKind::kFetch;
    state_ = State::kFetchObject;
    fetch_order_ = visitor_->OnFetchHeader(h);
    return r.position();
  }
  if (type == kPaddingStreamType) {
    kind_ = StreamKind::kPadding;
    state_ = State::kPadding;
    visitor_->OnPaddingStream();
    return r.position();
  }
  if (!IsValidSubgroupType(type)) return StreamTypeError(type);
  SubgroupHeader h = SubgroupHeaderFromType(static_cast<uint8_t>(type));
  MOQT_READ(r.Varint(&h.track_alias));
  MOQT_READ(r.Varint(&h.group_id));
  if (h.id_mode == SubgroupIdMode::kExplicit) MOQT_READ(r.Varint(&h.subgroup_id));
  if (!(type & kSubgroupFlagDefaultPriority)) MOQT_READ(r.U8(&h.publisher_priority.emplace()));
  subgroup_ = h;
  kind_ = StreamKind::kSubgroup;
  state_ = State::kSubgroupObject;
  visitor_->OnSubgroupHeader(h);
  return r.position();
}

Result<size_t> DataStreamParser::ParseSubgroupObject(ByteSpan in) {
  WireReader r(in);
  uint64_t delta;
  MOQT_READ(r.Varint(&delta));
  uint64_t props_len = 0;
  if (subgroup_.has_properties) {
    MOQT_READ(r.Varint(&props_len));
    if (props_len > kMaxObjectPropertiesBytes) {
      return MalformedError(WireError::kValueTooLong, "object properties");
    }
  }
  uint64_t id = delta;
  if (prior_object_id_) {
    if (*prior_object_id_ == UINT64_MAX || delta > UINT64_MAX - *prior_object_id_ - 1) {
      return MalformedError(WireError::kIntegerOverflow, "object ID delta");
    }
    id = *prior_object_id_ + delta + 1;
  } else if (subgroup_.id_mode == SubgroupIdMode::kFirstObject) {
    subgroup_.subgroup_id = id;
  }
  prior_object_id_ = id;
  object_ = ObjectHeader{};
  object_.location = {subgroup_.group_id, id};
  object_.subgroup_id = subgroup_.subgroup_id;
  object_.publisher_priority = subgroup_.publisher_priority;
  size_t used = r.position();
  AfterObjectStart(props_len, subgroup_.has_properties);
  return used;
}

Result<size_t> DataStreamParser::ParseFetchObject(ByteSpan in) {
  WireReader r(in);
  uint64_t flags;
  MOQT_READ(r.Varint(&flags));
  auto overflow = [] { return MalformedError(WireError::kIntegerOverflow, "fetch location"); };
  if (IsMarker(flags)) {
    uint64_t g, o, len;
    MOQT_READ(r.Varint(&g));
    MOQT_READ(r.Varint(&o));
    MOQT_READ(r.Varint(&len));
    if (len != 0) return MalformedError(WireError::kInvalidFetchFlags, "marker payload length");
    EndOfRange m;
    m.kind = static_cast<EndOfRangeKind>(flags);
    m.location = {g, o};
    if (fetch_prior_ && options_.end_of_range == EndOfRangeEncoding::kDelta) {
      if (!StepGroup(fetch_prior_->group, g, fetch_order_, &m.location.group)) return overflow();
    }
    if (fetch_prior_ && !ComesAfter(*fetch_prior_, m.location, fetch_order_)) {
      return MalformedError(WireError::kFetchOutOfOrder, "marker");
    }
    fetch_prior_ = m.location;
    visitor_->OnEndOfRange(m);
    return r.position();
  }
  if (flags >= 0x80) {
    return MalformedError(WireError::kInvalidFetchFlags, "flags " + std::to_string(flags));
  }
  const bool datagram = flags & kFetchFlagDatagram;
  const uint64_t mode = flags & kFetchFlagSubgroupMask;
  const bool has_group = flags & kFetchFlagGroupIdDelta;
  const bool has_object = flags & kFetchFlagObjectIdDelta;
  const bool has_priority = flags & kFetchFlagPriority;
  const bool has_props = flags & kFetchFlagProperties;
  auto references_prior = [] { return MalformedError(WireError::kFetchReferencesPrior, ""); };
  if (!fetch_prior_ && (!has_group || !has_object)) return references_prior();
  if (!datagram && (mode == 1 || mode == 2) && !fetch_prior_subgroup_) return references_prior();
  if (!has_priority && !fetch_prior_priority_) return references_prior();

  uint64_t gd = 0, sg = 0, od = 0, props_len = 0;
  uint8_t priority = 0;
  if (has_group) MOQT_READ(r.Varint(&gd));
  if (!datagram && mode == 3) MOQT_READ(r.Varint(&sg));
  if (has_object) MOQT_READ(r.Varint(&od));
  if (has_priority) MOQT_READ(r.U8(&priority));
  if (has_props) {
    MOQT_READ(r.Varint(&props_len));
    if (props_len > kMaxObjectPropertiesBytes) {
      return MalformedError(WireError::kValueTooLong, "object properties");
    }
  }
  Location loc;
  if (!fetch_prior_) {
    loc = {gd, od};
  } else {
    const Location& p = *fetch_prior_;
    if (has_group) {
      if (!StepGroup(p.group, gd, fetch_order_, &loc.group)) return overflow();
      if (has_object) {
        loc.object = od;
      } else {
        if (p.object == UINT64_MAX) return overflow();
        loc.object = p.object + 1;
      }
    } else {
      loc.group = p.group;
      uint64_t add = has_object ? od : 1;
      if (add > UINT64_MAX - p.object) return overflow();
      loc.object = p.object + add;
      if (loc.object == p.object) {
        return MalformedError(WireError::kFetchOutOfOrder, "object ID repeats in a group");
      }
    }
  }
  std::optional<uint64_t> subgroup;
  if (!datagram) {
    switch (mode) {
      case 0:
        subgroup = 0;
        break;
      case 1:
        subgroup = *fetch_prior_subgroup_;
        break;
      case 2:
        if (*fetch_prior_subgroup_ == UINT64_MAX) return overflow();
        subgroup = *fetch_prior_subgroup_ + 1;
        break;
      default:
        subgroup = sg;
    }
  }
  if (!has_priority) priority = *fetch_prior_priority_;

  fetch_prior_ = loc;
  if (subgroup) fetch_prior_subgroup_ = subgroup;
  fetch_prior_priority_ = priority;
  object_ = ObjectHeader{};
  object_.location = loc;
  object_.subgroup_id = subgroup;
  object_.publisher_priority = priority;
  size_t used = r.position();
  AfterObjectStart(props_len, has_props);
  return used;
}

void DataStreamParser::AfterObjectStart(uint64_t properties_length, bool has_properties) {
  if (state_ != State::kProperties) {
    // Coming from an object-start unit.
    properties_buf_.clear();
    if (has_properties && properties_length > 0) {
      properties_remaining_ = properties_length;
      state_ = State::kProperties;
      return;
    }
  }
  // All properties bytes are in properties_buf_ (possibly none).
  if (!properties_buf_.empty()) {
    Status s = ParseKvpList(properties_buf_, &object_.properties);
    properties_buf_.clear();
    if (!s.ok()) return Fail(s);
  }
  state_ = State::kObjectTail;
}

Result<size_t> DataStreamParser::ParseObjectTail(ByteSpan in) {
  WireReader r(in);
  uint64_t len;
  MOQT_READ(r.Varint(&len));
  ObjectStatus status = ObjectStatus::kNormal;
  if (kind_ == StreamKind::kSubgroup && len == 0) {
    uint64_t s;
    MOQT_READ(r.Varint(&s));
    if (!IsValidObjectStatus(s)) {
      return MalformedError(WireError::kInvalidObjectStatus, "status " + std::to_string(s));
    }
    status = static_cast<ObjectStatus>(s);
    if (status != ObjectStatus::kNormal && !object_.properties.empty()) {
      return MalformedError(WireError::kPropertiesOnNonNormal, "");
    }
  }
  object_.status = status;
  object_.payload_length = len;
  payload_remaining_ = len;
  size_t used = r.position();
  FinishObjectHeader();
  return used;
}

void DataStreamParser::FinishObjectHeader() {
  visitor_->OnObjectHeader(object_);
  if (payload_remaining_ > 0) {
    state_ = State::kPayload;
  } else {
    ObjectDone();
  }
}

void DataStreamParser::ObjectDone() {
  state_ = kind_ == StreamKind::kSubgroup ? State::kSubgroupObject : State::kFetchObject;
}

}  // namespace kvcs::moqt
