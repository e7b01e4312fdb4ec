#include "moqt/moqt_control_unframer.h"

#include "moqt/moqt_error.h"
#include "moqt/moqt_messages.h"
#include "moqt/moqt_wire_io.h"

namespace kvcs::moqt {

void ControlStreamUnframer::Append(ByteSpan data) {
  if (!error_.ok()) return;
  // Drop what was already returned before growing, so the buffer holds at most one message
  // plus the caller's latest chunk.
  if (consumed_ > 0) {
    buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<ptrdiff_t>(consumed_));
    consumed_ = 0;
  }
  buffer_.insert(buffer_.end(), data.begin(), data.end());
}

Result<RawControlMessage> ControlStreamUnframer::Next() {
  if (!error_.ok()) return error_;
  WireReader r(ByteSpan(buffer_).subspan(consumed_));
  uint64_t type;
  if (!r.Varint(&type)) return Truncated();
  if (!IsKnownMessageType(type)) {
    error_ = MalformedError(WireError::kUnknownMessageType, "type " + std::to_string(type));
    return error_;
  }
  uint16_t length;
  if (!r.U16(&length)) return Truncated();
  RawControlMessage m;
  m.type = type;
  if (!r.Span(length, &m.body)) return Truncated();
  consumed_ += r.position();
  return m;
}

Status ControlStreamUnframer::OnFin() const {
  if (!error_.ok()) return error_;
  if (buffer_.size() != consumed_) {
    return MalformedError(WireError::kFinMidMessage, "");
  }
  return Status::Ok();
}

}  // namespace kvcs::moqt
