#include "profile/track_name.h"

namespace kvcs::profile {
namespace {

Status Bad(TrackNameError e, std::string_view name, std::string_view why) {
  std::string shown(name.substr(0, kMaxTrackNameLength + 1));
  return InvalidArgument("track name \"" + shown + "\": " + std::string(why), static_cast<int>(e));
}

bool IsCodecChar(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; }

}  // namespace

std::string_view ComponentName(Component c) {
  switch (c) {
    case Component::kK:
      return "k";
    case Component::kV:
      return "v";
    case Component::kKV:
      return "kv";
  }
  return "?";
}

std::string_view TrackNameErrorName(TrackNameError e) {
  switch (e) {
    case TrackNameError::kNone:
      return "none";
    case TrackNameError::kEmpty:
      return "empty";
    case TrackNameError::kTooLong:
      return "too_long";
    case TrackNameError::kBadComponent:
      return "bad_component";
    case TrackNameError::kMissingCodec:
      return "missing_codec";
    case TrackNameError::kBadCodecChar:
      return "bad_codec_char";
    case TrackNameError::kCodecTooLong:
      return "codec_too_long";
    case TrackNameError::kMissingSegment:
      return "missing_segment";
    case TrackNameError::kBadSegment:
      return "bad_segment";
    case TrackNameError::kLeadingZero:
      return "leading_zero";
    case TrackNameError::kSegmentOverflow:
      return "segment_overflow";
  }
  return "unknown";
}

Result<TrackName> ParseTrackName(std::string_view name) {
  if (name.empty()) return Bad(TrackNameError::kEmpty, name, "empty");
  if (name.size() > kMaxTrackNameLength) {
    return Bad(TrackNameError::kTooLong, name, "longer than any valid track name");
  }
  if (name == kManifestTrack) return ManifestTrack(false);
  if (name == kManifestCoseTrack) return ManifestTrack(true);

  TrackName t;
  size_t dot1 = name.find('.');
  std::string_view comp = name.substr(0, dot1);
  if (comp == "k") {
    t.component = Component::kK;
  } else if (comp == "v") {
    t.component = Component::kV;
  } else if (comp == "kv") {
    t.component = Component::kKV;
  } else {
    return Bad(TrackNameError::kBadComponent, name,
               "expected \"manifest\", \"manifest.cose\" or a component k, v or kv");
  }
  if (dot1 == std::string_view::npos) {
    return Bad(TrackNameError::kMissingCodec, name, "missing \".<codec>.s<segment>\"");
  }
  // The codec name ends at the next '.'; it may not contain '.' itself, so the first dot after the
  // component is the separator before "s<segment>".
  std::string_view rest = name.substr(dot1 + 1);
  size_t dot2 = rest.find('.');
  std::string_view codec = rest.substr(0, dot2);
  if (codec.empty()) return Bad(TrackNameError::kMissingCodec, name, "empty codec name");
  for (char c : codec) {
    if (!IsCodecChar(c)) {
      return Bad(TrackNameError::kBadCodecChar, name, "codec name allows only [a-z0-9-]");
    }
  }
  if (codec.size() > kMaxCodecNameLength) {
    return Bad(TrackNameError::kCodecTooLong, name, "codec name longer than 32 characters");
  }
  if (dot2 == std::string_view::npos) {
    return Bad(TrackNameError::kMissingSegment, name, "missing \".s<segment>\"");
  }
  std::string_view seg = rest.substr(dot2 + 1);
  if (seg.empty() || seg[0] != 's') {
    return Bad(TrackNameError::kMissingSegment, name, "segment must be \"s<number>\"");
  }
  seg.remove_prefix(1);
  if (seg.empty()) return Bad(TrackNameError::kBadSegment, name, "empty segment number");
  uint64_t value = 0;
  for (char c : seg) {
    if (c < '0' || c > '9') {
      return Bad(TrackNameError::kBadSegment, name, "segment number must be decimal digits");
    }
    value = value * 10 + uint64_t(c - '0');
    if (value > UINT32_MAX) {  // at most 11 digits reach here, so value never wraps
      return Bad(TrackNameError::kSegmentOverflow, name, "segment number exceeds 4294967295");
    }
  }
  if (seg.size() > 1 && seg[0] == '0') {
    return Bad(TrackNameError::kLeadingZero, name, "segment number has a leading zero");
  }
  t.kind = TrackKind::kData;
  t.codec = std::string(codec);
  t.segment = uint32_t(value);
  return t;
}

std::string FormatTrackName(const TrackName& t) {
  switch (t.kind) {
    case TrackKind::kManifest:
      return std::string(kManifestTrack);
    case TrackKind::kManifestCose:
      return std::string(kManifestCoseTrack);
    case TrackKind::kData:
      break;
  }
  return std::string(ComponentName(t.component)) + "." + t.codec + ".s" + std::to_string(t.segment);
}

Result<uint8_t> DataPublisherPriority(uint64_t group, uint64_t layers) {
  if (layers == 0) return InvalidArgument("publisher priority: layer count is 0");
  if (group >= layers) {
    return InvalidArgument("publisher priority: group " + std::to_string(group) +
                           " is not a layer (L = " + std::to_string(layers) + ")");
  }
  // 128 * g can exceed 64 bits for g near 2^62 (a MOQT Group ID); compute in 128 bits.
  return uint8_t((static_cast<unsigned __int128>(group) * 128) / layers);
}

}  // namespace kvcs::profile
