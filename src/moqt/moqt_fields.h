// Encoding conventions shared by MOQT messages (draft §8): Track Namespace, Full Track Name,
// bounded length-prefixed strings (Reason Phrase, URIs) and the Authorization Token value.
//
// Read* functions return Truncated() (kNeedMoreData) when the reader ran out and a WireError
// Status when the bytes are malformed; lengths are checked against moqt_limits.h before any bytes
// are read. Write* functions validate what they are given the same way, so the codec never emits
// what it would reject. Pure functions, thread-safe.
#ifndef KVCS_MOQT_MOQT_FIELDS_H_
#define KVCS_MOQT_MOQT_FIELDS_H_

#include <string>

#include "common/status.h"
#include "moqt/moqt_error.h"
#include "moqt/moqt_messages.h"
#include "moqt/moqt_wire_io.h"

namespace kvcs::moqt {

// Track Namespace: Number of Fields (vi64), then Field Length (vi64) + bytes per field.
// 0..32 fields, each >= 1 byte, fields totalling <= 4096 bytes. *total_bytes gets the sum.
Status ReadNamespace(WireReader& r, TrackNamespace* ns, size_t* total_bytes);
Status ValidateNamespace(const TrackNamespace& ns, size_t* total_bytes);
void WriteNamespace(WireWriter& w, const TrackNamespace& ns);

// Track Namespace + Track Name Length + Track Name, at most 4096 bytes together.
Status ReadFullTrackName(WireReader& r, FullTrackName* ftn);
Status ValidateFullTrackName(const FullTrackName& ftn);
void WriteFullTrackName(WireWriter& w, const FullTrackName& ftn);

// Length (vi64) + bytes, rejecting lengths above max with `too_long`.
Status ReadBoundedString(WireReader& r, size_t max, WireError too_long, std::string* out);

// Location: Group (vi64), Object (vi64).
Status ReadLocation(WireReader& r, Location* loc);
void WriteLocation(WireWriter& w, const Location& loc);

// An Authorization Token occupying all of `value` (draft §8.9). Undecodable -> kMalformedAuthToken.
Status ParseAuthToken(ByteSpan value, AuthToken* token);
// The Token bytes (no outer length).
void WriteAuthToken(WireWriter& w, const AuthToken& token);

}  // namespace kvcs::moqt

#endif  // KVCS_MOQT_MOQT_FIELDS_H_
