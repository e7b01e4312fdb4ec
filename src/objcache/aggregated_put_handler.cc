// The aggregated PUT handler. See aggregated_put_handler.h.
#include "objcache/aggregated_put_handler.h"

#include <algorithm>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/hex.h"
#include "kvsp/codec.h"
#include "kvsp/container.h"
#include "objcache/aggregate_wire.h"
#include "objcache/block_layout.h"
#include "objcache/handler_errors.h"
#include "objcache/offload_job.h"
#include "objcache/service_resources.h"
#include "s3/access.h"
#include "s3/sigv4.h"

namespace kvcs::objcache {

namespace asio = boost::asio;
using s3::Awaitable;
using s3::ExtensionContext;

namespace {

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
  std::vector<Digest> chain;               // block keys of the stored containers, in order
  std::vector<StoredBlock> stored_blocks;  // for ServiceOptions::events
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
  Awaitable<void> RetireOldest(asio::any_io_executor ex, Digest scope) {
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
      stored_blocks.push_back({scope, view.header.compat_id, view.header.block_key,
                               view.header.codec, view.header.layer_first,
                               view.header.layer_count});
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
Awaitable<void> AggregatedPutHandler::Handle(ExtensionContext& ctx) {
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
  // Only the bucket's owner (s3/access.h): others get 403 AccessDenied.
  Status bucket_ok = s3::CheckBucketAccess(ctx.store, ctx.request.bucket, ctx.request.user_id);
  if (!bucket_ok.ok()) {
    co_await StoreError(ctx, bucket_ok);
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
    while (p.in_flight.size() >= kMaxPutInFlight) co_await p.RetireOldest(ctx.executor, scope);
    std::shared_ptr<BlockBytes> buf;
    for (;;) {
      buf = p.TakeBuffer(len);
      if (buf) break;
      co_await p.RetireOldest(ctx.executor, scope);
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
    j.job =
        OffloadJob::Start(res_.put_pool, [b = j.bytes, out = j.outcome, store_ptr, bucket, scope] {
          *out = VerifyAndStore(*store_ptr, *bucket, scope, ByteSpan(b->data(), b->size()));
        });
    p.in_flight.push_back(std::move(j));
  }
  while (!p.in_flight.empty()) co_await p.RetireOldest(ctx.executor, scope);
  p.spare.clear();
  if (bad) {
    // The containers before the bad part are stored and durable: announce them too.
    if (res_.options.events && !p.stored_blocks.empty()) {
      res_.options.events->OnStored(ctx.request.bucket, p.stored_blocks, std::nullopt);
    }
    co_await BadRequest(ctx, *bad);
    co_return;
  }
  nlohmann::json resp;
  resp["stored"] = p.stored;
  resp["blocks"] = std::move(p.results);
  std::optional<Digest> anchor;  // the chain's anchor, when its prefix record was written
  if (header->flags & kPutFlagPrefixRecord) {
    if (p.chain_ok && !p.chain.empty()) {
      PrefixRecord rec{*p.chain_compat, p.chain.back(), p.chain};
      auto key = std::make_shared<std::string>(
          PrefixRecordKey(header->scope_id, rec.compat_id, rec.anchor_key));
      auto text = std::make_shared<std::string>(EncodePrefixRecord(rec));
      auto st = std::make_shared<Status>(Status::Ok());
      {  // a durable write (fsyncs): off the connection thread like the containers
        OffloadJob job_ = OffloadJob::Start(res_.put_pool, [store_ptr, bucket, key, text, st] {
          auto w = store_ptr->Put(*bucket, *key, {});
          *st = w.ok() ? (*w)->Write(AsBytes(*text)) : w.status();
          if (st->ok()) *st = (*w)->Commit().status();
        });
        co_await job_.Wait(ctx.executor);
      }
      if (st->ok()) {
        resp["prefix_record"] = *key;
        anchor = rec.anchor_key;
      } else {
        resp["prefix_record_error"] = st->message();
      }
    } else {
      resp["prefix_record_error"] = "not every container was stored, or compat_ids differ";
    }
  }
  // What is durable now, for the owner to announce (it queues; it never blocks the answer).
  if (res_.options.events && !p.stored_blocks.empty()) {
    res_.options.events->OnStored(ctx.request.bucket, p.stored_blocks, anchor);
  }
  co_await SendJson(ctx, resp.dump());
}

}  // namespace kvcs::objcache
