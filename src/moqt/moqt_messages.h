// MOQT draft-22 wire structures: plain structs, one per control message, parameter value and
// data-plane header. No behaviour beyond comparison and naming; the framer writes them, the
// parsers produce them. Byte strings (namespace fields, names, URIs, token values) are held in
// std::string as raw bytes. Value types, thread-compatible.
#ifndef KVCS_MOQT_MOQT_MESSAGES_H_
#define KVCS_MOQT_MOQT_MESSAGES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace kvcs::moqt {

// ---------------------------------------------------------------- common types

// {Group, Object}; ordered lexicographically.
struct Location {
  uint64_t group = 0;
  uint64_t object = 0;
  auto operator<=>(const Location&) const = default;
};

// 0..32 fields of at least one byte each (draft §8.7).
using TrackNamespace = std::vector<std::string>;

struct FullTrackName {
  TrackNamespace track_namespace;
  std::string name;
  bool operator==(const FullTrackName&) const = default;
};

// A Key-Value-Pair (draft §8.3): even type -> one vi64 `value`; odd type -> `bytes`.
struct KeyValuePair {
  uint64_t type = 0;
  uint64_t value = 0;  // even types only
  std::string bytes;   // odd types only
  bool operator==(const KeyValuePair&) const = default;
  static KeyValuePair Int(uint64_t type, uint64_t v) { return {type, v, {}}; }
  static KeyValuePair Blob(uint64_t type, std::string b) { return {type, 0, std::move(b)}; }
};

// Track or Object Properties: a KVP list in ascending type order (draft §10).
using Properties = std::vector<KeyValuePair>;

// Property types (draft §10).
enum class PropertyType : uint64_t {
  kObjectDeliveryTimeout = 0x02,
  kMaxCacheDuration = 0x04,
  kSubgroupDeliveryTimeout = 0x06,
  kImmutableProperties = 0x0B,
  kDefaultPublisherPriority = 0x0E,
  kDefaultPublisherGroupOrder = 0x22,
  kDynamicGroups = 0x30,
  kPriorGroupIdGap = 0x3C,
  kPriorObjectIdGap = 0x3E,
};

enum class GroupOrder : uint8_t { kAscending = 1, kDescending = 2 };

// ---------------------------------------------------------------- parameter values

enum class AuthTokenAliasType : uint64_t {
  kDelete = 0x0,    // alias only
  kRegister = 0x1,  // alias + type + value
  kUseAlias = 0x2,  // alias only
  kUseValue = 0x3,  // type + value
};

// AUTHORIZATION_TOKEN value (draft §8.9). Fields not carried by alias_type are zero/empty.
struct AuthToken {
  AuthTokenAliasType alias_type = AuthTokenAliasType::kUseValue;
  uint64_t alias = 0;
  uint64_t token_type = 0;
  std::string value;
  bool operator==(const AuthToken&) const = default;
};

enum class LocationFilterType : uint64_t {
  kNone = 0x00,
  kRelativeStart = 0x01,          // StartGroup
  kAbsoluteStart = 0x02,          // StartGroup, StartObject
  kAbsoluteStartGroupEnd = 0x03,  // + EndGroupDelta
  kAbsoluteRange = 0x04,          // + EndObject
  kNextObject = 0x05,
};

// LOCATION_FILTER value (draft §9.20.9, -22 typed form). Fields the type does not carry are
// ignored when encoding and zero after decoding.
struct LocationFilter {
  LocationFilterType type = LocationFilterType::kNone;
  uint64_t start_group = 0;
  uint64_t start_object = 0;
  uint64_t end_group_delta = 0;
  uint64_t end_object = 0;
  bool operator==(const LocationFilter&) const = default;
};

// One inclusive range of a range filter, in absolute values; `end` absent = open-ended (last
// range only).
struct FilterRange {
  uint64_t start = 0;
  std::optional<uint64_t> end;
  bool operator==(const FilterRange&) const = default;
};

// A range filter parameter (0x25..0x29, draft §8.6). `remove` = the zero-length form (removes the
// filter in REQUEST_UPDATE); then nothing else is carried.
struct RangeFilter {
  bool remove = false;
  uint8_t set_id = 0;
  uint64_t property_type = 0;  // OBJECT_/TRACK_PROPERTY_FILTER only (must be even)
  std::vector<FilterRange> ranges;
  bool operator==(const RangeFilter&) const = default;
};

