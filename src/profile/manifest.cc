#include "profile/manifest.h"

#include <algorithm>
#include <set>
#include <utility>

#include "common/hex.h"
#include "profile/codecs.h"
#include "profile/manifest_one_pass.h"

namespace kvcs::profile {
namespace {

using nlohmann::json;

// JSON integers must be exactly representable as IEEE doubles (the KVSP convention).
constexpr uint64_t kMaxJsonInt = kvsp::kMaxJsonInteger;

Status Err(ManifestError e, std::string msg) {
  Code code = Code::kInvalidArgument;
  switch (e) {
    case ManifestError::kTooLarge:
    case ManifestError::kTooDeep:
    case ManifestError::kTooManySegments:
    case ManifestError::kTooManyBlocks:
    case ManifestError::kTooManyTracks:
      code = Code::kResourceExhausted;
      break;
    case ManifestError::kCompatIdMismatch:
    case ManifestError::kListedDigestMismatch:
      code = Code::kCorruption;
      break;
    case ManifestError::kNotInManifest:
      code = Code::kNotFound;
      break;
    default:
      break;
  }
  return Status(code, "manifest: " + msg, static_cast<int>(e));
}

std::string U(uint64_t v) { return std::to_string(v); }

// Nesting depth of JSON text, ignoring brackets inside strings. Malformed text is left to the
// parser; this only has to bound what the parser will build.
bool DepthWithin(std::string_view s, size_t max_depth) {
  size_t depth = 0;
  bool in_string = false, escaped = false;
  for (char c : s) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return false;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return true;
}

// Rejects members other than `allowed` and reports the first missing one of `required`.
Status CheckMembers(const json& o, std::string_view where,
                    std::initializer_list<std::string_view> allowed,
                    std::initializer_list<std::string_view> required) {
  if (!o.is_object())
    return Err(ManifestError::kNotObject, std::string(where) + " is not an object");
  for (const auto& [key, value] : o.items()) {
    bool known = false;
    for (std::string_view a : allowed) known = known || key == a;
    if (!known) {
      return Err(ManifestError::kUnknownField,
                 std::string(where) + " has unknown member \"" + key.substr(0, 64) + "\"");
    }
  }
  for (std::string_view r : required) {
    if (!o.contains(r)) {
      return Err(ManifestError::kMissingField,
                 std::string(where) + " lacks required member \"" + std::string(r) + "\"");
    }
  }
  return Status::Ok();
}

Status GetUint(const json& v, std::string_view what, uint64_t max, ManifestError too_big,
               uint64_t* out) {
  if (v.is_number_unsigned()) {
    uint64_t x = v.get<uint64_t>();
    if (x > max || x > kMaxJsonInt) {
      return Err(too_big,
                 std::string(what) + " = " + U(x) + " exceeds " + U(std::min(max, kMaxJsonInt)));
    }
    *out = x;
    return Status::Ok();
  }
  if (v.is_number_integer()) {
    return Err(ManifestError::kOutOfRange, std::string(what) + " is negative");
  }
  return Err(ManifestError::kWrongType, std::string(what) + " must be an integer");
}

Status GetBool(const json& v, std::string_view what, bool* out) {
  if (!v.is_boolean())
    return Err(ManifestError::kWrongType, std::string(what) + " must be a boolean");
  *out = v.get<bool>();
  return Status::Ok();
}

Status GetHex32(const json& v, std::string_view what, Digest* out) {
  if (!v.is_string()) {
    return Err(ManifestError::kWrongType, std::string(what) + " must be a hex string");
  }
  const std::string& s = v.get_ref<const std::string&>();
  if (s.size() != 2 * kDigestSize) {
    return Err(ManifestError::kBadHex, std::string(what) + " must be 64 hex characters");
  }
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return Err(ManifestError::kBadHex, std::string(what) + " must be lowercase hex");
    }
  }
  KVCS_ASSIGN_OR_RETURN(*out, FromHexFixed<kDigestSize>(s));
  return Status::Ok();
}

