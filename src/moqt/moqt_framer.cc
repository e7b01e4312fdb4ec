#include "moqt/moqt_framer.h"

#include "moqt/moqt_error.h"
#include "moqt/moqt_fields.h"
#include "moqt/moqt_key_value.h"
#include "moqt/moqt_limits.h"
#include "moqt/moqt_parameters.h"

namespace kvcs::moqt {
namespace {

Status CheckBounded(const std::string& s, size_t max, WireError e) {
  if (s.size() > max) return MalformedError(e, std::to_string(s.size()) + " bytes");
  return Status::Ok();
}

struct BodyWriter {
  WireWriter& w;
  const WireOptions& o;

  Status operator()(const Setup& m) {
    std::vector<KeyValuePair> kvps;
    KVCS_RETURN_IF_ERROR(SetupOptionsToKvps(m.options, w.varint_extra_bytes(), &kvps));
    return WriteKvpList(w, kvps);
  }
  Status operator()(const GoAway& m) {
    KVCS_RETURN_IF_ERROR(CheckBounded(m.new_session_uri, kMaxUriBytes, WireError::kUriTooLong));
    w.LengthPrefixed(m.new_session_uri);
    w.Varint(m.timeout_ms);
    return Status::Ok();
  }
  Status operator()(const RequestOk& m) {
    KVCS_RETURN_IF_ERROR(WriteParameters(w, ParamScope::kRequestOk, o, m.params));
    return WriteKvpList(w, m.track_properties);
  }
  Status operator()(const RequestError& m) {
    KVCS_RETURN_IF_ERROR(
        CheckBounded(m.reason, kMaxReasonPhraseBytes, WireError::kReasonPhraseTooLong));
    bool is_redirect = m.error_code == static_cast<uint64_t>(RequestErrorCode::kRedirect);
    if (is_redirect != m.redirect.has_value()) {
      return MalformedError(WireError::kBadEnumValue, "Redirect present iff code is REDIRECT");
    }
    w.Varint(m.error_code);
    w.Varint(m.retry_interval);
    w.LengthPrefixed(m.reason);
    if (m.redirect) {
      KVCS_RETURN_IF_ERROR(
          CheckBounded(m.redirect->connect_uri, kMaxUriBytes, WireError::kUriTooLong));
      FullTrackName ftn{m.redirect->track_namespace, m.redirect->track_name};
      KVCS_RETURN_IF_ERROR(ValidateFullTrackName(ftn));
      w.LengthPrefixed(m.redirect->connect_uri);
      WriteFullTrackName(w, ftn);
    }
    return Status::Ok();
  }
  Status Request(uint64_t id, const FullTrackName& t, ParamScope s, const MessageParameters& p) {
    KVCS_RETURN_IF_ERROR(ValidateFullTrackName(t));
    w.Varint(id);
    WriteFullTrackName(w, t);
    return WriteParameters(w, s, o, p);
  }
  Status operator()(const Subscribe& m) {
    return Request(m.request_id, m.track, ParamScope::kSubscribe, m.params);
  }
  Status operator()(const Fetch& m) {
    return Request(m.request_id, m.track, ParamScope::kFetch, m.params);
  }
  Status operator()(const TrackStatus& m) {
    return Request(m.request_id, m.track, ParamScope::kTrackStatus, m.params);
  }
  Status operator()(const SubscribeOk& m) {
    w.Varint(m.track_alias);
    KVCS_RETURN_IF_ERROR(WriteParameters(w, ParamScope::kSubscribeOk, o, m.params));
    return WriteKvpList(w, m.track_properties);
  }
  Status operator()(const RequestUpdate& m) {
    w.Varint(m.request_id);
    return WriteParameters(w, ParamScope::kRequestUpdate, o, m.params);
  }
  Status operator()(const PublishStateNotify& m) {
    return WriteParameters(w, ParamScope::kPublishStateNotify, o, m.params);
  }
  Status operator()(const Publish& m) {
    KVCS_RETURN_IF_ERROR(ValidateFullTrackName(m.track));
    w.Varint(m.request_id);
    WriteFullTrackName(w, m.track);
    w.Varint(m.track_alias);
    KVCS_RETURN_IF_ERROR(WriteParameters(w, ParamScope::kPublish, o, m.params));
    return WriteKvpList(w, m.track_properties);
  }
  Status operator()(const PublishDone& m) {
    KVCS_RETURN_IF_ERROR(
        CheckBounded(m.reason, kMaxReasonPhraseBytes, WireError::kReasonPhraseTooLong));
    w.Varint(m.status_code);
    w.Varint(m.stream_count);
    w.LengthPrefixed(m.reason);
    return Status::Ok();
  }
  Status operator()(const FetchOk& m) {
    w.U8(m.end_of_track ? 1 : 0);
    WriteLocation(w, m.end_location);
    KVCS_RETURN_IF_ERROR(WriteParameters(w, ParamScope::kFetchOk, o, m.params));
    return WriteKvpList(w, m.track_properties);
  }
  Status Namespaced(uint64_t id, const TrackNamespace& ns, ParamScope s,
                    const MessageParameters& p) {
    size_t total = 0;
    KVCS_RETURN_IF_ERROR(ValidateNamespace(ns, &total));
    w.Varint(id);
    WriteNamespace(w, ns);
    return WriteParameters(w, s, o, p);
  }
  Status operator()(const PublishNamespace& m) {
    return Namespaced(m.request_id, m.track_namespace, ParamScope::kPublishNamespace, m.params);
  }
  Status operator()(const SubscribeNamespace& m) {
    return Namespaced(m.request_id, m.prefix, ParamScope::kSubscribeNamespace, m.params);
  }
  Status operator()(const SubscribeTracks& m) {
    return Namespaced(m.request_id, m.prefix, ParamScope::kSubscribeTracks, m.params);
  }
  Status Suffix(const TrackNamespace& ns) {
    size_t total = 0;
    KVCS_RETURN_IF_ERROR(ValidateNamespace(ns, &total));
    WriteNamespace(w, ns);
    return Status::Ok();
  }
  Status operator()(const Namespace& m) { return Suffix(m.suffix); }
  Status operator()(const NamespaceDone& m) { return Suffix(m.suffix); }
  Status operator()(const PublishSkipped& m) {
    FullTrackName ftn{m.suffix, m.track_name};
    KVCS_RETURN_IF_ERROR(ValidateFullTrackName(ftn));
    WriteFullTrackName(w, ftn);
    return Status::Ok();
  }
};

Status CheckProperties(ObjectStatus status, const Properties& props) {
  if (status != ObjectStatus::kNormal && !props.empty()) {
    return MalformedError(WireError::kPropertiesOnNonNormal, "");
  }
  return Status::Ok();
}

}  // namespace

Status WriteControlBody(const ControlMessage& m, WireWriter& w, const WireOptions& options) {
  return std::visit(BodyWriter{w, options}, m);
}

Status AppendControlMessage(const ControlMessage& m, Bytes* out, const WireOptions& options) {
  Bytes body;
  WireWriter bw(&body, options.varint_extra_bytes);
  KVCS_RETURN_IF_ERROR(WriteControlBody(m, bw, options));
  if (body.size() > kMaxControlMessageBody) {
    return MalformedError(WireError::kValueTooLong, "control message body");
  }
  WireWriter w(out, options.varint_extra_bytes);
  w.Varint(static_cast<uint64_t>(MessageTypeOf(m)));
  w.U16(static_cast<uint16_t>(body.size()));
  w.Raw(ByteSpan(body));
  return Status::Ok();
}

Result<Bytes> SerializeControlMessage(const ControlMessage& m, const WireOptions& options) {
  Bytes out;
  KVCS_RETURN_IF_ERROR(AppendControlMessage(m, &out, options));
  return out;
}

Status AppendSubgroupHeader(const SubgroupHeader& h, Bytes* out, const WireOptions& options) {
  if (h.id_mode != SubgroupIdMode::kExplicit && h.subgroup_id != 0) {
    return MalformedError(WireError::kInvalidSubgroupType, "subgroup ID without explicit mode");
  }
  if (static_cast<uint8_t>(h.id_mode) > 2) {
    return MalformedError(WireError::kInvalidSubgroupType, "reserved subgroup ID mode");
  }
  WireWriter w(out, options.varint_extra_bytes);
  out->push_back(SubgroupTypeOf(h));  // always the 1-byte form (value < 128)
  w.Varint(h.track_alias);
  w.Varint(h.group_id);
  if (h.id_mode == SubgroupIdMode::kExplicit) w.Varint(h.subgroup_id);
  if (h.publisher_priority) w.U8(*h.publisher_priority);
  return Status::Ok();
}

Status SubgroupStreamWriter::AppendObjectHeader(uint64_t object_id, ObjectStatus status,
                                                const Properties& properties,
                                                uint64_t payload_length, Bytes* out) {
  if (!IsValidObjectStatus(static_cast<uint64_t>(status))) {
    return MalformedError(WireError::kInvalidObjectStatus, "");
  }
  KVCS_RETURN_IF_ERROR(CheckProperties(status, properties));
  if (!header_.has_properties && !properties.empty()) {
    return MalformedError(WireError::kInvalidSubgroupType, "properties without PROPERTIES flag");
  }
  if (status != ObjectStatus::kNormal && payload_length != 0) {
    return MalformedError(WireError::kPayloadWithStatus, "");
  }
  uint64_t delta = object_id;
  if (prior_object_) {
    if (object_id <= *prior_object_) {
      return MalformedError(WireError::kFetchOutOfOrder, "object IDs must ascend");
    }
    delta = object_id - *prior_object_ - 1;
  }
  Bytes tmp;
  WireWriter w(&tmp, options_.varint_extra_bytes);
  w.Varint(delta);
  if (header_.has_properties) KVCS_RETURN_IF_ERROR(WriteLengthPrefixedProperties(w, properties));
  w.Varint(payload_length);
  if (payload_length == 0) w.Varint(static_cast<uint64_t>(status));
  out->insert(out->end(), tmp.begin(), tmp.end());
  prior_object_ = object_id;
  return Status::Ok();
}

Status SubgroupStreamWriter::AppendObject(uint64_t object_id, ObjectStatus status,
                                          const Properties& properties, ByteSpan payload,
                                          Bytes* out) {
  KVCS_RETURN_IF_ERROR(AppendObjectHeader(object_id, status, properties, payload.size(), out));
  out->insert(out->end(), payload.begin(), payload.end());
  return Status::Ok();
}

Status AppendFetchHeader(const FetchHeader& h, Bytes* out, const WireOptions& options) {
  WireWriter w(out, options.varint_extra_bytes);
  w.Varint(kFetchHeaderType);
  w.Varint(h.request_id);
  return Status::Ok();
}

Status FetchStreamWriter::GroupDelta(uint64_t group, uint64_t* delta) const {
  // REQUIRES: prior_ and group != prior_->group.
  if (order_ == GroupOrder::kAscending) {
    if (group <= prior_->group) {
      return MalformedError(WireError::kFetchOutOfOrder, "groups must ascend");
    }
    *delta = group - prior_->group - 1;
  } else {
    if (group >= prior_->group) {
      return MalformedError(WireError::kFetchOutOfOrder, "groups must descend");
    }
    *delta = prior_->group - group - 1;
  }
  return Status::Ok();
}

Status FetchStreamWriter::AppendObjectHeader(const ObjectHeader& o, Bytes* out) {
  if (o.status != ObjectStatus::kNormal) {
    return MalformedError(WireError::kInvalidObjectStatus, "fetch streams carry no status");
  }
  uint64_t flags = 0;
  uint64_t group_delta = 0, object_delta = 0;
  const Location& loc = o.location;
  if (!prior_) {
    flags |= kFetchFlagGroupIdDelta | kFetchFlagObjectIdDelta;
    group_delta = loc.group;
    object_delta = loc.object;
  } else if (loc.group != prior_->group) {
    KVCS_RETURN_IF_ERROR(GroupDelta(loc.group, &group_delta));
    flags |= kFetchFlagGroupIdDelta;
    if (prior_->object == UINT64_MAX || loc.object != prior_->object + 1) {
      flags |= kFetchFlagObjectIdDelta;
      object_delta = loc.object;
    }
  } else {
    if (loc.object <= prior_->object) {
      return MalformedError(WireError::kFetchOutOfOrder, "object IDs must ascend in a group");
    }
    if (loc.object != prior_->object + 1) {
      flags |= kFetchFlagObjectIdDelta;
      object_delta = loc.object - prior_->object;
    }
  }
  std::optional<uint64_t> explicit_subgroup;
  if (!o.subgroup_id) {
    flags |= kFetchFlagDatagram;
  } else if (prior_subgroup_ && *o.subgroup_id == *prior_subgroup_) {
    flags |= 1;
  } else if (prior_subgroup_ && *prior_subgroup_ != UINT64_MAX &&
             *o.subgroup_id == *prior_subgroup_ + 1) {
    flags |= 2;
  } else if (*o.subgroup_id == 0) {
    // mode 0
  } else {
    flags |= 3;
    explicit_subgroup = *o.subgroup_id;
  }
  if (!o.publisher_priority) {
    return MalformedError(WireError::kFetchReferencesPrior, "fetch objects carry a priority");
  }
  if (!prior_priority_ || *prior_priority_ != *o.publisher_priority) flags |= kFetchFlagPriority;
  if (!o.properties.empty()) flags |= kFetchFlagProperties;

  Bytes tmp;
  WireWriter w(&tmp, options_.varint_extra_bytes);
  w.Varint(flags);
  if (flags & kFetchFlagGroupIdDelta) w.Varint(group_delta);
  if (explicit_subgroup) w.Varint(*explicit_subgroup);
  if (flags & kFetchFlagObjectIdDelta) w.Varint(object_delta);
  if (flags & kFetchFlagPriority) w.U8(*o.publisher_priority);
  if (flags & kFetchFlagProperties) {
    KVCS_RETURN_IF_ERROR(WriteLengthPrefixedProperties(w, o.properties));
  }
  w.Varint(o.payload_length);
  out->insert(out->end(), tmp.begin(), tmp.end());
  prior_ = loc;
  if (o.subgroup_id) prior_subgroup_ = *o.subgroup_id;
  prior_priority_ = *o.publisher_priority;
  return Status::Ok();
}

Status FetchStreamWriter::AppendObject(const ObjectHeader& object, ByteSpan payload, Bytes* out) {
  ObjectHeader h = object;
  h.payload_length = payload.size();
  KVCS_RETURN_IF_ERROR(AppendObjectHeader(h, out));
  out->insert(out->end(), payload.begin(), payload.end());
  return Status::Ok();
}

Status FetchStreamWriter::AppendEndOfRange(const EndOfRange& m, Bytes* out) {
  uint64_t kind = static_cast<uint64_t>(m.kind);
  if (kind != 0x8C && kind != 0x10C && kind != 0x20C) {
    return MalformedError(WireError::kInvalidFetchFlags, "marker kind");
  }
  uint64_t group_field = m.location.group, object_field = m.location.object;
  if (prior_ && options_.end_of_range == EndOfRangeEncoding::kDelta) {
    // The delta reading cannot express a marker inside the prior object's group.
    if (m.location.group == prior_->group) {
      return MalformedError(WireError::kFetchOutOfOrder, "marker in the prior group");
    }
    KVCS_RETURN_IF_ERROR(GroupDelta(m.location.group, &group_field));
  }
  WireWriter w(out, options_.varint_extra_bytes);
  w.Varint(kind);
  w.Varint(group_field);
  w.Varint(object_field);
  w.Varint(0);  // Object Payload Length, always 0 on a marker
  prior_ = m.location;
  return Status::Ok();
}

Status AppendObjectDatagram(const ObjectDatagram& d, ByteSpan payload, Bytes* out,
                            const WireOptions& options) {
  uint8_t type = 0;
  if (!d.properties.empty()) type |= kDatagramFlagProperties;
  if (d.end_of_group) type |= kDatagramFlagEndOfGroup;
  if (d.location.object == 0) type |= kDatagramFlagZeroObjectId;
  if (!d.publisher_priority) type |= kDatagramFlagDefaultPriority;
  if (d.status) {
    type |= kDatagramFlagStatus;
    if (!IsValidObjectStatus(static_cast<uint64_t>(*d.status))) {
      return MalformedError(WireError::kInvalidObjectStatus, "");
    }
    if (!payload.empty()) return MalformedError(WireError::kPayloadWithStatus, "");
    KVCS_RETURN_IF_ERROR(CheckProperties(*d.status, d.properties));
  }
  if (!IsValidDatagramType(type)) {
    return MalformedError(WireError::kInvalidDatagramType, "STATUS with END_OF_GROUP");
  }
  Bytes tmp;
  WireWriter w(&tmp, options.varint_extra_bytes);
  tmp.push_back(type);
  w.Varint(d.track_alias);
  w.Varint(d.location.group);
  if (d.location.object != 0) w.Varint(d.location.object);
  if (d.publisher_priority) w.U8(*d.publisher_priority);
  if (!d.properties.empty()) KVCS_RETURN_IF_ERROR(WriteLengthPrefixedProperties(w, d.properties));
  if (d.status) w.Varint(static_cast<uint64_t>(*d.status));
  w.Raw(payload);
  out->insert(out->end(), tmp.begin(), tmp.end());
  return Status::Ok();
}

void AppendPaddingDatagram(size_t zero_bytes, Bytes* out) {
  AppendVarint(out, kPaddingDatagramType);
  out->resize(out->size() + zero_bytes, 0);
}

void AppendPaddingStreamHeader(Bytes* out) { AppendVarint(out, kPaddingStreamType); }

}  // namespace kvcs::moqt