struct RangeFilters {
  std::vector<RangeFilter> subgroup;         // 0x25
  std::vector<RangeFilter> object_id;        // 0x26
  std::vector<RangeFilter> priority;         // 0x27
  std::vector<RangeFilter> object_property;  // 0x28
  std::vector<RangeFilter> track_property;   // 0x29
  bool operator==(const RangeFilters&) const = default;
  bool empty() const {
    return subgroup.empty() && object_id.empty() && priority.empty() && object_property.empty() &&
           track_property.empty();
  }
};

// FILL_PARAMETERS (0x23) value: its own parameter scope (draft §9.20.15, Table 7).
struct FillParameters {
  std::optional<uint64_t> fill_timeout_ms;        // 0x0A
  std::optional<uint8_t> subscriber_priority;     // 0x20
  std::optional<LocationFilter> location_filter;  // 0x21
  std::optional<GroupOrder> group_order;          // 0x22
  RangeFilters range_filters;                     // 0x25..0x28
  bool operator==(const FillParameters&) const = default;
};

// Parameter types (draft §9.20).
enum class ParameterType : uint64_t {
  kObjectDeliveryTimeout = 0x02,
  kAuthorizationToken = 0x03,
  kRendezvousTimeout = 0x04,
  kSubgroupDeliveryTimeout = 0x06,
  kExpires = 0x08,
  kLargestObject = 0x09,
  kFillTimeout = 0x0A,
  kForward = 0x10,
  kSubscriberPriority = 0x20,
  kLocationFilter = 0x21,
  kGroupOrder = 0x22,
  kFillParameters = 0x23,
  kSubgroupFilter = 0x25,
  kObjectIdFilter = 0x26,
  kPriorityFilter = 0x27,
  kObjectPropertyFilter = 0x28,
  kTrackPropertyFilter = 0x29,
  kNewGroupRequest = 0x32,
  kTrackNamespacePrefix = 0x34,
  kIncludeProperties = 0x35,
};

// Message Parameters (draft §9.20): one optional field per type; the repeatable ones are vectors.
// Encoded in ascending type order; which types a message may carry is checked by the codec.
struct MessageParameters {
  std::optional<uint64_t> object_delivery_timeout_ms;    // 0x02
  std::vector<AuthToken> authorization_tokens;           // 0x03 (repeatable)
  std::optional<uint64_t> rendezvous_timeout_ms;         // 0x04
  std::optional<uint64_t> subgroup_delivery_timeout_ms;  // 0x06
  std::optional<uint64_t> expires_ms;                    // 0x08
  std::optional<Location> largest_object;                // 0x09
  std::optional<uint64_t> fill_timeout_ms;               // 0x0A
  std::optional<bool> forward;                           // 0x10
  std::optional<uint8_t> subscriber_priority;            // 0x20
  std::optional<LocationFilter> location_filter;         // 0x21
  std::optional<GroupOrder> group_order;                 // 0x22
  std::optional<FillParameters> fill_parameters;         // 0x23
  RangeFilters range_filters;                            // 0x25..0x29 (repeatable)
  std::optional<uint64_t> new_group_request;             // 0x32
  std::optional<TrackNamespace> track_namespace_prefix;  // 0x34
  std::optional<bool> include_properties;                // 0x35
  bool operator==(const MessageParameters&) const = default;
};

// ---------------------------------------------------------------- setup

enum class SetupOptionType : uint64_t {
  kPath = 0x01,
  kAuthorizationToken = 0x03,
  kMaxAuthTokenCacheSize = 0x04,
  kAuthority = 0x05,
  kMaxFilterRanges = 0x06,
  kMoqtImplementation = 0x07,
  kMaxRequestUpdates = 0x08,
};

// Setup Options (draft §9.1). Unknown options (grease included) are kept in `unknown`.
struct SetupOptions {
  std::optional<std::string> path;                    // 0x01 (client only)
  std::vector<AuthToken> authorization_tokens;        // 0x03 (repeatable)
  std::optional<uint64_t> max_auth_token_cache_size;  // 0x04
  std::optional<std::string> authority;               // 0x05 (client only)
  std::optional<uint64_t> max_filter_ranges;          // 0x06
  std::optional<std::string> implementation;          // 0x07
  std::optional<uint64_t> max_request_updates;        // 0x08
  std::vector<KeyValuePair> unknown;                  // ignored on receive, in wire order
  bool operator==(const SetupOptions&) const = default;
};

// ---------------------------------------------------------------- control messages