Result<ManifestSegment> SegmentFromJson(const json& o, size_t index) {
  std::string where = "segments[" + U(index) + "]";
  KVCS_RETURN_IF_ERROR(CheckMembers(
      o, where,
      {"segment", "first_block", "blocks", "block_keys_sha256", "tracks", "complete",
       "object_digests"},
      {"segment", "first_block", "blocks", "block_keys_sha256", "tracks", "complete"}));
  ManifestSegment s;
  uint64_t v = 0;
  KVCS_RETURN_IF_ERROR(
      GetUint(o.at("segment"), where + ".segment", UINT32_MAX, ManifestError::kOutOfRange, &v));
  s.segment = uint32_t(v);
  KVCS_RETURN_IF_ERROR(GetUint(o.at("first_block"), where + ".first_block", kMaxManifestBlocks,
                               ManifestError::kOutOfRange, &s.first_block));
  KVCS_RETURN_IF_ERROR(GetUint(o.at("blocks"), where + ".blocks", kMaxManifestBlocks,
                               ManifestError::kTooManyBlocks, &s.blocks));
  KVCS_RETURN_IF_ERROR(
      GetHex32(o.at("block_keys_sha256"), where + ".block_keys_sha256", &s.block_keys_sha256));
  const json& tracks = o.at("tracks");
  if (!tracks.is_array()) return Err(ManifestError::kWrongType, where + ".tracks must be an array");
  if (tracks.size() > kMaxTracksPerSegment) {
    return Err(ManifestError::kTooManyTracks, where + " lists more than 16 tracks");
  }
  for (const json& t : tracks) {
    if (!t.is_string()) return Err(ManifestError::kWrongType, where + ".tracks holds a non-string");
    auto name = ParseTrackName(t.get_ref<const std::string&>());
    if (!name.ok())
      return Err(ManifestError::kBadTrackName, where + ": " + name.status().message());
    s.tracks.push_back(std::move(*name));
  }
  KVCS_RETURN_IF_ERROR(GetBool(o.at("complete"), where + ".complete", &s.complete));
  if (o.contains("object_digests")) {
    const json& od = o.at("object_digests");
    if (!od.is_object()) {
      return Err(ManifestError::kNotObject, where + ".object_digests is not an object");
    }
    if (od.size() > kMaxTracksPerSegment) {
      return Err(ManifestError::kTooManyTracks, where + ".object_digests has too many tracks");
    }
    auto& out = s.object_digests.emplace();
    for (const auto& [track, groups] : od.items()) {
      std::string w = where + ".object_digests[\"" + track.substr(0, kMaxTrackNameLength) + "\"]";
      if (!groups.is_array()) return Err(ManifestError::kWrongType, w + " must be an array");
      if (groups.size() > kvsp::kMaxLayers) {
        return Err(ManifestError::kTooManyGroups, w + " has more groups than any model has layers");
      }
      auto& gs = out[track];
      gs.reserve(groups.size());
      for (const json& group : groups) {
        if (!group.is_array()) return Err(ManifestError::kWrongType, w + " holds a non-array");
        if (group.size() > kMaxManifestBlocks) {
          return Err(ManifestError::kTooManyBlocks, w + " lists too many digests");
        }
        auto& ds = gs.emplace_back();
        ds.reserve(group.size());
        for (const json& d : group) KVCS_RETURN_IF_ERROR(GetHex32(d, w, &ds.emplace_back()));
      }
    }
  }
  return s;
}

