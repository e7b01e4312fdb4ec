// Fuzzes a server MoqtSession through the in-memory transport. A raw client writes the input as
// a script of stream operations; the server publishes one track with a few groups (so SUBSCRIBE,
// FETCH and fills reach real work). Oracles: never crash (ASan/UBSan), never hang, and a session
// the input closes uses a code from the MOQT session error registry.
//
// Input: one config byte, then records { op (1 byte), length (1 byte), bytes }:
//   op % 8 == 0: append to the control stream       4: FIN a data stream (op >> 3 picks it)
//             1: append to request stream (op >> 3) 5: RESET a request stream (op >> 3)
//             2: append to data stream (op >> 3)    6: send a datagram
//             3: FIN a request stream (op >> 3)     7: produce one object on the server track
// Config bit 0: the control stream starts with a valid SETUP; bit 1: request stream 0 starts with
// a valid SUBSCRIBE (Next Object + fill); bit 2: request stream 1 starts with a valid FETCH.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>

#include "moqt/moqt_error.h"
#include "moqt/moqt_framer.h"
#include "moqt_session/moqt_session.h"
#include "transport/test_tools/in_memory_session.h"

using namespace kvcs;
using namespace kvcs::moqt;
using transport::test::InMemoryOptions;
using transport::test::InMemorySessionPair;

namespace {

struct Raw : transport::SessionVisitor {
  explicit Raw(transport::Session* s) : s(s) {}
  void OnSessionReady() override {}
  void OnSessionClosed(const transport::CloseInfo& i) override { closed = i; }
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
  transport::Session* s;
  std::optional<transport::CloseInfo> closed;
};

bool KnownSessionError(uint64_t code) {
  return SessionErrorFromWire(code) != SessionError::kInternalError ||
         code == static_cast<uint64_t>(SessionError::kInternalError);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t config = data[0];
  InMemoryOptions copts, sopts;
  copts.stream_window = 4096;  // small windows exercise flow control and parking
  sopts.stream_window = 4096;
  sopts.send_capacity_per_pump = (config & 0x08) ? 512 : 0;
  InMemorySessionPair pair(copts, sopts);
  Raw raw(&pair.client());
  pair.client().SetVisitor(&raw);
  TrackStore store;
  auto track = *store.CreateTrack({{"a"}, "b"});
  (void)track->StartGroup(0);
  for (int i = 0; i < 3; ++i) (void)track->AppendObject(Bytes(10, static_cast<uint8_t>(i)));
  uint64_t now = 0;
  MoqtSessionConfig sc;
  sc.perspective = Perspective::kServer;
  sc.max_filter_ranges = 4;
  sc.clock_ms = [&now] { return now; };
  MoqtSession server(&pair.server(), sc, nullptr, &store);
  pair.Connect();
  pair.RunUntilIdle();

  transport::Stream* control = pair.client().OpenOutgoingUnidirectionalStream();
  std::map<int, transport::StreamId> requests, streams;
  auto stream_of = [&](std::map<int, transport::StreamId>& m, int idx,
                       bool bidi) -> transport::Stream* {
    auto it = m.find(idx);
    if (it == m.end()) {
      transport::Stream* s = bidi ? pair.client().OpenOutgoingBidirectionalStream()
                                  : pair.client().OpenOutgoingUnidirectionalStream();
      if (!s) return nullptr;
      m[idx] = s->GetStreamId();
      return s;
    }
    return pair.client().GetStreamById(it->second);
  };
  if (control && (config & 0x01)) {
    Setup s;
    s.options.path = "/";
    s.options.max_filter_ranges = 4;
    (void)control->Write(*SerializeControlMessage(s), false);
  }
  if (config & 0x02) {
    moqt::Subscribe sub;
    sub.request_id = 0;
    sub.track = {{"a"}, "b"};
    sub.params.location_filter = LocationFilter{LocationFilterType::kNextObject};
    sub.params.fill_parameters = FillParameters{};
    sub.params.fill_parameters->location_filter =
        LocationFilter{LocationFilterType::kAbsoluteStart, 0, 0};
    if (auto* s = stream_of(requests, 0, true))
      (void)s->Write(*SerializeControlMessage(sub), false);
  }
  if (config & 0x04) {
    moqt::Fetch f;
    f.request_id = 2;
    f.track = {{"a"}, "b"};
    if (auto* s = stream_of(requests, 1, true)) (void)s->Write(*SerializeControlMessage(f), false);
  }
  pair.RunUntilIdle();

  size_t at = 1;
  uint64_t next_group = 1;
  while (at + 2 <= size) {
    const uint8_t op = data[at];
    const size_t len = std::min<size_t>(data[at + 1], size - at - 2);
    ByteSpan bytes(data + at + 2, len);
    at += 2 + len;
    const int idx = op >> 3;
    transport::Stream* s = nullptr;
    switch (op % 8) {
      case 0:
        if (control) (void)control->Write(bytes, false);
        break;
      case 1:
        if ((s = stream_of(requests, idx, true))) (void)s->Write(bytes, false);
        break;
      case 2:
        if ((s = stream_of(streams, idx, false))) (void)s->Write(bytes, false);
        break;
      case 3:
        if ((s = stream_of(requests, idx, true))) (void)s->Write({}, true);
        break;
      case 4:
        if ((s = stream_of(streams, idx, false))) (void)s->Write({}, true);
        break;
      case 5:
        if ((s = stream_of(requests, idx, true))) s->ResetAndStop(1);
        break;
      case 6:
        (void)pair.client().SendOrQueueDatagram(bytes);
        break;
      case 7:
        if (len > 0 && bytes[0] == 0) {
          (void)track->StartGroup(next_group++);
        } else if (len > 0 && bytes[0] == 1) {
          (void)track->EndTrack();
        } else {
          (void)track->AppendObject(bytes);
        }
        now += 1000;
        server.OnTimer();
        break;
    }
    pair.RunUntilIdle();
    if (raw.closed) break;
  }
  if (raw.closed && raw.closed->kind == transport::CloseInfo::Kind::kApplication &&
      !KnownSessionError(raw.closed->code)) {
    __builtin_trap();
  }
  return 0;
}
