#include "quic/quic_stream.h"

#include <ngtcp2/ngtcp2.h>

#include <algorithm>

#include "quic/connection.h"

namespace kvcs::quic {

using transport::TransportError;

QuicStream::QuicStream(Connection* c, int64_t id)
    : SendScheduler::Entry(id), c_(c), send_(&c->pool_), recv_(&c->pool_) {}

QuicStream::~QuicStream() { c_->sched_.Recount(Counted(), 0); }

bool QuicStream::IsBidirectional() const { return ngtcp2_is_bidi_stream(stream_id()); }

bool QuicStream::IsLocallyInitiated() const {
  return c_->conn_ && ngtcp2_conn_is_local_stream(c_->conn_, stream_id());
}

QuicStream::ReadResult QuicStream::Read(std::span<uint8_t> out) {
  size_t n = recv_.Read(out);
  bool fin = Consumed(n);
  return {n, fin};
}

QuicStream::PeekResult QuicStream::PeekReadable() const {
  auto s = recv_.Peek();
  return {s, fin_received_ && s.size() == recv_.Readable()};
}

bool QuicStream::Consume(size_t n) {
  n = std::min(n, recv_.Readable());
  recv_.Consume(n);
  return Consumed(n);
}

bool QuicStream::CanWrite() const {
  if (!StreamWritable()) return false;
  if (c_->sched_.HasBudget()) return true;
  // The connection's budget of unsent bytes is used up: OnCanWrite comes when it frees, in
  // send order (Connection::WakeBudgetWaiters).
  c_->sched_.AddWaiter(this);
  return false;
}

bool QuicStream::StreamWritable() const {
  return HasWriteSide() && !write_closed_ && c_->IsOpen() &&
         send_.Buffered() < c_->limits_.stream_send_buffer;
}

Status QuicStream::Write(ByteSpan data, bool fin) {
  return WriteWith(fin, [&] { send_.Append(data); });
}

Status QuicStream::WriteShared(std::shared_ptr<const Bytes> data, bool fin) {
  return WriteWith(fin, [&] { send_.AppendShared(std::move(data)); });
}

template <typename Append>
Status QuicStream::WriteWith(bool fin, Append append) {
  if (!HasWriteSide()) return TransportErr(TransportError::kNotWritable, "stream is receive-only");
  if (!c_->IsOpen()) return TransportErr(TransportError::kSessionClosed, "session is not open");
  if (write_closed_) {
    return TransportErr(TransportError::kWriteClosed, "stream write side is closed");
  }
  if (send_.Buffered() >= c_->limits_.stream_send_buffer) {
    want_can_write_ = true;
    return TransportErr(TransportError::kWriteBlocked,
                        "stream send buffer full; wait for OnCanWrite", Code::kResourceExhausted);
  }
  size_t before = Counted();
  append();
  c_->Recount(before, Counted());
  if (fin) {
    fin_requested_ = true;
    write_closed_ = true;
  }
  if (send_.Buffered() >= c_->limits_.stream_send_buffer) want_can_write_ = true;
  c_->Enqueue(this);
  c_->ScheduleFlush();
  return Status::Ok();
}

void QuicStream::ResetWithCode(transport::ErrorCode code) {
  if (!HasWriteSide() || write_reset_ || (fin_acked_)) return;
  size_t before = Counted();
  write_closed_ = write_reset_ = local_reset_ = true;
  c_->Recount(before, Counted());
  if (c_->conn_ && !transport_closed_) {
    ngtcp2_conn_shutdown_stream_write(c_->conn_, stream_id(), code);
  }
  c_->ScheduleFlush();
}

void QuicStream::SendStopSending(transport::ErrorCode code) {
  if (!HasReadSide() || read_finished_) return;
  read_finished_ = true;
  size_t dropped = recv_.Clear();
  if (c_->conn_) {
    if (!transport_closed_) ngtcp2_conn_shutdown_stream_read(c_->conn_, stream_id(), code);
    // Bytes ngtcp2 delivered but the application never consumed still count against the
    // connection window; return them (ngtcp2 credits only what it had not delivered).
    if (dropped) ngtcp2_conn_extend_max_offset(c_->conn_, dropped);
  }
  c_->sweep_.push_back(stream_id());
  c_->ScheduleFlush();
}

void QuicStream::SetSendOrder(uint64_t send_order) {
  c_->sched_.SetSendOrder(this, send_order, /*requeue=*/Sendable());
}

bool QuicStream::Consumed(size_t n) {
  if (n > 0 && c_->conn_ && !read_finished_) {
    if (!transport_closed_) ngtcp2_conn_extend_max_stream_offset(c_->conn_, stream_id(), n);
    ngtcp2_conn_extend_max_offset(c_->conn_, n);
    c_->ScheduleFlush();
  }
  if (fin_received_ && recv_.Readable() == 0) {
    if (!read_finished_) {
      read_finished_ = true;
      c_->sweep_.push_back(stream_id());
      c_->ScheduleFlush();
    }
    return true;
  }
  return false;
}

}  // namespace kvcs::quic
