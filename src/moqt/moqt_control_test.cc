// Control messages: the one vector table fed every way (encoder, decoder, byte-at-a-time,
// two-part, long varints, truncation, length +/-1, trailing data) plus malformation cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "common/hex.h"
#include "moqt/moqt_control_parser.h"
#include "moqt/moqt_error.h"
#include "moqt/moqt_framer.h"
#include "moqt/moqt_limits.h"
#include "moqt/moqt_varint.h"
#include "moqt/test_tools/moqt_test_vectors.h"

namespace kvcs::moqt {
namespace {

using test::ControlVectors;
using test::HexBytes;
using test::MalformedControlVectors;

// Feeds `chunks` to a fresh parser, collecting messages; returns the final status of Next().
Status FeedAll(const std::vector<ByteSpan>& chunks, std::vector<ControlMessage>* got,
               const WireOptions& options = {}) {
  ControlStreamParser p(options);
  Status last = Status::Ok();
  for (ByteSpan c : chunks) {
    p.Append(c);
    while (true) {
      Result<ControlMessage> m = p.Next();
      if (!m.ok()) {
        last = m.status();
        if (last.code() != Code::kNeedMoreData) return last;
        break;
      }
      got->push_back(std::move(*m));
    }
  }
  return last;
}

TEST(MoqtControl, EveryMessageTypeHasAVector) {
  std::set<MessageType> seen;
  for (const auto& v : ControlVectors()) seen.insert(MessageTypeOf(v.message));
  EXPECT_EQ(seen.size(), 19u);
}

TEST(MoqtControl, EncoderMatchesTable) {
  for (const auto& v : ControlVectors()) {
    if (!v.encode) continue;
    SCOPED_TRACE(v.name);
    Result<Bytes> b = SerializeControlMessage(v.message);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    EXPECT_EQ(ToHex(*b), ToHex(HexBytes(v.hex)));
  }
}

TEST(MoqtControl, DecoderMatchesTable) {
  for (const auto& v : ControlVectors()) {
    SCOPED_TRACE(v.name);
    Bytes b = HexBytes(v.hex);
    std::vector<ControlMessage> got;
    Status s = FeedAll({ByteSpan(b)}, &got);
    EXPECT_EQ(s.code(), Code::kNeedMoreData) << s.ToString();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_TRUE(got[0] == v.message);
  }
}

TEST(MoqtControl, WholeTableAsOneStream) {
  Bytes all;
  for (const auto& v : ControlVectors()) {
    Bytes b = HexBytes(v.hex);
    all.insert(all.end(), b.begin(), b.end());
  }
  std::vector<ControlMessage> got;
  EXPECT_EQ(FeedAll({ByteSpan(all)}, &got).code(), Code::kNeedMoreData);
  ASSERT_EQ(got.size(), ControlVectors().size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i] == ControlVectors()[i].message) << i;
}

TEST(MoqtControl, ByteAtATime) {
  for (const auto& v : ControlVectors()) {
    SCOPED_TRACE(v.name);
    Bytes b = HexBytes(v.hex);
    ControlStreamParser p;
    for (size_t i = 0; i < b.size(); ++i) {
      p.Append(ByteSpan(b).subspan(i, 1));
      Result<ControlMessage> m = p.Next();
      if (i + 1 < b.size()) {
        ASSERT_EQ(m.status().code(), Code::kNeedMoreData) << "after byte " << i;
      } else {
        ASSERT_TRUE(m.ok()) << m.status().ToString();
        EXPECT_TRUE(*m == v.message);
      }
    }
    EXPECT_TRUE(p.OnFin().ok());
  }
}

TEST(MoqtControl, TwoParts) {
  for (const auto& v : ControlVectors()) {
    SCOPED_TRACE(v.name);
    Bytes b = HexBytes(v.hex);
    for (size_t split = 0; split <= b.size(); ++split) {
      std::vector<ControlMessage> got;
      ByteSpan s(b);
      FeedAll({s.first(split), s.subspan(split)}, &got);
      ASSERT_EQ(got.size(), 1u) << "split " << split;
      EXPECT_TRUE(got[0] == v.message);
    }
  }
}

TEST(MoqtControl, LongVarintsDecodeToTheSameMessage) {
  for (size_t extra : {1, 2, 8}) {
    for (const auto& v : ControlVectors()) {
      if (!v.encode) continue;
      SCOPED_TRACE(v.name + " extra " + std::to_string(extra));
      WireOptions o;
      o.varint_extra_bytes = extra;
      Result<Bytes> b = SerializeControlMessage(v.message, o);
      ASSERT_TRUE(b.ok()) << b.status().ToString();
      EXPECT_GT(b->size(), HexBytes(v.hex).size());
      std::vector<ControlMessage> got;
      FeedAll({ByteSpan(*b)}, &got);
      ASSERT_EQ(got.size(), 1u);
      EXPECT_TRUE(got[0] == v.message);
    }
  }
}

TEST(MoqtControl, EveryPrefixNeedsMoreData) {
  for (const auto& v : ControlVectors()) {
    SCOPED_TRACE(v.name);
    Bytes b = HexBytes(v.hex);
    for (size_t n = 0; n < b.size(); ++n) {
      ControlStreamParser p;
      p.Append(ByteSpan(b).first(n));
      EXPECT_EQ(p.Next().status().code(), Code::kNeedMoreData) << "prefix " << n;
      Status fin = p.OnFin();
      if (n == 0) {
        EXPECT_TRUE(fin.ok());
      } else {
        EXPECT_EQ(WireErrorOf(fin), WireError::kFinMidMessage) << "prefix " << n;
      }
    }
  }
}

// Offset of the 16-bit Length field.
size_t LengthOffset(const Bytes& b) { return VarintLengthFromFirstByte(b[0]); }

TEST(MoqtControl, LengthPlusOneIsMalformed) {
  for (const auto& v : ControlVectors()) {
    SCOPED_TRACE(v.name);
    Bytes b = HexBytes(v.hex);
    size_t at = LengthOffset(b);
    uint16_t len = static_cast<uint16_t>(b[at] << 8 | b[at + 1]);
    StoreBe16(&b[at], len + 1);
    b.push_back(0x00);  // the extra byte the longer length swallows
    std::vector<ControlMessage> got;
    Status s = FeedAll({ByteSpan(b)}, &got);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
    EXPECT_TRUE(got.empty());
    EXPECT_TRUE(DispositionOf(s).close_session);
  }
}

TEST(MoqtControl, LengthMinusOneIsMalformed) {
  for (const auto& v : ControlVectors()) {
    SCOPED_TRACE(v.name);
    Bytes b = HexBytes(v.hex);
    size_t at = LengthOffset(b);
    uint16_t len = static_cast<uint16_t>(b[at] << 8 | b[at + 1]);
    if (len == 0) continue;
    StoreBe16(&b[at], len - 1);
    std::vector<ControlMessage> got;
    Status s = FeedAll({ByteSpan(b)}, &got);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
    EXPECT_TRUE(got.empty());
  }
}

TEST(MoqtControl, MalformedTable) {
  for (const auto& v : MalformedControlVectors()) {
    SCOPED_TRACE(v.name);
    Bytes b = HexBytes(v.hex);
    std::vector<ControlMessage> got;
    Status s = FeedAll({ByteSpan(b)}, &got);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
    EXPECT_EQ(WireErrorOf(s), v.error) << s.ToString();
    EXPECT_TRUE(got.empty());
    // Byte at a time reaches the same verdict.
    got.clear();
    std::vector<ByteSpan> bytes;
    for (size_t i = 0; i < b.size(); ++i) bytes.push_back(ByteSpan(b).subspan(i, 1));
    EXPECT_EQ(WireErrorOf(FeedAll(bytes, &got)), v.error);
  }
}

TEST(MoqtControl, ErrorsAreSticky) {
  ControlStreamParser p;
  Bytes bad = HexBytes("01 0000");
  Bytes good = HexBytes("10 0002 00 00");
  p.Append(bad);
  EXPECT_EQ(WireErrorOf(p.Next().status()), WireError::kUnknownMessageType);
  p.Append(good);
  EXPECT_EQ(WireErrorOf(p.Next().status()), WireError::kUnknownMessageType);
}

TEST(MoqtControl, Dispositions) {
  auto disposition = [](std::string_view hex) {
    Bytes b = HexBytes(hex);
    std::vector<ControlMessage> got;
    return DispositionOf(FeedAll({ByteSpan(b)}, &got));
  };
  // Range-filter content errors answer the request; they do not close the session.
  ErrorDisposition d = disposition("03 000A 00 00 00 01 2704 00008100");
  EXPECT_FALSE(d.close_session);
  EXPECT_EQ(d.request_code, RequestErrorCode::kInvalidFilter);
  // An undecodable token is KEY_VALUE_FORMATTING_ERROR.
  d = disposition("AF00 0003 030107");
  EXPECT_TRUE(d.close_session);
  EXPECT_EQ(d.session_code, SessionError::kKeyValueFormattingError);
  // Everything else is PROTOCOL_VIOLATION.
  d = disposition("01 0000");
  EXPECT_EQ(d.session_code, SessionError::kProtocolViolation);
}

TEST(MoqtControl, GreaseCodesReadAsInternalError) {
  for (uint64_t n : {0, 1, 2, 100}) {
    uint64_t g = GreaseValue(n);
    EXPECT_TRUE(IsGrease(g));
    EXPECT_EQ(RequestErrorCodeFromWire(g), RequestErrorCode::kInternalError);
    EXPECT_EQ(SessionErrorFromWire(g), SessionError::kInternalError);
    EXPECT_EQ(PublishDoneCodeFromWire(g), PublishDoneCode::kInternalError);
    EXPECT_EQ(StreamResetCodeFromWire(g), StreamResetCode::kInternalError);
  }
  EXPECT_EQ(RequestErrorCodeFromWire(0x36), RequestErrorCode::kInvalidFilter);
  EXPECT_EQ(PublishDoneCodeFromWire(0x3), PublishDoneCode::kInternalError);  // removed in -20
  EXPECT_FALSE(IsGrease(0x9E));
}

TEST(MoqtControl, ErrorCodeNamesAndRegistry) {
  // Every registered code keeps its value and has a name; unregistered ones read as INTERNAL_ERROR.
  int session_named = 0, request_named = 0;
  for (uint64_t v = 0; v < 0x40; ++v) {
    SessionError s = SessionErrorFromWire(v);
    if (static_cast<uint64_t>(s) == v) {
      EXPECT_NE(SessionErrorName(s), "UNKNOWN") << v;
      ++session_named;
    }
    RequestErrorCode r = RequestErrorCodeFromWire(v);
    if (static_cast<uint64_t>(r) == v) {
      EXPECT_NE(RequestErrorCodeName(r), "UNKNOWN") << v;
      ++request_named;
    }
  }
  EXPECT_EQ(session_named, 20);
  EXPECT_EQ(request_named, 18);
  EXPECT_EQ(SessionErrorName(SessionError::kProtocolViolation), "PROTOCOL_VIOLATION");
  EXPECT_EQ(SessionErrorName(SessionError::kTooManyRequestUpdates), "TOO_MANY_REQUEST_UPDATES");
  EXPECT_EQ(RequestErrorCodeName(RequestErrorCode::kInvalidFilter), "INVALID_FILTER");
  EXPECT_EQ(SessionErrorName(static_cast<SessionError>(0x7)), "UNKNOWN");
  EXPECT_EQ(StreamResetCodeFromWire(0x7), StreamResetCode::kExpiredAuthToken);
  EXPECT_EQ(StreamResetCodeFromWire(0x8), StreamResetCode::kInternalError);
  EXPECT_EQ(PublishDoneCodeFromWire(0x12), PublishDoneCode::kMalformedTrack);
}

TEST(MoqtControl, SubscribeTracksFilterIsReceiveOnly) {
  const auto& v =
      *std::find_if(ControlVectors().begin(), ControlVectors().end(),
                    [](const auto& v) { return v.name == "subscribe_tracks_location_filter"; });
  // Never sent.
  EXPECT_EQ(WireErrorOf(SerializeControlMessage(v.message).status()),
            WireError::kParameterNotAllowed);
  // Rejected when the leniency is switched off.
  WireOptions strict;
  strict.accept_filter_and_fill_in_subscribe_tracks = false;
  Bytes b = HexBytes(v.hex);
  std::vector<ControlMessage> got;
  EXPECT_EQ(WireErrorOf(FeedAll({ByteSpan(b)}, &got, strict)), WireError::kParameterNotAllowed);
}

TEST(MoqtControl, FillParametersDraft23Encoding) {
  // Reference §20 (-23 form of the same SUBSCRIBE, params only): 02 21 05 02 01 21 01 01.
  const auto& v = *std::find_if(ControlVectors().begin(), ControlVectors().end(),
                                [](const auto& v) { return v.name == "subscribe_reference"; });
  WireOptions o;
  o.fill_parameters = FillParametersEncoding::kCountParams;
  Result<Bytes> b = SerializeControlMessage(v.message, o);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(ToHex(*b),
            "03001a0002046c6976650463616d3105766964656f02210502012101"
            "01");
  std::vector<ControlMessage> got;
  FeedAll({ByteSpan(*b)}, &got, o);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0] == v.message);
}

