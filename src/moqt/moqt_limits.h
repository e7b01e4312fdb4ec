// Named bounds of the MOQT draft-22 wire codec, each with the reason for its value.
//
// Every length or count read from a peer is checked against one of these before any buffer is
// sized from it, so a hostile peer cannot make the codec allocate or loop beyond them. Limits the
// draft states are marked "draft"; the others are ours and marked "ours" with their rationale.
#ifndef KVCS_MOQT_MOQT_LIMITS_H_
#define KVCS_MOQT_MOQT_LIMITS_H_

#include <cstddef>
#include <cstdint>

namespace kvcs::moqt {

// draft §3: the control message Length is a 16-bit field, so a body never exceeds 65 535 bytes.
inline constexpr size_t kMaxControlMessageBody = 65535;
// A control message header is Type (vi64, at most 9 bytes) + Length (16 bits).
inline constexpr size_t kMaxControlMessageHeader = 9 + 2;
// draft §2.5: a Track Namespace has 0 to 32 fields.
inline constexpr size_t kMaxNamespaceFields = 32;
// draft §2.5: namespace fields plus track name, length prefixes not counted, at most 4096 bytes.
inline constexpr size_t kMaxFullTrackNameBytes = 4096;
// draft §2.4: a Reason Phrase is at most 1024 bytes.
inline constexpr size_t kMaxReasonPhraseBytes = 1024;
// draft §9 GOAWAY: the New Session URI is at most 8192 bytes. We apply the same bound to the
// REQUEST_ERROR Redirect's Connect URI (the draft names none; it is the same kind of URI).
inline constexpr size_t kMaxUriBytes = 8192;
// draft §2.3: a Key-Value-Pair byte value (odd type) is at most 65 535 bytes.
inline constexpr size_t kMaxKvpValueBytes = 65535;
// ours: pairs in one KVP list (setup options, track or object properties). Every pair costs at
// least 2 bytes and a control body holds 65 535, so legitimate lists are far shorter; the bound
// caps the work per list for object properties, which are not inside a control body.
inline constexpr size_t kMaxKvpPairs = 1024;
// ours: the Properties field of one object (subgroup, fetch or datagram). The data-stream parser
// buffers the whole field before decoding it, so this bounds that buffer. 64 KiB matches the
// largest control body and is far above the few dozen bytes real properties use.
inline constexpr size_t kMaxObjectPropertiesBytes = 65536;
// ours: parameters in one message. 20 types are defined; only AUTHORIZATION_TOKEN and the five
// range filters may repeat, and range filters are bounded by the peer's MAX_FILTER_RANGES. 256
// leaves room for every legitimate combination and bounds per-message work.
inline constexpr size_t kMaxParameters = 256;
// ours: ranges in one range-filter parameter. The peer's MAX_FILTER_RANGES (session level) is the
// real limit; this codec-level cap bounds the vector a single parameter can grow.
inline constexpr size_t kMaxRangesPerFilter = 1024;
// draft §9.20 (uint8 parameters): priorities are 0..255; PRIORITY_FILTER values above 255 are
// INVALID_FILTER.
inline constexpr uint64_t kMaxPriority = 255;
// draft §9 PUBLISH_DONE: Stream Count 2^64-1 means "unknown".
inline constexpr uint64_t kStreamCountUnknown = UINT64_MAX;
// ours: a data-stream unit other than properties and payload (stream header, object header
// fields) is at most ~40 bytes (5 vi64 + 1 byte); the parser re-parses a unit from its start when
// more bytes arrive, so units are kept this small. Anything longer is malformed.
inline constexpr size_t kMaxDataUnitBytes = 64;

}  // namespace kvcs::moqt

#endif  // KVCS_MOQT_MOQT_LIMITS_H_
