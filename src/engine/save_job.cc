#include "engine/save_job.h"

#include <string>
#include <utility>

#include "kvsp/codec.h"
#include "kvsp/container.h"
#include "objcache/aggregate_wire.h"

namespace kvcs::engine {

SaveJob::SaveJob(EngineClient* client, std::vector<Digest> keys, size_t first_block,
                 std::vector<uint32_t> block_ids, const PagedLayout& layout)
    : client_(client),
      keys_(std::move(keys)),
      first_block_(first_block),
      block_ids_(std::move(block_ids)),
      layout_(layout),
      layers_(client->descriptor().layers) {}

Result<std::unique_ptr<SaveJob>> SaveJob::Begin(EngineClient* client,
                                                std::span<const uint32_t> tokens,
                                                size_t first_block,
                                                std::span<const uint32_t> block_ids,
                                                const PagedLayout& layout) {
  KVCS_ASSIGN_OR_RETURN(std::vector<Digest> keys,
                        client->RangeKeys(tokens, first_block, block_ids.size(),
                                          objcache::kMaxPutContainers, "save"));
  // The buffers' sizes are known per layer only; check what can be checked now.
  Status s = CheckLayout(layout, client->shape(), block_ids, UINT64_MAX);
  if (!s.ok()) return EngineStatus(s.code(), EngineError::kOutOfBounds, s.message());
  return std::unique_ptr<SaveJob>(
      new SaveJob(client, std::move(keys), first_block,
                  std::vector<uint32_t>(block_ids.begin(), block_ids.end()), layout));
}

Status SaveJob::SaveLayer(uint32_t layer, const LayerTarget& b) {
  if (finished_) {
    return EngineStatus(Code::kFailedPrecondition, EngineError::kFinished, "save already finished");
  }
  if (layer >= layers_.size()) {
    return EngineStatus(Code::kInvalidArgument, EngineError::kUnknownLayer,
                        "layer " + std::to_string(layer) + " of a model with " +
                            std::to_string(layers_.size()) + " layers");
  }
  if (!layers_[layer].empty()) {
    return EngineStatus(Code::kFailedPrecondition, EngineError::kState,
                        "layer " + std::to_string(layer) + " was already saved");
  }
  if (!b.k || !b.v) return Status(Code::kInvalidArgument, "NULL buffer");
  const SectionShape& shape = client_->shape();
  for (uint64_t bytes : {b.k_bytes, b.v_bytes}) {
    Status s = CheckLayout(layout_, shape, block_ids_, bytes);
    if (!s.ok()) return EngineStatus(s.code(), EngineError::kOutOfBounds, s.message());
  }
  const uint64_t section = shape.section_bytes();
  Bytes out(keys_.size() * 2 * section);
  for (size_t i = 0; i < keys_.size(); ++i) {
    GatherSection(b.k, layout_, shape, block_ids_[i], out.data() + 2 * i * section);
    GatherSection(b.v, layout_, shape, block_ids_[i], out.data() + (2 * i + 1) * section);
  }
  layers_[layer] = std::move(out);
  return Status::Ok();
}

Result<size_t> SaveJob::Finish() {
  if (finished_) {
    return EngineStatus(Code::kFailedPrecondition, EngineError::kFinished, "save already finished");
  }
  for (size_t l = 0; l < layers_.size(); ++l) {
    if (layers_[l].empty()) {
      return EngineStatus(Code::kFailedPrecondition, EngineError::kState,
                          "layer " + std::to_string(l) + " was not saved");
    }
  }
  finished_ = true;
  const uint64_t section = client_->shape().section_bytes();
  std::vector<Bytes> containers;
  containers.reserve(keys_.size());
  std::vector<kvsp::LayerSections> raw(layers_.size());
  for (size_t i = 0; i < keys_.size(); ++i) {
    for (size_t l = 0; l < layers_.size(); ++l) {
      const uint8_t* p = layers_[l].data() + 2 * i * section;
      raw[l] = kvsp::LayerSections{ByteSpan(p, section), ByteSpan(p + section, section)};
    }
    KVCS_ASSIGN_OR_RETURN(
        Bytes c, kvsp::EncodeContainerFromRaw(client_->descriptor(), client_->compat_id(), keys_[i],
                                              static_cast<uint32_t>(first_block_ + i + 1),
                                              kvsp::Codec::kRaw, 0, raw));
    containers.push_back(std::move(c));
  }
  layers_.clear();
  std::vector<ByteSpan> spans(containers.begin(), containers.end());
  // Idempotent (the same containers under the same content-derived keys): always retryable.
  auto r = client_->WithConnection(
      [&](objcache::Client& c) {
        return c.AggregatePut(client_->bucket(), client_->scope_id(), spans,
                              /*prefix_record=*/first_block_ == 0);
      },
      [] { return true; });
  if (!r.ok()) {
    return EngineStatus(Code::kUnavailable, EngineError::kTransport,
                        "save: " + r.status().message());
  }
  if (r->stored != keys_.size()) {
    std::string why;
    for (const auto& b : r->blocks) {
      if (!b.ok) {
        why = b.message;
        break;
      }
    }
    return EngineStatus(Code::kUnavailable, EngineError::kTransport,
                        "save: the store kept " + std::to_string(r->stored) + " of " +
                            std::to_string(keys_.size()) + " blocks (" + why + ")");
  }
  return size_t{r->stored};
}

}  // namespace kvcs::engine
