// The transport seam: an abstract multiplexed, reliable-stream + datagram session (QUIC-shaped).
//
// Protocol code (MOQT, KVSP-over-QUIC) is written against these interfaces only; it never sees
// ngtcp2, Asio or sockets. Modelled on quiche's webtransport::Session / webtransport::Stream:
//   - a Session announces events to its SessionVisitor (session ready/closed, incoming streams
//     available, datagram received, outgoing stream credit available);
//   - a Stream announces events to its StreamVisitor (data readable, writable again, reset or
//     stop-sending received);
//   - the application pulls: AcceptIncoming*Stream(), Stream::Read()/PeekReadable()/Consume().
//
// THREADING: single-threaded. Every call into a Session or Stream, and every visitor callback,
// happens on the one executor (thread) that drives the implementation. Nothing here is
// thread-safe; post to that executor to call in from elsewhere.
//
// RE-ENTRANCY: visitor callbacks may call any method of the session or stream that fired them
// (Write, Read, Reset, CloseSession, ...). Implementations deliver events outside their packet
// processing (events are queued and dispatched afterwards), and Write() only buffers: bytes go
// on the wire when the implementation next flushes (after the current callback returns).
//
// LIFETIMES (read this before keeping pointers):
//   - A Session outlives all of its Streams. Visitor pointers passed to a Session/Stream are NOT
//     owned unless the setter takes a unique_ptr.
//   - A Stream* stays valid until the implementation destroys the stream, which happens only
//     between event dispatches, after BOTH directions are finished: the write side is done (FIN
//     acknowledged, or reset, or stop-sending received) AND the read side is done (FIN read by the
//     application, or reset received, or SendStopSending called). Its visitor is destroyed with
//     it (StreamVisitor::OnStreamClosed is called just before). Do not keep a Stream* across
//     events unless your visitor tracks OnStreamClosed; otherwise keep the StreamId and look it
//     up with Session::GetStreamById().
//   - After SessionVisitor::OnSessionClosed, every Stream of the session is gone, all calls
//     fail harmlessly, and the owner may destroy the Session (for server sessions the server
//     destroys it once its closing period ends; do not call into it after OnSessionClosed).
//
// FLOW CONTROL: the receiver's credit is extended only by what the application consumes
// (Read/Consume); an application that stops reading stops the peer. Write() accepts data while
// CanWrite() is true (the stream's send buffer is below its limit; the buffer may then exceed the
// limit by at most that one write); when CanWrite() is false, wait for OnCanWrite().
// An implementation may also bound what the whole SESSION holds unsent (the QUIC one does:
// TransportLimits::connection_send_budget): CanWrite() is then false on every stream while that
// budget is used up, and OnCanWrite reaches the waiting streams, lowest send order first, as the
// budget frees. Write() itself refuses data (kWriteBlocked) only for the stream's own limit, so
// a small write that ignores CanWrite() (a header, a control message) still goes through;
// writers of bulk data must follow CanWrite()/OnCanWrite() to keep the session's memory bounded
// and to let priorities decide what is committed first.
#ifndef KVCS_TRANSPORT_SESSION_H_
#define KVCS_TRANSPORT_SESSION_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "common/bytes.h"
#include "common/status.h"

namespace kvcs::transport {

using StreamId = uint64_t;
// Application-level error code carried by RESET_STREAM, STOP_SENDING and CONNECTION_CLOSE.
using ErrorCode = uint64_t;

// Typed details for Status values returned by Stream/Session methods.
enum class TransportError {
  kNone = 0,
  kWriteClosed = 1,        // FIN already queued, or the stream was reset / stop-sending received
  kWriteBlocked = 2,       // CanWrite() is false: wait for OnCanWrite
  kNotWritable = 3,        // the stream is receive-only (a peer's unidirectional stream)
  kSessionClosed = 4,      // the session is closing or closed
  kDatagramTooLarge = 5,   // larger than GetMaxDatagramSize()
  kDatagramQueueFull = 6,  // too many datagrams waiting; this one was dropped
  kDatagramsDisabled = 7,  // the peer did not negotiate datagrams
};

// Why a session ended. `ToString()` gives a message fit for a user.
struct CloseInfo {
  enum class Kind {
    kApplication,       // CONNECTION_CLOSE with an application code (either side)
    kTransport,         // a QUIC transport error (either side); `code` is the QUIC error code
    kTls,               // the TLS handshake failed (ALPN, certificate...); `code` is 0x100+alert
    kIdleTimeout,       // no packets from the peer within the idle timeout: peer presumed dead
    kHandshakeTimeout,  // the handshake did not complete in time
    kLocalError,        // an internal failure on this side (socket error, allocation...)
  };
  Kind kind = Kind::kApplication;
  bool by_peer = false;  // true when the peer sent the close; false when we closed
  uint64_t code = 0;
  std::string reason;

