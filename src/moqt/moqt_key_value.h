// Key-Value-Pair lists (draft §8.3): Setup Options and Properties (track and object).
//
//   Key-Value-Pair { Delta Type (vi64), [Length (vi64),] Value (..) }
//
// Types are delta-coded from the previous pair (the first from 0), so lists ascend; a zero delta
// repeats a type. Even types carry one vi64; odd types a Length (<= 65 535) and bytes. A list is
// always bounded by an externally known byte length. Pure functions, thread-safe.
#ifndef KVCS_MOQT_MOQT_KEY_VALUE_H_
#define KVCS_MOQT_MOQT_KEY_VALUE_H_

#include <vector>

#include "common/status.h"
#include "moqt/moqt_messages.h"
#include "moqt/moqt_wire_io.h"

namespace kvcs::moqt {

// Decodes a list that occupies exactly `list` (a pair running past its end is kLengthMismatch).
Status ParseKvpList(ByteSpan list, std::vector<KeyValuePair>* out);
// Checks ascending types, value bounds and the pair count; then appends the list (no length).
Status WriteKvpList(WireWriter& w, const std::vector<KeyValuePair>& list);
Status ValidateKvpList(const std::vector<KeyValuePair>& list);

// Properties with their length prefix (object properties): Properties Length (vi64), KVPs.
// Returns Truncated() while the announced bytes have not all arrived.
Status ReadLengthPrefixedProperties(WireReader& r, Properties* out);
Status WriteLengthPrefixedProperties(WireWriter& w, const Properties& props);

// Setup Options <-> KVP list. Known options other than AUTHORIZATION_TOKEN must not repeat
// (kDuplicateSetupOption); unknown ones (grease) are kept in `unknown` and may repeat.
Status SetupOptionsFromKvps(const std::vector<KeyValuePair>& kvps, SetupOptions* out);
Status SetupOptionsToKvps(const SetupOptions& options, size_t varint_extra_bytes,
                          std::vector<KeyValuePair>* out);

}  // namespace kvcs::moqt

#endif  // KVCS_MOQT_MOQT_KEY_VALUE_H_
