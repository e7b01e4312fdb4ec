// Ngtcp2Callbacks: the ngtcp2_callbacks table every Connection (quic/connection.h) hands to
// ngtcp2_conn_{server,client}_new. The crypto entries come straight from ngtcp2_crypto; the rest
// are thin static thunks that cast user_data to the Connection and forward to its member (the
// shape of ngtcp2's examples, docs/protocols/quic-transport.md). Like those members they only
// record state and queue events; nothing is written from inside a callback.
//
// Internal to src/quic.
#ifndef KVCS_QUIC_NGTCP2_CALLBACKS_H_
#define KVCS_QUIC_NGTCP2_CALLBACKS_H_

#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

#include <cstddef>
#include <cstdint>

namespace kvcs::quic {

class Ngtcp2Callbacks {
 public:
  // The table for a server or a client connection; user_data must be the Connection.
  static ngtcp2_callbacks Make(bool is_server);
  // ngtcp2_crypto_conn_ref::get_conn; the ref's user_data is the Connection.
  static ngtcp2_conn* GetConn(ngtcp2_crypto_conn_ref* ref);

 private:
  static int RecvStreamData(ngtcp2_conn*, uint32_t flags, int64_t id, uint64_t offset,
                            const uint8_t* data, size_t len, void* ud, void* sud);
  static int Acked(ngtcp2_conn*, int64_t id, uint64_t offset, uint64_t len, void* ud, void* sud);
  static int StreamOpen(ngtcp2_conn*, int64_t id, void* ud);
  static int StreamClose(ngtcp2_conn*, uint32_t flags, int64_t id, uint64_t code, void* ud,
                         void* sud);
  static int StreamReset(ngtcp2_conn*, int64_t id, uint64_t final_size, uint64_t code, void* ud,
                         void* sud);
  static int ExtendMaxStreamData(ngtcp2_conn*, int64_t id, uint64_t max_data, void* ud, void* sud);
  static int ExtendMaxLocalBidi(ngtcp2_conn*, uint64_t max_streams, void* ud);
  static int ExtendMaxLocalUni(ngtcp2_conn*, uint64_t max_streams, void* ud);
  static int RecvDatagram(ngtcp2_conn*, uint32_t flags, const uint8_t* data, size_t len, void* ud);
  static int HandshakeCompleted(ngtcp2_conn*, void* ud);
  static void Rand(uint8_t* dest, size_t len, const ngtcp2_rand_ctx*);
  static int NewCid(ngtcp2_conn*, ngtcp2_cid* cid, uint8_t* token, size_t cidlen, void* ud);
  static int RemoveCid(ngtcp2_conn*, const ngtcp2_cid* cid, void* ud);
};

}  // namespace kvcs::quic

#endif  // KVCS_QUIC_NGTCP2_CALLBACKS_H_