  std::string ToString() const;
};

// Receives events for one stream. Owned by the stream (set via Stream::SetVisitor).
class StreamVisitor {
 public:
  virtual ~StreamVisitor() = default;
  // New bytes (or the FIN) are available to Read/PeekReadable. Edge-triggered: fired once per
  // batch of arrivals; read until Read returns 0 bytes or you choose to stop.
  virtual void OnCanRead() = 0;
  // CanWrite() became true again after being false (send buffer drained below its limit, or the
  // session's send budget freed; see FLOW CONTROL). May occasionally fire when CanWrite() is
  // false again already: check it before writing.
  virtual void OnCanWrite() = 0;
  // The peer sent RESET_STREAM: no more data will arrive; unread data was discarded.
  virtual void OnResetStreamReceived(ErrorCode code) = 0;
  // The peer sent STOP_SENDING: our write side was reset (RFC 9000 §3.5); further writes fail.
  // QUIC implementation note (ngtcp2 0.12.1 has no receive callback for STOP_SENDING): this
  // fires when the stream closes, i.e. once the read side is also finished, and `code` is the
  // stream's first application error code (the STOP_SENDING code, unless the peer also reset
  // the stream first, in which case the RESET_STREAM code). CanWrite() turns false at once.
  virtual void OnStopSendingReceived(ErrorCode code) = 0;
  // All data written (and the FIN) were acknowledged by the peer.
  virtual void OnWriteSideInDataRecvdState() {}
  // The stream is about to be destroyed (see LIFETIMES above). Do not call into it.
  virtual void OnStreamClosed() {}
};

class Stream {
 public:
  virtual ~Stream() = default;

  virtual StreamId GetStreamId() const = 0;
  virtual bool IsBidirectional() const = 0;
  // True when this side opened the stream.
  virtual bool IsLocallyInitiated() const = 0;

  // --- read side ---
  struct ReadResult {
    size_t bytes_read = 0;
    bool fin = false;  // the FIN was reached: every byte of the stream has been read
  };
  // Copies up to out.size() bytes out, consuming them (returns flow-control credit to the peer).
  virtual ReadResult Read(std::span<uint8_t> out) = 0;
  // Zero-copy reading: the next contiguous readable bytes (may be fewer than ReadableBytes())
  // and whether the FIN follows them directly. Valid until the next call on this stream.
  struct PeekResult {
    ByteSpan data;
    bool fin = false;
  };
  virtual PeekResult PeekReadable() const = 0;
  // Consumes n bytes (n <= ReadableBytes()); returns true when that reached the FIN.
  virtual bool Consume(size_t n) = 0;
  virtual size_t ReadableBytes() const = 0;

  // --- write side ---
  // True when Write() will accept data now.
  virtual bool CanWrite() const = 0;
  // Buffers all of `data` (copied) and, when `fin`, the end of the stream. Errors (typed with
  // TransportError): kWriteBlocked when !CanWrite(), kWriteClosed after FIN/reset,
  // kNotWritable on a peer's unidirectional stream, kSessionClosed.
  virtual Status Write(ByteSpan data, bool fin) = 0;
  // Write() of an immutable shared buffer, without a copy where the transport can: the stream
  // keeps a reference to `data` until the peer acknowledged it, so one payload sent on many
  // streams (a relay's fan-out) is not copied per stream. The buffer must never change. The
  // default copies.
  virtual Status WriteShared(std::shared_ptr<const Bytes> data, bool fin) {
    return Write(*data, fin);
  }
  // Bytes written but not yet acknowledged by the peer (includes unsent bytes).
  virtual size_t BufferedBytes() const = 0;

