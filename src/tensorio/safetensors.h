// safetensors reading and writing, written for kvcs (no dependency on the reference library).
//
// File layout (docs/formats/safetensors-kv.md): u64 little-endian header length N, then N bytes of
// UTF-8 JSON {"<name>": {"dtype": "BF16", "shape": [..], "data_offsets": [b, e]}, ...,
// "__metadata__": {"<str>": "<str>"}}, then the byte buffer. Offsets are relative to the buffer.
//
// The parser is strict and bounded, like the reference implementation and a little stricter:
// header at most kMaxHeaderBytes, JSON an object, every entry exactly {dtype, shape,
// data_offsets}, dtype known, shape product x dtype size == byte length (no overflow), offsets
// in range, tensors non-overlapping and covering the buffer contiguously, no duplicate keys at any
// level, metadata string -> string. Every failure is a typed SafetensorsError.
//
// SafetensorsView borrows the bytes it parses (caller keeps them alive). SafetensorsFile owns a
// read-only mmap of a file and may be moved, not copied. Both are immutable after creation and
// safe to read from several threads.
#ifndef KVCS_TENSORIO_SAFETENSORS_H_
#define KVCS_TENSORIO_SAFETENSORS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/bytes.h"
#include "common/status.h"

namespace kvcs::tensorio {

// The reference implementation's limit (safetensors MAX_HEADER_SIZE): JSON headers of real
// checkpoints are kilobytes; 100 MB bounds the memory a hostile file can make us spend.
inline constexpr uint64_t kMaxHeaderBytes = 100'000'000;
// Bounds a hostile shape: no real tensor has more dimensions (PyTorch's own limit is 64).
inline constexpr size_t kMaxRank = 64;
// Bounds the tensor table a hostile header can make us build (a 405B checkpoint shard has ~1k).
inline constexpr size_t kMaxTensors = 1'000'000;
// JSON nesting: the format needs 3 levels (root, entry, shape list); deeper is malformed.
inline constexpr int kMaxJsonDepth = 3;

enum class SafetensorsError {
  kNone = 0,
  kTooShort,         // fewer than 8 bytes: no header length
  kHeaderTooLarge,   // N > kMaxHeaderBytes
  kHeaderTruncated,  // the file ends inside the header
  kBadJson,          // not valid JSON / not UTF-8 / too deep
  kDuplicateKey,     // a JSON object repeats a key
  kNotObject,        // the header or an entry is not a JSON object
  kBadEntry,         // an entry lacks or adds fields, or a field has the wrong type
  kUnknownDtype,     // dtype not in the table below
  kBadShape,         // shape not a list of non-negative integers, rank too high, or overflow
  kBadOffsets,       // data_offsets not [b, e] with b <= e within the buffer
  kSizeMismatch,     // shape product x dtype size != e - b
  kOverlap,          // two tensors share bytes
  kGap,              // bytes of the buffer belong to no tensor (incl. trailing bytes)
  kBadMetadata,      // __metadata__ is not an object of string -> string
  kTooManyTensors,   // more than kMaxTensors entries
  kNoSuchTensor,     // lookup of a name that is not in the file
  kIo,               // open/stat/mmap/write failed
};

// "too_short", "header_too_large", ... (for messages and tools).
std::string_view SafetensorsErrorName(SafetensorsError e);

enum class Dtype : uint8_t {
  kBool,
  kU8,
  kI8,
  kF8E4M3,
  kF8E5M2,
  kI16,
  kU16,
  kF16,
  kBF16,
  kI32,
  kU32,
  kF32,
  kI64,
  kU64,
  kF64,
};

// "BF16", "F8_E4M3", ... as the format spells them.
std::string_view DtypeName(Dtype d);
size_t DtypeSize(Dtype d);
std::optional<Dtype> DtypeFromName(std::string_view name);

struct TensorInfo {
  std::string name;
  Dtype dtype = Dtype::kU8;
  std::vector<uint64_t> shape;
  uint64_t begin = 0;  // offset in the data buffer
  uint64_t end = 0;    // one past the last byte
  uint64_t size() const { return end - begin; }
  uint64_t elements() const;
};

struct SafetensorsHeader {
  std::vector<TensorInfo> tensors;  // in buffer order (ascending begin)
  std::map<std::string, std::string> metadata;
  uint64_t data_start = 0;  // 8 + N: where the buffer starts in the file
  uint64_t data_size = 0;   // buffer length
  const TensorInfo* Find(std::string_view name) const;
};

// Parses the header from `head`, the file's first bytes (at least 8 + N of them), given the total
// file size. Returns kHeaderTruncated when `head` is shorter than 8 + N but the file is not.
Result<SafetensorsHeader> ParseSafetensorsHeader(ByteSpan head, uint64_t file_size);

// A whole file in memory (tests, fuzzing, small files).
class SafetensorsView {
 public:
  static Result<SafetensorsView> Parse(ByteSpan file);
  const SafetensorsHeader& header() const { return header_; }
  ByteSpan data(const TensorInfo& t) const;
  Result<ByteSpan> data(std::string_view name) const;

