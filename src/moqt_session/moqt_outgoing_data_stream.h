// OutgoingDataStream: one data stream we publish on — a subgroup stream (one group of a
// subscription, live objects) or a fetch stream (a FETCH's range, or a subscription's fill). It
// owns the stream's writer state and pulls the objects it still has to send from the Track when
// the transport stream can take them (Pump): nothing is buffered per subscriber except, at most,
// the payload of the one object whose header is written (shared with the Track). Objects the
// Track evicted before they were sent reset the stream (TOO_FAR_BEHIND). The stream reports each
// object sent and its end to its session (SessionToDataStreamInterface), which owns it (one per
// stream) and keeps the request-wide bookkeeping.
// THREADING: single-threaded (the session's executor). Internal to moqt_session.
#ifndef KVCS_MOQT_SESSION_MOQT_OUTGOING_DATA_STREAM_H_
#define KVCS_MOQT_SESSION_MOQT_OUTGOING_DATA_STREAM_H_

#include <cstdint>
#include <memory>
#include <optional>

#include "common/bytes.h"
#include "moqt/moqt_framer.h"
#include "moqt/moqt_messages.h"
#include "moqt_session/moqt_filters.h"
#include "moqt_session/moqt_request_state.h"
#include "moqt_session/moqt_session_interface.h"
#include "moqt_session/moqt_track.h"
#include "transport/session.h"

namespace kvcs::moqt {

// What one fetch or fill stream sends. Queued as is while the stream waits for uni-stream
// credit, then kept by its OutgoingDataStream.
struct FetchStreamParams {
  uint64_t owner = 0;      // IncomingRequest id (fetch or subscription)
  uint64_t header_id = 0;  // FETCH_HEADER Request ID
  LocationRange range;
  GroupOrder order = GroupOrder::kAscending;
  uint8_t priority = 128;
  RangeFilters filters;
  bool fill = false;
};

class OutgoingDataStream {
 public:
  // The subgroup stream of `group` for subscription `owner` (Track Alias `alias`), from Object
  // `first_object` on.
  static std::unique_ptr<OutgoingDataStream> Subgroup(
      SessionToDataStreamInterface* session, transport::StreamId id, uint64_t owner, uint64_t alias,
      uint64_t group, uint64_t first_object, uint8_t publisher_priority, const WireOptions& wire);
  static std::unique_ptr<OutgoingDataStream> Fetch(SessionToDataStreamInterface* session,
                                                   transport::StreamId id, FetchStreamParams params,
                                                   const WireOptions& wire);
  OutgoingDataStream(const OutgoingDataStream&) = delete;
  OutgoingDataStream& operator=(const OutgoingDataStream&) = delete;

  // Writes the stream header: SUBGROUP_HEADER, or FETCH_HEADER followed, when the oldest groups
  // of an ascending range were evicted from `track`, by an End of Unknown Range marker for them.
  void WriteHeader(transport::Stream& s, const Track& track);
  // Writes what the stream can take now. `owner` is the request the stream serves (its Track;
  // for a subgroup stream also the live range and filters). May report the stream finished.
  void Pump(transport::Stream& s, const IncomingRequest& owner);

  transport::StreamId id() const { return id_; }
  uint64_t owner() const { return owner_; }
  bool is_fetch() const { return fetch_.has_value(); }
  uint64_t group() const { return group_; }  // a subgroup stream's group
  bool finished() const { return finished_; }
  // Bytes written into the transport stream so far (headers and payloads). Minus the stream's
  // BufferedBytes(): what the peer has taken (the session's slow-subscriber watch).
  uint64_t written_bytes() const { return written_bytes_; }
  void MarkFinished() { finished_ = true; }

 private:
  OutgoingDataStream(SessionToDataStreamInterface* session, transport::StreamId id, uint64_t owner)
      : session_(session), id_(id), owner_(owner) {}

  void PumpSubgroup(transport::Stream& s, const IncomingRequest& sub);
  void PumpFetch(transport::Stream& s, const Track& track);
  // The next object of the fetch range after the cursor, in the range's group order.
  const PublishedObject* NextFetchObject(const Track& t) const;
  // Writes an object's payload after its header; false (and kept in pending_payload_) when the
  // stream cannot take it now.
  bool WritePayload(transport::Stream& s, const std::shared_ptr<const Bytes>& payload);
  bool FlushPendingPayload(transport::Stream& s);
  void Finish() { session_->OutgoingDataStreamFinished(*this); }
  // Every write goes through here (counts written_bytes_).
  Status Put(transport::Stream& s, ByteSpan data, bool fin);
  // A payload shared with the Track, sent without a copy (transport::Stream::WriteShared).
  Status PutShared(transport::Stream& s, const std::shared_ptr<const Bytes>& payload);

  SessionToDataStreamInterface* session_;
  transport::StreamId id_;
  uint64_t owner_;  // IncomingRequest id
  bool finished_ = false;
  uint64_t written_bytes_ = 0;
  // subgroup
  uint64_t group_ = 0;
  uint64_t next_object_ = 0;
  std::optional<SubgroupHeader> header_;
  std::unique_ptr<SubgroupStreamWriter> subgroup_writer_;
  // fetch
  std::optional<FetchStreamParams> fetch_;
  std::optional<Location> cursor_;
  std::unique_ptr<FetchStreamWriter> fetch_writer_;
  WireOptions wire_;
  // The payload of an object whose header is written but whose payload did not fit (the
  // stream's send buffer filled up): written first on the next pump. Shared with the Track, so
  // eviction cannot pull it away mid-object.
  std::shared_ptr<const Bytes> pending_payload_;
};

}  // namespace kvcs::moqt

#endif  // KVCS_MOQT_SESSION_MOQT_OUTGOING_DATA_STREAM_H_
