// The plan of an aggregated GET. See aggregate_plan.h.
#include "objcache/aggregate_plan.h"

#include <algorithm>
#include <utility>

#include "kvsp/codec.h"
#include "objcache/block_layout.h"

namespace kvcs::objcache {

namespace {

// Blocks probed per ReadMany batch when reading container headers (4 KiB each): bounds the probe
// memory to 4 MiB whatever the block count.
constexpr size_t kProbeBatch = 1024;

}  // namespace

void ProbeBlocks(store::ObjectStore& store, const std::string& bucket, const AggregateRequest& req,
                 std::string_view codec_name, std::vector<BlockSlot>* slots) {
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

PlannedItem PlanItem(const std::vector<BlockSlot>& slots, Components comps, uint32_t nb,
                     uint32_t layer, uint32_t b) {
  PlannedItem it;
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

uint64_t PacedLayerBytes(const std::vector<BlockSlot>& slots, Components comps, uint32_t layer,
                         Delivery delivery) {
  const uint32_t nb = static_cast<uint32_t>(slots.size());
  const uint64_t record = delivery == Delivery::kShm ? kShmBlockRecordBytes : kBlockRecordBytes;
  uint64_t bytes = kLayerFrameHeadBytes;
  for (uint32_t b = 0; b < nb; ++b) {
    PlannedItem it = PlanItem(slots, comps, nb, layer, b);
    bytes += record + it.record.k_len + it.record.v_len;
  }
  return bytes;
}

BlockRecord FinalizeItem(const PlannedItem& it, const store::RangeRead* rr, const BlockSlot& slot,
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

}  // namespace kvcs::objcache
