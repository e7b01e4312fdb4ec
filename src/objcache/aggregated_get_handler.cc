// The aggregated GET handler. See aggregated_get_handler.h.
#include "objcache/aggregated_get_handler.h"

#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "common/log.h"
#include "kvsp/codec.h"
#include "objcache/handler_errors.h"
#include "objcache/offload_job.h"
#include "objcache/read_window.h"
#include "objcache/service_resources.h"
#include "objcache/shm_delivery.h"
#include "s3/access.h"

namespace kvcs::objcache {

using s3::Awaitable;
using s3::ExtensionContext;

namespace {

constexpr char kStreamContentType[] = "application/vnd.kvcs.aggregate-v1";

}  // namespace

Awaitable<Status> AggregatedGetHandler::StartStream(ExtensionContext& ctx,
                                                    const AggregateRequest& req,
                                                    Delivery delivery) {
  s3::HeaderList headers = {{"Content-Type", kStreamContentType}};
  Status st = co_await ctx.response.Start(200, std::move(headers), std::nullopt);
  if (!st.ok()) co_return st;
  Bytes head;
  StreamHeader sh{req.components,
                  req.codec,
                  static_cast<uint16_t>(req.layer_first),
                  static_cast<uint16_t>(req.layer_count),
                  static_cast<uint32_t>(req.block_keys.size()),
                  req.compat_id,
                  req.scope_id,
                  delivery};
  EncodeStreamHeader(sh, &head);
  co_return co_await ctx.response.Write(head);
}

Awaitable<void> AggregatedGetHandler::Handle(ExtensionContext& ctx) {
  std::optional<AggregateRequest> parsed = co_await ReadAggregateRequest(ctx);
  if (!parsed) co_return;
  auto req = std::make_shared<AggregateRequest>(std::move(*parsed));
  std::shared_ptr<ShmRegistration> reg;
  if (req->shm) {
    ShmServer* const shm = res_.shm.get();
    reg = shm ? shm->Find(req->shm->token) : nullptr;
    if (!reg) {
      co_await ctx.response.SendError(
          400, shm ? "ShmUnknownToken" : "InvalidRequest",
          shm ? "unknown shm_token: register the buffer on the store's shm socket first (the "
                "registration ends when its connection closes)"
              : "this store has no shm socket: start it with --shm-socket, or ask without shm_*");
      co_return;
    }
  }
  // Only the bucket's owner (s3/access.h): others get 403 AccessDenied.
  Status bucket_ok = s3::CheckBucketAccess(ctx.store, ctx.request.bucket, ctx.request.user_id);
  if (!bucket_ok.ok()) {
    co_await StoreError(ctx, bucket_ok);
    co_return;
  }
  // The buffer serves one request at a time: wait for an earlier one to end (its client may have
  // cancelled it and not yet seen the end); unclaimed on every exit below.
  struct Unclaim {
    std::shared_ptr<ShmRegistration> reg;
    uint64_t nonce;
    ~Unclaim() {
      if (reg) reg->Unclaim(nonce);
    }
  } unclaim{nullptr, 0};
  if (reg) {
    bool claimed = co_await reg->Claim(req->shm->nonce, ctx.executor,
                                       ShmRegistration::Clock::now() + kShmWaitTimeout);
    if (!claimed) {
      co_await ctx.response.SendError(
          409, "ShmBufferBusy",
          "the shared buffer is in use by another request (or its registration ended): wait for "
          "it, or register another buffer");
      co_return;
    }
    unclaim.reg = reg;
    unclaim.nonce = req->shm->nonce;
  }
  auto codec = kvsp::CodecFromValue(req->codec);
  const std::string codec_name(kvsp::CodecName(*codec));

  auto slots = std::make_shared<std::vector<BlockSlot>>();
  {
    // Strings reach the job through the heap (see the NOTE on OffloadJob).
    auto names =
        std::make_shared<std::pair<std::string, std::string>>(ctx.request.bucket, codec_name);
    store::ObjectStore* store = &ctx.store;
    OffloadJob job_ = OffloadJob::Start(res_.pool, [store, names, req, slots] {
      double t0 = NowSeconds();
      ProbeBlocks(*store, names->first, *req, names->second, slots.get());
      KVCS_LOG_DEBUG("aggregated GET: probed {} blocks in {:.2f} ms", req->block_keys.size(),
                     (NowSeconds() - t0) * 1e3);
    });
    co_await job_.Wait(ctx.executor);
  }

  // The scheduler's b_r in the bytes the pacer is charged (records and frame head included).
  const double first_layer_bytes = double(PacedLayerBytes(
      *slots, req->components, req->layer_first, reg ? Delivery::kShm : Delivery::kInline));
  std::optional<ShmDelivery> same_host;
  if (reg) {
    same_host.emplace(res_, req, slots, reg);
    std::string bad = same_host->CheckFits();
    if (!bad.empty()) {
      co_await ctx.response.SendError(400, "InvalidRequest", bad);
      co_return;
    }
  }
  Status st = co_await StartStream(ctx, *req, reg ? Delivery::kShm : Delivery::kInline);
  if (!st.ok()) co_return;
  BandwidthShare paced(res_.bandwidth, *req, first_layer_bytes);
  if (same_host) {
    co_await same_host->Run(ctx, paced);
  } else {
    co_await StreamInline(ctx, req, slots, paced);
  }
}

// Items (layer, block) are planned lazily, window by window, layer-major: memory is O(window)
// whatever the block and layer counts.
Awaitable<void> AggregatedGetHandler::StreamInline(ExtensionContext& ctx,
                                                   std::shared_ptr<const AggregateRequest> req,
                                                   std::shared_ptr<std::vector<BlockSlot>> slots,
                                                   BandwidthShare& paced) {
  const uint32_t nb = static_cast<uint32_t>(req->block_keys.size());
  const Components comps = req->components;
  auto plan_item = [slots, comps, nb](uint32_t layer, uint32_t b) {
    return PlanItem(*slots, comps, nb, layer, b);
  };

  // Fills `win` with the next items from *next_item (layer index * nb + block): at most
  // window_bytes of block-layer data (at least one item) and kMaxWindowItems items; lays out its
  // planned buffer and starts its reads on the pool.
  const uint64_t total_items = uint64_t{nb} * req->layer_count;
  const uint64_t window_bytes = res_.options.window_bytes;
  auto start_window = [&, slots](uint64_t* next_item, std::shared_ptr<ReadWindow> win) {
    win->items.clear();
    uint64_t out = 0, scratch = 0, data = 0;
    while (*next_item < total_items) {
      PlannedItem it =
          plan_item(req->layer_first + uint32_t(*next_item / nb), uint32_t(*next_item % nb));
      if (!win->items.empty() &&
          (data + it.read_len > window_bytes || win->items.size() == kMaxWindowItems))
        break;
      data += it.read_len;
      it.out_offset = out + (it.frame_head ? kLayerFrameHeadBytes : 0);
      out += (it.frame_head ? kLayerFrameHeadBytes : 0) + kBlockRecordBytes + it.record.k_len +
             it.record.v_len;
      if (comps != Components::kKV) {
        it.scratch_offset = scratch;
        scratch += it.read_len;
      }
      win->items.push_back(it);
      ++*next_item;
    }
    win->last = *next_item == total_items;
    if (win->last) out += kEndFrameBytes;
    win->out.resize(out);  // within the reserved capacity unless one item exceeds a window
    win->scratch.resize(scratch);
    win->reads.clear();
    for (PlannedItem& it : win->items) {
      if (!it.read_len) continue;
      store::RangeRead rr;
      rr.reader = (*slots)[it.block].reader.get();
      rr.offset = it.entry->k.offset;
      rr.out =
          comps == Components::kKV
              ? std::span<uint8_t>(win->out.data() + it.out_offset + kBlockRecordBytes, it.read_len)
              : std::span<uint8_t>(win->scratch.data() + it.scratch_offset, it.read_len);
      win->reads.push_back(std::move(rr));
    }
    return OffloadJob::Start(res_.pool,
                             [win, slots, &store = ctx.store] { store.ReadMany(win->reads); });
  };

  auto cur = res_.windows.Take();
  auto next = res_.windows.Take();
  uint64_t next_item = 0;
  OffloadJob job = start_window(&next_item, cur);
  bool ok = true;
  bool more = true;
  for (size_t w = 0; more && ok; ++w) {
    double tw0 = NowSeconds();
    co_await job.Wait(ctx.executor);
    double tw1 = NowSeconds();
    more = !cur->last;
    if (more) job = start_window(&next_item, next);
    // Finalize records, verifying k/v-only sections, and compact around failed reads.
    ReadWindow& win = *cur;
    size_t read_idx = 0;
    uint64_t cursor = 0;
    for (PlannedItem& it : win.items) {
      if (it.frame_head) {
        Bytes fh;
        EncodeLayerFrameHead(it.layer, nb, &fh);
        std::memcpy(win.out.data() + cursor, fh.data(), fh.size());
        cursor += fh.size();
      }
      const uint8_t* data = nullptr;
      const store::RangeRead* rr = it.read_len ? &win.reads[read_idx++] : nullptr;
      const uint8_t* kv = comps == Components::kKV
                              ? win.out.data() + it.out_offset + kBlockRecordBytes
                              : win.scratch.data() + it.scratch_offset;
      BlockRecord rec = FinalizeItem(it, rr, (*slots)[it.block], comps, kv, &data);
      Bytes rb;
      EncodeBlockRecord(rec, &rb);
      std::memcpy(win.out.data() + cursor, rb.data(), rb.size());
      cursor += rb.size();
      uint64_t len = rec.k_len + rec.v_len;
      if (data && len) {
        if (data != win.out.data() + cursor) std::memmove(win.out.data() + cursor, data, len);
        cursor += len;
      }
    }
    if (win.last) {
      Bytes end;
      EncodeEndFrame(0, &end);
      std::memcpy(win.out.data() + cursor, end.data(), end.size());
      cursor += end.size();
    }
    co_await paced.Before(ctx.executor, double(cursor));
    double tw2 = NowSeconds();
    Status st = co_await ctx.response.Write(ByteSpan(win.out.data(), cursor));
    KVCS_LOG_DEBUG(
        "aggregated GET: window {} ({} B): wait {:.2f} ms, finalize {:.2f} ms, "
        "write {:.2f} ms",
        w, cursor, (tw1 - tw0) * 1e3, (tw2 - tw1) * 1e3, (NowSeconds() - tw2) * 1e3);
    if (!st.ok()) ok = false;
    for (const PlannedItem& it : win.items)
      if (it.last_of_layer) paced.LayerDelivered();
    std::swap(cur, next);
  }
  co_await job.Wait(ctx.executor);  // never leave a read running on freed state
  res_.windows.Return(std::move(cur));
  res_.windows.Return(std::move(next));
  if (ok) co_await ctx.response.Finish();
}

}  // namespace kvcs::objcache
