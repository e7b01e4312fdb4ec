// The local store's object file: the object's bytes at offset 0, then its metadata as a trailer.
//
//   [0, S)          object bytes (S = ObjectMeta::size), so a byte range maps 1:1 to pread
//   [S, S+M)        metadata, compact JSON (UTF-8), M bytes
//   [S+M, S+M+4)    M, u32 big-endian
//   [.., +32)       SHA-256 of the M metadata bytes
//   [.., +8)        magic "KVCSOBJ1"
//
// One file per object version, written to a temporary name and renamed into place, so a reader
// sees a complete file or none. The byte-level spec is docs/formats/kvcs-object-file.md.
// Pure functions over bytes; no I/O.
#ifndef KVCS_STORE_OBJECT_FILE_H_
#define KVCS_STORE_OBJECT_FILE_H_

#include <cstdint>

#include "common/bytes.h"
#include "common/status.h"
#include "store/object_store.h"

namespace kvcs::store {

inline constexpr char kObjectFileMagic[8] = {'K', 'V', 'C', 'S', 'O', 'B', 'J', '1'};
// u32 length + SHA-256 + magic.
inline constexpr size_t kObjectFooterBytes = 4 + 32 + 8;
// Metadata is key (<= 1 KiB, hex-encoded) + user metadata (<= 2 KiB) + a few fields; 64 KiB is
// far above any valid record and bounds what a damaged file can make us allocate.
inline constexpr size_t kMaxObjectMetaBytes = 64 * 1024;

// The trailer (metadata JSON + footer) to append after the object's bytes.
Bytes EncodeObjectTrailer(const ObjectMeta& meta);

// Parses the footer (the last kObjectFooterBytes of the file) and returns the metadata length M.
// Fails with kCorrupt on a bad magic or an impossible length given `file_size`.
Result<uint32_t> DecodeObjectFooter(ByteSpan footer, uint64_t file_size);

// Verifies `meta_bytes` against the footer's digest, parses it, and checks that
// meta.size + M + kObjectFooterBytes == file_size. Fails with kCorrupt otherwise.
Result<ObjectMeta> DecodeObjectMeta(ByteSpan meta_bytes, ByteSpan footer, uint64_t file_size);

}  // namespace kvcs::store

#endif  // KVCS_STORE_OBJECT_FILE_H_