Status ValidateSegment(const Manifest& m, const ManifestSegment& s, size_t index,
                       uint64_t expected_first) {
  std::string where = "segment " + U(index);
  if (s.segment != index) {
    return Err(ManifestError::kSegmentNumber,
               where + " is numbered " + U(s.segment) + "; segments must be 0, 1, 2, ... in order");
  }
  if (s.first_block != expected_first) {
    return Err(ManifestError::kNotContiguous,
               where + " starts at block " + U(s.first_block) + ", expected " + U(expected_first));
  }
  if (s.blocks == 0) return Err(ManifestError::kZeroBlocks, where + " has no blocks");
  if (s.tracks.empty()) return Err(ManifestError::kNoTracks, where + " lists no tracks");
  if (s.tracks.size() > kMaxTracksPerSegment) {
    return Err(ManifestError::kTooManyTracks, where + " lists more than 16 tracks");
  }
  std::set<std::string> names;
  for (const TrackName& t : s.tracks) {
    if (!t.is_data()) return Err(ManifestError::kBadTrackName, where + " lists a manifest track");
    std::string name = FormatTrackName(t);
    auto reparsed = ParseTrackName(name);  // a struct built in code may hold a bad codec name
    if (!reparsed.ok() || !(*reparsed == t)) {
      return Err(ManifestError::kBadTrackName, where + " lists invalid track \"" + name + "\"");
    }
    if (t.segment != s.segment) {
      return Err(ManifestError::kTrackSegmentMismatch,
                 where + " lists track \"" + name + "\" of another segment");
    }
    if (!CodecValueForName(t.codec)) {
      return Err(ManifestError::kUnknownCodec,
                 where + " track \"" + name + "\" names a codec outside the KVSP registry");
    }
    if (!names.insert(name).second) {
      return Err(ManifestError::kDuplicateTrack, where + " lists \"" + name + "\" twice");
    }
  }
  if (s.object_digests) {
    if (s.object_digests->size() > kMaxTracksPerSegment) {
      return Err(ManifestError::kTooManyTracks, where + " object_digests has too many tracks");
    }
    for (const auto& [track, groups] : *s.object_digests) {
      std::string w = where + " object_digests[\"" + track.substr(0, kMaxTrackNameLength) + "\"]";
      if (!names.count(track)) {
        return Err(ManifestError::kUnlistedTrack, w + " is for a track not in \"tracks\"");
      }
      if (groups.size() > m.layers) {
        return Err(ManifestError::kTooManyGroups,
                   w + " has " + U(groups.size()) + " groups for " + U(m.layers) + " layers");
      }
      if (s.complete && groups.size() != m.layers) {
        return Err(ManifestError::kMissingGroups, w + " of a complete segment has " +
                                                      U(groups.size()) + " of " + U(m.layers) +
                                                      " layers");
      }
      for (size_t g = 0; g < groups.size(); ++g) {
        if (groups[g].size() != s.blocks) {
          return Err(ManifestError::kWrongDigestCount, w + " group " + U(g) + " has " +
                                                           U(groups[g].size()) + " digests for " +
                                                           U(s.blocks) + " blocks");
        }
      }
    }
  }
  return Status::Ok();
}

json DigestsToJson(const std::vector<std::vector<Digest>>& groups) {
  json out = json::array();
  for (const auto& g : groups) {
    json arr = json::array();
    for (const Digest& d : g) arr.push_back(ToHex(d));
    out.push_back(std::move(arr));
  }
  return out;
}

const ManifestSegment* FindSegment(const Manifest& m, const TrackName& track) {
  if (!track.is_data() || track.segment >= m.segments.size()) return nullptr;
  const ManifestSegment& s = m.segments[track.segment];
  if (s.segment != track.segment) return nullptr;
  for (const TrackName& t : s.tracks) {
    if (t == track) return &s;
  }
  return nullptr;
}

}  // namespace

