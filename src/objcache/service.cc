// ObjectCache service handlers. See service.h and docs/protocols/objectcache-aggregated.md.
#include "objcache/service.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>

#include "common/asio.h"
#include "common/hex.h"
#include "kvsp/codec.h"
#include "kvsp/container.h"
#include "objcache/aggregate_wire.h"
#include "objcache/shm_server.h"
#include "objcache/wait_list.h"
#include "s3/sigv4.h"
#include "sched/pacer.h"

namespace kvcs::objcache {

namespace asio = boost::asio;
using s3::Awaitable;
using s3::ExtensionContext;

namespace {

constexpr char kAggregateQuery[] = "kvcs-aggregate";
constexpr char kAggregatePutQuery[] = "kvcs-aggregate-put";
constexpr char kKvspBlocksPrefix[] = "/_kvsp/blocks/";
constexpr char kKvspPrefixPrefix[] = "/_kvsp/prefix/";
constexpr char kStreamContentType[] = "application/vnd.kvcs.aggregate-v1";
constexpr char kContainerContentType[] = "application/vnd.kvsp.container";
// Blocks probed per ReadMany batch when reading container headers (4 KiB each): bounds the probe
// memory to 4 MiB whatever the block count.
constexpr size_t kProbeBatch = 1024;
// A container the KVSP endpoints read whole to verify before serving. Real containers are
// KiB..MiB; larger ones are refused rather than buffered.
constexpr uint64_t kMaxServedContainerBytes = 256ull << 20;
// Items (block-layers) in one window: bounds the records of blocks without data (missing, not
// held), which the data budget does not count: 16,384 × 60 bytes ≈ 1 MiB per window.
constexpr size_t kMaxWindowItems = 16384;
// Windows kept for reuse across aggregated GETs: one request's pair (2 × window_bytes idle).
constexpr size_t kSpareWindows = 2;
// Chunk of a streamed KVSP response.
constexpr size_t kKvspChunkBytes = 1u << 20;
// Same-host delivery: how long a request waits for its client to release a slot (or for the
// buffer to be free) before it gives up; an engine computes one layer in milliseconds, so this
// only ends requests whose client stopped without cancelling.
constexpr auto kShmWaitTimeout = std::chrono::seconds(30);
// Block bytes in a shared buffer start on a cache line.
constexpr uint64_t kShmAlign = 64;
// End frame status of a same-host stream that its client cancelled, or whose buffer it did not
// release in time or whose registration closed.
constexpr uint32_t kEndShmAbandoned = 1;

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Digest ParseHex64(std::string_view s) {
  Digest d{};
  auto r = FromHexFixed<32>(s);
  if (r.ok()) d = *r;
  return d;
}

// Runs `fn` on the pool; Wait() resumes the coroutine once it has finished. The job shares
// ownership of whatever `fn` captures, so abandoning a job is memory-safe.
//
// Waking is event-driven (WaitList): the job, when done, wakes the waiter. (Polling every 50 µs
// cost a context switch and a timerfd_settime per poll: with the job itself needing the CPU on a
// 2-core machine, an aggregated PUT spent more server CPU in scheduling than in hashing.)
class OffloadJob {
 public:
  OffloadJob() = default;
  template <typename F>
  static OffloadJob Start(asio::thread_pool& pool, F fn) {
    OffloadJob j;
    j.state_ = std::make_shared<State>();
    asio::post(pool, [fn = std::move(fn), st = j.state_]() mutable {
      fn();
      std::lock_guard<std::mutex> l(st->mu);
      st->done = true;
      st->waiters.NotifyAllLocked();
    });
    return j;
  }
  bool valid() const { return state_ != nullptr; }
  // REQUIRES: `ex` is the strand this coroutine runs on.
  Awaitable<void> Wait(asio::any_io_executor ex) {
    if (!state_) co_return;
    State& st = *state_;
    co_await st.waiters.WaitUntil(st.mu, ex, WaitList::Clock::time_point::max(),
                                  [&st] { return st.done; });
    state_.reset();
  }

