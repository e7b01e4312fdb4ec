// Data streams: the vector table fed whole, byte-at-a-time, split, in random chunks, with long
// varints and truncated; every subgroup header variant; malformed streams.
#include "moqt/moqt_data_parser.h"

#include <gtest/gtest.h>

#include <random>

#include "common/hex.h"
#include "moqt/moqt_datagram.h"
#include "moqt/moqt_error.h"
#include "moqt/moqt_framer.h"
#include "moqt/test_tools/moqt_test_vectors.h"

namespace kvcs::moqt {
namespace {

using test::DataEvent;
using test::DataStreamVectors;
using test::HexBytes;
using test::ObjectEvent;

class Recorder : public DataStreamVisitor {
 public:
  explicit Recorder(GroupOrder order = GroupOrder::kAscending) : order_(order) {}
  void OnSubgroupHeader(const SubgroupHeader& h) override { events.push_back(h); }
  GroupOrder OnFetchHeader(const FetchHeader& h) override {
    events.push_back(h);
    return order_;
  }
  void OnPaddingStream() override { events.push_back(test::PaddingEvent{}); }
  void OnObjectHeader(const ObjectHeader& o) override {
    EXPECT_TRUE(object_complete_) << "header before the previous payload ended";
    events.push_back(ObjectEvent{o, ""});
    object_complete_ = o.payload_length == 0;
  }
  void OnObjectPayload(ByteSpan chunk, bool end) override {
    ASSERT_FALSE(events.empty());
    auto* o = std::get_if<ObjectEvent>(&events.back());
    ASSERT_NE(o, nullptr);
    o->payload.append(AsStringView(chunk));
    object_complete_ = end;
    if (end) {
      EXPECT_EQ(o->payload.size(), o->header.payload_length);
    }
  }
  void OnEndOfRange(const EndOfRange& m) override { events.push_back(m); }
  void OnStreamEnd() override { events.push_back(test::StreamEndEvent{}); }
  void OnError(const Status& s) override {
    EXPECT_FALSE(error.has_value()) << "OnError called twice";
    error = s;
  }

  std::vector<DataEvent> events;
  std::optional<Status> error;