enum class MessageType : uint64_t {
  kRequestUpdate = 0x02,
  kSubscribe = 0x03,
  kSubscribeOk = 0x04,
  kRequestError = 0x05,
  kPublishNamespace = 0x06,
  kRequestOk = 0x07,
  kNamespace = 0x08,
  kPublishDone = 0x0B,
  kTrackStatus = 0x0D,
  kNamespaceDone = 0x0E,
  kPublishSkipped = 0x0F,
  kGoAway = 0x10,
  kFetch = 0x16,
  kFetchOk = 0x18,
  kPublish = 0x1D,
  kPublishStateNotify = 0x22,
  kSubscribeNamespace = 0x50,
  kSubscribeTracks = 0x51,
  kSetup = 0x2F00,
};

bool IsKnownMessageType(uint64_t type);
std::string_view MessageTypeName(MessageType t);

struct Setup {
  SetupOptions options;
  bool operator==(const Setup&) const = default;
};
struct GoAway {
  std::string new_session_uri;
  uint64_t timeout_ms = 0;
  bool operator==(const GoAway&) const = default;
};
struct RequestOk {
  MessageParameters params;
  Properties track_properties;
  bool operator==(const RequestOk&) const = default;
};
struct Redirect {
  std::string connect_uri;
  TrackNamespace track_namespace;
  std::string track_name;
  bool operator==(const Redirect&) const = default;
};
struct RequestError {
  uint64_t error_code = 0;      // RequestErrorCode (raw: unknown codes are kept)
  uint64_t retry_interval = 0;  // 0 = don't retry, else minimum wait in ms + 1
  std::string reason;
  std::optional<Redirect> redirect;  // present iff error_code == REDIRECT (0x34)
  bool operator==(const RequestError&) const = default;
};
struct Subscribe {
  uint64_t request_id = 0;
  FullTrackName track;
  MessageParameters params;
  bool operator==(const Subscribe&) const = default;
};
struct SubscribeOk {
  uint64_t track_alias = 0;
  MessageParameters params;
  Properties track_properties;
  bool operator==(const SubscribeOk&) const = default;
};
struct RequestUpdate {
  uint64_t request_id = 0;
  MessageParameters params;
  bool operator==(const RequestUpdate&) const = default;
};
struct PublishStateNotify {
  MessageParameters params;
  bool operator==(const PublishStateNotify&) const = default;
};
struct Publish {
  uint64_t request_id = 0;
  FullTrackName track;
  uint64_t track_alias = 0;
  MessageParameters params;
  Properties track_properties;
  bool operator==(const Publish&) const = default;
};
struct PublishDone {
  uint64_t status_code = 0;   // PublishDoneCode (raw)
  uint64_t stream_count = 0;  // kStreamCountUnknown = unknown
  std::string reason;
  bool operator==(const PublishDone&) const = default;
};
struct Fetch {
  uint64_t request_id = 0;
  FullTrackName track;
  MessageParameters params;
  bool operator==(const Fetch&) const = default;
};
struct FetchOk {
  bool end_of_track = false;
  Location end_location;
  MessageParameters params;  // none defined in -22
  Properties track_properties;
  bool operator==(const FetchOk&) const = default;
};
struct TrackStatus {
  uint64_t request_id = 0;
  FullTrackName track;
  MessageParameters params;
  bool operator==(const TrackStatus&) const = default;
};
struct PublishNamespace {
  uint64_t request_id = 0;
  TrackNamespace track_namespace;
  MessageParameters params;
  bool operator==(const PublishNamespace&) const = default;
};
struct Namespace {
  TrackNamespace suffix;
  bool operator==(const Namespace&) const = default;
};
struct NamespaceDone {
  TrackNamespace suffix;
  bool operator==(const NamespaceDone&) const = default;
};
struct SubscribeNamespace {
  uint64_t request_id = 0;
  TrackNamespace prefix;
  MessageParameters params;
  bool operator==(const SubscribeNamespace&) const = default;
};
struct SubscribeTracks {
  uint64_t request_id = 0;
  TrackNamespace prefix;
  MessageParameters params;
  bool operator==(const SubscribeTracks&) const = default;
};
struct PublishSkipped {
  TrackNamespace suffix;
  std::string track_name;
  bool operator==(const PublishSkipped&) const = default;
};

using ControlMessage =
    std::variant<Setup, GoAway, RequestOk, RequestError, Subscribe, SubscribeOk, RequestUpdate,
                 PublishStateNotify, Publish, PublishDone, Fetch, FetchOk, TrackStatus,
                 PublishNamespace, Namespace, NamespaceDone, SubscribeNamespace, SubscribeTracks,
                 PublishSkipped>;

MessageType MessageTypeOf(const ControlMessage& m);

// ---------------------------------------------------------------- data plane

// Unidirectional stream types (draft §11, Table 2).
inline constexpr uint64_t kFetchHeaderType = 0x05;
inline constexpr uint64_t kControlStreamType = 0x2F00;
inline constexpr uint64_t kPaddingStreamType = 0x132B3E28;
inline constexpr uint64_t kPaddingDatagramType = 0x132B3E29;