TEST(MoqtControl, BoundsAtTheLimit) {
  // Full Track Name of exactly 4096 bytes is fine; 4097 is not.
  Subscribe ok;
  ok.track.track_namespace = {std::string(4000, 'n')};
  ok.track.name = std::string(96, 't');
  Result<Bytes> b = SerializeControlMessage(ok);
  ASSERT_TRUE(b.ok());
  std::vector<ControlMessage> got;
  FeedAll({ByteSpan(*b)}, &got);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0] == ControlMessage(ok));

  Subscribe too_long = ok;
  too_long.track.name.push_back('x');
  EXPECT_EQ(WireErrorOf(SerializeControlMessage(too_long).status()),
            WireError::kFullTrackNameTooLong);
  // The same bytes built by hand are rejected by the parser.
  Bytes wire = *b;
  size_t name_len_at = wire.size() - 1 - 96 - 1;  // params count, name, name length
  ASSERT_EQ(wire[name_len_at], 96);
  wire[name_len_at] = 97;
  wire.insert(wire.end() - 1, 'x');
  StoreBe16(&wire[1], static_cast<uint16_t>(wire.size() - 3));
  got.clear();
  EXPECT_EQ(WireErrorOf(FeedAll({ByteSpan(wire)}, &got)), WireError::kFullTrackNameTooLong);

  // 32 namespace fields are fine, 33 are not.
  Namespace ns32;
  for (int i = 0; i < 32; ++i) ns32.suffix.push_back("f");
  EXPECT_TRUE(SerializeControlMessage(ns32).ok());
  ns32.suffix.push_back("f");
  EXPECT_EQ(WireErrorOf(SerializeControlMessage(ns32).status()),
            WireError::kTooManyNamespaceFields);

  // Reason phrase: 1024 fine, 1025 not. GOAWAY URI: 8192 fine, 8193 not.
  EXPECT_TRUE(SerializeControlMessage(PublishDone{0, 0, std::string(1024, 'r')}).ok());
  EXPECT_EQ(
      WireErrorOf(SerializeControlMessage(PublishDone{0, 0, std::string(1025, 'r')}).status()),
      WireError::kReasonPhraseTooLong);
  EXPECT_TRUE(SerializeControlMessage(GoAway{std::string(8192, 'u'), 0}).ok());
  EXPECT_EQ(WireErrorOf(SerializeControlMessage(GoAway{std::string(8193, 'u'), 0}).status()),
            WireError::kUriTooLong);

  // A body over 65 535 bytes cannot be framed.
  moqt::Setup big;
  big.options.unknown = {KeyValuePair::Blob(0x9D, std::string(65535, 'x'))};
  EXPECT_EQ(WireErrorOf(SerializeControlMessage(big).status()), WireError::kValueTooLong);
  // The largest frameable body round-trips.
  big.options.unknown = {KeyValuePair::Blob(0x9D, std::string(65535 - 5, 'x'))};
  Result<Bytes> max = SerializeControlMessage(big);
  ASSERT_TRUE(max.ok()) << max.status().ToString();
  EXPECT_EQ(max->size(), 2 + 2 + kMaxControlMessageBody);
  got.clear();
  FeedAll({ByteSpan(*max)}, &got);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0] == ControlMessage(big));
}

