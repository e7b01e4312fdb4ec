// MoqtFramer: structs -> MOQT draft-22 wire bytes (control messages, data-stream headers and
// objects, datagrams).
//
// Every function validates its input against the same bounds and rules the parsers enforce
// (namespace limits, parameter allow-lists, ascending property types, flag combinations), and
// returns a WireError Status instead of emitting bytes the peer would reject. Control messages
// are written with their framing: Type (vi64), Length (16), Body. The stream writers keep the
// little state the encodings are relative to (prior object). Not thread-safe per writer object;
// free functions are thread-safe.
#ifndef KVCS_MOQT_MOQT_FRAMER_H_
#define KVCS_MOQT_MOQT_FRAMER_H_

#include <optional>

#include "common/bytes.h"
#include "common/status.h"
#include "moqt/moqt_messages.h"
#include "moqt/moqt_options.h"
#include "moqt/moqt_wire_io.h"

namespace kvcs::moqt {

// Appends Type + Length + Body for m. Fails (appending nothing) when m is invalid or its body
// exceeds kMaxControlMessageBody.
Status AppendControlMessage(const ControlMessage& m, Bytes* out, const WireOptions& options = {});
Result<Bytes> SerializeControlMessage(const ControlMessage& m, const WireOptions& options = {});
// The body alone (no framing).
Status WriteControlBody(const ControlMessage& m, WireWriter& w, const WireOptions& options);

// ---- subgroup streams: SUBGROUP_HEADER then objects.

// Appends the header (Type Flags always in the 1-byte form).
Status AppendSubgroupHeader(const SubgroupHeader& h, Bytes* out, const WireOptions& options = {});

// Appends the objects of one subgroup stream. REQUIRES: objects in ascending Object ID order.
class SubgroupStreamWriter {
 public:
  explicit SubgroupStreamWriter(const SubgroupHeader& header, const WireOptions& options = {})
      : header_(header), options_(options) {}
  // Writes the header fields of `object` and `payload` (payload.size() becomes the payload
  // length). Status objects (EndOfGroup, EndOfTrack) carry no payload and no properties; a
  // Normal object with an empty payload is written with explicit status 0.
  Status AppendObject(uint64_t object_id, ObjectStatus status, const Properties& properties,
                      ByteSpan payload, Bytes* out);
  // Only the header fields; the caller appends payload_length payload bytes afterwards.
  Status AppendObjectHeader(uint64_t object_id, ObjectStatus status, const Properties& properties,
                            uint64_t payload_length, Bytes* out);

 private:
  SubgroupHeader header_;
  WireOptions options_;
  std::optional<uint64_t> prior_object_;
};

// ---- fetch streams: FETCH_HEADER then objects and End of Range markers.

Status AppendFetchHeader(const FetchHeader& h, Bytes* out, const WireOptions& options = {});

// Chooses the shortest Serialization Flags for each object relative to the prior one.
class FetchStreamWriter {
 public:
  explicit FetchStreamWriter(GroupOrder order = GroupOrder::kAscending,
                             const WireOptions& options = {})
      : order_(order), options_(options) {}
  // `object.status` must be Normal (fetch streams carry no status); payload_length is taken
  // from payload.size(). REQUIRES: objects in `order`, ascending Object IDs within a group.
  Status AppendObject(const ObjectHeader& object, ByteSpan payload, Bytes* out);
  Status AppendObjectHeader(const ObjectHeader& object, Bytes* out);
  Status AppendEndOfRange(const EndOfRange& marker, Bytes* out);

 private:
  Status GroupDelta(uint64_t group, uint64_t* delta) const;

  GroupOrder order_;
  WireOptions options_;
  std::optional<Location> prior_;           // last object or marker
  std::optional<uint64_t> prior_subgroup_;  // last object that had a subgroup
  std::optional<uint8_t> prior_priority_;   // last real object
};

// ---- datagrams.

// Appends one OBJECT_DATAGRAM: the STATUS flag is used iff d.status is set (then payload must be
// empty); PROPERTIES iff d.properties is non-empty; ZERO_OBJECT_ID iff the Object ID is 0.
Status AppendObjectDatagram(const ObjectDatagram& d, ByteSpan payload, Bytes* out,
                            const WireOptions& options = {});
void AppendPaddingDatagram(size_t zero_bytes, Bytes* out);
void AppendPaddingStreamHeader(Bytes* out);

}  // namespace kvcs::moqt

#endif  // KVCS_MOQT_MOQT_FRAMER_H_
