// The same-host buffer registration protocol (docs/protocols/objectcache-aggregated.md §8):
// fixed 32-byte messages on the store's Unix stream socket. A client registers a sealed memfd
// (REGISTER, the descriptor attached with SCM_RIGHTS), learns its token (REGISTERED), and then,
// for each aggregated GET delivered into that buffer, releases layer slots as its engine is done
// with them (RELEASE) or gives the request up (CANCEL). Pure: bytes in, structs out.
//
// Layout (big-endian):
//   0  4  magic "KVSM"          8  8  value: REGISTERED buffer bytes; RELEASE/CANCEL nonce
//   4  1  version = 1           16 16 REGISTERED: token; RELEASE: released u32 then 12 zero bytes
//   5  1  type                        otherwise zero
//   6  2  status (REGISTERED only; otherwise 0)
#ifndef KVCS_OBJCACHE_SHM_WIRE_H_
#define KVCS_OBJCACHE_SHM_WIRE_H_

#include <cstdint>
#include <string_view>

#include "common/bytes.h"
#include "common/status.h"
#include "objcache/aggregate_wire.h"

namespace kvcs::objcache {

inline constexpr size_t kShmMessageBytes = 32;

enum class ShmMessageType : uint8_t {
  kRegister = 1,    // C→S, with one file descriptor attached
  kRegistered = 2,  // S→C, the answer to kRegister
  kRelease = 3,     // C→S: the engine is done with the first `released` layers of request `nonce`
  kCancel = 4,      // C→S: request `nonce` is abandoned; stop writing into the buffer
};

// The answer to a registration.
enum class ShmRegisterStatus : uint16_t {
  kOk = 0,
  kNoDescriptor = 1,       // REGISTER arrived without exactly one descriptor
  kNotSealed = 2,          // not a memfd sealed against shrinking (the store would fault on it)
  kBadSize = 3,            // empty, or over the store's per-buffer bound
  kMapFailed = 4,          // the store could not map it read-write
  kTooMany = 5,            // the store holds its maximum of registrations or mapped bytes
  kAlreadyRegistered = 6,  // one buffer per connection
};
inline constexpr uint16_t kMaxShmRegisterStatus = 6;
std::string_view ShmRegisterStatusName(ShmRegisterStatus s);

struct ShmMessage {
  ShmMessageType type = ShmMessageType::kRegister;
  ShmRegisterStatus status = ShmRegisterStatus::kOk;  // kRegistered
  uint64_t value = 0;     // kRegistered: buffer bytes; kRelease/kCancel: the request's nonce
  uint32_t released = 0;  // kRelease
  ShmToken token{};       // kRegistered (zero unless kOk)
  bool operator==(const ShmMessage&) const = default;
};

void EncodeShmMessage(const ShmMessage& m, Bytes* out);
// Exactly kShmMessageBytes; fields a type does not use must be zero. Errors carry a WireError
// (kTruncated with kNeedMoreData for a short input, kBadMagic, kBadVersion, kBadFrameType for an
// unknown type, kBadStatus, kBadReserved, kTrailingBytes).
Result<ShmMessage> DecodeShmMessage(ByteSpan in);

}  // namespace kvcs::objcache

#endif  // KVCS_OBJCACHE_SHM_WIRE_H_
