// KVCS Track Names (KVCS profile §3.2) and Publisher Priority (§3.4).
//
//   track-name = "manifest" / "manifest.cose" / data-track
//   data-track = component "." codec-name "." "s" segment
//   component  = "k" / "v" / "kv"
//   codec-name = 1*32( %x61-7A / DIGIT / "-" )   ; KVSP codec name
//   segment    = "0" / ( %x31-39 *DIGIT )        ; no leading zeros
//
// ParseTrackName accepts exactly this grammar and additionally bounds the segment number to
// uint32 (larger numbers are rejected, not wrapped). It checks syntax only: whether the codec
// name is registered in KVSP is a separate question (TrackCodecValue). Value types;
// thread-compatible.
#ifndef KVCS_PROFILE_TRACK_NAME_H_
#define KVCS_PROFILE_TRACK_NAME_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace kvcs::profile {

inline constexpr std::string_view kManifestTrack = "manifest";
inline constexpr std::string_view kManifestCoseTrack = "manifest.cose";
// ABNF: codec-name = 1*32(...).
inline constexpr size_t kMaxCodecNameLength = 32;
// "kv" "." 32-char codec "." "s" 10 digits (uint32 max has 10): nothing longer can be valid, so
// longer inputs are rejected before any other work.
inline constexpr size_t kMaxTrackNameLength = 2 + 1 + kMaxCodecNameLength + 2 + 10;

// The object payload's Component field uses the same numbering (§3.5).
enum class Component : uint8_t { kK = 1, kV = 2, kKV = 3 };
std::string_view ComponentName(Component c);  // "k", "v", "kv"
// True for 1..3.
inline bool IsValidComponent(uint8_t v) { return v >= 1 && v <= 3; }

enum class TrackKind : uint8_t { kManifest, kManifestCose, kData };

struct TrackName {
  TrackKind kind = TrackKind::kData;
  // Data tracks only:
  Component component = Component::kK;
  std::string codec;     // KVSP codec name, e.g. "raw"
  uint32_t segment = 0;  // segment number

  bool is_data() const { return kind == TrackKind::kData; }
  bool is_manifest() const { return kind != TrackKind::kData; }
  bool operator==(const TrackName&) const = default;
};

enum class TrackNameError {
  kNone = 0,
  kEmpty = 1,        // ""
  kTooLong,          // longer than kMaxTrackNameLength
  kBadComponent,     // not "k", "v" or "kv" before the first '.'
  kMissingCodec,     // no codec-name, or no '.' after the component
  kBadCodecChar,     // a character outside [a-z0-9-] in the codec name
  kCodecTooLong,     // codec name longer than 32
  kMissingSegment,   // no ".s<digits>" part
  kBadSegment,       // empty, non-digit, or trailing characters in the segment
  kLeadingZero,      // "s00", "s01"
  kSegmentOverflow,  // does not fit uint32
};
std::string_view TrackNameErrorName(TrackNameError e);

// Errors: Code::kInvalidArgument with a TrackNameError detail.
Result<TrackName> ParseTrackName(std::string_view name);

// REQUIRES: for a data track, `codec` is 1..32 characters of [a-z0-9-] (anything parsed by
// ParseTrackName, or a KVSP registry name). Returns the exact string ParseTrackName accepts.
std::string FormatTrackName(const TrackName& t);

inline TrackName DataTrack(Component c, std::string codec, uint32_t segment) {
  return TrackName{TrackKind::kData, c, std::move(codec), segment};
}
inline TrackName ManifestTrack(bool cose) {
  return TrackName{cose ? TrackKind::kManifestCose : TrackKind::kManifest, Component::kK, "", 0};
}

// §3.4: Publisher Priority of a data track's Group g of a cache with L layers is floor(128*g/L).
// Errors: kInvalidArgument when layers == 0 or group >= layers (a group that is not a layer).
Result<uint8_t> DataPublisherPriority(uint64_t group, uint64_t layers);
// §3.4: the manifest track uses Publisher Priority 0.
inline constexpr uint8_t kManifestPublisherPriority = 0;

}  // namespace kvcs::profile

#endif  // KVCS_PROFILE_TRACK_NAME_H_
