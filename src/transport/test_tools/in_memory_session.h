// An in-memory, deterministic implementation of transport::Session / Stream: two sessions wired
// back to back, no sockets, no threads, no clock. For unit-testing protocol code (MOQT) against
// the transport seam.
//
// Semantics mirror the QUIC implementation: ordered reliable streams with per-stream flow
// control (the receiver grants credit only as it consumes), FIN, RESET_STREAM / STOP_SENDING
// with codes, stream-count limits with credit returned when a peer-opened stream is finished,
// datagrams (never lost unless drop_datagrams is set), CloseSession with code and reason.
// Events are queued and delivered only by InMemorySessionPair::RunUntilIdle(), so visitor
// callbacks never run inside an API call (same rule as the real transport).
//
// Not thread-safe. The pair owns both sessions; sessions own their streams. Stream lifetime
// rules are those of transport/session.h.
#ifndef KVCS_TRANSPORT_TEST_TOOLS_IN_MEMORY_SESSION_H_
#define KVCS_TRANSPORT_TEST_TOOLS_IN_MEMORY_SESSION_H_

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "transport/session.h"

namespace kvcs::transport::test {

struct InMemoryOptions {
  size_t stream_window = 64 << 10;        // receive credit per stream
  size_t stream_send_buffer = 256 << 10;  // CanWrite() false at or above this
  uint64_t max_incoming_bidi = 100;
  uint64_t max_incoming_uni = 100;
  size_t max_datagram_size = 1200;  // 0 disables datagrams
  bool drop_datagrams = false;
  std::string alpn = "test";
  // Bytes this side may move to its peer per pump round (all streams together); 0 = unlimited.
  // With a limit, streams are served in Stream::SetSendOrder order (lower first), equal orders
  // round-robin in kSendQuantum slices, so tests can observe which stream goes first.
  size_t send_capacity_per_pump = 0;
  // Streams this side writes that stay where they are (nothing of them moves, the FIN neither)
  // while this returns true for their id; null: none. Tests deliver streams out of order with it
  // (a later group's stream before an earlier one's).
  std::function<bool(StreamId)> hold;
};

// Round-robin slice among streams of equal send order under a send capacity.
inline constexpr size_t kSendQuantum = 1024;

class InMemorySession;
class InMemorySessionPair;

class InMemoryStream : public Stream {
 public:
  InMemoryStream(InMemorySession* s, StreamId id);
  StreamId GetStreamId() const override { return id_; }
  bool IsBidirectional() const override { return (id_ & 2) == 0; }
  bool IsLocallyInitiated() const override;
  ReadResult Read(std::span<uint8_t> out) override;
  PeekResult PeekReadable() const override;
  bool Consume(size_t n) override;
  size_t ReadableBytes() const override { return recv_.size(); }
  bool CanWrite() const override;
  Status Write(ByteSpan data, bool fin) override;
  size_t BufferedBytes() const override { return unsent_.size(); }
  void ResetWithCode(ErrorCode code) override;
  void SendStopSending(ErrorCode code) override;
  void SetVisitor(std::unique_ptr<StreamVisitor> v) override { visitor_ = std::move(v); }
  StreamVisitor* visitor() override { return visitor_.get(); }
  void SetSendOrder(uint64_t send_order) override { send_order_ = send_order; }
  uint64_t GetSendOrder() const override { return send_order_; }

 private:
  friend class InMemorySession;
  friend class InMemorySessionPair;
  bool HasReadSide() const { return IsBidirectional() || !IsLocallyInitiated(); }
  bool HasWriteSide() const { return IsBidirectional() || IsLocallyInitiated(); }
  bool WriteDone() const { return !HasWriteSide() || fin_delivered_ || write_reset_; }
  bool ReadDone() const { return !HasReadSide() || read_finished_; }

