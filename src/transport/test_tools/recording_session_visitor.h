// RecordingSessionVisitor: the SessionVisitor of a peer that tests and fuzzers drive by hand
// (writing protocol bytes straight into streams). It accepts and ignores every incoming stream
// and datagram and records how the session ended. Single-threaded like the session it watches;
// the Session must outlive it (or detach it).
#ifndef KVCS_TRANSPORT_TEST_TOOLS_RECORDING_SESSION_VISITOR_H_
#define KVCS_TRANSPORT_TEST_TOOLS_RECORDING_SESSION_VISITOR_H_

#include <optional>

#include "transport/session.h"

namespace kvcs::transport::test {

struct RecordingSessionVisitor : SessionVisitor {
  explicit RecordingSessionVisitor(Session* session) : s(session) {}
  void OnSessionReady() override {}
  void OnSessionClosed(const CloseInfo& info) override { closed = info; }
  void OnIncomingBidirectionalStreamAvailable() override {
    while (s->AcceptIncomingBidirectionalStream()) {
    }
  }
  void OnIncomingUnidirectionalStreamAvailable() override {
    while (s->AcceptIncomingUnidirectionalStream()) {
    }
  }
  void OnDatagramReceived(ByteSpan) override {}
  void OnCanCreateNewOutgoingBidirectionalStream() override {}
  void OnCanCreateNewOutgoingUnidirectionalStream() override {}

  Session* s;
  std::optional<CloseInfo> closed;  // set once the session ended
};

}  // namespace kvcs::transport::test

#endif  // KVCS_TRANSPORT_TEST_TOOLS_RECORDING_SESSION_VISITOR_H_
