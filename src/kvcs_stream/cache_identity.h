// CacheIdentity: what anyone who knows the tokens, the Compatibility Descriptor and the scope key
// computes with KVSP (compat_id, scope_id, the Block Keys), and the KVCS namespaces built from it
// (profile §3.1, §5.1). The publisher and the consumer both start here, so they agree on the
// namespace by construction. Also the conversion between the profile's namespace tuple (bytes)
// and the MOQT session's (strings). Value types; pure functions.
#ifndef KVCS_KVCS_STREAM_CACHE_IDENTITY_H_
#define KVCS_KVCS_STREAM_CACHE_IDENTITY_H_

#include <cstdint>
#include <span>
#include <vector>

#include "common/crypto.h"
#include "common/status.h"
#include "kvsp/descriptor.h"
#include "kvsp/ids.h"
#include "moqt/moqt_messages.h"
#include "profile/namespace.h"

namespace kvcs::stream {

struct CacheIdentity {
  kvsp::Descriptor descriptor;
  Digest compat_id{};
  Digest scope_id{};
  std::vector<Digest> block_keys;  // K_1..K_n of the full blocks; a tail is not keyed
  uint64_t tokens = 0;             // all tokens given (full blocks and tail)

  // Errors: kInvalidArgument (StreamError::kBadArgument) for an invalid descriptor.
  static Result<CacheIdentity> Compute(const kvsp::Descriptor& d, const kvsp::ScopeKey& scope_key,
                                       std::span<const uint32_t> tokens);

  uint64_t blocks() const { return block_keys.size(); }
  // The Anchor Key of the first `blocks` blocks (REQUIRES 1 <= blocks <= blocks()).
  const Digest& anchor(uint64_t blocks) const { return block_keys[blocks - 1]; }
  // ("kvcs-1", scope_id, compat_id, K_blocks): the §5.1 discovery prefix.
  moqt::TrackNamespace AnchorPrefix(uint64_t blocks) const;
};

moqt::TrackNamespace ToMoqtNamespace(const profile::TrackNamespace& ns);
moqt::TrackNamespace ToMoqtNamespace(const profile::Namespace& ns);
// Strict (profile::ParseNamespace).
Result<profile::Namespace> FromMoqtNamespace(const moqt::TrackNamespace& ns);

}  // namespace kvcs::stream

#endif  // KVCS_KVCS_STREAM_CACHE_IDENTITY_H_
