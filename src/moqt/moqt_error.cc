#include "moqt/moqt_error.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace kvcs::moqt {

namespace {

// One row per registered code: the enum's wire value and its name in the draft's tables. Each
// table drives both directions (wire value -> enum, enum -> name), so a code is added in one place.
struct CodeName {
  uint64_t code;
  std::string_view name;
};

constexpr CodeName kSessionErrors[] = {
    {0x0, "NO_ERROR"},
    {0x1, "INTERNAL_ERROR"},
    {0x2, "UNAUTHORIZED"},
    {0x3, "PROTOCOL_VIOLATION"},
    {0x4, "INVALID_REQUEST_ID"},
    {0x5, "DUPLICATE_TRACK_ALIAS"},
    {0x6, "KEY_VALUE_FORMATTING_ERROR"},
    {0x8, "INVALID_PATH"},
    {0x9, "MALFORMED_PATH"},
    {0x10, "GOAWAY_TIMEOUT"},
    {0x11, "CONTROL_MESSAGE_TIMEOUT"},
    {0x12, "DATA_STREAM_TIMEOUT"},
    {0x13, "AUTH_TOKEN_CACHE_OVERFLOW"},
    {0x14, "DUPLICATE_AUTH_TOKEN_ALIAS"},
    {0x16, "MALFORMED_AUTH_TOKEN"},
    {0x17, "UNKNOWN_AUTH_TOKEN_ALIAS"},
    {0x18, "EXPIRED_AUTH_TOKEN"},
    {0x19, "INVALID_AUTHORITY"},
    {0x1A, "MALFORMED_AUTHORITY"},
    {0x1B, "TOO_MANY_REQUEST_UPDATES"},
};

constexpr CodeName kRequestErrors[] = {
    {0x0, "INTERNAL_ERROR"},  {0x1, "UNAUTHORIZED"},         {0x2, "TIMEOUT"},
    {0x3, "NOT_SUPPORTED"},   {0x4, "MALFORMED_AUTH_TOKEN"}, {0x5, "EXPIRED_AUTH_TOKEN"},
    {0x6, "GOING_AWAY"},      {0x9, "EXCESSIVE_LOAD"},       {0x10, "DOES_NOT_EXIST"},
    {0x11, "INVALID_RANGE"},  {0x12, "MALFORMED_TRACK"},     {0x20, "UNINTERESTED"},
    {0x30, "PREFIX_OVERLAP"}, {0x31, "NAMESPACE_TOO_LARGE"}, {0x33, "UNSUPPORTED_EXTENSION"},
    {0x34, "REDIRECT"},       {0x35, "CONFLICTING_FILTERS"}, {0x36, "INVALID_FILTER"},
};

// Names are not needed for these two; only the registered values are.
constexpr uint64_t kPublishDoneCodes[] = {0x0, 0x1, 0x2, 0x4, 0x5, 0x6, 0x8, 0x9, 0x12};
constexpr uint64_t kStreamResetCodes[] = {0x0, 0x1, 0x2, 0x3, 0x4, 0x5, 0x6, 0x7, 0x9, 0x12};

template <size_t N>
const CodeName* Find(const CodeName (&table)[N], uint64_t code) {
  for (const CodeName& row : table) {
    if (row.code == code) return &row;
  }
  return nullptr;
}

template <size_t N>
bool Registered(const uint64_t (&table)[N], uint64_t code) {
  for (uint64_t c : table) {
    if (c == code) return true;
  }
  return false;
}

}  // namespace

SessionError SessionErrorFromWire(uint64_t v) {
  return Find(kSessionErrors, v) ? static_cast<SessionError>(v) : SessionError::kInternalError;
}

RequestErrorCode RequestErrorCodeFromWire(uint64_t v) {
  return Find(kRequestErrors, v) ? static_cast<RequestErrorCode>(v)
                                 : RequestErrorCode::kInternalError;
}

PublishDoneCode PublishDoneCodeFromWire(uint64_t v) {
  return Registered(kPublishDoneCodes, v) ? static_cast<PublishDoneCode>(v)
                                          : PublishDoneCode::kInternalError;
}

StreamResetCode StreamResetCodeFromWire(uint64_t v) {
  return Registered(kStreamResetCodes, v) ? static_cast<StreamResetCode>(v)
                                          : StreamResetCode::kInternalError;
}

std::string_view SessionErrorName(SessionError e) {
  const CodeName* row = Find(kSessionErrors, static_cast<uint64_t>(e));
  return row ? row->name : "UNKNOWN";
}

std::string_view RequestErrorCodeName(RequestErrorCode e) {
  const CodeName* row = Find(kRequestErrors, static_cast<uint64_t>(e));
  return row ? row->name : "UNKNOWN";
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
