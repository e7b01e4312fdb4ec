// One kvcs_load: a loader thread streams every layer of a prompt's blocks from the store (one
// aggregated layer-major GET, inline or through the same-host buffer) and writes each verified
// block into the engine's paged buffers as its layer arrives; the engine waits per layer.
// With a relay (the client's MoqtLink) a kvcs_stream Recovery of the prefix's publication runs
// on the link's thread instead and writes each layer as the verifier hands it over, then, at the
// end, the verified blocks of layers that did not complete; the blocks the relay did not deliver
// are recovered from the store's KVSP endpoints (with a store) and then from the KVSP HTTP holders
// the index lists for the load's blocks (with an index), all within the load's deadline
// (load_deadline.h). Each block of each layer records where it came from (LoadSource).
// Thread-safe (Wait/Cancel/Finish from any thread; the destructor cancels and joins).
#ifndef KVCS_ENGINE_LOAD_JOB_H_
#define KVCS_ENGINE_LOAD_JOB_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "common/crypto.h"
#include "common/status.h"
#include "engine/engine_client.h"
#include "engine/paged_layout.h"

namespace kvcs::stream {
struct VerifiedLayer;
struct RetrievalReport;
}  // namespace kvcs::stream

namespace kvcs::engine {

// Where a loaded block's layer came from (kvcs_block_source in kvcs.h: the same values).
enum class LoadSource : uint8_t {
  kPending = 0,    // the layer is not done yet
  kStore = 1,      // the store (HTTP or same host), also as the recovery source of a MOQT load
  kRelay = 2,      // the MOQT publication through the relay
  kRecompute = 3,  // no source had it (in time): the engine recomputes it
  kHolder = 4,     // a KVSP HTTP holder the index listed, as a recovery source of a MOQT load
};

// One layer's destination: K and V buffers of the engine.
struct LayerTarget {
  uint8_t* k = nullptr;
  uint64_t k_bytes = 0;
  uint8_t* v = nullptr;
  uint64_t v_bytes = 0;
};

class LoadJob {
 public:
  // Checks every argument (buffers, layout, block ids) and starts the loader thread.
  static Result<std::unique_ptr<LoadJob>> Start(EngineClient* client,
                                                std::span<const uint32_t> tokens,
                                                size_t first_block,
                                                std::span<const uint32_t> block_ids,
                                                std::span<const LayerTarget> layers,
                                                const PagedLayout& layout);
  ~LoadJob();

  // Waits for `layer`; *failed gets the failed block indices (ascending). OK, or a Status with
  // kBlocksFailed / kCancelled / kTransport / kUnknownLayer / kFinished detail.
  Status WaitLayer(uint32_t layer, std::vector<uint32_t>* failed);
  // Waits for `layer` like WaitLayer (also after Finish); *sources gets one LoadSource per block.
  // Errors: kUnknownLayer.
  Status BlockSources(uint32_t layer, std::vector<LoadSource>* sources);
  // After it returns, no byte more is written into the engine's buffers.
  void Cancel();
  // Joins the loader; OK when everything arrived.
  Status Finish();

 private:
  struct LayerState {
    bool done = false;
    Status status;                    // OK, or why some or all blocks failed
    std::vector<uint32_t> failed;     // block indices
    std::vector<LoadSource> sources;  // per block (empty: every block kStore, or failed)
  };
  LoadJob(EngineClient* client, std::vector<Digest> keys, size_t first_block,
          std::vector<uint32_t> block_ids, std::vector<LayerTarget> layers,
          const PagedLayout& layout);
  void Run();
  // kUnknownLayer unless layer < the model's layers.
  Status CheckLayer(uint32_t layer) const;
  // Marks every layer not yet done with `why` (all blocks failed).
  void FailRemaining(const Status& why);
  void CompleteLayer(uint32_t layer, LayerState st);
  // Whether the load is worth starting (EngineClient::DecideLoad over the path it would take,
  // against recomputing its blocks); when not, fails every block as recompute at once. True when
  // it was skipped.
  bool SkipIfSlowerThanRecompute();
  // Tells the client (once, unless cancelled) what the load delivered over path_ since it
  // started: the blocks written so far plus `completing` bytes about to be. Called before the
  // load's last layer completes, so that a load started after this one ended decides on it.
  void RecordDelivery(uint64_t completing);
  // K and V bytes of `blocks` blocks of one layer.
  uint64_t BlockBytes(uint64_t blocks) const {
    return blocks * 2 * client_->shape().section_bytes();
  }
  // K and V bytes of the whole load: every block of every layer.
  uint64_t LoadBytes() const { return uint64_t{layers_.size()} * BlockBytes(keys_.size()); }

  // The MOQT path (load_job_moqt.cc).
  struct Moqt;
  Status StartMoqt(std::span<const uint32_t> tokens);
  void OnMoqtLayer(const stream::VerifiedLayer& l);   // link thread
  void OnMoqtRecovering(LoadSource from);             // link thread: a holder is asked
  void OnMoqtDone(const stream::RetrievalReport& r);  // link thread
  void StopMoqt();                                    // link thread
  std::string RecoverySourcesText() const;            // link thread: " and from the store"...

  EngineClient* client_;
  std::vector<Digest> keys_;  // the loaded blocks' keys
  size_t first_block_ = 0;
  std::vector<uint32_t> block_ids_;
  std::vector<LayerTarget> layers_;
  PagedLayout layout_;
  LoadPath path_ = LoadPath::kHttp;  // set before the load starts
  uint64_t start_us_ = 0;            // steady clock
  // Store path: guards writing_layer_ (the layer whose blocks are being written, kNoLayer when
  // none), which Cancel waits to end. MOQT path: held while a layer is written.
  static constexpr uint32_t kNoLayer = UINT32_MAX;
  std::mutex write_mu_;
  std::condition_variable write_cv_;
  uint32_t writing_layer_ = kNoLayer;  // guarded by write_mu_
  std::atomic<bool> cancel_{false};
  std::atomic<bool> recorded_{false};  // RecordDelivery ran
  std::thread thread_;

  std::shared_ptr<Moqt> moqt_;  // link thread (set before it is shared)
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<LayerState> state_;  // guarded by mu_
  bool finished_ = false;          // guarded by mu_
  bool complete_ = false;          // guarded by mu_: every layer done (the MOQT path)
  Status first_failure_;           // guarded by mu_
  uint64_t delivered_bytes_ = 0;   // guarded by mu_: K and V of the blocks written
};

}  // namespace kvcs::engine

#endif  // KVCS_ENGINE_LOAD_JOB_H_
