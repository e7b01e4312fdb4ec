// KVSP v1 as defined by the project: scope_id and chain_key.
#include "kvsp/ids.h"

namespace kvcs::kvsp {

ScopeKey PublicScopeKey() { return ScopeKey{}; }

Digest ScopeId(const ScopeKey& scope_key) {
  return HmacSha256(ByteSpan(scope_key.data(), scope_key.size()), AsBytes("kvsp-scope-id-v1"));
}

Digest ChainKey(const ScopeKey& scope_key, const Digest& compat_id) {
  static constexpr uint8_t kZero = 0;
  HmacSha256Key key(ByteSpan(scope_key.data(), scope_key.size()));
  return key.Mac({AsBytes("kvsp-chain-v1"), ByteSpan(&kZero, 1), AsBytes(compat_id)});
}

}  // namespace kvcs::kvsp
