#include "kvcs_stream/cache_identity.h"

#include "kvcs_stream/stream_error.h"
#include "kvsp/block_keys.h"

namespace kvcs::stream {

Result<CacheIdentity> CacheIdentity::Compute(const kvsp::Descriptor& d,
                                             const kvsp::ScopeKey& scope_key,
                                             std::span<const uint32_t> tokens) {
  Status valid = kvsp::ValidateDescriptor(d);
  if (!valid.ok()) {
    return StreamStatus(Code::kInvalidArgument, StreamError::kBadArgument,
                        "descriptor: " + valid.message());
  }
  CacheIdentity id;
  id.descriptor = d;
  id.compat_id = kvsp::CompatId(d);
  id.scope_id = kvsp::ScopeId(scope_key);
  id.block_keys = kvsp::BlockKeys(kvsp::ChainKey(scope_key, id.compat_id), d.block_tokens, tokens);
  id.tokens = tokens.size();
  return id;
}

moqt::TrackNamespace CacheIdentity::AnchorPrefix(uint64_t blocks) const {
  return ToMoqtNamespace(profile::AnchorPrefix(scope_id, compat_id, anchor(blocks)));
}

moqt::TrackNamespace ToMoqtNamespace(const profile::TrackNamespace& ns) {
  moqt::TrackNamespace out;
  out.reserve(ns.size());
  for (const Bytes& f : ns) out.emplace_back(f.begin(), f.end());
  return out;
}

moqt::TrackNamespace ToMoqtNamespace(const profile::Namespace& ns) {
  return ToMoqtNamespace(profile::BuildNamespace(ns));
}

Result<profile::Namespace> FromMoqtNamespace(const moqt::TrackNamespace& ns) {
  std::vector<ByteSpan> fields;
  fields.reserve(ns.size());
  for (const std::string& f : ns) fields.push_back(AsBytes(f));
  return profile::ParseNamespace(std::span<const ByteSpan>(fields));
}

}  // namespace kvcs::stream
