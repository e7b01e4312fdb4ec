#include "engine/index_lookup.h"

#include <algorithm>
#include <chrono>
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

}  // namespace kvcs::engine
