// KVSP identifiers derived from a scope key (KVSP v1 as defined by the project, spec §2).
//
// A scope key is 32 secret bytes per trust domain (tenant); the public scope is 32 zero bytes.
// scope_id names the scope and is safe to reveal; chain_key seeds the Block Key chain (§3) and is
// as secret as the scope key. Pure functions; thread-safe.
#ifndef KVCS_KVSP_IDS_H_
#define KVCS_KVSP_IDS_H_

#include <array>
#include <cstdint>

#include "common/crypto.h"

namespace kvcs::kvsp {

using ScopeKey = std::array<uint8_t, 32>;

// The public scope: 32 zero bytes. Anyone can compute its keys (no probing protection).
ScopeKey PublicScopeKey();
// scope_id = HMAC-SHA-256(scope_key, "kvsp-scope-id-v1").
Digest ScopeId(const ScopeKey& scope_key);
// chain_key = HMAC-SHA-256(scope_key, "kvsp-chain-v1" || 0x00 || compat_id).
Digest ChainKey(const ScopeKey& scope_key, const Digest& compat_id);

}  // namespace kvcs::kvsp

#endif  // KVCS_KVSP_IDS_H_
