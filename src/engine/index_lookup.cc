#include "engine/index_lookup.h"

#include <algorithm>
#include <chrono>
#include <string_view>
#include <utility>

#include "index/index_client.h"

namespace kvcs::engine {

struct IndexLookup::Impl {
  explicit Impl(index::IndexClient c) : client(std::move(c)) {}
  index::IndexClient client;
};

IndexLookup::IndexLookup(std::unique_ptr<Impl> impl, std::string url)
    : impl_(std::move(impl)), url_(std::move(url)) {}
IndexLookup::~IndexLookup() = default;

Result<std::unique_ptr<IndexLookup>> IndexLookup::Create(const std::string& url,
                                                         const std::string& bearer,
                                                         uint64_t timeout_ms) {
  index::IndexClientOptions o;
  o.url = url;
  o.bearer = bearer;
  o.timeout = std::chrono::milliseconds(timeout_ms);
  KVCS_ASSIGN_OR_RETURN(index::IndexClient c, index::IndexClient::Create(std::move(o)));
  return std::unique_ptr<IndexLookup>(new IndexLookup(std::make_unique<Impl>(std::move(c)), url));
}

Result<IndexAnswer> IndexLookup::LongestPrefix(const Digest& compat_id, const Digest& scope_id,
                                               std::span<const Digest> keys) const {
  KVCS_ASSIGN_OR_RETURN(index::LookupResponse r,
                        impl_->client.LookupPrefix(compat_id, scope_id, keys));
  IndexAnswer a;
  a.matched = std::min<uint64_t>(r.matched, keys.size());
  if (a.matched > 0 && a.matched <= r.entries.size() &&
      !r.entries[a.matched - 1].replicas.empty()) {
    a.holder = r.entries[a.matched - 1].replicas.front().info.holder;
  }
  return a;
}

Result<std::vector<std::string>> IndexLookup::Holders(const Digest& compat_id,
                                                      const Digest& scope_id,
                                                      std::span<const Digest> keys,
                                                      size_t from_block) const {
  KVCS_ASSIGN_OR_RETURN(index::LookupResponse r,
                        impl_->client.LookupPrefix(compat_id, scope_id, keys));
  std::vector<std::string> out;
  const size_t matched = std::min<size_t>(r.matched, r.entries.size());
  for (size_t b = from_block; b < matched && out.size() < kMaxIndexHolders; ++b) {
    for (const index::Replica& rep : r.entries[b].replicas) {
      const std::string& h = rep.info.holder;
      const bool http =
          std::string_view(h).starts_with("http://") || std::string_view(h).starts_with("https://");
      const bool raw = std::find(rep.info.codecs.begin(), rep.info.codecs.end(),
                                 kvsp::Codec::kRaw) != rep.info.codecs.end();
      if (!http || !raw || std::find(out.begin(), out.end(), h) != out.end()) continue;
      out.push_back(h);
      if (out.size() == kMaxIndexHolders) break;
    }
  }
  return out;
}

}  // namespace kvcs::engine
