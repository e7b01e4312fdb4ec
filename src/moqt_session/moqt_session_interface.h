// SessionToDataStreamInterface: the narrow interface a session's data streams call back through
// (the QUICHE MoQT model: a stream object owns its own state and parsing or writing, and asks its
// session only for what needs session-wide state). IncomingDataStream uses it to find the
// request a peer's data stream belongs to, to account reassembly memory against the session's
// bound and to deliver objects; OutgoingDataStream to report objects sent and its own end.
// MoqtSessionImpl (moqt_session_impl.h) is the one implementation. Internal to moqt_session.
#ifndef KVCS_MOQT_SESSION_MOQT_SESSION_INTERFACE_H_
#define KVCS_MOQT_SESSION_MOQT_SESSION_INTERFACE_H_

#include <cstdint>
#include <optional>

#include "common/bytes.h"
#include "common/status.h"
#include "moqt/moqt_error.h"
#include "moqt/moqt_messages.h"

namespace kvcs::moqt {

class IncomingDataStream;
class OutgoingDataStream;

class SessionToDataStreamInterface {
 public:
  // ---- a peer's data stream (IncomingDataStream)
  // Attributes a subgroup stream to its subscription by Track Alias; false: the stream is
  // refused (or the session closed).
  virtual bool AttributeSubgroup(IncomingDataStream& stream, const SubgroupHeader& header) = 0;
  // Attributes a fetch stream to its FETCH (or a subscription's fill) by Request ID; the group
  // order it uses, or nullopt: refused (or the session closed).
  virtual std::optional<GroupOrder> AttributeFetch(IncomingDataStream& stream,
                                                   uint64_t request_id) = 0;
  // Reserves `bytes` of payload reassembly against kMaxReassemblyBytesPerSession; false (nothing
  // reserved) when they do not fit.
  virtual bool ReserveReassemblyBytes(uint64_t bytes) = 0;
  virtual void ReleaseReassemblyBytes(uint64_t bytes) = 0;
  // Stops reading the stream (STOP_SENDING `code`); it counts as ended.
  virtual void RefuseDataStream(IncomingDataStream& stream, StreamResetCode code) = 0;
  // One whole object of the stream (IncomingDataStream::CurrentObject) reached its end.
  // `buffer`: the reassembly buffer `payload` spans (handed on to the visitor), or null when
  // `payload` points into the transport's bytes.
  virtual void DeliverObject(IncomingDataStream& stream, ByteSpan payload,
                             std::shared_ptr<Bytes> buffer) = 0;
  virtual void DeliverEndOfRange(IncomingDataStream& stream, const EndOfRange& marker) = 0;
  // The stream ended: `clean` = FIN, otherwise reset or refused.
  virtual void DataStreamEnded(IncomingDataStream& stream, bool clean) = 0;
  // The stream is malformed: the session closes with the error's code.
  virtual void DataStreamMalformed(const Status& error) = 0;

  // ---- one of our data streams (OutgoingDataStream)
  virtual void ObjectSent(uint64_t payload_bytes) = 0;
  // The stream wrote its last byte or reset itself (the session ignores repeats).
  virtual void OutgoingDataStreamFinished(OutgoingDataStream& stream) = 0;

 protected:
  ~SessionToDataStreamInterface() = default;
};

}  // namespace kvcs::moqt

#endif  // KVCS_MOQT_SESSION_MOQT_SESSION_INTERFACE_H_
