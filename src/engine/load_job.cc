#include "engine/load_job.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <numeric>
#include <string>
#include <utility>

#include "engine/moqt_link.h"
#include "kvcs_stream/retrieval.h"
#include "kvsp/codec.h"
#include "objcache/aggregate_wire.h"

namespace kvcs::engine {
namespace {

std::string_view BlockStatusName(objcache::BlockStatus s) {
  switch (s) {
    case objcache::BlockStatus::kPresent:
      return "present";
    case objcache::BlockStatus::kMissing:
      return "missing";
    case objcache::BlockStatus::kLayerNotHeld:
      return "layer not held";
    case objcache::BlockStatus::kCorrupt:
      return "corrupt";
    case objcache::BlockStatus::kReadError:
      return "read error";
  }
  return "unknown";
}

uint64_t SteadyNowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Whether a delivered block is one the engine takes: verified, and K and V one section each.
bool Writable(const objcache::DeliveredBlock& b, uint64_t section) {
  return b.status == objcache::BlockStatus::kPresent && b.k_len == section && b.v_len == section &&
         b.data.size() == 2 * section;
}

std::string Ms(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", ms);
  return buf;
}

}  // namespace

LoadJob::LoadJob(EngineClient* client, std::vector<Digest> keys, size_t first_block,
                 std::vector<uint32_t> block_ids, std::vector<LayerTarget> layers,
                 const PagedLayout& layout)
    : client_(client),
      keys_(std::move(keys)),
      first_block_(first_block),
      block_ids_(std::move(block_ids)),
      layers_(std::move(layers)),
      layout_(layout),
      start_us_(SteadyNowUs()),
      state_(layers_.size()) {}

Result<std::unique_ptr<LoadJob>> LoadJob::Start(EngineClient* client,
                                                std::span<const uint32_t> tokens,
                                                size_t first_block,
                                                std::span<const uint32_t> block_ids,
                                                std::span<const LayerTarget> layers,
                                                const PagedLayout& layout) {
  const kvsp::Descriptor& d = client->descriptor();
  KVCS_ASSIGN_OR_RETURN(
      std::vector<Digest> keys,
      client->RangeKeys(tokens, first_block, block_ids.size(), objcache::kMaxBlocks, "load"));
  if (layers.size() != d.layers) {
    return Status(Code::kInvalidArgument, "layers has " + std::to_string(layers.size()) +
                                              " entries, the model " + std::to_string(d.layers));
  }
  for (size_t l = 0; l < layers.size(); ++l) {
    if (!layers[l].k || !layers[l].v) {
      return Status(Code::kInvalidArgument, "layer " + std::to_string(l) + ": NULL buffer");
    }
    for (uint64_t bytes : {layers[l].k_bytes, layers[l].v_bytes}) {
      Status s = CheckLayout(layout, client->shape(), block_ids, bytes);
      if (!s.ok()) {
        return EngineStatus(s.code(), EngineError::kOutOfBounds,
                            "layer " + std::to_string(l) + ": " + s.message());
      }
    }
  }
  std::unique_ptr<LoadJob> job(
      new LoadJob(client, std::move(keys), first_block,
                  std::vector<uint32_t>(block_ids.begin(), block_ids.end()),
                  std::vector<LayerTarget>(layers.begin(), layers.end()), layout));
  job->path_ = client->moqt() ? LoadPath::kRelay : client->StorePath();
  if (job->SkipIfSlowerThanRecompute()) return job;
  if (client->moqt()) {
    KVCS_RETURN_IF_ERROR(job->StartMoqt(tokens));
    return job;
  }
  job->thread_ = std::thread([j = job.get()] { j->Run(); });
  return job;
}

LoadJob::~LoadJob() {
  Cancel();
  if (thread_.joinable()) thread_.join();  // REQUIRES: no Finish running (the ABI's free rule)
  if (client_->moqt()) {
    // Synchronously on the link thread: no callback of the retrieval runs after this.
    client_->moqt()->Call([this] {
      StopMoqt();
      return 0;
    });
  }
}

bool LoadJob::SkipIfSlowerThanRecompute() {
  const kvsp::Descriptor& d = client_->descriptor();
  const uint64_t ns = client_->options().recompute_ns_per_token_layer;
  const uint64_t bytes = LoadBytes();
  const LoadDecision decision = client_->DecideLoad(
      path_, bytes, ns == 0 ? 0 : stream::RecomputeNs(keys_.size(), d.block_tokens, d.layers, ns));
  if (decision.load) return false;
  const double mib = 1024.0 * 1024.0;
  FailRemaining(EngineStatus(
      Code::kUnavailable, EngineError::kBlocksFailed,
      "predicted load " + Ms(decision.predicted_ms) + " ms > recompute " +
          Ms(decision.recompute_ms) + " ms (" + Ms(bytes / mib) + " MiB at the " +
          Ms(decision.rate.value_or(0) / mib) + " MiB/s recent loads over " +
          std::string(LoadPathName(path_)) +
          " delivered): not loaded, every block is recompute (a load is tried anyway every " +
          std::to_string(kProbeEverySkips) + "th skip or " + std::to_string(kProbeAfterMs / 1000) +
          " s after the last try)"));
  return true;
}

void LoadJob::RecordDelivery(uint64_t completing) {
  if (cancel_.load() || recorded_.exchange(true)) return;
  uint64_t bytes = completing;
  {
    std::lock_guard<std::mutex> l(mu_);
    bytes += delivered_bytes_;
  }
  client_->RecordLoad(path_, bytes, SteadyNowUs() - start_us_);
}

void LoadJob::CompleteLayer(uint32_t layer, LayerState st) {
  st.done = true;
  {
    std::lock_guard<std::mutex> l(mu_);
    delivered_bytes_ += (keys_.size() - std::min(st.failed.size(), keys_.size())) * 2 *
                        client_->shape().section_bytes();
    if (!st.status.ok() && first_failure_.ok()) first_failure_ = st.status;
    state_[layer] = std::move(st);
    complete_ =
        std::all_of(state_.begin(), state_.end(), [](const LayerState& s) { return s.done; });
  }
  cv_.notify_all();
}

void LoadJob::Run() {
  const SectionShape& shape = client_->shape();
  const uint64_t section = shape.section_bytes();
  objcache::AggregateRequest req;
  req.scope_id = client_->scope_id();
  req.compat_id = client_->compat_id();
  req.codec = kvsp::CodecValue(kvsp::Codec::kRaw);
  req.layer_first = 0;
  req.layer_count = static_cast<uint32_t>(layers_.size());
  req.components = objcache::Components::kKV;
  req.block_keys = keys_;
  req.compute_us_per_layer = client_->options().compute_us_per_layer;
  req.stall_target_us = client_->options().stall_target_us;
  uint32_t next = 0;
  Status result;
  try {
    // Each verified block is written on the thread that checked its digest, while its bytes are
    // in that core's cache (the client's verify threads, concurrently for a layer's blocks, once
    // the whole layer is in). A layer is written whole or not at all: its first block decides,
    // and a Cancel() meanwhile waits until the layer is complete.
    auto on_block = [&](uint16_t layer, uint32_t i, const objcache::DeliveredBlock& b) {
      if (layer >= layers_.size() || i >= block_ids_.size() || !Writable(b, section)) return;
      {
        std::lock_guard<std::mutex> l(write_mu_);
        if (writing_layer_ != layer) {
          if (cancel_.load() || layer != next) return;  // untouched: reported cancelled
          writing_layer_ = layer;
        }
      }
      const LayerTarget& t = layers_[layer];
      ScatterSection(b.data.data(), layout_, shape, block_ids_[i], t.k);
      ScatterSection(b.data.data() + section, layout_, shape, block_ids_[i], t.v);
    };
    auto on_layer = [&](const objcache::DeliveredLayer& dl) {
      std::unique_lock<std::mutex> l(write_mu_);
      // A layer some of whose blocks were written completes even if cancelled meanwhile.
      const bool written = writing_layer_ == dl.layer;
      if (!written && cancel_.load()) {
        return EngineStatus(Code::kFailedPrecondition, EngineError::kCancelled, "load cancelled");
      }
      if (dl.layer != next || dl.layer >= layers_.size() || dl.blocks.size() != keys_.size()) {
        return Status(Code::kInternal, "store stream does not match the request");
      }
      LayerState st;
      std::string why;
      for (uint32_t i = 0; i < dl.blocks.size(); ++i) {
        const objcache::DeliveredBlock& b = dl.blocks[i];
        if (!Writable(b, section)) {  // on_block wrote the others
          st.failed.push_back(i);
          if (why.empty()) {
            why = "layer " + std::to_string(dl.layer) + " block " + std::to_string(i) + ": " +
                  std::string(b.status == objcache::BlockStatus::kPresent
                                  ? "unexpected section size"
                                  : BlockStatusName(b.status));
          }
        }
      }
      if (!st.failed.empty()) {
        st.status =
            EngineStatus(Code::kCorruption, EngineError::kBlocksFailed,
                         std::to_string(st.failed.size()) + " of " + std::to_string(keys_.size()) +
                             " blocks failed (first: " + why + ")");
      }
      if (size_t{dl.layer} + 1 == layers_.size()) {
        RecordDelivery(BlockBytes(keys_.size() - st.failed.size()));
      }
      CompleteLayer(dl.layer, std::move(st));
      ++next;
      if (written) {
        writing_layer_ = kNoLayer;
        write_cv_.notify_all();
      }
      if (cancel_.load()) {
        return EngineStatus(Code::kFailedPrecondition, EngineError::kCancelled, "load cancelled");
      }
      return Status::Ok();
    };
    // Retried on a fresh connection only when nothing was delivered yet.
    auto get = [&](objcache::Client& c) {
      return c.AggregateGet(client_->bucket(), req, on_layer, on_block);
    };
    auto r = client_->WithConnection(get, [&] { return next == 0 && !cancel_.load(); });
    if (!r.ok()) result = r.status();
  } catch (const std::exception& e) {
    result = Status(Code::kInternal, std::string("loader: ") + e.what());
  }
  {
    // No block is written from here on (the client calls on_block only inside AggregateGet).
    std::lock_guard<std::mutex> l(write_mu_);
    writing_layer_ = kNoLayer;
  }
  write_cv_.notify_all();
  if (!result.ok() || next < layers_.size()) {
    if (result.ok()) result = Status(Code::kInternal, "store stream ended early");
    if (cancel_.load()) {
      result = EngineStatus(Code::kFailedPrecondition, EngineError::kCancelled, "load cancelled");
    } else {
      result =
          EngineStatus(Code::kUnavailable, EngineError::kTransport, "load: " + result.message());
    }
    RecordDelivery(0);
    FailRemaining(result);
  }
}

void LoadJob::FailRemaining(const Status& why) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (first_failure_.ok()) first_failure_ = why;
    for (LayerState& st : state_) {
      if (st.done) continue;
      st.done = true;
      st.status = why;
      st.failed.resize(keys_.size());
      std::iota(st.failed.begin(), st.failed.end(), 0u);
    }
    complete_ = true;
  }
  cv_.notify_all();
}