  InMemorySession* s_;
  StreamId id_;
  std::unique_ptr<StreamVisitor> visitor_;
  std::deque<uint8_t> recv_;
  size_t consumed_ = 0;  // bytes the application consumed (credit = consumed_ + window)
  size_t received_ = 0;  // bytes delivered into recv_
  bool fin_received_ = false, read_finished_ = false;
  std::deque<uint8_t> unsent_;
  bool fin_queued_ = false, fin_delivered_ = false, write_reset_ = false;
  bool want_can_write_ = false;
  uint64_t send_order_ = kDefaultSendOrder;
};

class InMemorySession : public Session {
 public:
  InMemorySession(InMemorySessionPair* pair, bool is_client, const InMemoryOptions& opts);
  ~InMemorySession() override;

  void SetVisitor(SessionVisitor* v) override { visitor_ = v; }
  Stream* AcceptIncomingBidirectionalStream() override;
  Stream* AcceptIncomingUnidirectionalStream() override;
  bool CanOpenNextOutgoingBidirectionalStream() override;
  bool CanOpenNextOutgoingUnidirectionalStream() override;
  Stream* OpenOutgoingBidirectionalStream() override;
  Stream* OpenOutgoingUnidirectionalStream() override;
  Stream* GetStreamById(StreamId id) override;
  Status SendOrQueueDatagram(ByteSpan datagram) override;
  size_t GetMaxDatagramSize() const override;
  void CloseSession(ErrorCode code, std::string_view reason) override;
  std::string GetNegotiatedAlpn() const override { return open_ ? opts_.alpn : ""; }
  bool IsOpen() const override { return open_; }

  size_t stream_count() const { return streams_.size(); }

 private:
  friend class InMemoryStream;
  friend class InMemorySessionPair;
  InMemorySession* peer();
  InMemoryStream* Open(bool bidi);
  InMemoryStream* PeerStream(StreamId id);  // creates the peer's end on first use
  void Post(std::function<void()> fn);

  InMemorySessionPair* pair_;
  bool is_client_;
  InMemoryOptions opts_;
  SessionVisitor* visitor_ = nullptr;
  bool open_ = false;
  std::map<StreamId, std::unique_ptr<InMemoryStream>> streams_;
  std::deque<StreamId> incoming_bidi_, incoming_uni_;
  uint64_t next_bidi_ = 0, next_uni_ = 0;  // count of streams we opened
  uint64_t peer_max_bidi_, peer_max_uni_;  // how many the peer lets us open
};

class InMemorySessionPair {
 public:
  explicit InMemorySessionPair(const InMemoryOptions& client_opts = {},
                               const InMemoryOptions& server_opts = {});
  ~InMemorySessionPair();
  InMemorySession& client() { return *client_; }
  InMemorySession& server() { return *server_; }
  // Completes the "handshake" (OnSessionReady on both sides at the next RunUntilIdle).
  void Connect();
  // Moves data as far as flow control allows and delivers every queued event, repeatedly,
  // until nothing changes. Returns the number of events delivered.
  size_t RunUntilIdle();
  // One round of RunUntilIdle: one pump (under send_capacity_per_pump) and the events queued so
  // far. Returns 1 if anything moved or ran, else 0. Tests that interleave several connections
  // step by step (a relay receiving from one while sending on another) use it.
  size_t RunOneRound();

 private:
  friend class InMemorySession;
  friend class InMemoryStream;
  bool Pump();  // moves bytes between streams; true if anything moved
  // One pump and up to `max_events` events: the events delivered, | kRoundMoved if bytes moved.
  static constexpr size_t kRoundMoved = size_t{1} << (sizeof(size_t) * 8 - 1);
  size_t RunRound(size_t max_events);
  // Moves up to `max` bytes (and the FIN when everything is moved) of w; returns bytes moved and
  // sets *progress when anything (bytes or FIN) moved.
  size_t MoveStream(InMemorySession* s, InMemoryStream* w, size_t max, bool* progress);
  void Sweep();
  std::unique_ptr<InMemorySession> client_, server_;
  std::deque<std::function<void()>> events_;
};

}  // namespace kvcs::transport::test

#endif  // KVCS_TRANSPORT_TEST_TOOLS_IN_MEMORY_SESSION_H_