 private:
  GroupOrder order_;
  bool object_complete_ = true;
};

std::vector<DataEvent> Parse(const Bytes& b, const std::vector<size_t>& chunk_sizes,
                             GroupOrder order, std::optional<Status>* error = nullptr,
                             bool fin = true, const WireOptions& options = {}) {
  Recorder r(order);
  DataStreamParser p(&r, options);
  size_t at = 0, i = 0;
  while (at < b.size()) {
    size_t n = chunk_sizes.empty() ? b.size() : chunk_sizes[i++ % chunk_sizes.size()];
    n = std::min(n, b.size() - at);
    p.OnData(ByteSpan(b).subspan(at, n), false);
    at += n;
  }
  p.OnData({}, fin);
  if (error) *error = r.error;
  if (!error && r.error) ADD_FAILURE() << r.error->ToString();
  return r.events;
}

// Rebuilds a stream from its events with the framer.
Result<Bytes> Encode(const test::DataStreamVector& v, const WireOptions& options = {}) {
  Bytes out;
  std::optional<SubgroupStreamWriter> sub;
  std::optional<FetchStreamWriter> fetch;
  for (const DataEvent& e : v.events) {
    if (auto* h = std::get_if<SubgroupHeader>(&e)) {
      KVCS_RETURN_IF_ERROR(AppendSubgroupHeader(*h, &out, options));
      sub.emplace(*h, options);
    } else if (auto* f = std::get_if<FetchHeader>(&e)) {
      KVCS_RETURN_IF_ERROR(AppendFetchHeader(*f, &out, options));
      fetch.emplace(v.order, options);
    } else if (auto* o = std::get_if<ObjectEvent>(&e)) {
      ByteSpan payload = AsBytes(o->payload);
      if (sub) {
        KVCS_RETURN_IF_ERROR(sub->AppendObject(o->header.location.object, o->header.status,
                                               o->header.properties, payload, &out));
      } else {
        KVCS_RETURN_IF_ERROR(fetch->AppendObject(o->header, payload, &out));
      }
    } else if (auto* m = std::get_if<EndOfRange>(&e)) {
      KVCS_RETURN_IF_ERROR(fetch->AppendEndOfRange(*m, &out));
    }
  }
  return out;
}

TEST(MoqtDataStream, DecodesTable) {
  for (const auto& v : DataStreamVectors()) {
    SCOPED_TRACE(v.name);
    std::optional<Status> err;
    auto events = Parse(HexBytes(v.hex), {}, v.order, &err);
    EXPECT_FALSE(err.has_value()) << err->ToString();
    EXPECT_TRUE(events == v.events);
  }
}

TEST(MoqtDataStream, EncoderMatchesTable) {
  for (const auto& v : DataStreamVectors()) {
    if (!v.encode) continue;
    SCOPED_TRACE(v.name);
    Result<Bytes> b = Encode(v);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    EXPECT_EQ(ToHex(*b), ToHex(HexBytes(v.hex)));
  }
}

TEST(MoqtDataStream, ByteAtATimeAndSplits) {
  for (const auto& v : DataStreamVectors()) {
    SCOPED_TRACE(v.name);
    Bytes b = HexBytes(v.hex);
    std::optional<Status> err;
    EXPECT_TRUE(Parse(b, {1}, v.order, &err) == v.events);
    EXPECT_FALSE(err.has_value());
    for (size_t split = 0; split <= b.size(); ++split) {
      EXPECT_TRUE(Parse(b, {split == 0 ? b.size() : split, b.size()}, v.order, &err) == v.events)
          << "split " << split;
      EXPECT_FALSE(err.has_value());
    }
    std::mt19937 rng(7);
    for (int round = 0; round < 20; ++round) {
      std::vector<size_t> sizes;
      for (int i = 0; i < 16; ++i) sizes.push_back(1 + rng() % 7);
      EXPECT_TRUE(Parse(b, sizes, v.order, &err) == v.events);
      EXPECT_FALSE(err.has_value());
    }
  }
}

TEST(MoqtDataStream, LongVarints) {
  for (size_t extra : {1, 8}) {
    for (const auto& v : DataStreamVectors()) {
      if (!v.encode) continue;
      SCOPED_TRACE(v.name);
      WireOptions o;
      o.varint_extra_bytes = extra;
      Result<Bytes> b = Encode(v, o);
      ASSERT_TRUE(b.ok()) << b.status().ToString();
      std::optional<Status> err;
      EXPECT_TRUE(Parse(*b, {1}, v.order, &err) == v.events);
      EXPECT_FALSE(err.has_value());
    }
  }
}

TEST(MoqtDataStream, TruncationNeedsMoreAndFinMidObjectIsMalformed) {
  for (const auto& v : DataStreamVectors()) {
    SCOPED_TRACE(v.name);
    Bytes b = HexBytes(v.hex);
    for (size_t n = 0; n < b.size(); ++n) {
      Bytes prefix(b.begin(), b.begin() + n);
      std::optional<Status> err;
      Parse(prefix, {1}, v.order, &err, /*fin=*/false);
      EXPECT_FALSE(err.has_value()) << "prefix " << n << ": " << err->ToString();
      // FIN after the prefix: a clean end at an object boundary, else FIN mid-object.
      auto events = Parse(prefix, {}, v.order, &err, /*fin=*/true);
      if (err) {
        EXPECT_EQ(WireErrorOf(*err), WireError::kFinMidObject) << "prefix " << n;
      } else {
        ASSERT_FALSE(events.empty());
        EXPECT_TRUE(std::holds_alternative<test::StreamEndEvent>(events.back()));
      }
    }
  }
}

TEST(MoqtDataStream, MalformedTable) {
  for (const auto& v : test::MalformedDataStreamVectors()) {
    SCOPED_TRACE(v.name);
    Bytes b = HexBytes(v.hex);
    for (std::vector<size_t> chunks : {std::vector<size_t>{}, std::vector<size_t>{1}}) {
      std::optional<Status> err;
      Parse(b, chunks, v.order, &err, v.fin);
      ASSERT_TRUE(err.has_value());
      EXPECT_EQ(WireErrorOf(*err), v.error) << err->ToString();
      EXPECT_TRUE(DispositionOf(*err).close_session);
    }
  }
}

TEST(MoqtDataStream, EverySubgroupHeaderVariant) {
  std::vector<uint8_t> types = AllSubgroupTypes();
  EXPECT_EQ(types.size(), 48u);
  for (uint8_t t : types) {
    SCOPED_TRACE(static_cast<int>(t));
    SubgroupHeader h = SubgroupHeaderFromType(t);
    h.track_alias = 300;
    h.group_id = 1u << 20;
    if (h.id_mode == SubgroupIdMode::kExplicit) h.subgroup_id = 9;
    if (!(t & kSubgroupFlagDefaultPriority)) h.publisher_priority = 200;
    ASSERT_EQ(SubgroupTypeOf(h), t);
    Bytes b;
    ASSERT_TRUE(AppendSubgroupHeader(h, &b).ok());
    EXPECT_EQ(b[0], t);
    SubgroupStreamWriter w(h);
    Properties props;
    if (h.has_properties) props = {KeyValuePair::Int(0x3E, 2), KeyValuePair::Blob(0x9D, "g")};
    ASSERT_TRUE(w.AppendObject(7, ObjectStatus::kNormal, props, AsBytes("payload"), &b).ok());
    ASSERT_TRUE(w.AppendObject(9, ObjectStatus::kNormal, {}, {}, &b).ok());
    ASSERT_TRUE(w.AppendObject(200, ObjectStatus::kEndOfGroup, {}, {}, &b).ok());
    uint64_t sg = h.id_mode == SubgroupIdMode::kExplicit      ? 9
                  : h.id_mode == SubgroupIdMode::kFirstObject ? 7
                                                              : 0;
    Location loc{1u << 20, 7};
    std::vector<DataEvent> want = {h};
    ObjectHeader o1{loc, sg, h.publisher_priority, ObjectStatus::kNormal, props, 7};
    ObjectHeader o2{{loc.group, 9}, sg, h.publisher_priority, ObjectStatus::kNormal, {}, 0};
    ObjectHeader o3{{loc.group, 200}, sg, h.publisher_priority, ObjectStatus::kEndOfGroup, {}, 0};
    want.push_back(ObjectEvent{o1, "payload"});
    want.push_back(ObjectEvent{o2, ""});
    want.push_back(ObjectEvent{o3, ""});
    want.push_back(test::StreamEndEvent{});
    std::optional<Status> err;
    EXPECT_TRUE(Parse(b, {}, GroupOrder::kAscending, &err) == want);
    EXPECT_FALSE(err.has_value());
    EXPECT_TRUE(Parse(b, {1}, GroupOrder::kAscending, &err) == want);
    // PeekUniStreamType routes it.
    EXPECT_EQ(*PeekUniStreamType(b), UniStreamKind::kSubgroup);
  }
}

TEST(MoqtDataStream, EveryTypeByteIsTypedOrValid) {
  for (unsigned t = 0; t < 256; ++t) {
    Bytes b = {static_cast<uint8_t>(t)};
    Result<UniStreamKind> k = PeekUniStreamType(b);
    if (k.ok() || k.status().code() == Code::kNeedMoreData) continue;
    EXPECT_EQ(k.status().code(), Code::kInvalidArgument);
  }
  EXPECT_EQ(*PeekUniStreamType(HexBytes("AF00")), UniStreamKind::kControl);
  EXPECT_EQ(*PeekUniStreamType(HexBytes("05")), UniStreamKind::kFetch);
  EXPECT_EQ(*PeekUniStreamType(HexBytes("F0132B3E28")), UniStreamKind::kPadding);
  EXPECT_EQ(PeekUniStreamType(HexBytes("F0132B")).status().code(), Code::kNeedMoreData);
}

TEST(MoqtDataStream, LargePayloadStreamsThrough) {
  SubgroupHeader h;
  h.track_alias = 1;
  h.group_id = 2;
  h.id_mode = SubgroupIdMode::kZero;
  h.publisher_priority = 1;
  Bytes b;
  ASSERT_TRUE(AppendSubgroupHeader(h, &b).ok());
  std::string payload(1 << 20, 'p');
  SubgroupStreamWriter w(h);
  ASSERT_TRUE(w.AppendObject(0, ObjectStatus::kNormal, {}, AsBytes(payload), &b).ok());
  std::optional<Status> err;
  auto events = Parse(b, {4096}, GroupOrder::kAscending, &err);
  EXPECT_FALSE(err.has_value());
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(std::get<ObjectEvent>(events[1]).payload.size(), payload.size());
}

TEST(MoqtDataStream, EndOfRangeAbsoluteReading) {
  // After an object in group 1, an End of Non-Existent Range marker to {1, 9} (same group) is
  // only expressible with the absolute reading.
  WireOptions abs;
  abs.end_of_range = EndOfRangeEncoding::kAbsolute;
  FetchStreamWriter w(GroupOrder::kAscending, abs);
  Bytes b;
  ASSERT_TRUE(AppendFetchHeader(FetchHeader{5}, &b).ok());
  ObjectHeader o{{1, 0}, 0, 3, ObjectStatus::kNormal, {}, 0};
  ASSERT_TRUE(w.AppendObject(o, {}, &b).ok());
  ASSERT_TRUE(w.AppendEndOfRange({EndOfRangeKind::kNonExistent, {1, 9}}, &b).ok());
  EXPECT_EQ(ToHex(b),
            "05051c010003"
            "00"
            "808c01"
            "0900");
  std::optional<Status> err;
  auto events = Parse(b, {1}, GroupOrder::kAscending, &err, true, abs);
  EXPECT_FALSE(err.has_value());
  ASSERT_EQ(events.size(), 4u);
  EXPECT_TRUE(std::get<EndOfRange>(events[2]) ==
              (EndOfRange{EndOfRangeKind::kNonExistent, {1, 9}}));
  // The delta reading (default) refuses to write it.
  FetchStreamWriter d;
  Bytes b2;
  ASSERT_TRUE(d.AppendObject(o, {}, &b2).ok());
  EXPECT_FALSE(d.AppendEndOfRange({EndOfRangeKind::kNonExistent, {1, 9}}, &b2).ok());
}

// Every single-bit flip of every stream: a typed error or a clean parse, never a crash.
TEST(MoqtDataStream, BitFlipsGiveTypedResults) {
  for (const auto& v : DataStreamVectors()) {
    Bytes b = HexBytes(v.hex);
    for (size_t i = 0; i < b.size() * 8; ++i) {
      Bytes c = b;
      c[i / 8] ^= static_cast<uint8_t>(1u << (i % 8));
      for (std::vector<size_t> chunks : {std::vector<size_t>{}, std::vector<size_t>{1}}) {
        std::optional<Status> err;
        Parse(c, chunks, v.order, &err);
        if (err) {
          EXPECT_EQ(err->code(), Code::kInvalidArgument) << v.name << " bit " << i;
          EXPECT_NE(WireErrorOf(*err), WireError::kNone) << v.name << " bit " << i;
        }
      }
    }
  }
}

TEST(MoqtDataStream, NothingAfterFailureOrFin) {
  Recorder r;
  DataStreamParser p(&r);
  p.OnData(HexBytes("16"), false);
  ASSERT_TRUE(r.error.has_value());
  p.OnData(HexBytes("10010107"), true);  // ignored, OnError not called again
  EXPECT_TRUE(p.failed());
  Recorder r2;
  DataStreamParser p2(&r2);
  p2.OnData(HexBytes("0504"), true);
  EXPECT_TRUE(p2.finished());
  p2.OnData(HexBytes("00"), false);
  EXPECT_FALSE(r2.error.has_value());
}

}  // namespace
}  // namespace kvcs::moqt
