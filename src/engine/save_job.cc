#include "engine/save_job.h"

#include <map>
#include <string>
#include <utility>

#include "engine/moqt_link.h"
#include "kvsp/codec.h"
#include "kvsp/container.h"
#include "kvsp/ids.h"
#include "objcache/aggregate_wire.h"

namespace kvcs::engine {

// Link thread only (tasks posted in order, then Finish's Call).
//
// A saved layer is published one block per link-thread task: the link's event loop sends (and
// reads ACKs) between blocks, so a layer's first objects leave while its last are still being
// encoded and hashed, instead of the whole layer's encoding (~1.2 ms per MiB: the Data digest and
// the copy) holding the loop. Finish drains what is left in one go (Drain) before it closes.
struct SaveJob::Publication : std::enable_shared_from_this<Publication> {
  MoqtLink* link = nullptr;
  stream::Publisher* pub = nullptr;  // kept by the link
  uint64_t section = 0;
  std::map<uint32_t, std::shared_ptr<const Bytes>> pending;  // saved, not yet fully published
  uint64_t next_block = 0;  // of the layer pub->next_layer(), when it is pending
  bool scheduled = false;   // a PublishOne task is queued on the link
  Status error;

  void Offer(uint32_t layer, std::shared_ptr<const Bytes> data) {
    if (!error.ok()) return;  // Finish reports it
    pending[layer] = std::move(data);
    Schedule();
  }
  // Publishes every block that is next in order now, on the calling (link) thread.
  void Drain() {
    while (PublishOne()) {
    }
  }

 private:
  void Schedule() {
    if (scheduled || !Ready()) return;
    scheduled = true;
    link->Post([self = shared_from_this()] {
      self->scheduled = false;
      if (self->PublishOne()) self->Schedule();
    });
  }
  // The next layer in order (the Publisher takes them 0, 1, ...) has been saved.
  bool Ready() const {
    return error.ok() && !pub->segment_complete() && pending.count(pub->next_layer()) > 0;
  }
  // Publishes the next block in order; false when there is none to publish now.
  bool PublishOne() {
    if (!Ready()) return false;
    auto it = pending.find(pub->next_layer());
    const uint8_t* p = it->second->data() + 2 * next_block * section;
    error = pub->PublishBlock(it->first, next_block, ByteSpan(p, section),
                              ByteSpan(p + section, section));
    if (++next_block == pub->segment_blocks() || !error.ok()) {
      pending.erase(it);
      next_block = 0;
    }
    return error.ok();
  }
};

SaveJob::SaveJob(EngineClient* client, std::vector<Digest> keys, size_t first_block,
                 std::vector<uint32_t> block_ids, const PagedLayout& layout)
    : client_(client),
      keys_(std::move(keys)),
      first_block_(first_block),
      block_ids_(std::move(block_ids)),
      layout_(layout),
      saved_(client->descriptor().layers, false),
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
  std::unique_ptr<SaveJob> job(
      new SaveJob(client, std::move(keys), first_block,
                  std::vector<uint32_t>(block_ids.begin(), block_ids.end()), layout));
  MoqtLink* link = client->moqt();
  if (link && first_block == 0) {
    // A publication's segment 0 starts at token 0: only a save from block 0 is published.
    KVCS_RETURN_IF_ERROR(link->EnsureSession());
    stream::PublisherConfig pc;
    pc.descriptor = client->descriptor();
    pc.scope_key = client->options().scope_key;
    const size_t n = job->keys_.size();
    auto p = std::make_shared<Publication>();
    p->link = link;
    p->section = client->shape().section_bytes();
    Status created = link->Call([&]() -> Status {
      pc.producer_key = link->producer_key();
      auto pub = stream::Publisher::Create(
          &link->store(), std::move(pc),
          tokens.subspan(0, n * size_t{client->descriptor().block_tokens}));
      if (!pub.ok()) return pub.status();
      p->pub = pub->get();
      link->AddPublication(std::move(*pub), job->keys_);
      return Status::Ok();
    });
    if (!created.ok()) {
      return EngineStatus(Code::kUnavailable, EngineError::kTransport,
                          "save: publishing: " + created.message());
    }
    job->pub_ = std::move(p);
  }
  return job;
}

Status SaveJob::SaveLayer(uint32_t layer, const LayerTarget& b) {
  if (finished_) {
    return EngineStatus(Code::kFailedPrecondition, EngineError::kFinished, "save already finished");
  }
  if (layer >= saved_.size()) {
    return EngineStatus(Code::kInvalidArgument, EngineError::kUnknownLayer,
                        "layer " + std::to_string(layer) + " of a model with " +
                            std::to_string(saved_.size()) + " layers");
  }
  if (saved_[layer]) {
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
  auto data = std::make_shared<const Bytes>(std::move(out));
  saved_[layer] = true;
  if (client_->has_store()) layers_[layer] = data;
  if (pub_) {
    client_->moqt()->Post(
        [p = pub_, layer, data = std::move(data)]() mutable { p->Offer(layer, std::move(data)); });
  }
  return Status::Ok();
}

Result<size_t> SaveJob::Finish() {
  if (finished_) {
    return EngineStatus(Code::kFailedPrecondition, EngineError::kFinished, "save already finished");
  }
  for (size_t l = 0; l < saved_.size(); ++l) {
    if (!saved_[l]) {
      return EngineStatus(Code::kFailedPrecondition, EngineError::kState,
                          "layer " + std::to_string(l) + " was not saved");
    }
  }
  finished_ = true;
  size_t published = 0;
  if (pub_) {
    KVCS_ASSIGN_OR_RETURN(published, FinishPublication());
  }
  if (!client_->has_store()) return published;
  return Store();
}

Result<size_t> SaveJob::FinishPublication() {
  MoqtLink* link = client_->moqt();
  std::shared_ptr<Publication> p = std::move(pub_);
  Status s = link->Call([&]() -> Status {
    p->Drain();  // the blocks its posted tasks have not published yet
    if (!p->error.ok()) return p->error;
    if (!p->pub->segment_complete()) return Status(Code::kInternal, "publication incomplete");
    Status closed = p->pub->Close();  // End of Track on the manifest: the relay keeps it whole
    if (closed.ok()) link->MarkComplete(p->pub->ns());
    return closed;
  });
  if (s.ok()) s = link->WaitAnnounced(p->pub->ns());  // ns() is immutable
  if (!s.ok()) {
    return EngineStatus(Code::kUnavailable, EngineError::kTransport,
                        "save: publishing: " + s.message());
  }
  return keys_.size();
}

Result<size_t> SaveJob::Store() {
  const uint64_t section = client_->shape().section_bytes();
  std::vector<Bytes> containers;
  containers.reserve(keys_.size());
  std::vector<kvsp::LayerSections> raw(layers_.size());
  for (size_t i = 0; i < keys_.size(); ++i) {
    for (size_t l = 0; l < layers_.size(); ++l) {
      const uint8_t* p = layers_[l]->data() + 2 * i * section;
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
