// Every MOQT draft-22 wire code in one place, plus the codec's typed parse errors.
//
// Wire registries (draft §12.2–12.5): session termination codes (CONNECTION_CLOSE), REQUEST_ERROR
// codes, PUBLISH_DONE status codes and stream reset / STOP_SENDING codes. Unknown codes (grease
// included) are read as INTERNAL_ERROR and never close a session by themselves.
//
// Codec errors: a decoder returns Status with Code::kNeedMoreData when it ran out of bytes (not an
// error yet) or Code::kInvalidArgument with a WireError detail when the bytes are malformed.
// DispositionOf() maps a malformed-input Status to what the session must do: close the session
// with a code, or answer the request with REQUEST_ERROR. Pure functions, thread-safe.
#ifndef KVCS_MOQT_MOQT_ERROR_H_
#define KVCS_MOQT_MOQT_ERROR_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace kvcs::moqt {

// draft §12.2: session termination (QUIC CONNECTION_CLOSE application error codes).
enum class SessionError : uint64_t {
  kNoError = 0x0,
  kInternalError = 0x1,
  kUnauthorized = 0x2,
  kProtocolViolation = 0x3,
  kInvalidRequestId = 0x4,
  kDuplicateTrackAlias = 0x5,
  kKeyValueFormattingError = 0x6,
  kInvalidPath = 0x8,
  kMalformedPath = 0x9,
  kGoawayTimeout = 0x10,
  kControlMessageTimeout = 0x11,
  kDataStreamTimeout = 0x12,
  kAuthTokenCacheOverflow = 0x13,
  kDuplicateAuthTokenAlias = 0x14,
  kMalformedAuthToken = 0x16,
  kUnknownAuthTokenAlias = 0x17,
  kExpiredAuthToken = 0x18,
  kInvalidAuthority = 0x19,
  kMalformedAuthority = 0x1A,
  kTooManyRequestUpdates = 0x1B,
};

// draft §12.3: REQUEST_ERROR codes.
enum class RequestErrorCode : uint64_t {
  kInternalError = 0x0,
  kUnauthorized = 0x1,
  kTimeout = 0x2,
  kNotSupported = 0x3,
  kMalformedAuthToken = 0x4,
  kExpiredAuthToken = 0x5,
  kGoingAway = 0x6,
  kExcessiveLoad = 0x9,
  kDoesNotExist = 0x10,
  kInvalidRange = 0x11,
  kMalformedTrack = 0x12,
  kUninterested = 0x20,
  kPrefixOverlap = 0x30,
  kNamespaceTooLarge = 0x31,
  kUnsupportedExtension = 0x33,
  kRedirect = 0x34,
  kConflictingFilters = 0x35,
  kInvalidFilter = 0x36,
};

// draft §12.4: PUBLISH_DONE status codes.
enum class PublishDoneCode : uint64_t {
  kInternalError = 0x0,
  kUnauthorized = 0x1,
  kTrackEnded = 0x2,
  kGoingAway = 0x4,
  kTooFarBehind = 0x5,
  kExpired = 0x6,
  kUpdateFailed = 0x8,
  kExcessiveLoad = 0x9,
  kMalformedTrack = 0x12,
};

// draft §12.5: RESET_STREAM / STOP_SENDING codes.
enum class StreamResetCode : uint64_t {
  kInternalError = 0x0,
  kCancelled = 0x1,
  kDeliveryTimeout = 0x2,
  kSessionClosed = 0x3,
  kGoingAway = 0x4,
  kTooFarBehind = 0x5,
  kUnknownObjectStatus = 0x6,
  kExpiredAuthToken = 0x7,
  kExcessiveLoad = 0x9,
  kMalformedTrack = 0x12,
};

// draft §13: grease codepoints 0x7f*N + 0x9D (N >= 0).
constexpr bool IsGrease(uint64_t v) { return v >= 0x9D && (v - 0x9D) % 0x7F == 0; }
constexpr uint64_t GreaseValue(uint64_t n) { return 0x7F * n + 0x9D; }

// Wire value -> enum; values not in the registry (grease included) become INTERNAL_ERROR.
SessionError SessionErrorFromWire(uint64_t v);
RequestErrorCode RequestErrorCodeFromWire(uint64_t v);
PublishDoneCode PublishDoneCodeFromWire(uint64_t v);
StreamResetCode StreamResetCodeFromWire(uint64_t v);
std::string_view SessionErrorName(SessionError e);
std::string_view RequestErrorCodeName(RequestErrorCode e);

// The typed detail of a malformed-input Status from this codec.
enum class WireError : int {
  kNone = 0,
  // framing and message types
  kUnknownMessageType = 1,
  kBodyTooShort,   // a field ran past the declared body length
  kTrailingData,   // bytes left after the last field of a body / datagram
  kFinMidMessage,  // the control stream ended inside a message
  // fields
  kBadEnumValue,  // a field outside its defined values (group order, forward, flags...)
  kTooManyNamespaceFields,
  kEmptyNamespaceField,
  kFullTrackNameTooLong,
  kReasonPhraseTooLong,
  kUriTooLong,
  kValueTooLong,     // a length-prefixed value above its bound
  kIntegerOverflow,  // a delta or sum past 2^64-1 (or below 0)
  // parameters
  kUnknownParameter,
  kParameterNotAllowed,  // a known parameter in a message that does not list it
  kDuplicateParameter,
  kTooManyParameters,
  kInvalidLocationFilter,
  kInvalidFilter,  // range-filter content error: REQUEST_ERROR INVALID_FILTER, not a close
  // key-value pairs, tokens and setup options
  kLengthMismatch,  // a length-bounded value (KVP list, token, filter) does not fill its length
  kTooManyPairs,
  kMalformedKeyValue,   // a known option/property value in the wrong format
  kMalformedAuthToken,  // an undecodable Token (KEY_VALUE_FORMATTING_ERROR)
  kDuplicateSetupOption,
  // data streams and datagrams
  kUnknownStreamType,
  kUnexpectedStreamType,  // a known stream type this parser does not handle (control stream)
  kInvalidSubgroupType,
  kInvalidDatagramType,
  kInvalidFetchFlags,
  kInvalidObjectStatus,
  kPropertiesOnNonNormal,
  kEmptyDatagramProperties,
  kPayloadWithStatus,
  kFetchReferencesPrior,  // a fetch object referring to a prior object that does not exist
  kFetchOutOfOrder,       // an object ID not above the prior one in the same group
  kFinMidObject,
  kNonZeroPadding,
  kUnitTooLong,
};

std::string_view WireErrorName(WireError e);

// A Code::kInvalidArgument Status carrying e.
Status MalformedError(WireError e, std::string_view what);
// The WireError of s (kNone when s carries none).
WireError WireErrorOf(const Status& s);

// What a session does with a malformed-input Status from this codec.
struct ErrorDisposition {
  bool close_session = true;  // false: answer the request with REQUEST_ERROR request_code
  SessionError session_code = SessionError::kProtocolViolation;
  RequestErrorCode request_code = RequestErrorCode::kInternalError;
};
ErrorDisposition DispositionOf(const Status& s);

}  // namespace kvcs::moqt

#endif  // KVCS_MOQT_MOQT_ERROR_H_