std::string_view ManifestErrorName(ManifestError e) {
  switch (e) {
    case ManifestError::kNone:
      return "none";
    case ManifestError::kTooLarge:
      return "too_large";
    case ManifestError::kTooDeep:
      return "too_deep";
    case ManifestError::kSyntax:
      return "syntax";
    case ManifestError::kDuplicateKey:
      return "duplicate_key";
    case ManifestError::kNotObject:
      return "not_object";
    case ManifestError::kUnknownField:
      return "unknown_field";
    case ManifestError::kMissingField:
      return "missing_field";
    case ManifestError::kWrongType:
      return "wrong_type";
    case ManifestError::kOutOfRange:
      return "out_of_range";
    case ManifestError::kUnsupportedVersion:
      return "unsupported_version";
    case ManifestError::kBadCompat:
      return "bad_compat";
    case ManifestError::kLayersMismatch:
      return "layers_mismatch";
    case ManifestError::kBlockTokensMismatch:
      return "block_tokens_mismatch";
    case ManifestError::kNoSegments:
      return "no_segments";
    case ManifestError::kTooManySegments:
      return "too_many_segments";
    case ManifestError::kSegmentNumber:
      return "segment_number";
    case ManifestError::kNotContiguous:
      return "not_contiguous";
    case ManifestError::kZeroBlocks:
      return "zero_blocks";
    case ManifestError::kTooManyBlocks:
      return "too_many_blocks";
    case ManifestError::kBadHex:
      return "bad_hex";
    case ManifestError::kNoTracks:
      return "no_tracks";
    case ManifestError::kTooManyTracks:
      return "too_many_tracks";
    case ManifestError::kBadTrackName:
      return "bad_track_name";
    case ManifestError::kTrackSegmentMismatch:
      return "track_segment_mismatch";
    case ManifestError::kDuplicateTrack:
      return "duplicate_track";
    case ManifestError::kUnknownCodec:
      return "unknown_codec";
    case ManifestError::kUnlistedTrack:
      return "unlisted_track";
    case ManifestError::kTooManyGroups:
      return "too_many_groups";
    case ManifestError::kMissingGroups:
      return "missing_groups";
    case ManifestError::kWrongDigestCount:
      return "wrong_digest_count";
    case ManifestError::kCompatIdMismatch:
      return "compat_id_mismatch";
    case ManifestError::kNotInManifest:
      return "not_in_manifest";
    case ManifestError::kListedDigestMismatch:
      return "listed_digest_mismatch";
  }
  return "unknown";
}

Result<nlohmann::json> ParseStrictJsonText(std::string_view text, size_t max_depth) {
  if (text.size() > kMaxManifestBytes) {
    return Err(ManifestError::kTooLarge, U(text.size()) + " bytes exceeds the 64 MiB bound");
  }
  if (!DepthWithin(text, max_depth)) {
    return Err(ManifestError::kTooDeep, "JSON nesting deeper than " + U(max_depth));
  }
  // Duplicate member names are invisible after parsing (the last one wins), so they are caught
  // while parsing: one set of names per open object.
  std::vector<std::set<std::string>> open;
  bool duplicate = false;
  json::parser_callback_t cb = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        open.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!open.empty()) open.pop_back();
        break;
      case json::parse_event_t::key:
        if (!open.empty() && !open.back().insert(parsed.get<std::string>()).second) {
          duplicate = true;
        }
        break;
      default:
        break;
    }
    return true;
  };
  json j = json::parse(text.begin(), text.end(), cb, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Err(ManifestError::kSyntax, "not valid JSON text");
  if (duplicate) return Err(ManifestError::kDuplicateKey, "an object has a duplicate member");
  return j;
}

Result<Manifest> ParseManifestReference(std::string_view text) {
  KVCS_ASSIGN_OR_RETURN(json j, ParseStrictJsonText(text, kMaxManifestJsonDepth));
  return ManifestFromJson(j);
}

Result<Manifest> ParseManifest(std::string_view text) {
  // Every manifest this project writes takes the one-pass path; whatever it does not accept (an
  // error, or JSON it leaves to the reference: escapes, non-ASCII, ...) is decided by the
  // reference, so the accepted set and every typed error are the reference's.
  if (std::optional<Manifest> m = ParseManifestOnePass(text)) return std::move(*m);
  return ParseManifestReference(text);
}

