#include "kvcs_stream/retrieval_report.h"

#include <map>

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

std::string DescribeBlockSources(const RetrievalReport& rep, uint64_t b) {
  std::map<std::string, uint32_t> n;  // description -> layers
  for (uint32_t l = rep.first_layer; l < rep.first_layer + rep.layers; ++l) {
    const BlockOutcome& o = rep.at(b, l);
    std::string s(BlockSourceName(o.source));
    if (o.source == BlockSource::kRecompute) {
      s += " (" + std::string(StreamErrorName(o.reason)) + ")";
    } else if (o.source_index > 0 && o.source_index < rep.sources.size()) {
      s = rep.sources[o.source_index];
    }
    ++n[s];
  }
  if (n.size() == 1) return n.begin()->first;
  std::string out;
  for (const auto& [s, count] : n) {
    out += (out.empty() ? "" : ", ") + s + " x" + std::to_string(count);
  }
  return out;
}

}  // namespace kvcs::stream
