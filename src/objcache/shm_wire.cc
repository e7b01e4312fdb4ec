// Same-host registration messages. See shm_wire.h.
#include "objcache/shm_wire.h"

#include <algorithm>
#include <cstring>

namespace kvcs::objcache {
namespace {

constexpr uint8_t kMagic[4] = {'K', 'V', 'S', 'M'};
constexpr uint8_t kVersion = 1;

Status Bad(WireError e, std::string m) {
  return InvalidArgument("shm message: " + m, static_cast<int>(e));
}

bool AllZero(ByteSpan b) {
  return std::all_of(b.begin(), b.end(), [](uint8_t x) { return x == 0; });
}

}  // namespace

std::string_view ShmRegisterStatusName(ShmRegisterStatus s) {
  switch (s) {
    case ShmRegisterStatus::kOk:
      return "ok";
    case ShmRegisterStatus::kNoDescriptor:
      return "no descriptor attached";
    case ShmRegisterStatus::kNotSealed:
      return "not a memfd sealed against shrinking";
    case ShmRegisterStatus::kBadSize:
      return "empty or larger than the store accepts";
    case ShmRegisterStatus::kMapFailed:
      return "the store could not map it read-write";
    case ShmRegisterStatus::kTooMany:
      return "the store holds its maximum of shared buffers";
    case ShmRegisterStatus::kAlreadyRegistered:
      return "this connection already registered a buffer";
  }
  return "unknown";
}

void EncodeShmMessage(const ShmMessage& m, Bytes* out) {
  ByteWriter w(out);
  w.Append(ByteSpan(kMagic, 4));
  w.U8(kVersion);
  w.U8(static_cast<uint8_t>(m.type));
  w.U16(m.type == ShmMessageType::kRegistered ? static_cast<uint16_t>(m.status) : 0);
  w.U64(m.type == ShmMessageType::kRegister ? 0 : m.value);
  if (m.type == ShmMessageType::kRegistered) {
    w.Append(ByteSpan(m.token.data(), m.token.size()));
  } else {
    w.U32(m.type == ShmMessageType::kRelease ? m.released : 0);
    w.U32(0);
    w.U64(0);
  }
}

Result<ShmMessage> DecodeShmMessage(ByteSpan in) {
  if (in.size() < kShmMessageBytes)
    return Status(Code::kNeedMoreData, "shm message: short",
                  static_cast<int>(WireError::kTruncated));
  if (in.size() > kShmMessageBytes) return Bad(WireError::kTrailingBytes, "longer than 32 bytes");
  if (!std::equal(in.begin(), in.begin() + 4, kMagic))
    return Bad(WireError::kBadMagic, "does not start with KVSM");
  if (in[4] != kVersion) return Bad(WireError::kBadVersion, "version != 1");
  ShmMessage m;
  uint8_t type = in[5];
  if (type < 1 || type > 4) return Bad(WireError::kBadFrameType, "unknown message type");
  m.type = static_cast<ShmMessageType>(type);
  uint16_t status = LoadBe16(in.data() + 6);
  m.value = LoadBe64(in.data() + 8);
  ByteSpan tail = in.subspan(16);
  switch (m.type) {
    case ShmMessageType::kRegistered:
      if (status > kMaxShmRegisterStatus) return Bad(WireError::kBadStatus, "unknown status");
      m.status = static_cast<ShmRegisterStatus>(status);
      std::memcpy(m.token.data(), tail.data(), m.token.size());
      if (m.status != ShmRegisterStatus::kOk && (m.value || !AllZero(tail)))
        return Bad(WireError::kBadReserved, "a refusal carries a size or token");
      return m;
    case ShmMessageType::kRegister:
      if (status || m.value || !AllZero(tail))
        return Bad(WireError::kBadReserved, "REGISTER fields not zero");
      return m;
    case ShmMessageType::kRelease:
      m.released = LoadBe32(tail.data());
      if (status || !AllZero(tail.subspan(4)))
        return Bad(WireError::kBadReserved, "RELEASE reserved fields not zero");
      return m;
    case ShmMessageType::kCancel:
      if (status || !AllZero(tail)) return Bad(WireError::kBadReserved, "CANCEL fields not zero");
      return m;
  }
  return Bad(WireError::kBadFrameType, "unknown message type");
}

}  // namespace kvcs::objcache
