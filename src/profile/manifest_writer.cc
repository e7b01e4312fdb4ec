// ManifestToJson in one pass: the text nlohmann's dump() gives for ManifestToJsonReference's DOM
// (compact, members in std::map order, i.e. sorted bytewise by name), written straight into one
// string sized once. The object digests, nearly all of the text, are hex written in place; the
// few short strings and the descriptor go through nlohmann's own serializer, so that escaping
// (a model name may need it) stays exactly the reference's.
#include <string>
#include <string_view>

#include "common/hex.h"
#include "kvsp/descriptor.h"
#include "profile/manifest.h"
#include "profile/track_name.h"

namespace kvcs::profile {
namespace {

using nlohmann::json;

void Key(std::string_view name, std::string* out) {
  out->push_back('"');
  out->append(name);  // the writer's own member names: plain ASCII, no escapes
  out->append("\":");
}

void String(const std::string& s, std::string* out) { out->append(json(s).dump()); }

void Uint(uint64_t v, std::string* out) { out->append(std::to_string(v)); }

void Bool(bool v, std::string* out) { out->append(v ? "true" : "false"); }

// [[hex, ...], ...]: one array per completed group, each the digests in object order.
void Digests(const std::vector<std::vector<Digest>>& groups, std::string* out) {
  out->push_back('[');
  for (size_t g = 0; g < groups.size(); ++g) {
    if (g > 0) out->push_back(',');
    out->push_back('[');
    for (size_t i = 0; i < groups[g].size(); ++i) {
      if (i > 0) out->push_back(',');
      out->push_back('"');
      AppendHex(groups[g][i], out);
      out->push_back('"');
    }
    out->push_back(']');
  }
  out->push_back(']');
}

// An upper bound of the text's size, so that the string is allocated once.
size_t SizeBound(const Manifest& m, size_t compat_size) {
  size_t n = 256 + compat_size;
  for (const ManifestSegment& s : m.segments) {
    n += 256;
    for (const TrackName& t : s.tracks) n += 8 + 6 * FormatTrackName(t).size();
    if (!s.object_digests) continue;
    for (const auto& [track, groups] : *s.object_digests) {
      n += 8 + 6 * track.size();
      for (const auto& g : groups) n += 3 + g.size() * (2 * sizeof(Digest) + 3);
    }
  }
  return n;
}

}  // namespace

Result<std::string> ManifestToJson(const Manifest& m) {
  KVCS_RETURN_IF_ERROR(ValidateManifest(m));
  const std::string compat = kvsp::ToJson(m.compat).dump();
  std::string out;
  out.reserve(SizeBound(m, compat.size()));
  out.push_back('{');
  Key("block_tokens", &out);
  Uint(m.block_tokens, &out);
  out.push_back(',');
  Key("compat", &out);
  out.append(compat);
  out.push_back(',');
  Key("deterministic", &out);
  Bool(m.deterministic, &out);
  out.push_back(',');
  Key("kvcs", &out);
  Uint(kManifestVersion, &out);
  out.push_back(',');
  Key("layers", &out);
  Uint(m.layers, &out);
  out.push_back(',');
  Key("segments", &out);
  out.push_back('[');
  for (size_t i = 0; i < m.segments.size(); ++i) {
    const ManifestSegment& s = m.segments[i];
    if (i > 0) out.push_back(',');
    out.push_back('{');
    Key("block_keys_sha256", &out);
    out.push_back('"');
    AppendHex(s.block_keys_sha256, &out);
    out.append("\",");
    Key("blocks", &out);
    Uint(s.blocks, &out);
    out.push_back(',');
    Key("complete", &out);
    Bool(s.complete, &out);
    out.push_back(',');
    Key("first_block", &out);
    Uint(s.first_block, &out);
    out.push_back(',');
    if (s.object_digests) {
      Key("object_digests", &out);
      out.push_back('{');
      bool first = true;  // std::map: the tracks in the DOM's (bytewise) order already
      for (const auto& [track, groups] : *s.object_digests) {
        if (!first) out.push_back(',');
        first = false;
        String(track, &out);
        out.push_back(':');
        Digests(groups, &out);
      }
      out.append("},");
    }
    Key("segment", &out);
    Uint(s.segment, &out);
    out.push_back(',');
    Key("tracks", &out);
    out.push_back('[');
    for (size_t t = 0; t < s.tracks.size(); ++t) {
      if (t > 0) out.push_back(',');
      String(FormatTrackName(s.tracks[t]), &out);
    }
    out.append("]}");
  }
  out.append("]}");
  return out;
}

}  // namespace kvcs::profile
