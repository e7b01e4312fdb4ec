// Message Parameters (draft §9.20): the counted, type-delta-coded parameter block of control
// messages, including the structured values LOCATION_FILTER, FILL_PARAMETERS, the range filters
// and AUTHORIZATION_TOKEN.
//
//   Parameters = Number of Parameters (vi64), { Type Delta (vi64), Value (per type) } ...
//
// Unlike KVPs, parameters cannot be skipped: an unknown type, or a known one the message does not
// list, is malformed (PROTOCOL_VIOLATION). A zero Type Delta (a second instance) is allowed only
// for AUTHORIZATION_TOKEN and the range filters. Range-filter content errors are kInvalidFilter
// (answered with REQUEST_ERROR INVALID_FILTER, not a session close). Pure, thread-safe.
#ifndef KVCS_MOQT_MOQT_PARAMETERS_H_
#define KVCS_MOQT_MOQT_PARAMETERS_H_

#include <cstdint>

#include "common/status.h"
#include "moqt/moqt_messages.h"
#include "moqt/moqt_options.h"
#include "moqt/moqt_wire_io.h"

namespace kvcs::moqt {

// Which allow-list applies (draft §9.20 per-parameter "may appear in" lists).
enum class ParamScope {
  kSubscribe,
  kSubscribeOk,
  kPublish,
  kFetch,
  kFetchOk,
  kRequestOk,
  kRequestUpdate,
  kPublishStateNotify,
  kTrackStatus,
  kPublishNamespace,
  kSubscribeNamespace,
  kSubscribeTracks,
  kFill,  // inside FILL_PARAMETERS
};

// Bit t set = parameter type t (< 64) allowed. `receiving` applies the receive-side leniency of
// WireOptions (LOCATION_FILTER/FILL_PARAMETERS in SUBSCRIBE_TRACKS).
uint64_t AllowedParameters(ParamScope scope, const WireOptions& options, bool receiving);

Status ReadParameters(WireReader& r, ParamScope scope, const WireOptions& options,
                      MessageParameters* out);
Status WriteParameters(WireWriter& w, ParamScope scope, const WireOptions& options,
                       const MessageParameters& params);

Status ReadLocationFilter(WireReader& r, LocationFilter* out);
void WriteLocationFilter(WireWriter& w, const LocationFilter& f);

}  // namespace kvcs::moqt

#endif  // KVCS_MOQT_MOQT_PARAMETERS_H_
