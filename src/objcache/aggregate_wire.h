// The ObjectCache aggregated extension's wire formats (docs/protocols/objectcache-aggregated.md):
// the request JSON, the layer-major response stream, and the aggregated-PUT body header.
// Pure: bytes in, structs out; no sockets, no clocks.
//
// Response stream = StreamHeader, one LayerFrame per requested layer (in order), EndFrame.
// A LayerFrame is an 8-byte frame head followed, for every block in request order, by a 52-byte
// block record and the block's carried bytes (K then V). The StreamDecoder is incremental: feed it
// any split of the bytes; it emits one LayerEvent per complete layer (all its blocks), so memory is
// bounded by one layer. "Need more bytes" is not an error until Finish().
//
// Thread-compatible value types; StreamDecoder is not thread-safe.
#ifndef KVCS_OBJCACHE_AGGREGATE_WIRE_H_
#define KVCS_OBJCACHE_AGGREGATE_WIRE_H_

#include <array>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "common/bytes.h"
#include "common/crypto.h"
#include "common/status.h"

namespace kvcs::objcache {

// Typed detail of every Status this module returns (status.Is(WireError::k...)).
enum class WireError {
  kNone = 0,
  kJsonSyntax,          // request body is not a JSON object
  kJsonField,           // a member is missing, of the wrong type, unknown, or out of range
  kBadHex,              // an id or key is not 64 lowercase hex characters
  kUnknownCodec,        // codec name not in the KVSP registry
  kBadComponents,       // components not "k", "v" or "kv"
  kTooManyBlocks,       // more than kMaxBlocks block keys (or zero)
  kBadLayerRange,       // layer_count 0, or first+count beyond 65536
  kTooLarge,            // a body, section or count over its bound
  kBadMagic,            // stream or PUT body does not start with its magic
  kBadVersion,          // version != 1
  kBadReserved,         // a reserved field is not zero
  kBadFrameType,        // neither 'L' nor 'E' where a frame starts
  kLayerOutOfOrder,     // a layer frame does not carry the next expected layer
  kBlockCountMismatch,  // a layer frame's block count differs from the header's
  kBadStatus,           // a block status or digest kind outside the table, or inconsistent
  kTrailingBytes,       // bytes after the end frame
  kTruncated,           // the stream ended before its end frame (Finish)
  kDigestMismatch,      // carried bytes do not hash to the record's digest
  kServerAborted,       // the end frame carries a non-zero status
};
std::string_view WireErrorName(WireError e);

// Bounds (each a named reason):
// Block keys per request: 16,384 blocks of 16 tokens = 256K tokens, beyond today's longest
// contexts; keeps the JSON under ~1.2 MB and the per-request tables small.
inline constexpr uint32_t kMaxBlocks = 16384;
// Request JSON bytes: 16,384 keys × 67 bytes + the other members, rounded up.
inline constexpr size_t kMaxRequestJsonBytes = 2 << 20;
// One block's carried section bytes (K or V of one layer): a 256-token block of a model with
// 16 KiB per token per layer is 4 MiB; 64 MiB leaves room and bounds the decoder's allocation.
inline constexpr uint64_t kMaxSectionBytes = 64ull << 20;
// KVSP layer numbers are u16 (container header), so first + count <= 65536.
inline constexpr uint32_t kLayerLimit = 65536;
// Containers per aggregated PUT: the same bound as a GET's block count.
inline constexpr uint32_t kMaxPutContainers = kMaxBlocks;
// One container in an aggregated PUT: 32 layers × 2 MiB per layer for 256-token blocks is 64 MiB;
// 256 MiB bounds what the server buffers for one container.
inline constexpr uint64_t kMaxPutContainerBytes = 256ull << 20;

enum class Components : uint8_t { kK = 1, kV = 2, kKV = 3 };
std::string_view ComponentsName(Components c);

// Same-host delivery (docs/protocols/objectcache-aggregated.md §8): the server writes the block
// bytes into a buffer the client shared with it over the store's Unix socket (shm_wire.h), and the
// stream carries only the records, each with the offset of its bytes in that buffer. The buffer is
// a ring of `slots` layer slots: the server writes layer i into slot i mod slots once the client
// has released layer i - slots.
inline constexpr size_t kShmTokenBytes = 16;
using ShmToken = std::array<uint8_t, kShmTokenBytes>;
// Slots one request may use: a layer count fits in u16, so 65,535 slots hold any request whole.
inline constexpr uint32_t kMaxShmSlots = 65535;
struct ShmTarget {
  ShmToken token{};    // what the registration answered: names the buffer
  uint64_t nonce = 0;  // ≥ 1, chosen by the client; names this request in RELEASE/CANCEL
  uint32_t slots = 0;  // 1..kMaxShmSlots
  bool operator==(const ShmTarget&) const = default;
};

// The JSON body of POST /<bucket>?kvcs-aggregate.
struct AggregateRequest {
  Digest scope_id{};
  Digest compat_id{};
  uint16_t codec = 1;  // KVSP codec value (the JSON carries the name)
  uint32_t layer_first = 0;
  uint32_t layer_count = 0;
  Components components = Components::kKV;
  std::vector<Digest> block_keys;  // prefix order
  // Scheduling inputs (objectcache.md §3): engine compute per layer and stall target, in µs.
  uint64_t compute_us_per_layer = 0;
  uint64_t stall_target_us = 0;
  // Same-host delivery into a registered buffer; inline (bytes in the HTTP body) when absent.
  std::optional<ShmTarget> shm;
};
Result<AggregateRequest> ParseAggregateRequest(std::string_view json);
std::string SerializeAggregateRequest(const AggregateRequest& r);

// Where the block bytes travel: in the stream after each record, or in the registered buffer.
enum class Delivery : uint8_t { kInline = 0, kShm = 1 };

// Stream header (84 bytes).
inline constexpr size_t kStreamHeaderBytes = 84;
struct StreamHeader {
  Components components = Components::kKV;
  uint16_t codec = 1;
  uint16_t layer_first = 0;
  uint16_t layer_count = 0;  // 1..65535 (the count of layer frames that follow)
  uint32_t block_count = 0;
  Digest compat_id{};
  Digest scope_id{};
  Delivery delivery = Delivery::kInline;
  bool operator==(const StreamHeader&) const = default;
};

enum class BlockStatus : uint8_t {
  kPresent = 0,
  kMissing = 1,       // no container for this block key and codec
  kLayerNotHeld = 2,  // the container does not hold this layer
  kCorrupt = 3,       // the stored container failed a check (digest, lengths, identity)
  kReadError = 4,     // the store could not read it
};
inline constexpr uint8_t kMaxBlockStatus = 4;
enum class DigestKind : uint8_t {
  kNone = 0,     // status != present
  kLayer = 1,    // the producer's KVSP layer digest, SHA-256(K || V): end to end
  kSection = 2,  // SHA-256 of the carried bytes, computed by the server after it checked the
                 // producer's digest (components k or v alone)
};

inline constexpr size_t kLayerFrameHeadBytes = 8;
inline constexpr size_t kBlockRecordBytes = 52;
inline constexpr size_t kEndFrameBytes = 8;
inline constexpr uint8_t kLayerFrameType = 0x4C;     // 'L'
inline constexpr uint8_t kEndFrameType = 0x45;       // 'E'
inline constexpr uint8_t kShmLayerFrameType = 0x53;  // 'S': a layer frame of a shm stream
// A shm stream's block record: the 52-byte record, then u64 offset of its bytes in the buffer.
inline constexpr size_t kShmBlockRecordBytes = kBlockRecordBytes + 8;

struct BlockRecord {
  BlockStatus status = BlockStatus::kPresent;
  DigestKind digest_kind = DigestKind::kLayer;
  uint64_t k_len = 0;
  uint64_t v_len = 0;
  Digest digest{};
  bool operator==(const BlockRecord&) const = default;
};

void EncodeStreamHeader(const StreamHeader& h, Bytes* out);
void EncodeLayerFrameHead(uint16_t layer, uint32_t block_count, Bytes* out,
                          Delivery delivery = Delivery::kInline);
void EncodeBlockRecord(const BlockRecord& r, Bytes* out);  // the data follows, written by caller
// A shm stream's record: where the block's carried bytes are in the registered buffer (0 when the
// block is not present).
void EncodeShmBlockRecord(const BlockRecord& r, uint64_t offset, Bytes* out);
void EncodeEndFrame(uint32_t status, Bytes* out);

// Validates a record's internal consistency (status/kind/lengths) against the components.
Status ValidateBlockRecord(const BlockRecord& r, Components components);

// A byte vector that leaves new elements uninitialized: the decoder overwrites every byte, and
// zero-filling the whole payload first cost ~15% of the client's CPU in bench/objcache.
template <typename T>
struct DefaultInitAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  using std::allocator<T>::allocator;
  template <typename U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
using BlockBytes = std::vector<uint8_t, DefaultInitAllocator<uint8_t>>;

// One decoded block of a layer: its record and its carried bytes (K then V).
struct LayerBlock {
  BlockRecord record;
  BlockBytes data;          // inline delivery; empty in a shm stream
  uint64_t shm_offset = 0;  // shm delivery: offset of the carried bytes in the buffer
};
struct LayerEvent {
  uint16_t layer = 0;
  std::vector<LayerBlock> blocks;  // request order
};
struct EndEvent {
  uint32_t status = 0;
};
using StreamEvent = std::variant<StreamHeader, LayerEvent, EndEvent>;

// Incremental decoder of a response stream.
class StreamDecoder {
 public:
  // Consumes all of `in`, appending completed events to *events. On malformed input returns a
  // kInvalidArgument Status with a WireError detail; the error is sticky.
  Status Feed(ByteSpan in, std::vector<StreamEvent>* events);
  // Call at the end of the body: OK if the end frame was seen, else kNeedMoreData/kTruncated.
  Status Finish() const;
  bool done() const { return state_ == State::kDone; }
  // Hands back a delivered layer's block buffers for reuse by the next layers (optional). Reusing
  // them saves an allocation per block and, above all, the page faults of fresh memory: freed
  // 64 KiB buffers go back to the OS and faulting them in again cost as much as the copy. At most
  // one layer's worth (the header's block count) is kept.
  void Recycle(LayerEvent&& spent);
  // The layer being decoded: its number and the blocks whose records arrived so far, of which the
  // first complete_blocks() have all their bytes (0 between layers). A complete block's bytes stay
  // where they are until its layer is handed over and recycled, so another thread may read them
  // (through a span taken here, not through the LayerBlock) while the decoder goes on.
  const LayerEvent& partial_layer() const { return layer_; }
  size_t complete_blocks() const;

