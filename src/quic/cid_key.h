// CidKey: a QUIC connection ID as a hashable value (CidKeyHash), the key by which the server
// routes datagrams to connections and by which a connection remembers the IDs it is known by.
// Internal to src/quic.
#ifndef KVCS_QUIC_CID_KEY_H_
#define KVCS_QUIC_CID_KEY_H_

#include <ngtcp2/ngtcp2.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace kvcs::quic {

struct CidKey {
  uint8_t len = 0;
  uint8_t data[NGTCP2_MAX_CIDLEN] = {};
  CidKey() = default;
  CidKey(const uint8_t* d, size_t n) : len(static_cast<uint8_t>(n)) { memcpy(data, d, n); }
  explicit CidKey(const ngtcp2_cid& c) : CidKey(c.data, c.datalen) {}
  bool operator==(const CidKey& o) const { return len == o.len && memcmp(data, o.data, len) == 0; }
};

struct CidKeyHash {
  size_t operator()(const CidKey& k) const {
    uint64_t h = 1469598103934665603ull;  // FNV-1a; CIDs are random, so this is plenty
    for (size_t i = 0; i < k.len; ++i) h = (h ^ k.data[i]) * 1099511628211ull;
    return h;
  }
};

}  // namespace kvcs::quic

#endif  // KVCS_QUIC_CID_KEY_H_
