#include "kvcs_stream/retrieval_report.h"

namespace kvcs::stream {

std::string_view BlockSourceName(BlockSource s) {
  switch (s) {
    case BlockSource::kPending:
      return "pending";
    case BlockSource::kMoqt:
      return "moqt live";
    case BlockSource::kRecompute:
      return "recompute";
    case BlockSource::kMoqtFetch:
      return "moqt fetch";
    case BlockSource::kAltMoqt:
      return "alt moqt";
    case BlockSource::kHttpHolder:
      return "http holder";
  }
  return "unknown";
}

uint64_t RetrievalReport::recompute_count() const {
  uint64_t n = 0;
  for (const BlockOutcome& o : outcomes) n += !Retrieved(o.source);
  return n;
}

uint64_t RetrievalReport::count(BlockSource s) const {
  uint64_t n = 0;
  for (const BlockOutcome& o : outcomes) n += o.source == s;
  return n;
}

void RetrievalReport::AddRefusal(Refusal r) {
  ++refusals_total;
  if (refusals.size() < kMaxRefusalsKept) refusals.push_back(std::move(r));
}

}  // namespace kvcs::stream
