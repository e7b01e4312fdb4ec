#include "kvcs_stream/retrieval_report.h"

namespace kvcs::stream {

uint64_t RetrievalReport::recompute_count() const {
  uint64_t n = 0;
  for (const BlockOutcome& o : outcomes) n += o.source != BlockSource::kMoqt;
  return n;
}

void RetrievalReport::AddRefusal(Refusal r) {
  ++refusals_total;
  if (refusals.size() < kMaxRefusalsKept) refusals.push_back(std::move(r));
}

}  // namespace kvcs::stream
