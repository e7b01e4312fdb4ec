#include "moqt/moqt_datagram.h"

#include <gtest/gtest.h>

#include "common/hex.h"
#include "moqt/moqt_error.h"
#include "moqt/moqt_framer.h"
#include "moqt/test_tools/moqt_test_vectors.h"

namespace kvcs::moqt {
namespace {

using test::DatagramVectors;
using test::HexBytes;

TEST(MoqtDatagram, DecodesTable) {
  for (const auto& v : DatagramVectors()) {
    SCOPED_TRACE(v.name);
    Bytes b = HexBytes(v.hex);
    Result<ParsedDatagram> d = ParseDatagram(b);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    EXPECT_EQ(d->padding, v.padding);
    if (v.padding) continue;
    EXPECT_TRUE(d->object == v.datagram);
    EXPECT_EQ(AsStringView(d->payload), v.payload);
  }
}

TEST(MoqtDatagram, EncoderMatchesTable) {
  for (const auto& v : DatagramVectors()) {
    if (!v.encode) continue;
    SCOPED_TRACE(v.name);
    Bytes b;
    ASSERT_TRUE(AppendObjectDatagram(v.datagram, AsBytes(v.payload), &b).ok());
    EXPECT_EQ(ToHex(b), ToHex(HexBytes(v.hex)));
  }
  Bytes pad;
  AppendPaddingDatagram(2, &pad);
  EXPECT_EQ(ToHex(pad), "f0132b3e290000");
}

TEST(MoqtDatagram, MalformedTable) {
  for (const auto& v : test::MalformedDatagramVectors()) {
    SCOPED_TRACE(v.name);
    Result<ParsedDatagram> d = ParseDatagram(HexBytes(v.hex));
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(WireErrorOf(d.status()), v.error) << d.status().ToString();
  }
}

TEST(MoqtDatagram, EveryTypeVariantRoundTrips) {
  std::vector<uint8_t> types = AllDatagramTypes();
  EXPECT_EQ(types.size(), 24u);  // 0x00-0x0F and 0x20-0x2F minus the 8 STATUS+END_OF_GROUP
  for (uint8_t t : types) {
    SCOPED_TRACE(static_cast<int>(t));
    ObjectDatagram d;
    d.track_alias = 1000;
    d.location = {70000, (t & kDatagramFlagZeroObjectId) ? 0u : 12u};
    if (!(t & kDatagramFlagDefaultPriority)) d.publisher_priority = 0xFF;
    d.end_of_group = t & kDatagramFlagEndOfGroup;
    if (t & kDatagramFlagProperties) d.properties = {KeyValuePair::Int(0x3C, 4)};
    std::string payload = "datagram payload";
    if (t & kDatagramFlagStatus) {
      d.status = ObjectStatus::kNormal;
      payload.clear();
      if (!(t & kDatagramFlagProperties)) d.status = ObjectStatus::kEndOfTrack;
    }
    Bytes b;
    ASSERT_TRUE(AppendObjectDatagram(d, AsBytes(payload), &b).ok());
    EXPECT_EQ(b[0], t);
    Result<ParsedDatagram> p = ParseDatagram(b);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    EXPECT_TRUE(p->object == d);
    EXPECT_EQ(AsStringView(p->payload), payload);
    // Long varints decode the same.
    WireOptions o;
    o.varint_extra_bytes = 3;
    Bytes lb;
    ASSERT_TRUE(AppendObjectDatagram(d, AsBytes(payload), &lb, o).ok());
    Result<ParsedDatagram> lp = ParseDatagram(lb);
    ASSERT_TRUE(lp.ok());
    EXPECT_TRUE(lp->object == d);
    // Every prefix either parses (a shorter payload) or is a typed malformation.
    for (size_t n = 0; n < b.size(); ++n) {
      Result<ParsedDatagram> q = ParseDatagram(ByteSpan(b).first(n));
      if (!q.ok()) {
        EXPECT_EQ(q.status().code(), Code::kInvalidArgument);
      }
    }
  }
  // Every other type byte is rejected with a typed error.
  for (unsigned t = 0; t < 0x80; ++t) {
    if (IsValidDatagramType(t)) continue;
    Bytes b = {static_cast<uint8_t>(t), 1, 2, 3, 4};
    EXPECT_EQ(WireErrorOf(ParseDatagram(b).status()), WireError::kInvalidDatagramType) << t;
  }
}

TEST(MoqtDatagram, BitFlipsGiveTypedResults) {
  for (const auto& v : DatagramVectors()) {
    Bytes b = HexBytes(v.hex);
    for (size_t i = 0; i < b.size() * 8; ++i) {
      Bytes c = b;
      c[i / 8] ^= static_cast<uint8_t>(1u << (i % 8));
      Result<ParsedDatagram> d = ParseDatagram(c);
      if (!d.ok()) {
        EXPECT_NE(WireErrorOf(d.status()), WireError::kNone) << v.name << " bit " << i;
      }
    }
  }
}

TEST(MoqtDatagram, EncoderRefusesInvalidCombinations) {
  ObjectDatagram d;
  d.status = ObjectStatus::kEndOfGroup;
  d.end_of_group = true;
  Bytes b;
  EXPECT_EQ(WireErrorOf(AppendObjectDatagram(d, {}, &b)), WireError::kInvalidDatagramType);
  d.end_of_group = false;
  EXPECT_EQ(WireErrorOf(AppendObjectDatagram(d, AsBytes("x"), &b)), WireError::kPayloadWithStatus);
  d.properties = {KeyValuePair::Int(2, 1)};
  EXPECT_EQ(WireErrorOf(AppendObjectDatagram(d, {}, &b)), WireError::kPropertiesOnNonNormal);
  EXPECT_TRUE(b.empty());
}

}  // namespace
}  // namespace kvcs::moqt