enum class ObjectStatus : uint64_t { kNormal = 0x0, kEndOfGroup = 0x3, kEndOfTrack = 0x4 };
bool IsValidObjectStatus(uint64_t v);

enum class SubgroupIdMode : uint8_t {
  kZero = 0,         // ID absent, is 0
  kFirstObject = 1,  // ID absent, equals the first object's ID on the stream
  kExplicit = 2,     // ID present
};

// SUBGROUP_HEADER Type Flags bits (draft §11.3.1).
inline constexpr uint8_t kSubgroupFlagProperties = 0x01;
inline constexpr uint8_t kSubgroupFlagIdModeMask = 0x06;
inline constexpr uint8_t kSubgroupFlagEndOfGroup = 0x08;
inline constexpr uint8_t kSubgroupFlagBase = 0x10;
inline constexpr uint8_t kSubgroupFlagDefaultPriority = 0x20;
inline constexpr uint8_t kSubgroupFlagFirstObject = 0x40;

struct SubgroupHeader {
  uint64_t track_alias = 0;
  uint64_t group_id = 0;
  SubgroupIdMode id_mode = SubgroupIdMode::kExplicit;
  uint64_t subgroup_id = 0;  // kExplicit: the field; kZero: 0; kFirstObject: 0 until known
  std::optional<uint8_t> publisher_priority;  // absent = DEFAULT_PRIORITY (track default)
  bool has_properties = false;                // every object carries a Properties field
  bool end_of_group = false;
  bool first_object = false;
  bool operator==(const SubgroupHeader&) const = default;
};
bool IsValidSubgroupType(uint64_t type);
uint8_t SubgroupTypeOf(const SubgroupHeader& h);
SubgroupHeader SubgroupHeaderFromType(uint8_t type);  // REQUIRES: IsValidSubgroupType(type)

struct FetchHeader {
  uint64_t request_id = 0;
  bool operator==(const FetchHeader&) const = default;
};

// Fetch Serialization Flags (draft §11.4.1).
inline constexpr uint64_t kFetchFlagSubgroupMask = 0x03;
inline constexpr uint64_t kFetchFlagObjectIdDelta = 0x04;
inline constexpr uint64_t kFetchFlagGroupIdDelta = 0x08;
inline constexpr uint64_t kFetchFlagPriority = 0x10;
inline constexpr uint64_t kFetchFlagProperties = 0x20;
inline constexpr uint64_t kFetchFlagDatagram = 0x40;

enum class EndOfRangeKind : uint64_t {
  kNonExistent = 0x8C,
  kUnknown = 0x10C,
  kTimedOut = 0x20C,
};

// An End of Range marker on a fetch stream: every Location after the previous serialized object
// up to and including `location` is non-existent / unknown / timed out.
struct EndOfRange {
  EndOfRangeKind kind = EndOfRangeKind::kNonExistent;
  Location location;
  bool operator==(const EndOfRange&) const = default;
};

// An object's metadata as carried by a subgroup stream, fetch stream or datagram.
struct ObjectHeader {
  Location location;
  std::optional<uint64_t> subgroup_id;        // absent = datagram delivery
  std::optional<uint8_t> publisher_priority;  // absent = track default
  ObjectStatus status = ObjectStatus::kNormal;
  Properties properties;
  uint64_t payload_length = 0;
  bool operator==(const ObjectHeader&) const = default;
};

// OBJECT_DATAGRAM Type Flags bits (draft §11.2.1).
inline constexpr uint8_t kDatagramFlagProperties = 0x01;
inline constexpr uint8_t kDatagramFlagEndOfGroup = 0x02;
inline constexpr uint8_t kDatagramFlagZeroObjectId = 0x04;
inline constexpr uint8_t kDatagramFlagDefaultPriority = 0x08;
inline constexpr uint8_t kDatagramFlagStatus = 0x20;
bool IsValidDatagramType(uint64_t type);

// One OBJECT_DATAGRAM. The payload is not owned: it views the parsed datagram or the caller's
// bytes when writing.
struct ObjectDatagram {
  uint64_t track_alias = 0;
  Location location;
  std::optional<uint8_t> publisher_priority;  // absent = DEFAULT_PRIORITY
  bool end_of_group = false;
  Properties properties;
  std::optional<ObjectStatus> status;  // present = STATUS flag (no payload)
  bool operator==(const ObjectDatagram&) const = default;
};

}  // namespace kvcs::moqt

#endif  // KVCS_MOQT_MOQT_MESSAGES_H_
