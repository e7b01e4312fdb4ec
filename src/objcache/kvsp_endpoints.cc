// The KVSP retrieval endpoints. See kvsp_endpoints.h.
#include "objcache/kvsp_endpoints.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/hex.h"
#include "kvsp/codec.h"
#include "kvsp/container.h"
#include "objcache/aggregate_wire.h"
#include "objcache/block_layout.h"
#include "objcache/offload_job.h"
#include "objcache/service_resources.h"

namespace kvcs::objcache {

using s3::Awaitable;
using s3::ExtensionContext;

namespace {

// A container the KVSP endpoints read whole to verify before serving. Real containers are
// KiB..MiB; larger ones are refused rather than buffered.
constexpr uint64_t kMaxServedContainerBytes = 256ull << 20;
// Chunk of a streamed KVSP response.
constexpr size_t kKvspChunkBytes = 1u << 20;

Digest ParseHex64(std::string_view s) {
  Digest d{};
  auto r = FromHexFixed<32>(s);
  if (r.ok()) d = *r;
  return d;
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

// Splits "/_kvsp/<kind>/<compat>/<key>" into compat and key; false when malformed.
bool SplitKvspPath(std::string_view path, std::string_view prefix, Digest* compat, Digest* key) {
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
std::string ParseKvspHead(const s3::ExtensionRequest& rq, std::string_view prefix,
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
bool ParseSmallDecimal(std::string_view s, size_t max_digits, uint64_t* out) {
  if (s.empty() || s.size() > max_digits) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + uint64_t(c - '0');
  }
  *out = v;
  return true;
}

}  // namespace

Awaitable<void> KvspEndpoints::ServeBlock(ExtensionContext& ctx) {
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
    auto r = ctx.store.Open(res_.options.kv_bucket, BlockObjectKey(scope, compat, key, codec_name));
    if (!r.ok()) {
      if (!r.status().Is(store::StoreError::kNoSuchKey) &&
          !r.status().Is(store::StoreError::kNoSuchBucket)) {
        co_await PlainError(ctx, 500, r.status().message());
        co_return;
      }
      store::ListOptions lo;
      lo.prefix = BlockObjectKeyPrefix(scope, compat, key);
      lo.max_keys = 1;
      auto other = ctx.store.List(res_.options.kv_bucket, lo);
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
    OffloadJob job_ = OffloadJob::Start(res_.pool, [reader, whole, view] {
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

Awaitable<void> KvspEndpoints::ServePrefix(ExtensionContext& ctx) {
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
  auto rec_reader = ctx.store.Open(res_.options.kv_bucket, PrefixRecordKey(scope, compat, anchor));
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
    auto r = ctx.store.Open(res_.options.kv_bucket,
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
      OffloadJob job_ = OffloadJob::Start(res_.pool, [r = readers[i], whole, ok, compat, want_key] {
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

}  // namespace kvcs::objcache
