// The input format of the kvcs_stream consumer fuzzer, shared by the fuzzer and its seed maker.
//
//   pub_id (16 bytes) | flags (1) | records...
//   record: kind (1) | track (1) | group (1) | object (1) | length (2, big-endian) | payload
// kind 0: a "manifest" version, 1: a "manifest.cose" version, else a data object on track
// kTracks[track % size] at {group, object}. flags bit 0: require signatures; bit 1: only the
// first block; bit 2: select kv.int8 instead of k+v raw. The consumer's identity is fixed:
// SmallDescriptor(2 layers, 4-token blocks), scope key byte 3 = 7, Tokens(8) (two blocks).
#ifndef KVCS_FUZZ_KVCS_STREAM_STREAM_INPUT_H_
#define KVCS_FUZZ_KVCS_STREAM_STREAM_INPUT_H_

#include <array>
#include <string_view>

#include "kvsp/descriptor.h"
#include "kvsp/ids.h"

namespace kvcs::stream::fuzz {

inline constexpr std::array<std::string_view, 5> kTracks = {"k.raw.s0", "v.raw.s0", "kv.int8.s0",
                                                            "k.raw.s1", "manifest"};
inline constexpr size_t kRecordHeader = 6;
inline constexpr uint64_t kTokens = 8;

inline kvsp::ScopeKey FuzzScope() {
  kvsp::ScopeKey s{};
  s[3] = 7;
  return s;
}

}  // namespace kvcs::stream::fuzz

#endif  // KVCS_FUZZ_KVCS_STREAM_STREAM_INPUT_H_