 private:
  struct State {
    std::mutex mu;
    bool done = false;
    WaitList waiters;
  };
  std::shared_ptr<State> state_;
};

// NOTE (GCC 12): a lambda created inside a coroutine must not capture a std::string (or any other
// self-referential object) by value: GCC relocates the closure bitwise, so the string's SSO
// pointer still points into the coroutine frame and is freed later (found by valgrind). Jobs
// capture only pointers, PODs and shared_ptrs.

Awaitable<void> SleepUntil(asio::any_io_executor ex, double when) {
  double now = NowSeconds();
  if (when <= now) co_return;
  asio::steady_timer timer(ex);
  timer.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(when - now)));
  boost::system::error_code ec;
  co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

// Reads exactly out.size() bytes of the body (fewer only at the end of the body).
Awaitable<Result<size_t>> ReadFull(s3::BodyReader& body, std::span<uint8_t> out) {
  size_t have = 0;
  while (have < out.size()) {
    auto n = co_await body.Read(out.subspan(have));
    if (!n.ok()) co_return n.status();
    if (*n == 0) break;
    have += *n;
  }
  co_return have;
}

// One block of an aggregated GET after the probe.
struct BlockSlot {
  std::shared_ptr<const store::ObjectReader> reader;
  kvsp::ContainerView view;
  BlockStatus status = BlockStatus::kMissing;
};

// One (layer, block) of the stream as laid out in a window buffer.
struct Item {
  uint16_t layer = 0;
  uint32_t block = 0;
  bool frame_head = false;  // first block of its layer: a layer frame head precedes the record
  bool last_of_layer = false;
  BlockRecord record;           // planned record (present: lengths and digest from the table)
  uint64_t out_offset = 0;      // where the record goes in the planned (uncompacted) buffer
  uint64_t read_len = 0;        // bytes read for this item (K+V of the layer) — 0 if absent
  uint64_t scratch_offset = 0;  // k/v-only: where K+V are read for verification
  const kvsp::LayerEntry* entry = nullptr;
};

// A window's buffers are default-initialized (no zero-fill: every byte sent is written first) and
// kept by the Service for the next request (see Service::Impl::TakeWindow): a fresh 16 MiB buffer
// costs a zero-fill and 4,096 page faults, ~15% of the server's CPU per window in bench/objcache.
struct Window {
  std::vector<Item> items;
  BlockBytes out;      // records, frame heads and carried data, planned layout
  BlockBytes scratch;  // k/v-only: K+V read for verification
  std::vector<store::RangeRead> reads;
  bool last = false;
};

// The record and read of block b of `layer`, from the probe.
Item PlanItem(const std::vector<BlockSlot>& slots, Components comps, uint32_t nb, uint32_t layer,
              uint32_t b) {
  Item it;
  it.layer = static_cast<uint16_t>(layer);
  it.block = b;
  it.frame_head = b == 0;
  it.last_of_layer = b + 1 == nb;
  const BlockSlot& s = slots[b];
  it.record = BlockRecord{s.status, DigestKind::kNone, 0, 0, Digest{}};
  if (s.status == BlockStatus::kPresent) {
    it.entry = s.view.Find(layer);
    if (!it.entry) {
      it.record.status = BlockStatus::kLayerNotHeld;
    } else {
      it.read_len = it.entry->k_len + it.entry->v_len;
      it.record.k_len = comps == Components::kV ? 0 : it.entry->k_len;
      it.record.v_len = comps == Components::kK ? 0 : it.entry->v_len;
      it.record.digest_kind = comps == Components::kKV ? DigestKind::kLayer : DigestKind::kSection;
      it.record.digest = it.entry->digest;
    }
  }
  return it;
}

// Checks a planned item's read (`rr`, null when nothing was read) and, for k or v alone, the
// producer's layer digest over the K+V read into `kv`; returns the final record and sets *carried
// to where its carried bytes are (null when it carries none).
BlockRecord FinalizeItem(const Item& it, const store::RangeRead* rr, const BlockSlot& slot,
                         Components comps, const uint8_t* kv, const uint8_t** carried) {
  *carried = nullptr;
  BlockRecord rec = it.record;
  if (!it.read_len) return rec;
  if (!rr->result.ok() || *rr->result != it.read_len)
    return BlockRecord{BlockStatus::kReadError, DigestKind::kNone, 0, 0, Digest{}};
  if (comps == Components::kKV) {
    *carried = kv;
    return rec;
  }
  ByteSpan k(kv, it.entry->k_len), v(kv + it.entry->k_len, it.entry->v_len);
  if (!kvsp::VerifyLayer(slot.view, it.layer, k, v).ok())
    return BlockRecord{BlockStatus::kCorrupt, DigestKind::kNone, 0, 0, Digest{}};
  *carried = comps == Components::kK ? k.data() : v.data();
  rec.digest = Sha256::Hash(comps == Components::kK ? k : v);
  return rec;
}

}  // namespace

struct Service::Impl {
  explicit Impl(ServiceOptions o)
      : options(std::move(o)),
        pool(static_cast<size_t>(std::max(1, options.offload_threads))),
        put_pool(static_cast<size_t>(std::max(1, options.put_threads))),
        scheduler(options.bandwidth_cap > 0 ? options.bandwidth_cap : 1, options.sched) {}
  ~Impl() {
    pool.join();
    put_pool.join();
  }

  ServiceOptions options;
  asio::thread_pool pool;
  // Aggregated PUT containers are verified and committed here, not on `pool`: a PUT's jobs wait
  // on fsync for milliseconds each and must never queue ahead of an aggregated GET's reads.
  asio::thread_pool put_pool;
  std::mutex sched_mu;
  sched::BandwidthScheduler scheduler;
  std::atomic<uint64_t> next_id{1};
  // Windows of finished requests, reused by the next ones (see Window).
  std::mutex spare_mu;
  std::vector<std::shared_ptr<Window>> spare_windows;

  std::shared_ptr<Window> TakeWindow() {
    {
      std::lock_guard<std::mutex> l(spare_mu);
      if (!spare_windows.empty()) {
        auto w = std::move(spare_windows.back());
        spare_windows.pop_back();
        return w;
      }
    }
    auto w = std::make_shared<Window>();
    w->out.reserve(WindowCapacity());
    return w;
  }
  // REQUIRES: no read is still running into `w`.
  void ReturnWindow(std::shared_ptr<Window> w) {
    // Only buffers of the configured size are kept (one over it held an item bigger than a window).
    if (w.use_count() != 1 || w->out.capacity() > WindowCapacity() ||
        w->scratch.capacity() > WindowCapacity())
      return;
    std::lock_guard<std::mutex> l(spare_mu);
    if (spare_windows.size() < kSpareWindows) spare_windows.push_back(std::move(w));
  }
  // A window holds at most window_bytes of data, kMaxWindowItems records and frame heads, and the
  // end frame.
  size_t WindowCapacity() const {
    return options.window_bytes + kMaxWindowItems * (kBlockRecordBytes + kLayerFrameHeadBytes) +
           kEndFrameBytes;
  }

  std::unique_ptr<ShmServer> shm;  // same-host delivery, when listening

  // One aggregated GET's share of the bandwidth cap (a no-op without a cap): admitted with its
  // scheduling inputs, paced before each write, told of each delivered layer, finished once.
  class Paced {
   public:
    Paced(Impl& impl, const AggregateRequest& req, double first_layer_bytes);
    ~Paced();
    Awaitable<void> Before(asio::any_io_executor ex, double bytes);
    void LayerDelivered();

   private:
    Impl& impl_;
    const bool on_;
    const uint64_t id_;
    sched::Pacer pacer_;
  };
  // Starts the 200 stream and writes its header.
  Awaitable<Status> StartStream(ExtensionContext& ctx, const AggregateRequest& req,
                                Delivery delivery);

  Awaitable<void> AggregateGet(ExtensionContext& ctx);
  Awaitable<void> AggregateGetShm(ExtensionContext& ctx, std::shared_ptr<AggregateRequest> req,
                                  std::shared_ptr<std::vector<BlockSlot>> slots,
                                  std::shared_ptr<ShmRegistration> reg, double first_layer_bytes);
  Awaitable<void> AggregatePut(ExtensionContext& ctx);
  Awaitable<void> KvspBlock(ExtensionContext& ctx);
  Awaitable<void> KvspPrefix(ExtensionContext& ctx);