TEST(MoqtControl, EncoderRejectsInconsistentInput) {
  RequestError e{0x34, 0, "", std::nullopt};  // REDIRECT without Redirect
  EXPECT_EQ(WireErrorOf(SerializeControlMessage(e).status()), WireError::kBadEnumValue);
  RequestOk ok;
  ok.track_properties = {KeyValuePair::Int(4, 1), KeyValuePair::Int(2, 1)};  // not ascending
  EXPECT_FALSE(SerializeControlMessage(ok).ok());
  Subscribe s;
  s.params.expires_ms = 1;  // not allowed in SUBSCRIBE
  EXPECT_EQ(WireErrorOf(SerializeControlMessage(s).status()), WireError::kParameterNotAllowed);
  Subscribe r;
  r.params.range_filters.object_id = {RangeFilter{false, 0, 0, {{5, 3}}}};  // end below start
  EXPECT_EQ(WireErrorOf(SerializeControlMessage(r).status()), WireError::kInvalidFilter);
}

// Every bit flip of every vector: a typed result, never a crash; what parses re-encodes to
// something that parses to the same struct.
TEST(MoqtControl, BitFlipsNeverCrash) {
  for (const auto& v : ControlVectors()) {
    Bytes b = HexBytes(v.hex);
    for (size_t i = 0; i < b.size() * 8; ++i) {
      Bytes c = b;
      c[i / 8] ^= static_cast<uint8_t>(1u << (i % 8));
      std::vector<ControlMessage> got;
      Status s = FeedAll({ByteSpan(c)}, &got);
      EXPECT_TRUE(s.code() == Code::kNeedMoreData || s.code() == Code::kInvalidArgument);
      for (const auto& m : got) {
        Result<Bytes> again = SerializeControlMessage(m);
        if (!again.ok()) continue;
        std::vector<ControlMessage> got2;
        FeedAll({ByteSpan(*again)}, &got2);
        ASSERT_EQ(got2.size(), 1u) << v.name << " bit " << i;
        EXPECT_TRUE(got2[0] == m) << v.name << " bit " << i;
      }
    }
  }
}

}  // namespace
}  // namespace kvcs::moqt
