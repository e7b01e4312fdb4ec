// One kvcs_save: copies each layer of a prompt's blocks out of the engine's paged buffers as the
// engine computes it, and on Finish stores one KVSP container per block with one aggregated PUT.
// With a relay (and a save from block 0), each copied layer is also published at once through the
// client's MoqtLink (a kvcs_stream Publisher, on the link's thread); Finish ends the publication.
// Used by one thread at a time.
#ifndef KVCS_ENGINE_SAVE_JOB_H_
#define KVCS_ENGINE_SAVE_JOB_H_

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "common/bytes.h"
#include "common/crypto.h"
#include "common/status.h"
#include "engine/engine_client.h"
#include "engine/load_job.h"
#include "engine/paged_layout.h"

namespace kvcs::engine {

class SaveJob {
 public:
  static Result<std::unique_ptr<SaveJob>> Begin(EngineClient* client,
                                                std::span<const uint32_t> tokens,
                                                size_t first_block,
                                                std::span<const uint32_t> block_ids,
                                                const PagedLayout& layout);
  // Copies `layer` of every block (bounds-checked against the buffers' sizes).
  Status SaveLayer(uint32_t layer, const LayerTarget& buffers);
  // The aggregated PUT; returns the blocks stored.
  Result<size_t> Finish();

 private:
  SaveJob(EngineClient* client, std::vector<Digest> keys, size_t first_block,
          std::vector<uint32_t> block_ids, const PagedLayout& layout);

  EngineClient* client_;
  std::vector<Digest> keys_;  // the saved blocks' keys
  size_t first_block_;
  std::vector<uint32_t> block_ids_;
  PagedLayout layout_;
  std::vector<bool> saved_;  // per layer
  // Per layer: the K then V sections of every block, [block][K|V], kept for Finish's PUT only
  // when the client has a store (a relay-only save keeps nothing: the publication holds it).
  std::vector<std::shared_ptr<const Bytes>> layers_;
  bool finished_ = false;
  struct Publication;  // the MOQT publication's state, on the link's thread
  std::shared_ptr<Publication> pub_;
  Result<size_t> FinishPublication();
  Result<size_t> Store();
};

}  // namespace kvcs::engine

#endif  // KVCS_ENGINE_SAVE_JOB_H_
