#include "moqt/test_tools/moqt_test_vectors.h"

#include <cassert>
#include <cctype>

// GCC 12 at -O2 reports a false -Wrestrict inside std::string for this file's constant tables
// (GCC bug 105329); clang is silent.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

namespace kvcs::moqt::test {
namespace {

using W = WireError;

AuthToken Token(AuthTokenAliasType t, uint64_t alias, uint64_t type, std::string value) {
  return AuthToken{t, alias, type, std::move(value)};
}

LocationFilter Filter(LocationFilterType t, uint64_t sg = 0, uint64_t so = 0, uint64_t egd = 0,
                      uint64_t eo = 0) {
  return LocationFilter{t, sg, so, egd, eo};
}

RangeFilter Ranges(uint8_t set, std::vector<FilterRange> r, uint64_t property_type = 0) {
  RangeFilter f;
  f.set_id = set;
  f.property_type = property_type;
  f.ranges = std::move(r);
  return f;
}

std::vector<ControlVector> MakeControlVectors() {
  std::vector<ControlVector> v;

  {  // reference §20: client SETUP
    Setup m;
    m.options.path = "/moq";
    m.options.authority = "example.com";
    m.options.max_filter_ranges = 16;
    m.options.implementation = "x/1";
    v.push_back({"setup_reference",
                 "AF00 001A 01042F6D6F71 040B6578616D706C652E636F6D 0110 0103782F31", m});
  }
  {  // every option plus two grease options (odd 0x9D, even 0x11C)
    Setup m;
    m.options.path = "/";
    m.options.authorization_tokens = {Token(AuthTokenAliasType::kUseValue, 0, 0, "t")};
    m.options.max_auth_token_cache_size = 100;
    m.options.authority = "h";
    m.options.max_filter_ranges = 8;
    m.options.implementation = "k";
    m.options.max_request_updates = 2;
    m.options.unknown = {KeyValuePair::Blob(0x9D, "g"), KeyValuePair::Int(0x11C, 5)};
    v.push_back({"setup_all_options_grease",
                 "AF00 001A 01012F 0203030074 0164 010168 0108 01016B 0102 80950167 7F05", m});
  }
  {  // an unknown (grease) option may repeat
    Setup m;
    m.options.unknown = {KeyValuePair::Blob(0x9D, "a"), KeyValuePair::Blob(0x9D, "b")};
    v.push_back({"setup_repeated_grease", "AF00 0007 809D0161 000162", m});
  }
  v.push_back({"setup_empty", "AF00 0000", Setup{}});
  v.push_back({"goaway", "10 000B 086D6F71743A2F2F61 83E8", GoAway{"moqt://a", 1000}});
  v.push_back({"goaway_empty", "10 0002 00 00", GoAway{}});
  {  // reference §20: exactly-once join SUBSCRIBE
    Subscribe m;
    m.request_id = 0;
    m.track = {{"live", "cam1"}, "video"};
    m.params.location_filter = Filter(LocationFilterType::kNextObject);
    m.params.fill_parameters.emplace().location_filter =
        Filter(LocationFilterType::kRelativeStart, 1);
    v.push_back({"subscribe_reference",
                 "03 001B 00 02046C6976650463616D31 05766964656F 02 2105 020401210101", m});
  }
  {  // every SUBSCRIBE parameter
    Subscribe m;
    m.request_id = 2;
    m.track = {{"a"}, "b"};
    auto& p = m.params;
    p.object_delivery_timeout_ms = 500;
    p.authorization_tokens = {Token(AuthTokenAliasType::kRegister, 1, 2, "xy")};
    p.rendezvous_timeout_ms = 0;
    p.subgroup_delivery_timeout_ms = 7;
    p.forward = false;
    p.subscriber_priority = 0x40;
    p.location_filter = Filter(LocationFilterType::kAbsoluteRange, 5, 1, 2, 9);
    p.group_order = GroupOrder::kDescending;
    auto& fill = p.fill_parameters.emplace();
    fill.fill_timeout_ms = 100;
    fill.group_order = GroupOrder::kAscending;
    p.range_filters.subgroup = {Ranges(0, {{0, 3}})};
    p.range_filters.object_id = {Ranges(1, {{3, 5}, {10, 15}}), Ranges(2, {{7, std::nullopt}})};
    p.range_filters.priority = {Ranges(0, {{0, 127}})};
    p.range_filters.object_property = {Ranges(0, {{1, 1}}, 0x3C)};
    p.new_group_request = 43;
    p.include_properties = false;
    v.push_back({"subscribe_all_params",
                 "03 0047 02 010161 0162 10"
                 "0281F4 01050101027879 0100 0207 0A00 1040 010405010209 0102"
                 "010502 0A641801 0203000003 01050103020505 00020207 010300007F"
                 "010400 3C0100 0A2B 0300",
                 m});
  }
  {
    SubscribeOk m;
    m.track_alias = 7;
    m.params.largest_object = Location{42, 17};
    v.push_back({"subscribe_ok_reference", "04 0005 07 01 092A11", m});
  }
  {
    SubscribeOk m;
    m.track_alias = 1;
    m.params.expires_ms = 0;
    m.track_properties = {KeyValuePair::Int(0x0E, 0x80), KeyValuePair::Int(0x22, 1),
                          KeyValuePair::Blob(0x9D, "z")};
    v.push_back({"subscribe_ok_track_properties", "04 000C 01 01 0800 0E8080 1401 7B017A", m});
  }
  v.push_back({"request_ok_empty", "07 0001 00", RequestOk{}});
  {
    RequestOk m;
    m.params.largest_object = Location{1, 2};
    m.track_properties = {KeyValuePair::Int(0x04, 5000)};
    v.push_back({"request_ok_track_status", "07 0007 01 090102 049388", m});
  }
  v.push_back({"request_error", "05 0005 10 00 026E6F", RequestError{0x10, 0, "no", {}}});
  v.push_back({"request_error_redirect", "05 0011 34 01 00 086D6F71743A2F2F62 010178 0179",
               RequestError{0x34, 1, "", Redirect{"moqt://b", {"x"}, "y"}}});
  v.push_back({"request_error_grease_code", "05 0004 809D 00 00", RequestError{0x9D, 0, "", {}}});
  {
    RequestUpdate m;
    m.request_id = 4;
    m.params.forward = true;
    m.params.subscriber_priority = 10;
    m.params.location_filter = Filter(LocationFilterType::kNone);
    m.params.fill_parameters = FillParameters{};
    RangeFilter remove;
    remove.remove = true;
    m.params.range_filters.subgroup = {remove};
    v.push_back({"request_update_subscription", "02 000D 04 05 1001 100A 0100 020100 0200", m});
  }
  {
    RequestUpdate m;
    m.request_id = 6;
    m.params.authorization_tokens = {Token(AuthTokenAliasType::kUseAlias, 3, 0, "")};
    m.params.range_filters.track_property = {Ranges(0, {{1, 1}}, 0x30)};
    m.params.track_namespace_prefix = TrackNamespace{"p", "q"};
    v.push_back({"request_update_prefix", "02 0012 06 03 03020203 2604 00300100 0B0201700171", m});
  }
  {
    PublishStateNotify m;
    m.params.largest_object = Location{3, 0};
    m.params.forward = true;
    m.params.location_filter = Filter(LocationFilterType::kRelativeStart, 0);
    v.push_back({"publish_state_notify", "22 0009 03 090300 0701 110100", m});
  }
  {
    Publish m;
    m.request_id = 1;
    m.track = {{"n"}, "t"};
    m.track_alias = 9;
    m.params.expires_ms = 60000;
    m.params.largest_object = Location{0, 5};
    m.params.group_order = GroupOrder::kAscending;
    m.track_properties = {KeyValuePair::Int(0x30, 1)};
    v.push_back({"publish", "1D 0013 01 01016E 0174 09 03 08C0EA60 010005 1901 3001", m});
  }
  v.push_back({"publish_done", "0B 0003 02 03 00", PublishDone{2, 3, ""}});
  v.push_back({"publish_done_unknown_count", "0B 000E 00 FFFFFFFFFFFFFFFFFF 03627965",
               PublishDone{0, UINT64_MAX, "bye"}});
  {
    Fetch m;
    m.request_id = 8;
    m.track = {{"a", "b"}, ""};
    m.params.fill_timeout_ms = 0;
    m.params.subscriber_priority = 1;
    m.params.location_filter = Filter(LocationFilterType::kAbsoluteStartGroupEnd, 2, 0, 3);
    m.params.group_order = GroupOrder::kDescending;
    m.params.include_properties = true;
    v.push_back({"fetch", "16 0015 08 0201610162 00 05 0A00 1601 0103020003 0102 1301", m});
  }
  v.push_back({"fetch_ok", "18 0004 01 0703 00", FetchOk{true, {7, 3}, {}, {}}});
  v.push_back({"fetch_ok_track_properties", "18 0006 00 0101 00 0E03",
               FetchOk{false, {1, 1}, {}, {KeyValuePair::Int(0x0E, 3)}}});
  {
    TrackStatus m;
    m.request_id = 10;
    m.track = {{"a"}, "b"};
    m.params.authorization_tokens = {Token(AuthTokenAliasType::kUseValue, 0, 1, "k")};
    m.params.include_properties = false;
    v.push_back({"track_status", "0D 000E 0A 010161 0162 02 030303016B 3200", m});
  }
  v.push_back(
      {"publish_namespace", "06 0008 0C 01046C697665 00", PublishNamespace{12, {"live"}, {}}});
  v.push_back({"namespace", "08 0006 010463616D32", Namespace{{"cam2"}}});
  v.push_back({"namespace_done", "0E 0006 010463616D32", NamespaceDone{{"cam2"}}});
  {
    SubscribeNamespace m;
    m.request_id = 14;
    m.params.authorization_tokens = {Token(AuthTokenAliasType::kDelete, 5, 0, "")};
    v.push_back({"subscribe_namespace_empty_prefix", "50 0007 0E 00 01 03020005", m});
  }
  {  // a grease Token Type is opaque: carried, not interpreted
    SubscribeNamespace m;
    m.request_id = 20;
    m.prefix = {"a"};
    m.params.authorization_tokens = {Token(AuthTokenAliasType::kUseValue, 0, 0x9D, "")};
    v.push_back({"subscribe_namespace_grease_token_type", "50 000A 14 010161 01 0303 03809D", m});
  }
  {
    SubscribeTracks m;
    m.request_id = 16;
    m.prefix = {"a"};
    m.params.forward = false;
    m.params.group_order = GroupOrder::kAscending;
    m.params.include_properties = true;
    v.push_back({"subscribe_tracks", "51 000B 10 010161 03 1000 1201 1301", m});
  }
  {  // accepted on receive (§3.6.2 prose), never sent (§9.18 list): decode-only
    SubscribeTracks m;
    m.request_id = 18;
    m.params.location_filter = Filter(LocationFilterType::kNextObject);
    v.push_back({"subscribe_tracks_location_filter", "51 0005 12 00 01 2105", m, false});
  }
  v.push_back({"publish_skipped", "0F 0005 010173 0174", PublishSkipped{{"s"}, "t"}});
  // Non-minimal varints in the wire form decode to the same struct (decode-only).
  v.push_back({"goaway_long_varints", "8010 0005 8000 C00005", GoAway{"", 5}, false});
  return v;
}

std::vector<MalformedVector> MakeMalformedControlVectors() {
  return {
      {"unknown_type_old_setup", "01 0000", W::kUnknownMessageType},
      {"unknown_type_0x40", "40 0000", W::kUnknownMessageType},
      {"unknown_type_grease", "809D 0000", W::kUnknownMessageType},
      {"setup_duplicate_path", "AF00 0006 010161 000162", W::kDuplicateSetupOption},
      {"setup_value_too_long", "AF00 0004 01 C10000", W::kValueTooLong},
      {"setup_value_short", "AF00 0002 0105", W::kLengthMismatch},
      {"setup_bad_token", "AF00 0003 030107", W::kMalformedAuthToken},
      {"setup_type_overflow", "AF00 000C FFFFFFFFFFFFFFFFFF 00 01 00", W::kIntegerOverflow},
      {"subscribe_duplicate_forward", "03 0008 00 00 00 02 1001 0000", W::kDuplicateParameter},
      {"subscribe_unknown_param", "03 0006 00 00 00 01 0500", W::kUnknownParameter},
      {"subscribe_expires_not_allowed", "03 0006 00 00 00 01 0800", W::kParameterNotAllowed},
      {"subscribe_track_property_filter", "03 0009 00 00 00 01 2903000201",
       W::kParameterNotAllowed},
      {"subscribe_group_order_3", "03 0006 00 00 00 01 2203", W::kBadEnumValue},
      {"subscribe_forward_2", "03 0006 00 00 00 01 1002", W::kBadEnumValue},
      {"subscribe_include_properties_2", "03 0006 00 00 00 01 3502", W::kBadEnumValue},
      {"subscribe_location_filter_type_6", "03 0006 00 00 00 01 2106", W::kInvalidLocationFilter},
      {"subscribe_location_filter_overflow", "03 0011 00 00 00 01 2103 FFFFFFFFFFFFFFFFFF 00 01",
       W::kInvalidLocationFilter},
      {"subscribe_33_namespace_fields", "03 0002 00 21", W::kTooManyNamespaceFields},
      {"subscribe_empty_namespace_field", "03 0005 00 01 00 00 00", W::kEmptyNamespaceField},
      {"subscribe_priority_filter_256", "03 000A 00 00 00 01 2704 00008100", W::kInvalidFilter},
      {"subscribe_odd_property_type", "03 0009 00 00 00 01 2803 000105", W::kInvalidFilter},
      {"subscribe_repeated_filter_set", "03 000C 00 00 00 02 26020005 00020006", W::kInvalidFilter},
      {"subscribe_filter_overflow", "03 0011 00 00 00 01 260B 00 FFFFFFFFFFFFFFFFFF 01",
       W::kInvalidFilter},
      {"subscribe_filter_no_ranges", "03 0007 00 00 00 01 260100", W::kInvalidFilter},
      {"subscribe_fill_inner_not_allowed", "03 0009 00 00 00 01 2303 010205",
       W::kParameterNotAllowed},
      {"subscribe_fill_length_short", "03 0007 00 00 00 01 230101", W::kLengthMismatch},
      {"subscribe_fill_length_long", "03 0008 00 00 00 01 23020000", W::kLengthMismatch},
      {"subscribe_fill_zero_length", "03 0006 00 00 00 01 2300", W::kLengthMismatch},
      {"subscribe_too_many_params", "03 0005 00 00 00 8101", W::kTooManyParameters},
      {"subscribe_param_type_overflow", "03 000F 00 00 00 02 0200 FFFFFFFFFFFFFFFFFF",
       W::kIntegerOverflow},
      {"subscribe_malformed_token", "03 0007 00 00 00 01 030101", W::kMalformedAuthToken},
      {"subscribe_token_trailing", "03 0009 00 00 00 01 03030005 07", W::kMalformedAuthToken},
      {"fetch_ok_with_param", "18 0007 00 0000 01 090000", W::kParameterNotAllowed},
      {"fetch_ok_end_of_track_2", "18 0004 02 0000 00", W::kBadEnumValue},
      {"publish_state_notify_priority", "22 0003 01 2001", W::kParameterNotAllowed},
      {"goaway_uri_too_long", "10 0002 A001", W::kUriTooLong},
      {"goaway_trailing", "10 0003 00 00 00", W::kTrailingData},
      {"goaway_body_short", "10 0001 00", W::kBodyTooShort},
      {"subscribe_ok_properties_short", "04 0004 01 00 0E80", W::kLengthMismatch},
      {"request_error_reason_too_long", "05 0004 00 00 8401", W::kReasonPhraseTooLong},
  };
}

ObjectHeader Obj(Location loc, std::optional<uint64_t> subgroup, std::optional<uint8_t> priority,
                 ObjectStatus status, Properties props, uint64_t len) {
  ObjectHeader h;
  h.location = loc;
  h.subgroup_id = subgroup;
  h.publisher_priority = priority;
  h.status = status;
  h.properties = std::move(props);
  h.payload_length = len;
  return h;
}

std::vector<DataStreamVector> MakeDataStreamVectors() {
  std::vector<DataStreamVector> v;
  constexpr auto kN = ObjectStatus::kNormal;
  {  // reference §20: fill fetch stream
    DataStreamVector d{"fill_fetch_reference", "0500 1C2A008003616263 0103646566"};
    d.events = {FetchHeader{0}, ObjectEvent{Obj({42, 0}, 0, 0x80, kN, {}, 3), "abc"},
                ObjectEvent{Obj({42, 1}, 0, 0x80, kN, {}, 3), "def"}, StreamEndEvent{}};
    v.push_back(d);
  }
  {  // reference §20: live subgroup stream ending with End of Group
    DataStreamVector d{"subgroup_reference", "14072A0080 1203676869 00036A6B6C 000003"};
    SubgroupHeader h;
    h.track_alias = 7;
    h.group_id = 42;
    h.id_mode = SubgroupIdMode::kExplicit;
    h.subgroup_id = 0;
    h.publisher_priority = 0x80;
    d.events = {h, ObjectEvent{Obj({42, 18}, 0, 0x80, kN, {}, 3), "ghi"},
                ObjectEvent{Obj({42, 19}, 0, 0x80, kN, {}, 3), "jkl"},
                ObjectEvent{Obj({42, 20}, 0, 0x80, ObjectStatus::kEndOfGroup, {}, 0), ""},
                StreamEndEvent{}};
    v.push_back(d);
  }
  {  // properties, first-object subgroup ID, default priority, END_OF_GROUP, FIRST_OBJECT
    DataStreamVector d{"subgroup_all_flags", "7B0105 03023C010141 01000000 00000004"};
    SubgroupHeader h;
    h.track_alias = 1;
    h.group_id = 5;
    h.id_mode = SubgroupIdMode::kFirstObject;
    h.has_properties = true;
    h.end_of_group = true;
    h.first_object = true;
    d.events = {h, ObjectEvent{Obj({5, 3}, 3, {}, kN, {KeyValuePair::Int(0x3C, 1)}, 1), "A"},
                ObjectEvent{Obj({5, 5}, 3, {}, kN, {}, 0), ""},
                ObjectEvent{Obj({5, 6}, 3, {}, ObjectStatus::kEndOfTrack, {}, 0), ""},
                StreamEndEvent{}};
    v.push_back(d);
  }
  {  // header only, subgroup ID 0 implied
    DataStreamVector d{"subgroup_header_only", "10020307"};
    SubgroupHeader h;
    h.track_alias = 2;
    h.group_id = 3;
    h.id_mode = SubgroupIdMode::kZero;
    h.publisher_priority = 7;
    d.events = {h, StreamEndEvent{}};
    v.push_back(d);
  }
  {  // explicit subgroup, subgroup+1, End of Unknown Range, datagram-preference object
    DataStreamVector d{"fetch_all_forms",
                       "0501 3F0105000302026401 78 060200 810C010400 5C0000090268 69 01017A"};
    d.events = {FetchHeader{1},
                ObjectEvent{Obj({1, 0}, 5, 3, kN, {KeyValuePair::Int(0x02, 100)}, 1), "x"},
                ObjectEvent{Obj({1, 2}, 6, 3, kN, {}, 0), ""},
                EndOfRange{EndOfRangeKind::kUnknown, {3, 4}},
                ObjectEvent{Obj({4, 0}, std::nullopt, 9, kN, {}, 2), "hi"},
                ObjectEvent{Obj({4, 1}, 6, 9, kN, {}, 1), "z"},
                StreamEndEvent{}};
    v.push_back(d);
  }
  {  // descending group order
    DataStreamVector d{"fetch_descending", "0502 1C0501010161 0D01000162"};
    d.order = GroupOrder::kDescending;
    d.events = {FetchHeader{2}, ObjectEvent{Obj({5, 1}, 0, 1, kN, {}, 1), "a"},
                ObjectEvent{Obj({3, 0}, 0, 1, kN, {}, 1), "b"}, StreamEndEvent{}};
    v.push_back(d);
  }
  {  // markers of every kind, first record a marker (absolute under both readings)
    DataStreamVector d{"fetch_markers", "0503 808C000500 1C0500070178 82 0C 08 0500 810C 00 0900"};
    d.events = {FetchHeader{3},
                EndOfRange{EndOfRangeKind::kNonExistent, {0, 5}},
                ObjectEvent{Obj({6, 0}, 0, 7, kN, {}, 1), "x"},
                EndOfRange{EndOfRangeKind::kTimedOut, {15, 5}},
                EndOfRange{EndOfRangeKind::kUnknown, {16, 9}},
                StreamEndEvent{}};
    v.push_back(d);
  }
  {  // empty fetch: header then FIN
    DataStreamVector d{"fetch_empty", "0504"};
    d.events = {FetchHeader{4}, StreamEndEvent{}};
    v.push_back(d);
  }
  {
    DataStreamVector d{"padding_stream", "F0132B3E28 000000"};
    d.events = {PaddingEvent{}, StreamEndEvent{}};
    d.encode = false;
    v.push_back(d);
  }
  return v;
}

std::vector<MalformedVector> MakeMalformedDataStreamVectors() {
  return {
      {"unknown_stream_type", "8080", W::kUnknownStreamType},
      {"subgroup_reserved_mode", "16", W::kInvalidSubgroupType},
      {"subgroup_bit4_clear", "0F", W::kInvalidSubgroupType},
      {"control_stream_type", "AF00", W::kUnexpectedStreamType},
      {"fin_mid_header", "1407", W::kFinMidObject},
      {"fin_mid_object_header", "10010107 00", W::kFinMidObject},
      {"fin_mid_payload", "10010107 000361", W::kFinMidObject},
      {"fin_mid_properties", "11010107 00023C", W::kFinMidObject},
      {"invalid_object_status", "10010107 000005", W::kInvalidObjectStatus},
      {"properties_on_end_of_group", "11010107 00023C010003", W::kPropertiesOnNonNormal},
      {"object_id_overflow", "10010107 FFFFFFFFFFFFFFFFFF0161 000162", W::kIntegerOverflow},
      {"properties_too_long", "11010107 00C10001", W::kValueTooLong},
      {"properties_bad_kvp", "11010107 000101", W::kLengthMismatch},
      {"fetch_first_without_group", "0500 14000700", W::kFetchReferencesPrior},
      {"fetch_first_prior_subgroup", "0500 1D00000700", W::kFetchReferencesPrior},
      {"fetch_first_without_priority", "0500 0C000000", W::kFetchReferencesPrior},
      {"fetch_flags_128", "0500 8080", W::kInvalidFetchFlags},
      {"fetch_marker_payload", "0500 808C000001", W::kInvalidFetchFlags},
      {"fetch_object_repeats", "0500 1C01000700 040000", W::kFetchOutOfOrder},
      {"fetch_descending_underflow", "0500 1C00000700 080000", W::kIntegerOverflow,
       GroupOrder::kDescending},
      {"nonzero_padding", "F0132B3E28 0001", W::kNonZeroPadding},
      {"fetch_group_overflow", "0500 1CFFFFFFFFFFFFFFFFFF000700 080000", W::kIntegerOverflow},
      {"fetch_fin_mid_payload", "0500 1C0100070361", W::kFinMidObject},
      {"fetch_fin_mid_marker", "0500 808C00", W::kFinMidObject},
      {"subgroup_data_after_properties_fin", "11010107 0000", W::kFinMidObject},
  };
}

std::vector<DatagramVector> MakeDatagramVectors() {
  std::vector<DatagramVector> v;
  {
    DatagramVector d{"datagram_plain", "00 01 02 03 04 70"};
    d.datagram.track_alias = 1;
    d.datagram.location = {2, 3};
    d.datagram.publisher_priority = 4;
    d.payload = "p";
    v.push_back(d);
  }
  {
    DatagramVector d{"datagram_props_eog_zero_default", "0F 01 02 023C01 71"};
    d.datagram.track_alias = 1;
    d.datagram.location = {2, 0};
    d.datagram.end_of_group = true;
    d.datagram.properties = {KeyValuePair::Int(0x3C, 1)};
    d.payload = "q";
    v.push_back(d);
  }
  {
    DatagramVector d{"datagram_status_end_of_group", "2C 05 06 03"};
    d.datagram.track_alias = 5;
    d.datagram.location = {6, 0};
    d.datagram.status = ObjectStatus::kEndOfGroup;
    v.push_back(d);
  }
  {
    DatagramVector d{"datagram_status_normal_props", "21 01 02 03 04 023C01 00"};
    d.datagram.track_alias = 1;
    d.datagram.location = {2, 3};
    d.datagram.publisher_priority = 4;
    d.datagram.properties = {KeyValuePair::Int(0x3C, 1)};
    d.datagram.status = ObjectStatus::kNormal;
    v.push_back(d);
  }
  {
    DatagramVector d{"datagram_explicit_zero_object", "00 01 02 00 04 70"};
    d.datagram.track_alias = 1;
    d.datagram.location = {2, 0};
    d.datagram.publisher_priority = 4;
    d.payload = "p";
    d.encode = false;  // the encoder uses ZERO_OBJECT_ID
    v.push_back(d);
  }
  {
    DatagramVector d{"datagram_padding", "F0132B3E29 0000"};
    d.padding = true;
    d.encode = false;
    v.push_back(d);
  }
  return v;
}

std::vector<MalformedVector> MakeMalformedDatagramVectors() {
  return {
      {"datagram_bit4", "10 01 02 03 04", W::kInvalidDatagramType},
      {"datagram_status_with_eog", "22 01 02 03 04 03", W::kInvalidDatagramType},
      {"datagram_bit6", "40 01 02 03 04", W::kInvalidDatagramType},
      {"datagram_bit7", "8080 01 02 03 04", W::kInvalidDatagramType},
      {"datagram_empty_properties", "01 01 02 03 04 00", W::kEmptyDatagramProperties},
      {"datagram_status_with_payload", "20 01 02 03 04 00 FF", W::kPayloadWithStatus},
      {"datagram_invalid_status", "20 01 02 03 04 02", W::kInvalidObjectStatus},
      {"datagram_properties_on_status", "21 01 02 03 04 023C01 03", W::kPropertiesOnNonNormal},
      {"datagram_truncated", "00 01", W::kBodyTooShort},
      {"datagram_nonzero_padding", "F0132B3E29 01", W::kNonZeroPadding},
  };
}

}  // namespace

Bytes HexBytes(std::string_view hex) {
  Bytes out;
  int hi = -1;
  for (char c : hex) {
    if (c == ' ') continue;
    int v = std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : std::tolower(c) - 'a' + 10;
    assert(v >= 0 && v < 16);
    if (hi < 0) {
      hi = v;
    } else {
      out.push_back(static_cast<uint8_t>(hi << 4 | v));
      hi = -1;
    }
  }
  assert(hi < 0);
  return out;
}

const std::vector<ControlVector>& ControlVectors() {
  static const auto* v = new std::vector<ControlVector>(MakeControlVectors());
  return *v;
}
const std::vector<MalformedVector>& MalformedControlVectors() {
  static const auto* v = new std::vector<MalformedVector>(MakeMalformedControlVectors());
  return *v;
}
const std::vector<DataStreamVector>& DataStreamVectors() {
  static const auto* v = new std::vector<DataStreamVector>(MakeDataStreamVectors());
  return *v;
}
const std::vector<MalformedVector>& MalformedDataStreamVectors() {
  static const auto* v = new std::vector<MalformedVector>(MakeMalformedDataStreamVectors());
  return *v;
}
const std::vector<DatagramVector>& DatagramVectors() {
  static const auto* v = new std::vector<DatagramVector>(MakeDatagramVectors());
  return *v;
}
const std::vector<MalformedVector>& MalformedDatagramVectors() {
  static const auto* v = new std::vector<MalformedVector>(MakeMalformedDatagramVectors());
  return *v;
}

}  // namespace kvcs::moqt::test
