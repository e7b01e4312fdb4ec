// Control message decoding: the stateless body parser and the incremental control-stream parser.
//
// ParseControlMessageBody() decodes one body whose type and exact length the unframer already
// established: running out of bytes inside it is malformed (kBodyTooShort), as are bytes left over
// (kTrailingData). ControlStreamParser = ControlStreamUnframer + ParseControlMessageBody: feed it
// stream bytes, pull messages; kNeedMoreData means "call again after more bytes arrive". The
// parsers never close anything: the session maps errors with DispositionOf() (moqt_error.h).
// Which message may appear on which stream (SETUP first on the control stream, a request first on
// a request stream...) is the session's job. Not thread-safe per parser object.
#ifndef KVCS_MOQT_MOQT_CONTROL_PARSER_H_
#define KVCS_MOQT_MOQT_CONTROL_PARSER_H_

#include <cstdint>

#include "common/bytes.h"
#include "common/status.h"
#include "moqt/moqt_control_unframer.h"
#include "moqt/moqt_messages.h"
#include "moqt/moqt_options.h"

namespace kvcs::moqt {

Result<ControlMessage> ParseControlMessageBody(uint64_t type, ByteSpan body,
                                               const WireOptions& options = {});

class ControlStreamParser {
 public:
  explicit ControlStreamParser(const WireOptions& options = {}) : options_(options) {}

  // Appends stream bytes (copied).
  void Append(ByteSpan data) { unframer_.Append(data); }
  // The next complete message, kNeedMoreData, or a malformed-input error (sticky).
  Result<ControlMessage> Next();
  // The stream ended: OK when it ended between messages, else kFinMidMessage.
  Status OnFin() const { return unframer_.OnFin(); }

 private:
  WireOptions options_;
  ControlStreamUnframer unframer_;
  Status error_;
};

}  // namespace kvcs::moqt

#endif  // KVCS_MOQT_MOQT_CONTROL_PARSER_H_