Result<Manifest> ManifestFromJson(const json& j) {
  KVCS_RETURN_IF_ERROR(CheckMembers(
      j, "manifest", {"kvcs", "compat", "layers", "block_tokens", "deterministic", "segments"},
      {"kvcs", "compat", "layers", "block_tokens", "deterministic", "segments"}));
  uint64_t version = 0;
  KVCS_RETURN_IF_ERROR(
      GetUint(j.at("kvcs"), "kvcs", kMaxJsonInt, ManifestError::kUnsupportedVersion, &version));
  if (version != kManifestVersion) {
    return Err(ManifestError::kUnsupportedVersion, "kvcs = " + U(version) + ", expected 1");
  }
  Manifest m;
  auto compat = kvsp::DescriptorFromJson(j.at("compat"));
  if (!compat.ok()) return Err(ManifestError::kBadCompat, "compat: " + compat.status().message());
  m.compat = std::move(*compat);
  uint64_t v = 0;
  KVCS_RETURN_IF_ERROR(
      GetUint(j.at("layers"), "layers", kvsp::kMaxLayers, ManifestError::kOutOfRange, &v));
  m.layers = uint32_t(v);
  KVCS_RETURN_IF_ERROR(
      GetUint(j.at("block_tokens"), "block_tokens", UINT32_MAX, ManifestError::kOutOfRange, &v));
  m.block_tokens = uint32_t(v);
  KVCS_RETURN_IF_ERROR(GetBool(j.at("deterministic"), "deterministic", &m.deterministic));
  const json& segs = j.at("segments");
  if (!segs.is_array()) return Err(ManifestError::kWrongType, "segments must be an array");
  if (segs.size() > kMaxSegments) {
    return Err(ManifestError::kTooManySegments, U(segs.size()) + " segments exceeds 4096");
  }
  m.segments.reserve(segs.size());
  for (size_t i = 0; i < segs.size(); ++i) {
    KVCS_ASSIGN_OR_RETURN(auto s, SegmentFromJson(segs[i], i));
    m.segments.push_back(std::move(s));
  }
  KVCS_RETURN_IF_ERROR(ValidateManifest(m));
  return m;
}

Status ValidateManifest(const Manifest& m) {
  Status d = kvsp::ValidateDescriptor(m.compat);
  if (!d.ok()) return Err(ManifestError::kBadCompat, "compat: " + d.message());
  if (m.layers != m.compat.layers) {
    return Err(ManifestError::kLayersMismatch,
               "layers = " + U(m.layers) + " but the descriptor says " + U(m.compat.layers));
  }
  if (m.block_tokens != m.compat.block_tokens) {
    return Err(ManifestError::kBlockTokensMismatch, "block_tokens = " + U(m.block_tokens) +
                                                        " but the descriptor says " +
                                                        U(m.compat.block_tokens));
  }
  if (m.segments.empty()) return Err(ManifestError::kNoSegments, "no segments");
  if (m.segments.size() > kMaxSegments) {
    return Err(ManifestError::kTooManySegments, U(m.segments.size()) + " segments exceeds 4096");
  }
  uint64_t next_first = 0;
  for (size_t i = 0; i < m.segments.size(); ++i) {
    const ManifestSegment& s = m.segments[i];
    // Bound before adding, so next_first never overflows.
    if (s.blocks > kMaxManifestBlocks || next_first + s.blocks > kMaxManifestBlocks) {
      return Err(ManifestError::kTooManyBlocks, "more than 2^22 blocks in total");
    }
    KVCS_RETURN_IF_ERROR(ValidateSegment(m, s, i, next_first));
    next_first += s.blocks;
  }
  return Status::Ok();
}

Result<std::string> ManifestToJsonReference(const Manifest& m) {
  KVCS_RETURN_IF_ERROR(ValidateManifest(m));
  json j;
  j["kvcs"] = kManifestVersion;
  j["compat"] = kvsp::ToJson(m.compat);
  j["layers"] = m.layers;
  j["block_tokens"] = m.block_tokens;
  j["deterministic"] = m.deterministic;
  json segs = json::array();
  for (const ManifestSegment& s : m.segments) {
    json o;
    o["segment"] = s.segment;
    o["first_block"] = s.first_block;
    o["blocks"] = s.blocks;
    o["block_keys_sha256"] = ToHex(s.block_keys_sha256);
    json tracks = json::array();
    for (const TrackName& t : s.tracks) tracks.push_back(FormatTrackName(t));
    o["tracks"] = std::move(tracks);
    o["complete"] = s.complete;
    if (s.object_digests) {
      json od = json::object();
      for (const auto& [track, groups] : *s.object_digests) od[track] = DigestsToJson(groups);
      o["object_digests"] = std::move(od);
    }
    segs.push_back(std::move(o));
  }
  j["segments"] = std::move(segs);
  return j.dump();
}

