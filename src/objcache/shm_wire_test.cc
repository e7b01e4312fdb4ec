// Same-host registration messages: ONE table of byte vectors drives encode, decode, every
// truncation and every single-bit corruption; then the typed errors.
#include "objcache/shm_wire.h"

#include <gtest/gtest.h>

#include <string>

#include "common/hex.h"

namespace kvcs::objcache {
namespace {

Bytes H(const std::string& hex) {
  std::string clean;
  for (char c : hex)
    if (c != ' ') clean += c;
  auto r = FromHex(clean);
  EXPECT_TRUE(r.ok()) << hex;
  return r.ok() ? *r : Bytes{};
}

struct Vector {
  const char* name;
  ShmMessage message;
  Bytes bytes;
};

std::vector<Vector> Table() {
  ShmToken token;
  for (size_t i = 0; i < token.size(); ++i) token[i] = uint8_t(0xa0 + i);
  return {
      {"register", ShmMessage{ShmMessageType::kRegister},
       H("4b56534d 01 01 0000 0000000000000000 00000000000000000000000000000000")},
      {"registered_ok",
       ShmMessage{ShmMessageType::kRegistered, ShmRegisterStatus::kOk, 0x40000000, 0, token},
       H("4b56534d 01 02 0000 0000000040000000 a0a1a2a3a4a5a6a7a8a9aaabacadaeaf")},
      {"registered_refused", ShmMessage{ShmMessageType::kRegistered, ShmRegisterStatus::kNotSealed},
       H("4b56534d 01 02 0002 0000000000000000 00000000000000000000000000000000")},
      {"release",
       ShmMessage{ShmMessageType::kRelease, ShmRegisterStatus::kOk, 0x0102030405060708, 7, {}},
       H("4b56534d 01 03 0000 0102030405060708 00000007000000000000000000000000")},
      {"cancel", ShmMessage{ShmMessageType::kCancel, ShmRegisterStatus::kOk, 0xffffffffffffffff},
       H("4b56534d 01 04 0000 ffffffffffffffff 00000000000000000000000000000000")},
  };
}

TEST(ShmWire, EncodeDecodeTable) {
  for (const auto& v : Table()) {
    Bytes got;
    EncodeShmMessage(v.message, &got);
    EXPECT_EQ(got, v.bytes) << v.name;
    auto m = DecodeShmMessage(v.bytes);
    ASSERT_TRUE(m.ok()) << v.name << ": " << m.status().ToString();
    EXPECT_EQ(*m, v.message) << v.name;
  }
}

TEST(ShmWire, EveryTruncationNeedsMore) {
  for (const auto& v : Table())
    for (size_t n = 0; n < v.bytes.size(); ++n) {
      auto m = DecodeShmMessage(ByteSpan(v.bytes).first(n));
      EXPECT_EQ(m.status().code(), Code::kNeedMoreData) << v.name << " " << n;
      EXPECT_TRUE(m.status().Is(WireError::kTruncated));
    }
}

// A flipped bit is refused or decodes to a different message (never silently the same one).
TEST(ShmWire, EveryBitFlipIsCaughtOrChangesTheMessage) {
  for (const auto& v : Table())
    for (size_t i = 0; i < v.bytes.size(); ++i)
      for (int bit = 0; bit < 8; ++bit) {
        Bytes b = v.bytes;
        b[i] ^= uint8_t(1u << bit);
        auto m = DecodeShmMessage(b);
        EXPECT_TRUE(!m.ok() || !(*m == v.message)) << v.name << " byte " << i << " bit " << bit;
      }
}

TEST(ShmWire, TypedErrors) {
  const Bytes release = Table()[3].bytes;
  struct Case {
    const char* name;
    size_t offset;
    uint8_t value;
    WireError error;
  } cases[] = {
      {"magic", 0, 'X', WireError::kBadMagic},
      {"version", 4, 2, WireError::kBadVersion},
      {"type zero", 5, 0, WireError::kBadFrameType},
      {"type five", 5, 5, WireError::kBadFrameType},
      {"status on a release", 7, 1, WireError::kBadReserved},
      {"release reserved", 31, 1, WireError::kBadReserved},
  };
  for (const auto& c : cases) {
    Bytes b = release;
    b[c.offset] = c.value;
    auto m = DecodeShmMessage(b);
    ASSERT_FALSE(m.ok()) << c.name;
    EXPECT_TRUE(m.status().Is(c.error)) << c.name << ": " << m.status().ToString();
  }
  Bytes refused = Table()[2].bytes;
  refused[7] = 9;  // status beyond the table
  EXPECT_TRUE(DecodeShmMessage(refused).status().Is(WireError::kBadStatus));
  refused[7] = 2;
  refused[31] = 1;  // a refusal with a token
  EXPECT_TRUE(DecodeShmMessage(refused).status().Is(WireError::kBadReserved));
  Bytes reg = Table()[0].bytes;
  reg[15] = 1;  // REGISTER with a size
  EXPECT_TRUE(DecodeShmMessage(reg).status().Is(WireError::kBadReserved));
  reg = Table()[4].bytes;
  reg[20] = 1;  // CANCEL with a count
  EXPECT_TRUE(DecodeShmMessage(reg).status().Is(WireError::kBadReserved));
  Bytes longer = release;
  longer.push_back(0);
  EXPECT_TRUE(DecodeShmMessage(longer).status().Is(WireError::kTrailingBytes));
}

}  // namespace
}  // namespace kvcs::objcache
