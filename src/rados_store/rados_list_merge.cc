#include "rados_store/rados_list_merge.h"

#include <algorithm>
#include <deque>
#include <utility>
#include <vector>

namespace kvcs::rados_store {

namespace {

struct Cursor {
  std::deque<std::pair<std::string, std::string>> buf;
  bool more = true;
  std::string after;  // the next read starts after this key
};

bool StartsWith(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(0, p.size(), p) == 0;
}

}  // namespace

Result<store::ListResult> MergeShardLists(uint32_t shards, const store::ListOptions& o,
                                          const FetchShards& fetch, const DecodeEntry& decode) {
  store::ListResult out;
  const int max_keys = std::clamp(o.max_keys, 0, store::kMaxListKeys);
  if (max_keys == 0 || shards == 0) return out;
  // Keys spread evenly over the shards: twice a shard's share (and a few) per read, at most S3's
  // page of 1000.
  const uint64_t page =
      std::min<uint64_t>(store::kMaxListKeys, 2 * static_cast<uint64_t>(max_keys) / shards + 16);
  std::vector<Cursor> cur(shards);
  for (Cursor& c : cur) c.after = o.start_after;
  auto refill = [&]() -> Status {
    std::vector<ShardQuery> q;
    for (uint32_t s = 0; s < shards; ++s) {
      if (cur[s].buf.empty() && cur[s].more) {
        q.push_back({s, cur[s].after, o.prefix, page, Status(Code::kInternal, "not run")});
      }
    }
    if (q.empty()) return Status::Ok();
    fetch(q);
    for (ShardQuery& sq : q) {
      if (!sq.page.ok()) return sq.page.status();
      Cursor& c = cur[sq.shard];
      c.more = sq.page->more && !sq.page->entries.empty();
      std::string page_last = c.after;
      for (auto& e : sq.page->entries) {
        page_last = std::max(page_last, e.first);
        if (e.first <= c.after) continue;  // never go backwards
        c.buf.push_back(std::move(e));
      }
      c.after = page_last;
    }
    return Status::Ok();
  };
  // Past every key that begins with `cp` (keys are at most kMaxKeyBytes long).
  auto skip_group = [&](const std::string& cp) {
    const std::string past =
        cp +
        std::string(store::kMaxKeyBytes + 1 - std::min(cp.size(), store::kMaxKeyBytes), '\xff');
    for (Cursor& c : cur) {
      while (!c.buf.empty() && StartsWith(c.buf.front().first, cp)) c.buf.pop_front();
      if (c.buf.empty() && c.more && c.after < past) c.after = past;
    }
  };
  int count = 0;
  std::string last;
  for (;;) {
    KVCS_RETURN_IF_ERROR(refill());
    int best = -1;
    for (uint32_t s = 0; s < shards; ++s) {
      if (!cur[s].buf.empty() &&
          (best < 0 || cur[s].buf.front().first < cur[best].buf.front().first)) {
        best = static_cast<int>(s);
      }
    }
    if (best < 0) break;
    const std::string& key = cur[best].buf.front().first;
    if (!o.delimiter.empty()) {
      const size_t pos = key.find(o.delimiter, o.prefix.size());
      if (pos != std::string::npos) {
        std::string cp = key.substr(0, pos + o.delimiter.size());
        if (o.start_after.empty() || cp > o.start_after) {
          if (count == max_keys) {
            out.truncated = true;
            break;
          }
          out.common_prefixes.push_back(cp);
          ++count;
          last = cp;
        }
        skip_group(cp);
        continue;
      }
    }
    if (count == max_keys) {
      out.truncated = true;
      break;
    }
    KVCS_ASSIGN_OR_RETURN(store::ObjectMeta m, decode(key, cur[best].buf.front().second));
    last = key;
    out.objects.push_back(std::move(m));
    ++count;
    cur[best].buf.pop_front();
  }
  if (out.truncated) out.next_marker = last;
  return out;
}

}  // namespace kvcs::rados_store
