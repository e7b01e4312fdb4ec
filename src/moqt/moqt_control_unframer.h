// ControlStreamUnframer: splits a control or request stream into raw messages
// { Type (vi64), Length (16), Body } without decoding bodies.
//
// It rejects an unknown message type as soon as the type is complete (draft: unknown message
// types are fatal — grease applies to options and properties, not to message types). A message
// is at most kMaxControlMessageHeader + kMaxControlMessageBody bytes, so a caller that calls
// Next() until kNeedMoreData after every Append() keeps the buffer below one message plus its
// latest chunk. Errors are sticky. Not thread-safe.
#ifndef KVCS_MOQT_MOQT_CONTROL_UNFRAMER_H_
#define KVCS_MOQT_MOQT_CONTROL_UNFRAMER_H_

#include <cstdint>

#include "common/bytes.h"
#include "common/status.h"

namespace kvcs::moqt {

// One framed message. `body` views the unframer's buffer: valid until the next Append or Next.
struct RawControlMessage {
  uint64_t type = 0;
  ByteSpan body;
};

class ControlStreamUnframer {
 public:
  // Appends stream bytes (copied into an internal buffer).
  void Append(ByteSpan data);
  // The next complete message; Code::kNeedMoreData when incomplete; a WireError when malformed.
  Result<RawControlMessage> Next();
  // OK if the stream ended between messages, else kFinMidMessage.
  Status OnFin() const;
  // Bytes buffered but not yet returned.
  size_t buffered() const { return buffer_.size() - consumed_; }

 private:
  Bytes buffer_;
  size_t consumed_ = 0;  // bytes of buffer_ already returned
  Status error_;
};

}  // namespace kvcs::moqt

#endif  // KVCS_MOQT_MOQT_CONTROL_UNFRAMER_H_
