// The one table of MOQT draft-22 wire vectors (test-only): every control message, data-stream
// shape and datagram variant, as wire hex plus the struct or event list it decodes to. The codec
// tests feed it to the encoder, the decoders (whole, byte-at-a-time, split, long varints,
// truncated, length +/-1) and the malformation checks; the fuzz seed generator writes it out as
// corpora. Never linked into non-test code. Immutable after first use; thread-safe to read.
#ifndef KVCS_MOQT_TEST_TOOLS_MOQT_TEST_VECTORS_H_
#define KVCS_MOQT_TEST_TOOLS_MOQT_TEST_VECTORS_H_

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/bytes.h"
#include "moqt/moqt_error.h"
#include "moqt/moqt_messages.h"

namespace kvcs::moqt::test {

// Hex with optional spaces -> bytes. REQUIRES: valid hex.
Bytes HexBytes(std::string_view hex);

struct ControlVector {
  std::string name;
  std::string hex;  // the framed message: Type, Length (16), Body
  ControlMessage message;
  bool encode = true;  // false: a valid non-canonical form the encoder does not emit
};
const std::vector<ControlVector>& ControlVectors();

struct MalformedVector {
  std::string name;
  std::string hex;
  WireError error;
  GroupOrder order = GroupOrder::kAscending;  // data streams: the fetch's group order
  bool fin = true;                            // data streams: FIN after the bytes
};
// Framed control messages that must fail with `error`.
const std::vector<MalformedVector>& MalformedControlVectors();

// Data-stream events as a recording visitor collects them.
struct ObjectEvent {
  ObjectHeader header;
  std::string payload;
  bool operator==(const ObjectEvent&) const = default;
};
struct PaddingEvent {
  bool operator==(const PaddingEvent&) const = default;
};
struct StreamEndEvent {
  bool operator==(const StreamEndEvent&) const = default;
};
using DataEvent = std::variant<SubgroupHeader, FetchHeader, ObjectEvent, EndOfRange, PaddingEvent,
                               StreamEndEvent>;

struct DataStreamVector {
  std::string name;
  std::string hex;  // the whole stream; FIN follows
  GroupOrder order = GroupOrder::kAscending;
  std::vector<DataEvent> events;
  bool encode = true;
};
const std::vector<DataStreamVector>& DataStreamVectors();
const std::vector<MalformedVector>& MalformedDataStreamVectors();

struct DatagramVector {
  std::string name;
  std::string hex;
  bool padding = false;
  ObjectDatagram datagram;
  std::string payload;
  bool encode = true;
};
const std::vector<DatagramVector>& DatagramVectors();
const std::vector<MalformedVector>& MalformedDatagramVectors();

}  // namespace kvcs::moqt::test

#endif  // KVCS_MOQT_TEST_TOOLS_MOQT_TEST_VECTORS_H_
