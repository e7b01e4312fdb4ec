// QuicStream: one stream of a QUIC connection (quic/connection.h), the transport::Stream the
// application reads and writes. It holds the stream's receive buffer and its send buffer (bytes
// stay until acknowledged: ngtcp2 keeps pointers into them for retransmission), the state of both
// directions, and its place in the connection's SendScheduler.
//
// Internal to src/quic. The connection creates and destroys streams, feeds them from its ngtcp2
// callbacks and writes their bytes in Connection::Flush; a stream talks back to its connection
// (flow-control credit, the send budget, scheduling a flush). Single-threaded like the connection.
#ifndef KVCS_QUIC_QUIC_STREAM_H_
#define KVCS_QUIC_QUIC_STREAM_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "common/status.h"
#include "quic/send_scheduler.h"
#include "quic/stream_buffer.h"
#include "transport/session.h"

namespace kvcs::quic {

class Connection;

class QuicStream final : public transport::Stream, public SendScheduler::Entry {
 public:
  QuicStream(Connection* c, int64_t id);
  ~QuicStream() override;

  // --- transport::Stream
  transport::StreamId GetStreamId() const override { return static_cast<uint64_t>(stream_id()); }
  bool IsBidirectional() const override;
  bool IsLocallyInitiated() const override;
  ReadResult Read(std::span<uint8_t> out) override;
  PeekResult PeekReadable() const override;
  bool Consume(size_t n) override;
  size_t ReadableBytes() const override { return recv_.Readable(); }
  bool CanWrite() const override;
  Status Write(ByteSpan data, bool fin) override;
  Status WriteShared(std::shared_ptr<const Bytes> data, bool fin) override;
  size_t BufferedBytes() const override { return send_.Buffered(); }
  void ResetWithCode(transport::ErrorCode code) override;
  void SendStopSending(transport::ErrorCode code) override;
  void SetSendOrder(uint64_t send_order) override;
  uint64_t GetSendOrder() const override { return send_order(); }
  void SetVisitor(std::unique_ptr<transport::StreamVisitor> v) override { visitor_ = std::move(v); }
  transport::StreamVisitor* visitor() override { return visitor_.get(); }

 private:
  friend class Connection;

  bool HasReadSide() const { return IsBidirectional() || !IsLocallyInitiated(); }
  bool HasWriteSide() const { return IsBidirectional() || IsLocallyInitiated(); }
  // CanWrite() without the connection budget.
  bool StreamWritable() const;
  // Write's checks; then `append` adds the bytes to send_.
  template <typename Append>
  Status WriteWith(bool fin, Append append);
  // Called after the application consumed n bytes; returns true at the FIN.
  bool Consumed(size_t n);
  bool HasPendingSend() const {
    return !write_reset_ && (send_.Unsent() > 0 || (fin_requested_ && !fin_sent_));
  }
  // Belongs in the send queue: something to send, and not blocked by the peer's flow control.
  bool Sendable() const { return !blocked_ && HasPendingSend(); }
  bool ReadDone() const { return !HasReadSide() || read_finished_; }
  // This stream's share of the send budget (SendScheduler::unsent()): unsent bytes that could go
  // on the wire. A stream blocked by the peer's stream flow control does not hold the
  // connection's budget (other streams must not wait for a peer that stopped reading this one),
  // nor does a reset one.
  size_t Counted() const { return blocked_ || write_reset_ ? 0 : send_.Unsent(); }

  Connection* c_;
  SendBuffer send_;
  RecvBuffer recv_;
  std::unique_ptr<transport::StreamVisitor> visitor_;
  bool fin_requested_ = false, fin_sent_ = false, fin_acked_ = false;
  bool write_closed_ = false, write_reset_ = false, local_reset_ = false, stop_notified_ = false;
  bool want_can_write_ = false;
  bool blocked_ = false;  // by the peer's stream flow control (until extend_max_stream_data)
  bool fin_received_ = false, read_finished_ = false, read_event_pending_ = false;
  bool transport_closed_ = false;
};

}  // namespace kvcs::quic

#endif  // KVCS_QUIC_QUIC_STREAM_H_
