// RetrievalReport: the outcome of one retrieval, per (block, layer): where the verified bytes came
// from (the MOQT publication live or by FETCH, an alternative MOQT source, a KVSP HTTP holder:
// recovery.h), or that the block must be recomputed and why. Each outcome names its source by
// index into `sources`. Also the typed refusals (what a hostile or broken peer sent and why it
// was not used) and counters. Value type.
#ifndef KVCS_KVCS_STREAM_RETRIEVAL_REPORT_H_
#define KVCS_KVCS_STREAM_RETRIEVAL_REPORT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "kvcs_stream/encoding.h"
#include "kvcs_stream/stream_error.h"
#include "moqt/moqt_messages.h"

namespace kvcs::stream {

enum class BlockSource : uint8_t {
  kPending = 0,  // not decided yet (only while a retrieval runs)
  kMoqt,         // verified from the MOQT publication sources[source], live (SUBSCRIBE)
  kRecompute,    // must be recomputed: `reason` says why
  kMoqtFetch,    // verified from the MOQT publication sources[source], by FETCH (completed)
  kAltMoqt,      // recovered from an alternative MOQT source (another relay or publication)
  kHttpHolder,   // recovered from a KVSP HTTP holder (kvsp.md §8)
};
// "moqt live", "moqt fetch", "alt moqt", "http holder", "recompute", "pending".
std::string_view BlockSourceName(BlockSource s);
// Whether the bytes came from anywhere (not kPending or kRecompute).
inline bool Retrieved(BlockSource s) {
  return s != BlockSource::kPending && s != BlockSource::kRecompute;
}

struct BlockOutcome {
  BlockSource source = BlockSource::kPending;
  uint16_t source_index = 0;                // into RetrievalReport::sources (retrieved)
  StreamError reason = StreamError::kNone;  // kRecompute
};

// One thing refused from a peer: a manifest version or an object.
struct Refusal {
  std::string track;        // track name ("" for a session-level event)
  moqt::Location location;  // of the object; {manifest group, 0} for a manifest
  Status status;            // detail: StreamError; message keeps the profile's check
};

// Refusals kept in full; further ones are only counted (a hostile peer cannot grow the report).
inline constexpr size_t kMaxRefusalsKept = 64;

struct RetrievalReport {
  std::vector<std::string> sources;  // e.g. "moqt kvcs-1/<scope>/<compat>/<anchor>/<pub>"
  uint64_t blocks = 0;               // blocks 0..blocks-1 of the caller's prompt were needed
  uint32_t first_layer = 0;
  uint32_t layers = 0;                 // layers first_layer..first_layer+layers-1 were needed
  std::vector<BlockOutcome> outcomes;  // [(layer - first_layer) * blocks + block]

  std::vector<Refusal> refusals;
  uint64_t refusals_total = 0;
  uint64_t objects_received = 0;  // data objects handed to the verifier
  uint64_t duplicates = 0;        // received again after being received once
  uint64_t discarded = 0;         // outside the needed layers/blocks/tracks
  uint64_t layers_delivered = 0;  // per-layer callbacks (one per segment and layer)
  uint64_t deadline_ms = 0;       // the recompute bound the retrieval ran under (absolute)
  bool timed_out = false;
  // The encoding retrieved (the verifier's, or the codec choice's); the link rate the choice used
  // (0 without a choice); the measured rate of the data objects received: their bytes over the
  // time from the first to the last (0 with fewer than two instants) — a later retrieval's
  // EncodingChoiceOptions::rate_bytes_per_s.
  Encoding encoding;
  double choice_rate_bytes_per_s = 0;
  double data_rate_bytes_per_s = 0;

  const BlockOutcome& at(uint64_t block, uint32_t layer) const {
    return outcomes[(layer - first_layer) * blocks + block];
  }
  // (block, layer) pairs not retrieved from any source.
  uint64_t recompute_count() const;
  // (block, layer) pairs that came from `s`.
  uint64_t count(BlockSource s) const;
  // Every needed (block, layer) retrieved (from any source).
  bool all_retrieved() const { return recompute_count() == 0 && !outcomes.empty(); }
  bool all_from_moqt() const { return all_retrieved(); }
  void AddRefusal(Refusal r);
};

// Where block `b`'s layers came from, for people: "moqt live", "http holder <url>", "recompute
// (deadline)", or, when its layers differ, each source with its layer count ("http holder
// http://h:9000 x1, moqt fetch x31").
std::string DescribeBlockSources(const RetrievalReport& rep, uint64_t b);

}  // namespace kvcs::stream

#endif  // KVCS_KVCS_STREAM_RETRIEVAL_REPORT_H_
