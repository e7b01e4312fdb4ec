// ShmDelivery. See shm_delivery.h.
#include "objcache/shm_delivery.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "objcache/offload_job.h"
#include "objcache/service_resources.h"

namespace kvcs::objcache {

namespace {

// Block bytes in a shared buffer start on a cache line.
constexpr uint64_t kShmAlign = 64;
// End frame status of a same-host stream that its client cancelled, or whose buffer it did not
// release in time or whose registration closed.
constexpr uint32_t kEndShmAbandoned = 1;

uint64_t Align(uint64_t x) { return (x + kShmAlign - 1) / kShmAlign * kShmAlign; }

}  // namespace

ShmDelivery::ShmDelivery(ServiceResources& res, std::shared_ptr<const AggregateRequest> req,
                         std::shared_ptr<std::vector<BlockSlot>> slots,
                         std::shared_ptr<ShmRegistration> reg)
    : res_(res),
      req_(std::move(req)),
      slots_(std::move(slots)),
      reg_(std::move(reg)),
      nslots_(req_->shm->slots),
      slot_bytes_(reg_->buffer().size() / nslots_ / kShmAlign * kShmAlign) {}

std::string ShmDelivery::CheckFits() const {
  const Components comps = req_->components;
  // A slot must hold any requested layer: Σ over blocks of its largest carried layer (exact for
  // fixed-size codecs).
  uint64_t need = 0;
  const uint32_t last = req_->layer_first + req_->layer_count - 1;
  for (const BlockSlot& s : *slots_) {
    if (s.status != BlockStatus::kPresent) continue;
    uint64_t m = 0;
    for (const kvsp::LayerEntry& e : s.view.layers) {
      if (e.layer < req_->layer_first || e.layer > last) continue;
      m = std::max(
          m, (comps == Components::kV ? 0 : e.k_len) + (comps == Components::kK ? 0 : e.v_len));
    }
    need += Align(m);
  }
  if (need <= slot_bytes_) return "";
  return "shm buffer too small: a layer of this request needs up to " + std::to_string(need) +
         " bytes and the buffer holds " + std::to_string(nslots_) + " slots of " +
         std::to_string(slot_bytes_) + " bytes; register at least " +
         std::to_string(need * nslots_) + " bytes or ask for fewer slots";
}

s3::Awaitable<void> ShmDelivery::Run(s3::ExtensionContext& ctx, BandwidthShare& paced) {
  const std::shared_ptr<const AggregateRequest>& req = req_;
  const std::shared_ptr<std::vector<BlockSlot>>& slots = slots_;
  const std::shared_ptr<ShmRegistration>& reg = reg_;
  const uint32_t nb = static_cast<uint32_t>(req->block_keys.size());
  const Components comps = req->components;
  const uint32_t nslots = nslots_;
  const uint64_t nonce = req->shm->nonce;
  const uint64_t slot_bytes = slot_bytes_;
  Status st = Status::Ok();
  Bytes frame;
  // k or v alone: K+V are read into a window's scratch to check the producer's layer digest.
  auto scratch_win = comps == Components::kKV ? nullptr : res_.windows.Take();
  uint8_t* const buf = reg->buffer().data();
  bool abandoned = false;
  std::vector<PlannedItem> items;
  std::vector<uint64_t> offsets;  // per block of the layer: where its bytes go in the buffer
  for (uint32_t i = 0; i < req->layer_count && !abandoned; ++i) {
    if (i >= nslots) {
      bool released = co_await reg->WaitReleased(nonce, i - nslots + 1, ctx.executor,
                                                 ShmRegistration::Clock::now() + kShmWaitTimeout);
      if (!released) {
        abandoned = true;
        break;
      }
    } else if (!reg->Live(nonce)) {  // cancelled or closed while the ring still had free slots
      abandoned = true;
      break;
    }
    const uint32_t layer = req->layer_first + i;
    const uint64_t base = uint64_t(i % nslots) * slot_bytes;
    items.clear();
    offsets.assign(nb, 0);
    uint64_t cursor = base;
    for (uint32_t b = 0; b < nb; ++b) {
      items.push_back(PlanItem(*slots, comps, nb, layer, b));
      offsets[b] = cursor;
      cursor += Align(items.back().record.k_len + items.back().record.v_len);
    }
    // Reads in batches of at most window_bytes (the scratch of k/v-only requests) and
    // kMaxWindowItems, each run on the store's threads.
    frame.clear();
    EncodeLayerFrameHead(static_cast<uint16_t>(layer), nb, &frame, Delivery::kShm);
    uint64_t carried_bytes = 0;
    for (uint32_t b0 = 0; b0 < nb;) {
      auto reads = std::make_shared<std::vector<store::RangeRead>>();
      if (scratch_win) {  // sized before any span points into it: no reallocation in the batch
        uint64_t want = std::max<uint64_t>(res_.options.window_bytes, items[b0].read_len);
        if (scratch_win->scratch.size() < want) scratch_win->scratch.resize(want);
      }
      uint64_t batch = 0;
      uint32_t b1 = b0;
      for (; b1 < nb; ++b1) {
        const PlannedItem& it = items[b1];
        if (b1 > b0 &&
            (batch + it.read_len > res_.options.window_bytes || b1 - b0 == kMaxWindowItems))
          break;
        if (!it.read_len) continue;
        store::RangeRead rr;
        rr.reader = (*slots)[b1].reader.get();
        rr.offset = it.entry->k.offset;
        if (comps == Components::kKV) {
          rr.out = std::span<uint8_t>(buf + offsets[b1], it.read_len);
        } else {
          rr.out = std::span<uint8_t>(scratch_win->scratch.data() + batch, it.read_len);
        }
        batch += it.read_len;
        reads->push_back(std::move(rr));
      }
      if (!reads->empty()) {
        // The job keeps what it writes into (the registration's mapping, the k/v scratch) and
        // the readers alive: it runs on even if this handler's frame is destroyed meanwhile.
        OffloadJob job = OffloadJob::Start(
            res_.pool,
            [reads, slots, reg, scratch_win, &store = ctx.store] { store.ReadMany(*reads); });
        co_await job.Wait(ctx.executor);
      }
      size_t r = 0;
      for (uint32_t b = b0; b < b1; ++b) {
        const PlannedItem& it = items[b];
        const store::RangeRead* rr = it.read_len ? &(*reads)[r++] : nullptr;
        const uint8_t* kv =
            comps == Components::kKV ? buf + offsets[b] : (rr ? rr->out.data() : nullptr);
        const uint8_t* carried = nullptr;
        BlockRecord rec = FinalizeItem(it, rr, (*slots)[b], comps, kv, &carried);
        const uint64_t len = rec.k_len + rec.v_len;
        if (carried && len && carried != buf + offsets[b])
          std::memcpy(buf + offsets[b], carried, len);
        carried_bytes += len;
        EncodeShmBlockRecord(rec, rec.status == BlockStatus::kPresent ? offsets[b] : 0, &frame);
      }
      b0 = b1;
    }
    co_await paced.Before(ctx.executor, double(carried_bytes + frame.size()));
    st = co_await ctx.response.Write(frame);
    if (!st.ok()) break;
    paced.LayerDelivered();
  }
  if (scratch_win) res_.windows.Return(std::move(scratch_win));
  if (!st.ok()) co_return;
  frame.clear();
  EncodeEndFrame(abandoned ? kEndShmAbandoned : 0, &frame);
  st = co_await ctx.response.Write(frame);
  if (st.ok()) co_await ctx.response.Finish();
}

}  // namespace kvcs::objcache
