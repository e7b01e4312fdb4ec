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
//
// Config bit 4 selects the SUBSCRIBER mode instead: a client MoqtSession subscribes (with a fill)
// and fetches from a raw publisher that writes the input (reassembly, stream attribution and
// counting, parking, deferred STOP_SENDING, cancellation from inside visitor callbacks):
//   op % 8 == 0: append to the publisher's control stream  4: FIN data stream (op >> 3)
//             1: append to the publisher's side of request 5: RESET data stream (op >> 3)
//                stream (op >> 3) % 2 (0 SUBSCRIBE, 1 FETCH) 6: send a datagram
//             2: append to data stream (op >> 3)           7: client action (bytes[0] % 4:
//             3: FIN request stream (op >> 3) % 2             unsubscribe, cancel fetch,
//                                                             subscribe again, timer +5 s)
// Bit 5: SUBSCRIBE_OK (alias 0) and FETCH_OK are written first. Bit 6: the subscriber's visitor
// unsubscribes from inside its third OnObject.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>

#include "moqt/moqt_error.h"
#include "moqt/moqt_framer.h"
#include "moqt_session/moqt_session.h"
#include "moqt_session/moqt_track_store.h"
#include "transport/test_tools/in_memory_session.h"
#include "transport/test_tools/recording_session_visitor.h"

using namespace kvcs;
using namespace kvcs::moqt;
using transport::test::InMemoryOptions;
using transport::test::InMemorySessionPair;

namespace {

using Raw = transport::test::RecordingSessionVisitor;

bool KnownSessionError(uint64_t code) {
  return SessionErrorFromWire(code) != SessionError::kInternalError ||
         code == static_cast<uint64_t>(SessionError::kInternalError);
}

struct FuzzSub : SubscribeVisitor {
  void OnObject(const ReceivedObject& o) override {
    // Touch every byte: ASan catches a view into freed or reused stream memory.
    for (uint8_t b : o.payload) sum += b;
    if (++objects == 3 && quit_on_third && session) (void)session->Unsubscribe(id);
  }
  void OnComplete(const SubscriptionDone&) override {
    if (completed) __builtin_trap();  // OnComplete must be the last callback, once
    completed = true;
  }
  MoqtSession* session = nullptr;
  uint64_t id = 0;
  bool quit_on_third = false;
  uint64_t objects = 0, sum = 0;
  bool completed = false;
};

struct FuzzFetch : FetchVisitor {
  void OnObject(const ReceivedObject& o) override {
    for (uint8_t b : o.payload) sum += b;
  }
  void OnComplete(const FetchDone&) override {
    if (completed) __builtin_trap();
    completed = true;
  }
  uint64_t sum = 0;
  bool completed = false;
};

int RunSubscriberMode(const uint8_t* data, size_t size) {
  const uint8_t config = data[0];
  InMemoryOptions copts, sopts;
  copts.stream_window = 4096;
  sopts.stream_window = 4096;
  copts.max_incoming_uni = 16;
  InMemorySessionPair pair(copts, sopts);
  Raw raw(&pair.server());
  pair.server().SetVisitor(&raw);
  uint64_t now = 0;
  MoqtSessionConfig cc;
  cc.clock_ms = [&now] { return now; };
  MoqtSession client(&pair.client(), cc, nullptr, nullptr);
  pair.Connect();
  pair.RunUntilIdle();
  transport::Stream* control = pair.server().OpenOutgoingUnidirectionalStream();
  if (control) {
    Setup s;
    s.options.max_filter_ranges = 4;
    (void)control->Write(*SerializeControlMessage(s), false);
  }
  pair.RunUntilIdle();
  const FullTrackName name{{"a"}, "b"};
  auto sub = std::make_shared<FuzzSub>();
  sub->session = &client;
  sub->quit_on_third = (config & 0x40) != 0;
  SubscribeOptions so;
  so.fill = LocationFilter{LocationFilterType::kAbsoluteStart, 0, 0};
  so.object_id_ranges = {{0, 5}, {7, std::nullopt}};
  auto sid = client.Subscribe(name, so, sub);
  if (sid.ok()) sub->id = *sid;
  auto fetch = std::make_shared<FuzzFetch>();
  FetchOptions fo;
  fo.range = LocationFilter{LocationFilterType::kAbsoluteStartGroupEnd, 0, 0, 3};
  auto fid = client.Fetch(name, fo, fetch);
  pair.RunUntilIdle();
  // The publisher's ends of the two request streams (client bidi IDs 0 and 4).
  const transport::StreamId request_ids[2] = {0, 4};
  if (config & 0x20) {
    SubscribeOk ok;
    ok.track_alias = 0;
    ok.params.largest_object = Location{0, 0};
    if (auto* r = pair.server().GetStreamById(request_ids[0]))
      (void)r->Write(*SerializeControlMessage(ok), false);
    FetchOk fok;
    fok.end_location = Location{3, 9};
    if (auto* r = pair.server().GetStreamById(request_ids[1]))
      (void)r->Write(*SerializeControlMessage(fok), false);
    pair.RunUntilIdle();
  }
  std::map<int, transport::StreamId> streams;
  auto data_stream = [&](int idx) -> transport::Stream* {
    auto it = streams.find(idx);
    if (it == streams.end()) {
      transport::Stream* s = pair.server().OpenOutgoingUnidirectionalStream();
      if (!s) return nullptr;
      streams[idx] = s->GetStreamId();
      return s;
    }
    return pair.server().GetStreamById(it->second);
  };
  size_t at = 1;
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
        if ((s = pair.server().GetStreamById(request_ids[idx % 2]))) (void)s->Write(bytes, false);
        break;
      case 2:
        if ((s = data_stream(idx))) (void)s->Write(bytes, false);
        break;
      case 3:
        if ((s = pair.server().GetStreamById(request_ids[idx % 2]))) (void)s->Write({}, true);
        break;
      case 4:
        if ((s = data_stream(idx))) (void)s->Write({}, true);
        break;
      case 5:
        if ((s = data_stream(idx))) s->ResetWithCode(2);
        break;
      case 6:
        (void)pair.server().SendOrQueueDatagram(bytes);
        break;
      case 7:
        switch (len > 0 ? bytes[0] % 4 : 3) {
          case 0:
            if (sid.ok()) (void)client.Unsubscribe(*sid);
            break;
          case 1:
            if (fid.ok()) (void)client.CancelFetch(*fid);
            break;
          case 2:
            (void)client.Subscribe(name, {}, std::make_shared<FuzzSub>());
            break;
          default:
            now += 5000;
            client.OnTimer();
            break;
        }
        break;
    }
    pair.RunUntilIdle();
    if (raw.closed) break;
  }
  // Once the session is over no reassembly may be outstanding beyond the bound.
  if (client.stats().reassembly_bytes > kMaxReassemblyBytesPerSession) __builtin_trap();
  if (raw.closed && raw.closed->kind == transport::CloseInfo::Kind::kApplication &&
      !KnownSessionError(raw.closed->code)) {
    __builtin_trap();
  }
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t config = data[0];
  if (config & 0x10) return RunSubscriberMode(data, size);
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
