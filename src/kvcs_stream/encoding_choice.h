// Encoding choice (issue 13, "codec choice"): with several encodings of a segment offered (the
// raw k+v pair, kv.<codec> or k/v.<codec> tracks), which one a consumer retrieves.
//
// The rule. Let r be the measured rate of the link to the source (bytes/s), c the caller's
// compute time per token per layer (ns), and s_e the bytes one token of one layer takes in
// encoding e (K and V together; exact for raw, fp8-e4m3 and int8 from the descriptor, for zstd
// the caller's estimate or measurement, else zstd is not considered). Transferring a layer of T
// tokens takes s_e·T/r, computing it takes c·T, so the transfer hides behind the compute when
//     s_e / r <= c.
//   1. When the raw pair is offered and s_raw / r <= c, the compute, not the link, is the limit:
//      take the raw pair (exact bytes, nothing to decode).
//   2. Otherwise the link is the limit: take the offered encoding with the fewest bytes (ties: the
//      raw pair, then lossless before lossy, then offer order). Lossy codecs only when allowed.
//   3. Without a measured rate (r = 0) or compute cost (c = 0): the raw pair when offered, else
//      the first offered encoding.
// Decoding cost is not counted (fp8/int8 decode is cheaper than the transfer it saves).
// Pure functions; thread-safe.
#ifndef KVCS_KVCS_STREAM_ENCODING_CHOICE_H_
#define KVCS_KVCS_STREAM_ENCODING_CHOICE_H_

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "kvcs_stream/encoding.h"
#include "profile/manifest.h"

namespace kvcs::stream {

struct ChoiceInputs {
  double rate_bytes_per_s = 0;  // measured link rate; 0: unknown
  uint64_t compute_ns_per_token_layer = 0;
  bool allow_lossy = true;
  std::optional<double> zstd_ratio;  // encoded / raw bytes for zstd, if known (e.g. 0.8)
};

// The encodings a manifest segment offers: each k/v pair of one codec, and each kv track.
std::vector<Encoding> OfferedEncodings(const profile::ManifestSegment& s);

// s_e: bytes per token per layer of K and V in `e`; nullopt when it cannot be known (zstd
// without a ratio, an unimplemented codec).
std::optional<double> BytesPerTokenLayer(const kvsp::Descriptor& d, const Encoding& e,
                                         std::optional<double> zstd_ratio = std::nullopt);

// The rule above. REQUIRES: offered is not empty.
Encoding ChooseEncoding(const kvsp::Descriptor& d, std::span<const Encoding> offered,
                        const ChoiceInputs& in);

}  // namespace kvcs::stream

#endif  // KVCS_KVCS_STREAM_ENCODING_CHOICE_H_