 private:
  SafetensorsHeader header_;
  ByteSpan file_;
};

// A file mapped read-only.
class SafetensorsFile {
 public:
  static Result<SafetensorsFile> Open(const std::string& path);
  SafetensorsFile(SafetensorsFile&& o) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&& o) noexcept;
  SafetensorsFile(const SafetensorsFile&) = delete;
  ~SafetensorsFile();

  const SafetensorsHeader& header() const { return view_.header(); }
  ByteSpan data(const TensorInfo& t) const { return view_.data(t); }
  Result<ByteSpan> data(std::string_view name) const { return view_.data(name); }
  uint64_t file_size() const { return size_; }
  const SafetensorsView& view() const { return view_; }

 private:
  SafetensorsFile() = default;
  void* map_ = nullptr;
  uint64_t size_ = 0;
  SafetensorsView view_;
};

// One tensor to write: its bytes are borrowed until WriteSafetensors returns.
struct TensorToWrite {
  std::string name;
  Dtype dtype = Dtype::kU8;
  std::vector<uint64_t> shape;
  ByteSpan data;  // shape product x DtypeSize bytes
};

// The layout of a tensor to be written: name, dtype, shape (its data size follows from them).
struct TensorSpec {
  std::string name;
  Dtype dtype = Dtype::kU8;
  std::vector<uint64_t> shape;
};

// Writes a file whose tensors are filled piecewise, in any order, without holding them in memory
// (kvcs unpack writes one block's sections at a time). Data goes to `<path>.tmp`; Finish() checks
// that every byte was written, and renames it to `path`; destroying an unfinished writer removes
// the temporary file. Move-only; not thread-safe.
class SafetensorsWriter {
 public:
  static Result<SafetensorsWriter> Create(const std::string& path, std::vector<TensorSpec> specs,
                                          const std::map<std::string, std::string>& metadata);
  SafetensorsWriter(SafetensorsWriter&& o) noexcept;
  SafetensorsWriter& operator=(SafetensorsWriter&&) = delete;
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  ~SafetensorsWriter();

  // Writes `bytes` at `offset` within tensor `index` (position in `specs`).
  Status Write(size_t index, uint64_t offset, ByteSpan bytes);
  Status Finish();

 private:
  SafetensorsWriter() = default;
  std::string path_, tmp_;
  int fd_ = -1;
  uint64_t data_start_ = 0;
  std::vector<uint64_t> begin_, size_, written_;
};

// Serializes the header for `tensors` laid out in the given order (padded with spaces to a
// multiple of 8 bytes, as the reference writer does). Rejects duplicate names, size mismatches
// and names starting with "__metadata__".
Result<Bytes> EncodeSafetensorsHeader(const std::vector<TensorToWrite>& tensors,
                                      const std::map<std::string, std::string>& metadata);
// The whole file in memory.
Result<Bytes> EncodeSafetensors(const std::vector<TensorToWrite>& tensors,
                                const std::map<std::string, std::string>& metadata);
// Streams header and tensors to `path` (written to path.tmp, then renamed).
Status WriteSafetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                        const std::map<std::string, std::string>& metadata);

}  // namespace kvcs::tensorio

#endif  // KVCS_TENSORIO_SAFETENSORS_H_
