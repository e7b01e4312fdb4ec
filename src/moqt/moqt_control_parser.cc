#include "moqt/moqt_control_parser.h"

#include "moqt/moqt_error.h"
#include "moqt/moqt_fields.h"
#include "moqt/moqt_key_value.h"
#include "moqt/moqt_limits.h"
#include "moqt/moqt_parameters.h"
#include "moqt/moqt_wire_io.h"

namespace kvcs::moqt {
namespace {

// Track Properties: a KVP list filling the rest of the body.
Status ReadTrackProperties(WireReader& r, Properties* out) {
  KVCS_RETURN_IF_ERROR(ParseKvpList(r.rest(), out));
  r.Skip(r.remaining());
  return Status::Ok();
}

Status ParseBody(MessageType type, WireReader& r, const WireOptions& o, ControlMessage* out) {
  switch (type) {
    case MessageType::kSetup: {
      std::vector<KeyValuePair> kvps;
      KVCS_RETURN_IF_ERROR(ParseKvpList(r.rest(), &kvps));
      r.Skip(r.remaining());
      Setup m;
      KVCS_RETURN_IF_ERROR(SetupOptionsFromKvps(kvps, &m.options));
      *out = std::move(m);
      return Status::Ok();
    }
    case MessageType::kGoAway: {
      GoAway m;
      KVCS_RETURN_IF_ERROR(
          ReadBoundedString(r, kMaxUriBytes, WireError::kUriTooLong, &m.new_session_uri));
      MOQT_READ(r.Varint(&m.timeout_ms));
      *out = std::move(m);
      return Status::Ok();
    }
    case MessageType::kRequestOk: {
      RequestOk m;
      KVCS_RETURN_IF_ERROR(ReadParameters(r, ParamScope::kRequestOk, o, &m.params));
      KVCS_RETURN_IF_ERROR(ReadTrackProperties(r, &m.track_properties));
      *out = std::move(m);
      return Status::Ok();
    }
    case MessageType::kRequestError: {
      RequestError m;
      MOQT_READ(r.Varint(&m.error_code));
      MOQT_READ(r.Varint(&m.retry_interval));
      KVCS_RETURN_IF_ERROR(
          ReadBoundedString(r, kMaxReasonPhraseBytes, WireError::kReasonPhraseTooLong, &m.reason));
      if (m.error_code == static_cast<uint64_t>(RequestErrorCode::kRedirect)) {
        Redirect& rd = m.redirect.emplace();
        KVCS_RETURN_IF_ERROR(
            ReadBoundedString(r, kMaxUriBytes, WireError::kUriTooLong, &rd.connect_uri));
        FullTrackName ftn;
        KVCS_RETURN_IF_ERROR(ReadFullTrackName(r, &ftn));
        rd.track_namespace = std::move(ftn.track_namespace);
        rd.track_name = std::move(ftn.name);
      }
      *out = std::move(m);
      return Status::Ok();
    }
    case MessageType::kSubscribe:
    case MessageType::kFetch:
    case MessageType::kTrackStatus: {
      uint64_t id;
      FullTrackName track;
      MessageParameters params;
      MOQT_READ(r.Varint(&id));
      KVCS_RETURN_IF_ERROR(ReadFullTrackName(r, &track));
      ParamScope scope = type == MessageType::kSubscribe ? ParamScope::kSubscribe
                         : type == MessageType::kFetch   ? ParamScope::kFetch
                                                         : ParamScope::kTrackStatus;
      KVCS_RETURN_IF_ERROR(ReadParameters(r, scope, o, &params));
      if (type == MessageType::kSubscribe) {
        *out = Subscribe{id, std::move(track), std::move(params)};
      } else if (type == MessageType::kFetch) {
        *out = Fetch{id, std::move(track), std::move(params)};
      } else {
        *out = TrackStatus{id, std::move(track), std::move(params)};
      }
      return Status::Ok();
    }
    case MessageType::kSubscribeOk: {
      SubscribeOk m;
      MOQT_READ(r.Varint(&m.track_alias));
      KVCS_RETURN_IF_ERROR(ReadParameters(r, ParamScope::kSubscribeOk, o, &m.params));
      KVCS_RETURN_IF_ERROR(ReadTrackProperties(r, &m.track_properties));
      *out = std::move(m);
      return Status::Ok();
    }
    case MessageType::kRequestUpdate: {
      RequestUpdate m;
      MOQT_READ(r.Varint(&m.request_id));
      KVCS_RETURN_IF_ERROR(ReadParameters(r, ParamScope::kRequestUpdate, o, &m.params));
      *out = std::move(m);
      return Status::Ok();
    }
    case MessageType::kPublishStateNotify: {
      PublishStateNotify m;
      KVCS_RETURN_IF_ERROR(ReadParameters(r, ParamScope::kPublishStateNotify, o, &m.params));
      *out = std::move(m);
      return Status::Ok();
    }
    case MessageType::kPublish: {
      Publish m;
      MOQT_READ(r.Varint(&m.request_id));
      KVCS_RETURN_IF_ERROR(ReadFullTrackName(r, &m.track));
      MOQT_READ(r.Varint(&m.track_alias));
      KVCS_RETURN_IF_ERROR(ReadParameters(r, ParamScope::kPublish, o, &m.params));
      KVCS_RETURN_IF_ERROR(ReadTrackProperties(r, &m.track_properties));
      *out = std::move(m);
      return Status::Ok();
    }
    case MessageType::kPublishDone: {
      PublishDone m;
      MOQT_READ(r.Varint(&m.status_code));
      MOQT_READ(r.Varint(&m.stream_count));
      KVCS_RETURN_IF_ERROR(
          ReadBoundedString(r, kMaxReasonPhraseBytes, WireError::kReasonPhraseTooLong, &m.reason));
      *out = std::move(m);
      return Status::Ok();
    }
    case MessageType::kFetchOk: {
      FetchOk m;
      uint8_t eot;
      MOQT_READ(r.U8(&eot));
      if (eot > 1) return MalformedError(WireError::kBadEnumValue, "End Of Track");
      m.end_of_track = eot == 1;
      KVCS_RETURN_IF_ERROR(ReadLocation(r, &m.end_location));
      KVCS_RETURN_IF_ERROR(ReadParameters(r, ParamScope::kFetchOk, o, &m.params));
      KVCS_RETURN_IF_ERROR(ReadTrackProperties(r, &m.track_properties));
      *out = std::move(m);
      return Status::Ok();
    }
    case MessageType::kPublishNamespace:
    case MessageType::kSubscribeNamespace:
    case MessageType::kSubscribeTracks: {
      uint64_t id;
      TrackNamespace ns;
      MessageParameters params;
      size_t total = 0;
      MOQT_READ(r.Varint(&id));
      KVCS_RETURN_IF_ERROR(ReadNamespace(r, &ns, &total));
      ParamScope scope = type == MessageType::kPublishNamespace ? ParamScope::kPublishNamespace
                         : type == MessageType::kSubscribeNamespace
                             ? ParamScope::kSubscribeNamespace
                             : ParamScope::kSubscribeTracks;
      KVCS_RETURN_IF_ERROR(ReadParameters(r, scope, o, &params));
      if (type == MessageType::kPublishNamespace) {
        *out = PublishNamespace{id, std::move(ns), std::move(params)};
      } else if (type == MessageType::kSubscribeNamespace) {
        *out = SubscribeNamespace{id, std::move(ns), std::move(params)};
      } else {
        *out = SubscribeTracks{id, std::move(ns), std::move(params)};
      }
      return Status::Ok();
    }
    case MessageType::kNamespace:
    case MessageType::kNamespaceDone: {
      TrackNamespace ns;
      size_t total = 0;
      KVCS_RETURN_IF_ERROR(ReadNamespace(r, &ns, &total));
      if (type == MessageType::kNamespace) {
        *out = Namespace{std::move(ns)};
      } else {
        *out = NamespaceDone{std::move(ns)};
      }
      return Status::Ok();
    }
    case MessageType::kPublishSkipped: {
      FullTrackName ftn;
      KVCS_RETURN_IF_ERROR(ReadFullTrackName(r, &ftn));
      *out = PublishSkipped{std::move(ftn.track_namespace), std::move(ftn.name)};
      return Status::Ok();
    }
  }
  return MalformedError(WireError::kUnknownMessageType, "");
}

}  // namespace

Result<ControlMessage> ParseControlMessageBody(uint64_t type, ByteSpan body,
                                               const WireOptions& options) {
  if (!IsKnownMessageType(type)) {
    return MalformedError(WireError::kUnknownMessageType, "type " + std::to_string(type));
  }
  if (body.size() > kMaxControlMessageBody) {
    return MalformedError(WireError::kValueTooLong, "control message body");
  }
  WireReader r(body);
  ControlMessage m;
  Status s = ParseBody(static_cast<MessageType>(type), r, options, &m);
  if (s.code() == Code::kNeedMoreData) {
    return MalformedError(WireError::kBodyTooShort,
                          std::string(MessageTypeName(static_cast<MessageType>(type))));
  }
  KVCS_RETURN_IF_ERROR(s);
  if (!r.empty()) {
    return MalformedError(WireError::kTrailingData,
                          std::string(MessageTypeName(static_cast<MessageType>(type))));
  }
  return m;
}

Result<ControlMessage> ControlStreamParser::Next() {
  if (!error_.ok()) return error_;
  Result<RawControlMessage> raw = unframer_.Next();
  if (!raw.ok()) {
    if (raw.status().code() != Code::kNeedMoreData) error_ = raw.status();
    return raw.status();
  }
  Result<ControlMessage> m = ParseControlMessageBody(raw->type, raw->body, options_);
  if (!m.ok()) error_ = m.status();
  return m;
}

}  // namespace kvcs::moqt
