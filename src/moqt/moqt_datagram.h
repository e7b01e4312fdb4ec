// ParseDatagram: decodes one QUIC DATAGRAM carrying MOQT data (draft §11.2, §11.5.2): an
// OBJECT_DATAGRAM of any valid Type Flags combination, or a padding datagram.
//
// A datagram is atomic: a field cut short is malformed (kBodyTooShort), never "need more". The
// payload is the rest of the datagram and is returned as a view into `datagram` (valid as long as
// those bytes are). Pure function, thread-safe.
#ifndef KVCS_MOQT_MOQT_DATAGRAM_H_
#define KVCS_MOQT_MOQT_DATAGRAM_H_

#include "common/bytes.h"
#include "common/status.h"
#include "moqt/moqt_messages.h"
#include "moqt/moqt_options.h"

namespace kvcs::moqt {

struct ParsedDatagram {
  bool padding = false;  // a padding datagram: nothing else is set
  ObjectDatagram object;
  ByteSpan payload;
};

Result<ParsedDatagram> ParseDatagram(ByteSpan datagram, const WireOptions& options = {});

// Every valid OBJECT_DATAGRAM Type Flags value (for tests and fuzz seeds).
std::vector<uint8_t> AllDatagramTypes();
// Every valid SUBGROUP_HEADER Type Flags value.
std::vector<uint8_t> AllSubgroupTypes();

}  // namespace kvcs::moqt

#endif  // KVCS_MOQT_MOQT_DATAGRAM_H_
