// IncomingDataStream: one data stream the peer opened to us (a subgroup stream of a subscription,
// a fill stream, or a FETCH's stream). It owns the stream's DataStreamParser and reassembles each
// object's payload (the reserved bytes count against the session's
// kMaxReassemblyBytesPerSession until the object is delivered or the stream ends), and asks its
// session (SessionToDataStreamInterface) to attribute the stream to a request and to deliver
// each whole object. The session owns it (one per stream) and feeds it the stream's bytes.
// THREADING: single-threaded (the session's executor). Internal to moqt_session.
#ifndef KVCS_MOQT_SESSION_MOQT_INCOMING_DATA_STREAM_H_
#define KVCS_MOQT_SESSION_MOQT_INCOMING_DATA_STREAM_H_

#include <cstdint>
#include <memory>
#include <optional>

#include "common/bytes.h"
#include "common/status.h"
#include "moqt/moqt_data_parser.h"
#include "moqt/moqt_messages.h"
#include "moqt_session/moqt_session.h"
#include "moqt_session/moqt_session_interface.h"
#include "transport/session.h"

namespace kvcs::moqt {

class IncomingDataStream : public DataStreamVisitor {
 public:
  IncomingDataStream(SessionToDataStreamInterface* session, transport::StreamId id,
                     const WireOptions& wire)
      : session_(session), id_(id), parser_(this, wire) {}
  IncomingDataStream(const IncomingDataStream&) = delete;
  IncomingDataStream& operator=(const IncomingDataStream&) = delete;

  // What the first bytes of a subgroup stream say, read without consuming them (the Track Alias
  // decides whether the session reads on or parks the stream until SUBSCRIBE_OK names it).
  struct HeaderPeek {
    std::optional<SubgroupHeader> header;
    bool failed = false;  // the bytes cannot start a valid stream
  };
  static HeaderPeek PeekSubgroupHeader(ByteSpan data, const WireOptions& wire);

  // Feeds stream bytes (`fin`: the stream ended after them). Callbacks run from inside.
  void OnData(ByteSpan data, bool fin) { parser_.OnData(data, fin); }

  transport::StreamId id() const { return id_; }
  // The OutgoingRequest this stream belongs to (valid once attributed()).
  uint64_t owner() const { return owner_; }
  bool attributed() const { return attributed_; }
  bool ended() const { return ended_; }      // FIN, reset or refused
  bool refused() const { return refused_; }  // we sent STOP_SENDING: ignore the rest
  bool is_fill() const { return fill_; }
  // The current object as delivered to a visitor; `payload` is its whole payload.
  ReceivedObject CurrentObject(ByteSpan payload) const;

  // Called by the session.
  void Attribute(uint64_t owner, bool fill) {
    owner_ = owner;
    attributed_ = true;
    fill_ = fill;
  }
  void MarkEnded() {
    ended_ = true;
    ReleasePayload();
  }
  void MarkRefused() {
    refused_ = true;
    ReleasePayload();
  }
  // Drops the partly reassembled object and gives its reserved bytes back to the session.
  void ReleasePayload();

 private:
  // DataStreamVisitor
  void OnSubgroupHeader(const SubgroupHeader& header) override;
  GroupOrder OnFetchHeader(const FetchHeader& header) override;
  void OnObjectHeader(const ObjectHeader& object) override;
  void OnObjectPayload(ByteSpan chunk, bool end_of_object) override;
  void OnEndOfRange(const EndOfRange& marker) override;
  void OnStreamEnd() override;
  void OnError(const Status& error) override;

  SessionToDataStreamInterface* session_;
  transport::StreamId id_;
  DataStreamParser parser_;
  bool is_fetch_ = false;    // FETCH_HEADER (a fetch or a fill)
  bool attributed_ = false;  // counted in its owner's streams
  bool ended_ = false;
  bool refused_ = false;
  uint64_t owner_ = 0;
  bool fill_ = false;
  SubgroupHeader header_;
  ObjectHeader current_;
  // Reassembly of the current object when its payload arrives in several chunks. `held_` bytes
  // (its declared length, reserved up front) are reserved with the session until the object is
  // delivered or the stream ends, is reset or refused (ReleasePayload). The buffer is handed to
  // the visitor with the object (ReceivedObject::payload_buffer), so a visitor that stores the
  // object keeps it without a second copy.
  std::shared_ptr<Bytes> payload_;
  uint64_t held_ = 0;
};

}  // namespace kvcs::moqt

#endif  // KVCS_MOQT_SESSION_MOQT_INCOMING_DATA_STREAM_H_
