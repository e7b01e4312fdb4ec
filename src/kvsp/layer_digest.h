// The KVSP layer digest (KVSP v1 as defined by the project, spec §6).
//
// layer_digest = SHA-256(K section bytes || V section bytes), over the bytes as carried for the
// container's codec (for `raw`, the tensor bytes). Pure; thread-safe.
#ifndef KVCS_KVSP_LAYER_DIGEST_H_
#define KVCS_KVSP_LAYER_DIGEST_H_

#include "common/bytes.h"
#include "common/crypto.h"

namespace kvcs::kvsp {

Digest LayerDigest(ByteSpan k, ByteSpan v);

}  // namespace kvcs::kvsp

#endif  // KVCS_KVSP_LAYER_DIGEST_H_