  // --- send priority ---
  // Under contention for the session's send capacity, data of streams with a LOWER send order
  // goes on the wire first; streams with equal send order share capacity round-robin. New
  // streams start at kDefaultSendOrder. MOQT maps (subscriber priority, publisher priority,
  // group order) onto this one number; control streams use 0. Implementations that cannot
  // prioritise may ignore it (the default does), so callers must not depend on it for
  // correctness, only for what is sent first.
  static constexpr uint64_t kDefaultSendOrder = uint64_t{1} << 32;
  virtual void SetSendOrder(uint64_t send_order) { (void)send_order; }
  virtual uint64_t GetSendOrder() const { return kDefaultSendOrder; }

  // --- abrupt termination ---
  // Abandons the write side: sends RESET_STREAM(code); unsent data is discarded.
  virtual void ResetWithCode(ErrorCode code) = 0;
  // Abandons the read side: sends STOP_SENDING(code); unread data is discarded.
  virtual void SendStopSending(ErrorCode code) = 0;
  // Both of the above.
  void ResetAndStop(ErrorCode code) {
    ResetWithCode(code);
    SendStopSending(code);
  }

  // Takes ownership of the visitor (replacing and destroying any previous one).
  virtual void SetVisitor(std::unique_ptr<StreamVisitor> visitor) = 0;
  virtual StreamVisitor* visitor() = 0;
};

// Receives session-level events. Not owned by the session; must outlive it or be detached with
// Session::SetVisitor(nullptr).
class SessionVisitor {
 public:
  virtual ~SessionVisitor() = default;
  // The handshake completed; streams and datagrams may be used.
  virtual void OnSessionReady() = 0;
  // The session ended (see LIFETIMES). Fired exactly once per session that was announced.
  virtual void OnSessionClosed(const CloseInfo& info) = 0;
  // The peer opened stream(s); call AcceptIncoming*Stream() until it returns nullptr. (A stream
  // the peer reset before any of its bytes arrived is never announced.)
  virtual void OnIncomingBidirectionalStreamAvailable() = 0;
  virtual void OnIncomingUnidirectionalStreamAvailable() = 0;
  // One unreliable datagram arrived (the span is valid during the call only).
  virtual void OnDatagramReceived(ByteSpan datagram) = 0;
  // The peer raised the stream-count limit: CanOpenNextOutgoing*Stream() may now be true.
  virtual void OnCanCreateNewOutgoingBidirectionalStream() = 0;
  virtual void OnCanCreateNewOutgoingUnidirectionalStream() = 0;
};

class Session {
 public:
  virtual ~Session() = default;

  // The visitor receives all later events; nullptr detaches.
  virtual void SetVisitor(SessionVisitor* visitor) = 0;

  // Returns the next peer-opened stream not yet accepted, or nullptr.
  virtual Stream* AcceptIncomingBidirectionalStream() = 0;
  virtual Stream* AcceptIncomingUnidirectionalStream() = 0;

  virtual bool CanOpenNextOutgoingBidirectionalStream() = 0;
  virtual bool CanOpenNextOutgoingUnidirectionalStream() = 0;
  // nullptr when the peer's stream limit is reached (wait for OnCanCreateNewOutgoing*) or the
  // session is not open.
  virtual Stream* OpenOutgoingBidirectionalStream() = 0;
  virtual Stream* OpenOutgoingUnidirectionalStream() = 0;

  // nullptr when no such stream exists (any more).
  virtual Stream* GetStreamById(StreamId id) = 0;

  // Queues one unreliable datagram (copied). Errors typed with TransportError.
  virtual Status SendOrQueueDatagram(ByteSpan datagram) = 0;
  // The largest datagram payload SendOrQueueDatagram accepts now; 0 when datagrams are off.
  virtual size_t GetMaxDatagramSize() const = 0;

  // Closes the session with an application error code and reason (sent to the peer). The
  // visitor's OnSessionClosed fires (from a later dispatch, not from inside this call).
  virtual void CloseSession(ErrorCode code, std::string_view reason) = 0;

  // The ALPN protocol the handshake selected ("" before the handshake completes).
  virtual std::string GetNegotiatedAlpn() const = 0;
  virtual bool IsOpen() const = 0;
};

}  // namespace kvcs::transport

#endif  // KVCS_TRANSPORT_SESSION_H_
