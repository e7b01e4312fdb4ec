// KVSP v1 as defined by the project: the layer digest.
#include "kvsp/layer_digest.h"

namespace kvcs::kvsp {

Digest LayerDigest(ByteSpan k, ByteSpan v) {
  Sha256 h;
  h.Update(k).Update(v);
  return h.Finish();
}

}  // namespace kvcs::kvsp