 private:
  enum class State { kHeader, kFrameType, kLayerHead, kRecord, kData, kEnd, kDone, kFailed };
  Status Fail(Status s);
  size_t RecordBytes() const {
    return header_.delivery == Delivery::kShm ? kShmBlockRecordBytes : kBlockRecordBytes;
  }
  Status Step(std::vector<StreamEvent>* events);
  State state_ = State::kHeader;
  Bytes buf_;  // fixed-size items being assembled
  size_t need_ = kStreamHeaderBytes;
  StreamHeader header_;
  uint32_t next_layer_ = 0;
  LayerEvent layer_;
  std::vector<BlockBytes> spare_;  // recycled block buffers (≤ header_.block_count)
  size_t data_have_ = 0;
  Status error_;
};

// Checks a present block's carried bytes against its record (SHA-256(data) == digest and
// lengths). Both digest kinds are checked the same way; the kind says who vouches for it.
Status VerifyBlock(const LayerBlock& b);
// The same for bytes that are elsewhere (a shm stream's block, in the registered buffer).
Status VerifyBlockBytes(const BlockRecord& r, ByteSpan data);

// Aggregated PUT body header (44 bytes): "KVAP" | version u8 | flags u8 | reserved u16 |
// scope_id[32] | count u32; then count × (length u64 | container).
inline constexpr size_t kPutHeaderBytes = 44;
inline constexpr uint8_t kPutFlagPrefixRecord = 0x01;  // containers are one prefix, in order
struct PutHeader {
  uint8_t flags = 0;
  Digest scope_id{};
  uint32_t count = 0;
  bool operator==(const PutHeader&) const = default;
};
void EncodePutHeader(const PutHeader& h, Bytes* out);
Result<PutHeader> ParsePutHeader(ByteSpan in);  // exactly kPutHeaderBytes

}  // namespace kvcs::objcache

#endif  // KVCS_OBJCACHE_AGGREGATE_WIRE_H_
