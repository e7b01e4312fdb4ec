// WireOptions: the switches for the places where the draft-22 reference is ambiguous.
//
// Each default is the choice documented in docs/protocols/moqt-draft22.md; the alternative is kept
// because it is cheap and lets us interoperate with a peer that read the text the other way.
// Plain value type, thread-compatible.
#ifndef KVCS_MOQT_MOQT_OPTIONS_H_
#define KVCS_MOQT_MOQT_OPTIONS_H_

#include <cstddef>

namespace kvcs::moqt {

// How the FILL_PARAMETERS (0x23) value is laid out (open point 1).
enum class FillParametersEncoding {
  kLengthCountParams,  // draft-22 reading: Length (vi64), then Number of Parameters + params
  kCountParams,        // draft-23 form: Number of Parameters + params, no Length
};

// How a fetch-stream End of Range marker's two fields resolve to a Location (open point 3).
enum class EndOfRangeEncoding {
  kDelta,     // like an Object with both deltas: group = prior +/- (delta+1), object = delta
  kAbsolute,  // the two fields are the absolute Group ID and Object ID
};

struct WireOptions {
  FillParametersEncoding fill_parameters = FillParametersEncoding::kLengthCountParams;
  EndOfRangeEncoding end_of_range = EndOfRangeEncoding::kDelta;
  // §9.18 lists no LOCATION_FILTER/FILL_PARAMETERS for SUBSCRIBE_TRACKS, §3.6.2 prose uses them.
  // We never send them there; on receive we accept them when this is true.
  bool accept_filter_and_fill_in_subscribe_tracks = true;
  // Padding streams/datagrams "MUST" be all zero; reject non-zero padding when true.
  bool strict_padding = true;
  // Encoder only: write every vi64 this many bytes longer than minimal (capped at 9 bytes). Used
  // by tests to check that decoders accept non-minimal encodings. 0 in production.
  size_t varint_extra_bytes = 0;
};

}  // namespace kvcs::moqt

#endif  // KVCS_MOQT_MOQT_OPTIONS_H_
