#include "moqt/moqt_error.h"

namespace kvcs::moqt {

SessionError SessionErrorFromWire(uint64_t v) {
  switch (v) {
    case 0x0:
    case 0x1:
    case 0x2:
    case 0x3:
    case 0x4:
    case 0x5:
    case 0x6:
    case 0x8:
    case 0x9:
    case 0x10:
    case 0x11:
    case 0x12:
    case 0x13:
    case 0x14:
    case 0x16:
    case 0x17:
    case 0x18:
    case 0x19:
    case 0x1A:
    case 0x1B:
      return static_cast<SessionError>(v);
    default:
      return SessionError::kInternalError;
  }
}

RequestErrorCode RequestErrorCodeFromWire(uint64_t v) {
  switch (v) {
    case 0x0:
    case 0x1:
    case 0x2:
    case 0x3:
    case 0x4:
    case 0x5:
    case 0x6:
    case 0x9:
    case 0x10:
    case 0x11:
    case 0x12:
    case 0x20:
    case 0x30:
    case 0x31:
    case 0x33:
    case 0x34:
    case 0x35:
    case 0x36:
      return static_cast<RequestErrorCode>(v);
    default:
      return RequestErrorCode::kInternalError;
  }
}

PublishDoneCode PublishDoneCodeFromWire(uint64_t v) {
  switch (v) {
    case 0x0:
    case 0x1:
    case 0x2:
    case 0x4:
    case 0x5:
    case 0x6:
    case 0x8:
    case 0x9:
    case 0x12:
      return static_cast<PublishDoneCode>(v);
    default:
      return PublishDoneCode::kInternalError;
  }
}

StreamResetCode StreamResetCodeFromWire(uint64_t v) {
  switch (v) {
    case 0x0:
    case 0x1:
    case 0x2:
    case 0x3:
    case 0x4:
    case 0x5:
    case 0x6:
    case 0x7:
    case 0x9:
    case 0x12:
      return static_cast<StreamResetCode>(v);
    default:
      return StreamResetCode::kInternalError;
  }
}

std::string_view SessionErrorName(SessionError e) {
  switch (e) {
    case SessionError::kNoError:
      return "NO_ERROR";
    case SessionError::kInternalError:
      return "INTERNAL_ERROR";
    case SessionError::kUnauthorized:
      return "UNAUTHORIZED";
    case SessionError::kProtocolViolation:
      return "PROTOCOL_VIOLATION";
    case SessionError::kInvalidRequestId:
      return "INVALID_REQUEST_ID";
    case SessionError::kDuplicateTrackAlias:
      return "DUPLICATE_TRACK_ALIAS";
    case SessionError::kKeyValueFormattingError:
      return "KEY_VALUE_FORMATTING_ERROR";
    case SessionError::kInvalidPath:
      return "INVALID_PATH";
    case SessionError::kMalformedPath:
      return "MALFORMED_PATH";
    case SessionError::kGoawayTimeout:
      return "GOAWAY_TIMEOUT";
    case SessionError::kControlMessageTimeout:
      return "CONTROL_MESSAGE_TIMEOUT";
    case SessionError::kDataStreamTimeout:
      return "DATA_STREAM_TIMEOUT";
    case SessionError::kAuthTokenCacheOverflow:
      return "AUTH_TOKEN_CACHE_OVERFLOW";
    case SessionError::kDuplicateAuthTokenAlias:
      return "DUPLICATE_AUTH_TOKEN_ALIAS";
    case SessionError::kMalformedAuthToken:
      return "MALFORMED_AUTH_TOKEN";
    case SessionError::kUnknownAuthTokenAlias:
      return "UNKNOWN_AUTH_TOKEN_ALIAS";
    case SessionError::kExpiredAuthToken:
      return "EXPIRED_AUTH_TOKEN";
    case SessionError::kInvalidAuthority:
      return "INVALID_AUTHORITY";
    case SessionError::kMalformedAuthority:
      return "MALFORMED_AUTHORITY";
    case SessionError::kTooManyRequestUpdates:
      return "TOO_MANY_REQUEST_UPDATES";
  }
  return "UNKNOWN";
}

std::string_view RequestErrorCodeName(RequestErrorCode e) {
  switch (e) {
    case RequestErrorCode::kInternalError:
      return "INTERNAL_ERROR";
    case RequestErrorCode::kUnauthorized:
      return "UNAUTHORIZED";
    case RequestErrorCode::kTimeout:
      return "TIMEOUT";
    case RequestErrorCode::kNotSupported:
      return "NOT_SUPPORTED";
    case RequestErrorCode::kMalformedAuthToken:
      return "MALFORMED_AUTH_TOKEN";
    case RequestErrorCode::kExpiredAuthToken:
      return "EXPIRED_AUTH_TOKEN";
    case RequestErrorCode::kGoingAway:
      return "GOING_AWAY";
    case RequestErrorCode::kExcessiveLoad:
      return "EXCESSIVE_LOAD";
    case RequestErrorCode::kDoesNotExist:
      return "DOES_NOT_EXIST";
    case RequestErrorCode::kInvalidRange:
      return "INVALID_RANGE";
    case RequestErrorCode::kMalformedTrack:
      return "MALFORMED_TRACK";
    case RequestErrorCode::kUninterested:
      return "UNINTERESTED";
    case RequestErrorCode::kPrefixOverlap:
      return "PREFIX_OVERLAP";
    case RequestErrorCode::kNamespaceTooLarge:
      return "NAMESPACE_TOO_LARGE";
    case RequestErrorCode::kUnsupportedExtension:
      return "UNSUPPORTED_EXTENSION";
    case RequestErrorCode::kRedirect:
      return "REDIRECT";
    case RequestErrorCode::kConflictingFilters:
      return "CONFLICTING_FILTERS";
    case RequestErrorCode::kInvalidFilter:
      return "INVALID_FILTER";
  }
  return "UNKNOWN";
}

std::string_view WireErrorName(WireError e) {
  switch (e) {
    case WireError::kNone:
      return "none";
    case WireError::kUnknownMessageType:
      return "unknown message type";
    case WireError::kBodyTooShort:
      return "body too short";
    case WireError::kTrailingData:
      return "trailing data";
    case WireError::kFinMidMessage:
      return "FIN inside a control message";
    case WireError::kBadEnumValue:
      return "value outside its defined set";
    case WireError::kTooManyNamespaceFields:
      return "too many namespace fields";
    case WireError::kEmptyNamespaceField:
      return "empty namespace field";
    case WireError::kFullTrackNameTooLong:
      return "full track name too long";
    case WireError::kReasonPhraseTooLong:
      return "reason phrase too long";
    case WireError::kUriTooLong:
      return "URI too long";
    case WireError::kValueTooLong:
      return "value too long";
    case WireError::kIntegerOverflow:
      return "integer overflow";
    case WireError::kUnknownParameter:
      return "unknown parameter";
    case WireError::kParameterNotAllowed:
      return "parameter not allowed in this message";
    case WireError::kDuplicateParameter:
      return "duplicate parameter";
    case WireError::kTooManyParameters:
      return "too many parameters";
    case WireError::kInvalidLocationFilter:
      return "invalid location filter";
    case WireError::kInvalidFilter:
      return "invalid range filter";
    case WireError::kLengthMismatch:
      return "value does not match its declared length";
    case WireError::kTooManyPairs:
      return "too many key-value pairs";
    case WireError::kMalformedKeyValue:
      return "malformed key-value value";
    case WireError::kMalformedAuthToken:
      return "malformed authorization token";
    case WireError::kDuplicateSetupOption:
      return "duplicate setup option";
    case WireError::kUnknownStreamType:
      return "unknown stream type";
    case WireError::kUnexpectedStreamType:
      return "unexpected stream type";
    case WireError::kInvalidSubgroupType:
      return "invalid subgroup header type";
    case WireError::kInvalidDatagramType:
      return "invalid datagram type";
    case WireError::kInvalidFetchFlags:
      return "invalid fetch serialization flags";
    case WireError::kInvalidObjectStatus:
      return "invalid object status";
    case WireError::kPropertiesOnNonNormal:
      return "properties on a non-Normal object";
    case WireError::kEmptyDatagramProperties:
      return "empty datagram properties";
    case WireError::kPayloadWithStatus:
      return "payload on a status object";
    case WireError::kFetchReferencesPrior:
      return "fetch object references a missing prior";
    case WireError::kFetchOutOfOrder:
      return "fetch object out of order";
    case WireError::kFinMidObject:
      return "FIN inside an object";
    case WireError::kNonZeroPadding:
      return "non-zero padding";
    case WireError::kUnitTooLong:
      return "header unit too long";
  }
  return "unknown";
}

Status MalformedError(WireError e, std::string_view what) {
  std::string_view name = WireErrorName(e);
  std::string m;
  m.reserve(6 + name.size() + 2 + what.size());
  m.append("moqt: ").append(name);
  if (!what.empty()) m.append(": ").append(what);
  return InvalidArgument(std::move(m), static_cast<int>(e));
}

WireError WireErrorOf(const Status& s) {
  if (s.code() != Code::kInvalidArgument) return WireError::kNone;
  return static_cast<WireError>(s.detail());
}

ErrorDisposition DispositionOf(const Status& s) {
  ErrorDisposition d;
  switch (WireErrorOf(s)) {
    case WireError::kInvalidFilter:
      d.close_session = false;
      d.request_code = RequestErrorCode::kInvalidFilter;
      break;
    case WireError::kMalformedKeyValue:
    case WireError::kMalformedAuthToken:
      d.session_code = SessionError::kKeyValueFormattingError;
      break;
    default:
      d.session_code = SessionError::kProtocolViolation;
  }
  return d;
}

}  // namespace kvcs::moqt