  // Probes every block's container (open + header/table read), on the pool.
  void ProbeBlocks(store::ObjectStore& store, const std::string& bucket,
                   const AggregateRequest& req, std::string_view codec_name,
                   std::vector<BlockSlot>* slots);
};

namespace {

Awaitable<void> BadRequest(ExtensionContext& ctx, const Status& s) {
  co_await ctx.response.SendError(400, "InvalidRequest", s.message());
}

Awaitable<void> StoreError(ExtensionContext& ctx, const Status& s) {
  if (s.Is(store::StoreError::kNoSuchBucket)) {
    co_await ctx.response.SendError(404, "NoSuchBucket", s.message());
  } else if (s.Is(store::StoreError::kNoSuchKey)) {
    co_await ctx.response.SendError(404, "NoSuchKey", s.message());
  } else {
    co_await ctx.response.SendError(500, "InternalError", s.message());
  }
}

// KVSP endpoints answer with a plain status and a short text body.
Awaitable<void> PlainError(ExtensionContext& ctx, int status, std::string text) {
  text += "\n";
  s3::HeaderList hs = {{"Content-Type", "text/plain"}};
  Status s = co_await ctx.response.Start(status, std::move(hs), text.size());
  if (!s.ok()) co_return;
  if (ctx.request.method != "HEAD") {
    s = co_await ctx.response.Write(AsBytes(text));
    if (!s.ok()) co_return;
  }
  co_await ctx.response.Finish();
}

}  // namespace

void Service::Impl::ProbeBlocks(store::ObjectStore& store, const std::string& bucket,
                                const AggregateRequest& req, std::string_view codec_name,
                                std::vector<BlockSlot>* slots) {
  const size_t n = req.block_keys.size();
  slots->assign(n, BlockSlot{});
  std::vector<std::string> keys;
  keys.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    keys.push_back(BlockObjectKey(req.scope_id, req.compat_id, req.block_keys[i], codec_name));
  }
  // One call: a backend whose Open is a network round trip opens them concurrently.
  auto opened = store.OpenMany(bucket, keys);
  for (size_t i = 0; i < n; ++i) {
    auto& r = opened[i];
    if (r.ok()) {
      (*slots)[i].reader = *r;
      (*slots)[i].status = BlockStatus::kPresent;
    } else {
      (*slots)[i].status = r.status().Is(store::StoreError::kNoSuchKey) ? BlockStatus::kMissing
                                                                        : BlockStatus::kReadError;
    }
  }
  for (size_t base = 0; base < n; base += kProbeBatch) {
    size_t end = std::min(n, base + kProbeBatch);
    std::vector<Bytes> bufs(end - base);
    std::vector<store::RangeRead> reads;
    std::vector<size_t> which;
    for (size_t i = base; i < end; ++i) {
      BlockSlot& s = (*slots)[i];
      if (s.status != BlockStatus::kPresent) continue;
      bufs[i - base].resize(std::min<uint64_t>(s.reader->meta().size, kContainerProbeBytes));
      store::RangeRead rr;
      rr.reader = s.reader.get();
      rr.offset = 0;
      rr.out = bufs[i - base];
      reads.push_back(std::move(rr));
      which.push_back(i);
    }
    store.ReadMany(reads);
    for (size_t k = 0; k < reads.size(); ++k) {
      BlockSlot& s = (*slots)[which[k]];
      if (!reads[k].result.ok()) {
        s.status = BlockStatus::kReadError;
        continue;
      }
      Bytes& b = bufs[which[k] - base];
      b.resize(*reads[k].result);
      uint64_t need = 0;
      auto view = ParseViewFromProbe(b, s.reader->meta().size, &need);
      if (!view.ok() && view.status().code() == Code::kNeedMoreData)
        view = ReadContainerView(*s.reader);
      if (!view.ok()) {
        s.status = BlockStatus::kCorrupt;
        continue;
      }
      if (view->header.compat_id != req.compat_id ||
          view->header.block_key != req.block_keys[which[k]] ||
          kvsp::CodecValue(view->header.codec) != req.codec) {
        s.status = BlockStatus::kCorrupt;  // stored under the wrong name
        continue;
      }
      s.view = std::move(*view);
    }
  }
}

Service::Impl::Paced::Paced(Impl& impl, const AggregateRequest& req, double first_layer_bytes)
    : impl_(impl), on_(impl.options.bandwidth_cap > 0), id_(impl.next_id.fetch_add(1)) {
  if (!on_) return;
  sched::Demand d;
  d.id = id_;
  d.bytes_per_layer = std::max(1.0, first_layer_bytes);
  d.compute_per_layer = double(req.compute_us_per_layer) * 1e-6;
  d.stall_target = double(req.stall_target_us) * 1e-6;
  d.layers_remaining = req.layer_count;
  std::lock_guard<std::mutex> lock(impl_.sched_mu);
  (void)impl_.scheduler.Admit(d, NowSeconds());
}

Service::Impl::Paced::~Paced() {
  if (!on_) return;
  std::lock_guard<std::mutex> lock(impl_.sched_mu);
  (void)impl_.scheduler.Finish(id_, NowSeconds());
}

Awaitable<void> Service::Impl::Paced::Before(asio::any_io_executor ex, double bytes) {
  if (!on_) co_return;
  double rate;
  {
    std::lock_guard<std::mutex> lock(impl_.sched_mu);
    rate = impl_.scheduler.RateOf(id_);
  }
  co_await SleepUntil(ex, pacer_.Reserve(NowSeconds(), bytes, rate));
}

void Service::Impl::Paced::LayerDelivered() {
  if (!on_) return;
  std::lock_guard<std::mutex> lock(impl_.sched_mu);
  (void)impl_.scheduler.LayerDelivered(id_, NowSeconds());
}