Status CheckManifestNamespace(const Manifest& m, const Namespace& ns) {
  Digest id = kvsp::CompatId(m.compat);
  if (id != ns.compat_id) {
    return Err(ManifestError::kCompatIdMismatch,
               "compat_id of \"compat\" is " + ToHex(id) + " but the namespace says " +
                   ToHex(ns.compat_id) + "; discard this publication");
  }
  return Status::Ok();
}

Digest BlockKeysSha256(std::span<const Digest> block_keys) {
  Sha256 h;
  for (const Digest& k : block_keys) h.Update(AsBytes(k));
  return h.Finish();
}

Result<ObjectExpectation> ExpectationFor(const Manifest& m, const TrackName& track,
                                         uint64_t group_id, uint64_t object_id) {
  const ManifestSegment* s = FindSegment(m, track);
  if (s == nullptr) {
    return Err(ManifestError::kNotInManifest,
               "track \"" + FormatTrackName(track) + "\" is not listed");
  }
  if (group_id >= m.layers) {
    return Err(ManifestError::kNotInManifest, "group " + U(group_id) + " is not a layer");
  }
  if (object_id >= s->blocks) {
    return Err(ManifestError::kNotInManifest,
               "object " + U(object_id) + " is not a block of segment " + U(s->segment));
  }
  auto codec = CodecValueForName(track.codec);
  if (!codec) return Err(ManifestError::kUnknownCodec, "codec \"" + track.codec + "\"");
  ObjectExpectation e;
  e.group_id = group_id;
  e.object_id = object_id;
  e.component = track.component;
  e.codec = *codec;
  e.block_tokens = m.block_tokens;
  // Bounded by ValidateManifest: (2^22 blocks) * (2^32 tokens) < 2^64.
  e.token_start = (s->first_block + object_id) * uint64_t{m.block_tokens};
  return e;
}

std::optional<Digest> ListedDigest(const Manifest& m, const TrackName& track, uint64_t group_id,
                                   uint64_t object_id) {
  const ManifestSegment* s = FindSegment(m, track);
  if (s == nullptr || !s->object_digests) return std::nullopt;
  auto it = s->object_digests->find(FormatTrackName(track));
  if (it == s->object_digests->end() || group_id >= it->second.size()) return std::nullopt;
  const auto& group = it->second[group_id];
  if (object_id >= group.size()) return std::nullopt;
  return group[object_id];
}

Status CheckVerifiedObject(const Manifest& m, const TrackName& track, uint64_t group_id,
                           uint64_t object_id, const ObjectHeader& header) {
  KVCS_ASSIGN_OR_RETURN(ObjectExpectation e, ExpectationFor(m, track, group_id, object_id));
  KVCS_RETURN_IF_ERROR(CheckObjectExpectation(header, e));
  std::optional<Digest> listed = ListedDigest(m, track, group_id, object_id);
  if (listed && *listed != header.data_digest) {
    return Err(ManifestError::kListedDigestMismatch,
               "object " + U(object_id) + " of group " + U(group_id) + " of \"" +
                   FormatTrackName(track) + "\" is not the one the manifest lists");
  }
  return Status::Ok();
}

Result<ObjectView> VerifyObject(const Manifest& m, const TrackName& track, uint64_t group_id,
                                uint64_t object_id, ByteSpan payload) {
  KVCS_ASSIGN_OR_RETURN(ObjectExpectation e, ExpectationFor(m, track, group_id, object_id));
  KVCS_ASSIGN_OR_RETURN(ObjectView v, DecodeObject(payload, e));
  KVCS_RETURN_IF_ERROR(CheckVerifiedObject(m, track, group_id, object_id, v.header));
  return v;
}

}  // namespace kvcs::profile
