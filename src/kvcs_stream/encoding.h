// Encoding: one way a segment is offered (profile §3.2): the pair of tracks "k.<codec>.sN" and
// "v.<codec>.sN", or one jointly encoded track "kv.<codec>.sN". Maps an encoding to its track
// names and turns one block's raw K and V sections (one layer) into the Data of each track's
// Object, and back (decoding to the descriptor's dtype when the codec is not raw).
//
// "kv" Data is the encoded K section followed by the encoded V section (§3.5). The split point
// must follow from the descriptor, so joint tracks take only fixed-size codecs (raw, fp8-e4m3,
// int8); zstd is offered as a k/v pair. Pure functions; thread-safe.
#ifndef KVCS_KVCS_STREAM_ENCODING_H_
#define KVCS_KVCS_STREAM_ENCODING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/status.h"
#include "kvsp/codec.h"
#include "kvsp/descriptor.h"
#include "profile/track_name.h"

namespace kvcs::stream {

struct Encoding {
  kvsp::Codec codec = kvsp::Codec::kRaw;
  bool joint = false;  // one "kv" track instead of "k" + "v"
  bool operator==(const Encoding&) const = default;
};

// For people: "k+v raw", "kv.fp8-e4m3".
std::string EncodingName(const Encoding& e);
// The command-line form: "kv.<codec>" (one joint track) or "k+v.<codec>" (the pair), e.g.
// "kv.int8", "k+v.zstd". Errors: kInvalidArgument naming what is wrong (the encoding is then
// still to be checked with CheckEncoding).
Result<Encoding> ParseEncoding(std::string_view text);

// Errors: kInvalidArgument (kBadArgument) for a joint encoding with a variable-size codec, or
// kUnsupported for a codec that is not implemented.
Status CheckEncoding(const Encoding& e);

// The data tracks of `e` for `segment`, in order (k then v, or kv).
std::vector<profile::TrackName> EncodingTracks(const Encoding& e, uint32_t segment);

// The Data of track component `c` (kK, kV or kKV) for one block and layer, from raw sections.
Result<Bytes> EncodeData(const kvsp::Descriptor& d, kvsp::Codec codec, profile::Component c,
                         ByteSpan raw_k, ByteSpan raw_v);

// Decodes a verified Data of component `c` into raw sections: *k gets K (for kK and kKV), *v
// gets V (for kV and kKV); other outputs are left alone. Errors: kCorruption (kUndecodable).
Status DecodeData(const kvsp::Descriptor& d, kvsp::Codec codec, profile::Component c, ByteSpan data,
                  Bytes* k, Bytes* v);

}  // namespace kvcs::stream

#endif  // KVCS_KVCS_STREAM_ENCODING_H_