Awaitable<Status> Service::Impl::StartStream(ExtensionContext& ctx, const AggregateRequest& req,
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

Awaitable<void> Service::Impl::AggregateGet(ExtensionContext& ctx) {
  auto body = co_await ctx.body.ReadAll(kMaxRequestJsonBytes);
  if (!body.ok()) {
    co_await BadRequest(ctx, body.status());
    co_return;
  }
  auto parsed = ParseAggregateRequest(AsStringView(*body));
  if (!parsed.ok()) {
    co_await BadRequest(ctx, parsed.status());
    co_return;
  }
  auto req = std::make_shared<AggregateRequest>(std::move(*parsed));
  std::shared_ptr<ShmRegistration> reg;
  if (req->shm) {
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
  auto bucket_ok = ctx.store.HeadBucket(ctx.request.bucket);
  if (!bucket_ok.ok()) {
    co_await StoreError(ctx, bucket_ok.status());
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
    OffloadJob job_ = OffloadJob::Start(pool, [this, store, names, req, slots] {
      double t0 = NowSeconds();
      ProbeBlocks(*store, names->first, *req, names->second, slots.get());
      if (std::getenv("KVCS_OBJCACHE_TRACE"))
        std::fprintf(stderr, "probe %.2f ms\n", (NowSeconds() - t0) * 1e3);
    });
    co_await job_.Wait(ctx.executor);
  }

  // Items (layer, block) are planned lazily, window by window, layer-major: memory is O(window)
  // whatever the block and layer counts.
  const uint32_t nb = static_cast<uint32_t>(req->block_keys.size());
  const Components comps = req->components;
  auto plan_item = [slots, comps, nb](uint32_t layer, uint32_t b) {
    return PlanItem(*slots, comps, nb, layer, b);
  };
  double first_layer_bytes = 0;
  for (uint32_t b = 0; b < nb; ++b) {
    Item it = plan_item(req->layer_first, b);
    first_layer_bytes += double(it.record.k_len + it.record.v_len);
  }
  if (reg) {
    co_await AggregateGetShm(ctx, req, slots, reg, first_layer_bytes);
    co_return;
  }

  // Fills `win` with the next items from *next_item (layer index * nb + block): at most
  // window_bytes of block-layer data (at least one item) and kMaxWindowItems items; lays out its
  // planned buffer and starts its reads on the pool.
  const uint64_t total_items = uint64_t{nb} * req->layer_count;
  const uint64_t window_bytes = options.window_bytes;
  auto start_window = [&, slots](uint64_t* next_item, std::shared_ptr<Window> win) {
    win->items.clear();
    uint64_t out = 0, scratch = 0, data = 0;
    while (*next_item < total_items) {
      Item it = plan_item(req->layer_first + uint32_t(*next_item / nb), uint32_t(*next_item % nb));
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
    for (Item& it : win->items) {
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
    return OffloadJob::Start(pool,
                             [win, slots, &store = ctx.store] { store.ReadMany(win->reads); });
  };

  Status st = co_await StartStream(ctx, *req, Delivery::kInline);
  if (!st.ok()) co_return;
  Paced paced(*this, *req, first_layer_bytes);

  auto cur = TakeWindow();
  auto next = TakeWindow();
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
    Window& win = *cur;
    size_t read_idx = 0;
    uint64_t cursor = 0;
    for (Item& it : win.items) {
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
    st = co_await ctx.response.Write(ByteSpan(win.out.data(), cursor));
    if (std::getenv("KVCS_OBJCACHE_TRACE"))
      std::fprintf(stderr, "win %zu wait-read %.2f ms finalize %.2f ms write %.2f ms (%zu B)\n", w,
                   (tw1 - tw0) * 1e3, (tw2 - tw1) * 1e3, (NowSeconds() - tw2) * 1e3,
                   size_t(cursor));
    if (!st.ok()) ok = false;
    for (const Item& it : win.items)
      if (it.last_of_layer) paced.LayerDelivered();
    std::swap(cur, next);
  }
  co_await job.Wait(ctx.executor);  // never leave a read running on freed state
  ReturnWindow(std::move(cur));
  ReturnWindow(std::move(next));
  if (ok) co_await ctx.response.Finish();
}

// Same-host delivery (docs §8): layer i of the request goes into slot i mod S of the client's
// registered buffer, each block at a cache-line-aligned offset; the stream carries only records
// with offsets. Before writing layer i ≥ S the handler waits until the client released layer i - S.
Awaitable<void> Service::Impl::AggregateGetShm(ExtensionContext& ctx,
                                               std::shared_ptr<AggregateRequest> req,
                                               std::shared_ptr<std::vector<BlockSlot>> slots,
                                               std::shared_ptr<ShmRegistration> reg,
                                               double first_layer_bytes) {
  const uint32_t nb = static_cast<uint32_t>(req->block_keys.size());
  const Components comps = req->components;
  const uint32_t nslots = req->shm->slots;
  const uint64_t nonce = req->shm->nonce;
  const uint64_t slot_bytes = reg->buffer().size() / nslots / kShmAlign * kShmAlign;
  auto align = [](uint64_t x) { return (x + kShmAlign - 1) / kShmAlign * kShmAlign; };
  // A slot must hold any requested layer: Σ over blocks of its largest carried layer (exact for
  // fixed-size codecs), checked from the probed tables before a byte is sent.
  uint64_t need = 0;
  const uint32_t last = req->layer_first + req->layer_count - 1;
  for (const BlockSlot& s : *slots) {
    if (s.status != BlockStatus::kPresent) continue;
    uint64_t m = 0;
    for (const kvsp::LayerEntry& e : s.view.layers) {
      if (e.layer < req->layer_first || e.layer > last) continue;
      m = std::max(
          m, (comps == Components::kV ? 0 : e.k_len) + (comps == Components::kK ? 0 : e.v_len));
    }
    need += align(m);
  }
  if (need > slot_bytes) {
    co_await ctx.response.SendError(
        400, "InvalidRequest",
        "shm buffer too small: a layer of this request needs up to " + std::to_string(need) +
            " bytes and the buffer holds " + std::to_string(nslots) + " slots of " +
            std::to_string(slot_bytes) + " bytes; register at least " +
            std::to_string(need * nslots) + " bytes or ask for fewer slots");
    co_return;
  }

  Status st = co_await StartStream(ctx, *req, Delivery::kShm);
  if (!st.ok()) co_return;
  Paced paced(*this, *req, first_layer_bytes);
  Bytes frame;
  // k or v alone: K+V are read into a window's scratch to check the producer's layer digest.
  auto scratch_win = comps == Components::kKV ? nullptr : TakeWindow();
  uint8_t* const buf = reg->buffer().data();
  bool abandoned = false;
  std::vector<Item> items;
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
      cursor += align(items.back().record.k_len + items.back().record.v_len);
    }
    // Reads in batches of at most window_bytes (the scratch of k/v-only requests) and
    // kMaxWindowItems, each run on the store's threads.
    frame.clear();
    EncodeLayerFrameHead(static_cast<uint16_t>(layer), nb, &frame, Delivery::kShm);
    uint64_t carried_bytes = 0;
    for (uint32_t b0 = 0; b0 < nb;) {
      auto reads = std::make_shared<std::vector<store::RangeRead>>();
      if (scratch_win) {  // sized before any span points into it: no reallocation in the batch
        uint64_t want = std::max<uint64_t>(options.window_bytes, items[b0].read_len);
        if (scratch_win->scratch.size() < want) scratch_win->scratch.resize(want);
      }
      uint64_t batch = 0;
      uint32_t b1 = b0;
      for (; b1 < nb; ++b1) {
        const Item& it = items[b1];
        if (b1 > b0 && (batch + it.read_len > options.window_bytes || b1 - b0 == kMaxWindowItems))
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
            pool, [reads, slots, reg, scratch_win, &store = ctx.store] { store.ReadMany(*reads); });
        co_await job.Wait(ctx.executor);
      }
      size_t r = 0;
      for (uint32_t b = b0; b < b1; ++b) {
        const Item& it = items[b];
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
  if (scratch_win) ReturnWindow(std::move(scratch_win));
  if (!st.ok()) co_return;
  frame.clear();
  EncodeEndFrame(abandoned ? kEndShmAbandoned : 0, &frame);
  st = co_await ctx.response.Write(frame);
  if (st.ok()) co_await ctx.response.Finish();
}

namespace {

// One container of an aggregated PUT handed to put_pool: its bytes, and what verifying and
// committing it gave (the parsed view and the stored key, or the error).
struct PutJob {
  std::shared_ptr<BlockBytes> bytes;
  std::shared_ptr<Result<std::pair<kvsp::ContainerView, std::string>>> outcome;
  OffloadJob job;
};

// Verifies one container (structure and every layer digest) and stores it atomically (the
// store's Commit: temporary file, fsync, rename, directory fsync). Runs on put_pool.
Result<std::pair<kvsp::ContainerView, std::string>> VerifyAndStore(store::ObjectStore& store,
                                                                   const std::string& bucket,
                                                                   const Digest& scope,
                                                                   ByteSpan cont) {
  KVCS_ASSIGN_OR_RETURN(kvsp::ContainerView view, kvsp::DecodeContainer(cont));
  std::string key = BlockObjectKey(scope, view.header.compat_id, view.header.block_key,
                                   kvsp::CodecName(view.header.codec));
  store::PutOptions po;
  po.content_type = kContainerContentType;
  po.expected_size = cont.size();
  KVCS_ASSIGN_OR_RETURN(std::unique_ptr<store::ObjectWriter> w, store.Put(bucket, key, po));
  KVCS_RETURN_IF_ERROR(w->Write(cont));
  KVCS_RETURN_IF_ERROR(w->Commit().status());
  return std::make_pair(std::move(view), std::move(key));
}

// The state of one aggregated PUT: the jobs in flight (index order), the results so far, and the
// container buffers. Used by the request's coroutine only (one thread at a time).
struct PutPipeline {
  std::deque<PutJob> in_flight;
  std::vector<std::shared_ptr<BlockBytes>> spare;  // buffers of finished jobs, for reuse
  uint64_t held = 0;  // capacity of every buffer in flight or spare: kMaxPutInFlightBytes bounds it
  nlohmann::json results = nlohmann::json::array();
  uint32_t stored = 0;
  std::vector<Digest> chain;  // block keys of the stored containers, in order
  std::optional<Digest> chain_compat;
  bool chain_ok = true;

  // A buffer for a container of `len` bytes within the bounds: a spare one that fits, else a new
  // one once freeing spares makes room (alone, one always fits). Null: retire a job first.
  std::shared_ptr<BlockBytes> TakeBuffer(uint64_t len) {
    auto fit = std::find_if(spare.begin(), spare.end(),
                            [len](const auto& b) { return b->capacity() >= len; });
    if (fit != spare.end()) {
      auto buf = std::move(*fit);
      spare.erase(fit);
      return buf;
    }
    while (!spare.empty() && held + len > kMaxPutInFlightBytes) {
      held -= spare.back()->capacity();
      spare.pop_back();
    }
    if (held + len > kMaxPutInFlightBytes && !in_flight.empty()) return nullptr;
    auto buf = std::make_shared<BlockBytes>();
    buf->reserve(len);
    held += buf->capacity();
    return buf;
  }

  // Waits for the oldest job, records its result and keeps its buffer for reuse.
  // REQUIRES: !in_flight.empty().
  Awaitable<void> RetireOldest(asio::any_io_executor ex) {
    PutJob j = std::move(in_flight.front());
    in_flight.pop_front();
    co_await j.job.Wait(ex);
    nlohmann::json r;
    r["index"] = results.size();
    if (j.outcome->ok()) {
      const auto& [view, key] = **j.outcome;
      r["status"] = "ok";
      r["key"] = key;
      r["block_key"] = ToHex(view.header.block_key);
      ++stored;
      if (chain_compat && *chain_compat != view.header.compat_id) chain_ok = false;
      chain_compat = view.header.compat_id;
      chain.push_back(view.header.block_key);
    } else {
      r["status"] = "error";
      r["message"] = j.outcome->status().message();
      chain_ok = false;
    }
    results.push_back(std::move(r));
    spare.push_back(std::move(j.bytes));
  }
};

}  // namespace

// The containers of one aggregated PUT are a pipeline: the connection's coroutine reads container
// i+1 from the socket while containers ..i are verified and committed on put_pool, several
// at once so that their fsyncs (waits on the disk) overlap with each other and with the hashing of
// the next ones. Results are collected in index order (the oldest job is always the one awaited),
// and every path out of the handler (the answer, a 400 for a malformed or truncated body) first
// waits for every job it started, so what the client is told is already durable, and no job
// outlives the request.
Awaitable<void> Service::Impl::AggregatePut(ExtensionContext& ctx) {
  // Containers are stored as they arrive, each checked against its own digests. A signed payload
  // (a whole-body hash, or aws-chunked signatures) is checked only at the end of the body or of
  // each chunk, after the containers in it were stored: a request replayed with another body would
  // then store blocks nobody signed. So only UNSIGNED-PAYLOAD is accepted, as for S3 itself over
  // HTTPS: the body's integrity in transit is TLS's, its content's the containers' digests.
  if (ctx.request.Header("x-amz-content-sha256").value_or("") != s3::kUnsignedPayload) {
    co_await ctx.response.SendError(
        400, "InvalidRequest",
        "an aggregated PUT must be sent with x-amz-content-sha256: UNSIGNED-PAYLOAD (blocks are "
        "stored as they arrive, before a whole-body or chunk signature could be checked; each "
        "container is verified by its own digests; use HTTPS for integrity in transit)");
    co_return;
  }
  Bytes hb(kPutHeaderBytes);
  auto n = co_await ReadFull(ctx.body, hb);
  if (!n.ok()) {
    co_await BadRequest(ctx, n.status());
    co_return;
  }
  hb.resize(*n);
  auto header = ParsePutHeader(hb);
  if (!header.ok()) {
    co_await BadRequest(ctx, header.status());
    co_return;
  }
  auto bucket_ok = ctx.store.HeadBucket(ctx.request.bucket);
  if (!bucket_ok.ok()) {
    co_await StoreError(ctx, bucket_ok.status());
    co_return;
  }
  // Strings reach the jobs through the heap (see the NOTE on OffloadJob).
  auto bucket = std::make_shared<const std::string>(ctx.request.bucket);
  store::ObjectStore* store_ptr = &ctx.store;
  const Digest scope = header->scope_id;
  PutPipeline p;
  std::optional<Status> bad;  // a malformed or truncated body: 400 once the jobs are done
  for (uint32_t i = 0; i < header->count; ++i) {
    uint8_t lb[8];
    n = co_await ReadFull(ctx.body, lb);
    if (!n.ok() || *n != 8) {
      bad = n.ok() ? InvalidArgument("aggregate put: body truncated") : n.status();
      break;
    }
    const uint64_t len = LoadBe64(lb);
    if (len > kMaxPutContainerBytes || len < kvsp::kFixedHeaderBytes) {
      bad = InvalidArgument("aggregate put: container length out of range");
      break;
    }
    // A buffer for this container within the bounds: reuse a spare one that fits, else free
    // spares and retire jobs until a new one fits (alone, it always does).
    while (p.in_flight.size() >= kMaxPutInFlight) co_await p.RetireOldest(ctx.executor);
    std::shared_ptr<BlockBytes> buf;
    for (;;) {
      buf = p.TakeBuffer(len);
      if (buf) break;
      co_await p.RetireOldest(ctx.executor);
    }
    buf->resize(len);  // no zero-fill (DefaultInitAllocator): ReadFull writes every byte
    n = co_await ReadFull(ctx.body, *buf);
    if (!n.ok() || *n != len) {
      bad = n.ok() ? InvalidArgument("aggregate put: body truncated") : n.status();
      break;
    }
    PutJob j;
    j.bytes = std::move(buf);
    j.outcome = std::make_shared<Result<std::pair<kvsp::ContainerView, std::string>>>(
        Status(Code::kInternal, "not run"));
    j.job = OffloadJob::Start(put_pool, [b = j.bytes, out = j.outcome, store_ptr, bucket, scope] {
      *out = VerifyAndStore(*store_ptr, *bucket, scope, ByteSpan(b->data(), b->size()));
    });
    p.in_flight.push_back(std::move(j));
  }
  while (!p.in_flight.empty()) co_await p.RetireOldest(ctx.executor);
  p.spare.clear();
  if (bad) {
    co_await BadRequest(ctx, *bad);
    co_return;
  }
  nlohmann::json resp;
  resp["stored"] = p.stored;
  resp["blocks"] = std::move(p.results);
  if (header->flags & kPutFlagPrefixRecord) {
    if (p.chain_ok && !p.chain.empty()) {
      PrefixRecord rec{*p.chain_compat, p.chain.back(), p.chain};
      auto key = std::make_shared<std::string>(
          PrefixRecordKey(header->scope_id, rec.compat_id, rec.anchor_key));
      auto text = std::make_shared<std::string>(EncodePrefixRecord(rec));
      auto st = std::make_shared<Status>(Status::Ok());
      {  // a durable write (fsyncs): off the connection thread like the containers
        OffloadJob job_ = OffloadJob::Start(put_pool, [store_ptr, bucket, key, text, st] {
          auto w = store_ptr->Put(*bucket, *key, {});
          *st = w.ok() ? (*w)->Write(AsBytes(*text)) : w.status();
          if (st->ok()) *st = (*w)->Commit().status();
        });
        co_await job_.Wait(ctx.executor);
      }
      if (st->ok()) {
        resp["prefix_record"] = *key;
      } else {
        resp["prefix_record_error"] = st->message();
      }
    } else {
      resp["prefix_record_error"] = "not every container was stored, or compat_ids differ";
    }
  }
  std::string text = resp.dump();
  s3::HeaderList json_headers = {{"Content-Type", "application/json"}};
  Status s = co_await ctx.response.Start(200, std::move(json_headers), text.size());
  if (!s.ok()) co_return;
  s = co_await ctx.response.Write(AsBytes(text));
  if (!s.ok()) co_return;
  co_await ctx.response.Finish();
}

// Splits "/_kvsp/<kind>/<compat>/<key>" into compat and key; false when malformed.
static bool SplitKvspPath(std::string_view path, std::string_view prefix, Digest* compat,
                          Digest* key) {
  if (path.substr(0, prefix.size()) != prefix) return false;
  std::string_view rest = path.substr(prefix.size());
  size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return false;
  std::string_view c = rest.substr(0, slash), k = rest.substr(slash + 1);
  if (!IsLowerHex(c, 64) || !IsLowerHex(k, 64)) return false;
  *compat = ParseHex64(c);
  *key = ParseHex64(k);
  return true;
}

// What both KVSP endpoints take from a request (kvsp.md §8): the path's compat_id and key, the
// KVSP-Scope-ID header and the codec query parameter (default raw).
struct KvspHead {
  Digest compat, key, scope;
  std::string codec_name;
};
// Empty when the request is well-formed; otherwise the 400 message. `usage` names the path form.
static std::string ParseKvspHead(const s3::ExtensionRequest& rq, std::string_view prefix,
                                 std::string_view usage, KvspHead* h) {
  if (!SplitKvspPath(rq.path, prefix, &h->compat, &h->key)) {
    return "expected " + std::string(usage) + " (64 hex each)";
  }
  auto scope_h = rq.Header("KVSP-Scope-ID");
  if (!scope_h || !IsLowerHex(*scope_h, 64))
    return "KVSP-Scope-ID header (64 lowercase hex) required";
  h->scope = ParseHex64(*scope_h);
  h->codec_name = std::string(rq.Query("codec").value_or("raw"));
  if (!kvsp::CodecFromName(h->codec_name).ok()) return "unknown codec";
  return "";
}

// A decimal of 1..max_digits digits and nothing else; false otherwise.
static bool ParseSmallDecimal(std::string_view s, size_t max_digits, uint64_t* out) {
  if (s.empty() || s.size() > max_digits) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + uint64_t(c - '0');
  }
  *out = v;
  return true;
}

Awaitable<void> Service::Impl::KvspBlock(ExtensionContext& ctx) {
  const auto& rq = ctx.request;
  KvspHead head;
  std::string bad =
      ParseKvspHead(rq, kKvspBlocksPrefix, "/_kvsp/blocks/<compat_id>/<block_key>", &head);
  if (!bad.empty()) {
    co_await PlainError(ctx, 400, std::move(bad));
    co_return;
  }
  const Digest &compat = head.compat, &key = head.key, &scope = head.scope;
  const std::string& codec_name = head.codec_name;
  std::optional<std::pair<uint32_t, uint32_t>> range;
  if (auto l = rq.Query("layers")) {
    size_t dash = l->find('-');
    uint64_t a = 0, b = 0;
    bool good = dash != std::string_view::npos && ParseSmallDecimal(l->substr(0, dash), 5, &a) &&
                ParseSmallDecimal(l->substr(dash + 1), 5, &b) && a <= b && b < kLayerLimit;
    if (!good) {
      co_await PlainError(ctx, 400, "layers must be a-b (inclusive, a <= b)");
      co_return;
    }
    range = std::make_pair(static_cast<uint32_t>(a), static_cast<uint32_t>(b));
  }
  std::shared_ptr<const store::ObjectReader> reader;
  {
    auto r = ctx.store.Open(options.kv_bucket, BlockObjectKey(scope, compat, key, codec_name));
    if (!r.ok()) {
      if (!r.status().Is(store::StoreError::kNoSuchKey) &&
          !r.status().Is(store::StoreError::kNoSuchBucket)) {
        co_await PlainError(ctx, 500, r.status().message());
        co_return;
      }
      store::ListOptions lo;
      lo.prefix = BlockObjectKeyPrefix(scope, compat, key);
      lo.max_keys = 1;
      auto other = ctx.store.List(options.kv_bucket, lo);
      bool held = other.ok() && !other->objects.empty();
      co_await PlainError(ctx, held ? 406 : 404,
                          held ? "codec not available for this block" : "block not held");
      co_return;
    }
    reader = *r;
  }
  if (reader->meta().size > kMaxServedContainerBytes) {
    co_await PlainError(ctx, 500, "container too large to serve");
    co_return;
  }
  // Read and verify the whole container (KiB..MiB), off the connection thread.
  auto whole = std::make_shared<Bytes>(reader->meta().size);
  auto view = std::make_shared<Result<kvsp::ContainerView>>(Status(Code::kInternal, "not run"));
  {
    OffloadJob job_ = OffloadJob::Start(pool, [reader, whole, view] {
      auto n = reader->ReadAt(0, *whole);
      if (!n.ok()) {
        *view = n.status();
        return;
      }
      if (*n != whole->size()) {
        *view = IoError("short read");
        return;
      }
      *view = kvsp::DecodeContainer(*whole);
    });
    co_await job_.Wait(ctx.executor);
  }
  if (!view->ok() || (*view)->header.compat_id != compat || (*view)->header.block_key != key) {
    co_await PlainError(ctx, 500, "stored container failed verification");
    co_return;
  }
  const kvsp::ContainerView& v = **view;
  uint32_t first = v.header.layer_first, last = first + v.header.layer_count - 1;
  Bytes sub;
  ByteSpan send = *whole;
  std::string etag = "\"" + ToHex(key) + "." + codec_name + "\"";
  if (range && (range->first != first || range->second != last)) {
    if (range->first < first || range->second > last) {
      co_await PlainError(ctx, 416, "layer range not held");
      co_return;
    }
    std::vector<kvsp::LayerSections> secs;
    for (uint32_t l = range->first; l <= range->second; ++l) {
      auto lb = kvsp::LayerBytes(v, *whole, l);
      if (!lb.ok()) {
        co_await PlainError(ctx, 500, lb.status().message());
        co_return;
      }
      secs.push_back(*lb);
    }
    kvsp::ContainerHeader h = v.header;
    h.layer_first = static_cast<uint16_t>(range->first);
    auto enc = kvsp::EncodeContainer(h, secs);
    if (!enc.ok()) {
      co_await PlainError(ctx, 500, enc.status().message());
      co_return;
    }
    sub = std::move(*enc);
    send = sub;
    etag = "\"" + ToHex(key) + "." + codec_name + "." + std::to_string(range->first) + "-" +
           std::to_string(range->second) + "\"";
  }
  s3::HeaderList block_headers = {{"Content-Type", kContainerContentType},
                                  {"ETag", etag},
                                  {"Cache-Control", "public, max-age=31536000, immutable"}};
  Status s = co_await ctx.response.Start(200, std::move(block_headers), send.size());
  if (!s.ok() || rq.method == "HEAD") {
    if (s.ok()) co_await ctx.response.Finish();
    co_return;
  }
  for (size_t off = 0; off < send.size(); off += kKvspChunkBytes) {
    s = co_await ctx.response.Write(
        send.subspan(off, std::min(kKvspChunkBytes, send.size() - off)));
    if (!s.ok()) co_return;
  }
  co_await ctx.response.Finish();
}

Awaitable<void> Service::Impl::KvspPrefix(ExtensionContext& ctx) {
  const auto& rq = ctx.request;
  KvspHead head;
  std::string bad =
      ParseKvspHead(rq, kKvspPrefixPrefix, "/_kvsp/prefix/<compat_id>/<anchor_key>", &head);
  if (!bad.empty()) {
    co_await PlainError(ctx, 400, std::move(bad));
    co_return;
  }
  const Digest &compat = head.compat, &anchor = head.key, &scope = head.scope;
  const std::string& codec_name = head.codec_name;
  uint64_t from = 1;
  if (auto f = rq.Query("from")) {
    // At most 6 digits: a prefix never holds a million blocks (kvsp.md §8 indexes from 1).
    if (!ParseSmallDecimal(*f, 6, &from)) from = 0;
    if (from == 0) {
      co_await PlainError(ctx, 400, "from must be a block index >= 1");
      co_return;
    }
  }
  auto rec_reader = ctx.store.Open(options.kv_bucket, PrefixRecordKey(scope, compat, anchor));
  if (!rec_reader.ok()) {
    co_await PlainError(ctx, 404, "no prefix record for this anchor");
    co_return;
  }
  if ((*rec_reader)->meta().size > kMaxPrefixRecordBytes) {
    co_await PlainError(ctx, 500, "prefix record too large");
    co_return;
  }
  Bytes text((*rec_reader)->meta().size);
  auto rn = (*rec_reader)->ReadAt(0, text);
  auto rec = rn.ok() ? ParsePrefixRecord(AsStringView(ByteSpan(text.data(), *rn)))
                     : Result<PrefixRecord>(rn.status());
  if (!rec.ok() || rec->compat_id != compat || rec->anchor_key != anchor) {
    co_await PlainError(ctx, 500, "prefix record is damaged");
    co_return;
  }
  if (from > rec->block_keys.size()) {
    co_await PlainError(ctx, 416, "from is past the anchor");
    co_return;
  }
  std::vector<std::shared_ptr<const store::ObjectReader>> readers;
  uint64_t total = 0;
  for (size_t i = from - 1; i < rec->block_keys.size(); ++i) {
    auto r = ctx.store.Open(options.kv_bucket,
                            BlockObjectKey(scope, compat, rec->block_keys[i], codec_name));
    if (!r.ok()) {
      co_await PlainError(ctx, 404, "block " + std::to_string(i + 1) + " of the prefix not held");
      co_return;
    }
    if ((*r)->meta().size > kMaxServedContainerBytes) {
      co_await PlainError(ctx, 500, "container too large to serve");
      co_return;
    }
    total += (*r)->meta().size;
    readers.push_back(*r);
  }
  s3::HeaderList prefix_headers = {{"Content-Type", "application/vnd.kvsp.container-stream"}};
  Status s = co_await ctx.response.Start(200, std::move(prefix_headers), total);
  if (!s.ok()) co_return;
  for (size_t i = 0; i < readers.size(); ++i) {
    auto whole = std::make_shared<Bytes>(readers[i]->meta().size);
    auto ok = std::make_shared<Status>();
    Digest want_key = rec->block_keys[from - 1 + i];
    {
      OffloadJob job_ = OffloadJob::Start(pool, [r = readers[i], whole, ok, compat, want_key] {
        auto n = r->ReadAt(0, *whole);
        if (!n.ok() || *n != whole->size()) {
          *ok = IoError("short read");
          return;
        }
        auto v = kvsp::DecodeContainer(*whole);
        if (!v.ok())
          *ok = v.status();
        else if (v->header.compat_id != compat || v->header.block_key != want_key)
          *ok = Corruption("container stored under the wrong name");
      });
      co_await job_.Wait(ctx.executor);
    }
    if (!ok->ok()) co_return;  // abort: the client sees a truncated body, never bad bytes
    s = co_await ctx.response.Write(*whole);
    if (!s.ok()) co_return;
  }
  co_await ctx.response.Finish();
}

Service::Service(ServiceOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Service::~Service() = default;

Status Service::ListenShm(const std::string& path) {
  if (impl_->shm) return InvalidArgument("shm socket: already listening on " + impl_->shm->path());
  ShmServerOptions o;
  o.path = path;
  KVCS_ASSIGN_OR_RETURN(impl_->shm, ShmServer::Start(std::move(o)));
  return Status::Ok();
}

std::vector<s3::Extension> Service::Extensions() {
  Impl* impl = impl_.get();
  std::vector<s3::Extension> ext;
  ext.push_back(s3::Extension{"objcache-aggregate", s3::ExtensionAuth::kSigV4,
                              [](const s3::ExtensionRequest& r) {
                                return r.method == "POST" && !r.bucket.empty() && r.key.empty() &&
                                       r.HasQuery(kAggregateQuery);
                              },
                              [impl](ExtensionContext& ctx) { return impl->AggregateGet(ctx); }});
  ext.push_back(s3::Extension{"objcache-aggregate-put", s3::ExtensionAuth::kSigV4,
                              [](const s3::ExtensionRequest& r) {
                                return r.method == "POST" && !r.bucket.empty() && r.key.empty() &&
                                       r.HasQuery(kAggregatePutQuery);
                              },
                              [impl](ExtensionContext& ctx) { return impl->AggregatePut(ctx); }});
  ext.push_back(s3::Extension{"kvsp-blocks", s3::ExtensionAuth::kNone,
                              [](const s3::ExtensionRequest& r) {
                                return (r.method == "GET" || r.method == "HEAD") &&
                                       r.path.rfind(kKvspBlocksPrefix, 0) == 0;
                              },
                              [impl](ExtensionContext& ctx) { return impl->KvspBlock(ctx); }});
  ext.push_back(s3::Extension{"kvsp-prefix", s3::ExtensionAuth::kNone,
                              [](const s3::ExtensionRequest& r) {
                                return r.method == "GET" && r.path.rfind(kKvspPrefixPrefix, 0) == 0;
                              },
                              [impl](ExtensionContext& ctx) { return impl->KvspPrefix(ctx); }});
  return ext;
}

}  // namespace kvcs::objcache