Status LoadJob::CheckLayer(uint32_t layer) const {
  if (layer >= layers_.size()) {
    return EngineStatus(Code::kInvalidArgument, EngineError::kUnknownLayer,
                        "layer " + std::to_string(layer) + " of a model with " +
                            std::to_string(layers_.size()) + " layers");
  }
  return Status::Ok();
}

Status LoadJob::WaitLayer(uint32_t layer, std::vector<uint32_t>* failed) {
  failed->clear();
  KVCS_RETURN_IF_ERROR(CheckLayer(layer));
  std::unique_lock<std::mutex> l(mu_);
  if (finished_)
    return EngineStatus(Code::kFailedPrecondition, EngineError::kFinished, "load already finished");
  cv_.wait(l, [&] { return state_[layer].done; });
  *failed = state_[layer].failed;
  return state_[layer].status;
}

Status LoadJob::BlockSources(uint32_t layer, std::vector<LoadSource>* sources) {
  sources->clear();
  KVCS_RETURN_IF_ERROR(CheckLayer(layer));
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait(l, [&] { return state_[layer].done; });
  const LayerState& st = state_[layer];
  if (!st.sources.empty()) {
    *sources = st.sources;
    return Status::Ok();
  }
  sources->assign(keys_.size(), LoadSource::kStore);
  for (uint32_t j : st.failed) (*sources)[j] = LoadSource::kRecompute;
  return Status::Ok();
}

void LoadJob::Cancel() {
  {
    std::unique_lock<std::mutex> l(write_mu_);
    if (cancel_.exchange(true)) return;
    // A layer being written completes first (CPU only: its bytes are all in).
    write_cv_.wait(l, [&] { return writing_layer_ == kNoLayer; });
  }
  if (client_->moqt()) {
    // Runs before the destructor's own call on the link thread (tasks run in order).
    client_->moqt()->Post([this] {
      StopMoqt();
      FailRemaining(
          EngineStatus(Code::kFailedPrecondition, EngineError::kCancelled, "load cancelled"));
    });
  }
}

Status LoadJob::Finish() {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (finished_)
      return EngineStatus(Code::kFailedPrecondition, EngineError::kFinished,
                          "load already finished");
    finished_ = true;  // from here on only this call touches thread_
  }
  if (thread_.joinable()) thread_.join();
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait(l, [&] { return complete_; });  // the MOQT path: its retrieval's end
  return first_failure_;
}

}  // namespace kvcs::engine
