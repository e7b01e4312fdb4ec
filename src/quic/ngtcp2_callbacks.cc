#include "quic/ngtcp2_callbacks.h"

#include <gnutls/crypto.h>

#include "quic/connection.h"

namespace kvcs::quic {
namespace {
Connection* C(void* ud) { return static_cast<Connection*>(ud); }
}  // namespace

ngtcp2_callbacks Ngtcp2Callbacks::Make(bool is_server) {
  ngtcp2_callbacks cb{};
  if (is_server) {
    cb.recv_client_initial = ngtcp2_crypto_recv_client_initial_cb;
  } else {
    cb.client_initial = ngtcp2_crypto_client_initial_cb;
    cb.recv_retry = ngtcp2_crypto_recv_retry_cb;
  }
  cb.recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb;
  cb.encrypt = ngtcp2_crypto_encrypt_cb;
  cb.decrypt = ngtcp2_crypto_decrypt_cb;
  cb.hp_mask = ngtcp2_crypto_hp_mask_cb;
  cb.update_key = ngtcp2_crypto_update_key_cb;
  cb.delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb;
  cb.delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb;
  cb.get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb;
  cb.version_negotiation = ngtcp2_crypto_version_negotiation_cb;
  cb.handshake_completed = HandshakeCompleted;
  cb.recv_stream_data = RecvStreamData;
  cb.acked_stream_data_offset = Acked;
  cb.stream_open = StreamOpen;
  cb.stream_close = StreamClose;
  cb.stream_reset = StreamReset;
  cb.extend_max_stream_data = ExtendMaxStreamData;
  cb.extend_max_local_streams_bidi = ExtendMaxLocalBidi;
  cb.extend_max_local_streams_uni = ExtendMaxLocalUni;
  cb.recv_datagram = RecvDatagram;
  cb.rand = Rand;
  cb.get_new_connection_id = NewCid;
  cb.remove_connection_id = RemoveCid;
  return cb;
}

ngtcp2_conn* Ngtcp2Callbacks::GetConn(ngtcp2_crypto_conn_ref* ref) {
  return C(ref->user_data)->conn_;
}

int Ngtcp2Callbacks::RecvStreamData(ngtcp2_conn*, uint32_t flags, int64_t id, uint64_t,
                                    const uint8_t* data, size_t len, void* ud, void* sud) {
  return C(ud)->OnRecvStreamData(flags, id, data, len, sud);
}

int Ngtcp2Callbacks::Acked(ngtcp2_conn*, int64_t id, uint64_t offset, uint64_t len, void* ud,
                           void* sud) {
  return C(ud)->OnAcked(id, offset, len, sud);
}

int Ngtcp2Callbacks::StreamOpen(ngtcp2_conn*, int64_t id, void* ud) {
  return C(ud)->OnStreamOpen(id);
}

int Ngtcp2Callbacks::StreamClose(ngtcp2_conn*, uint32_t flags, int64_t id, uint64_t code, void* ud,
                                 void* sud) {
  return C(ud)->OnStreamClose(flags, id, code, sud);
}

int Ngtcp2Callbacks::StreamReset(ngtcp2_conn*, int64_t id, uint64_t, uint64_t code, void* ud,
                                 void* sud) {
  return C(ud)->OnStreamReset(id, code, sud);
}

int Ngtcp2Callbacks::ExtendMaxStreamData(ngtcp2_conn*, int64_t id, uint64_t, void* ud, void* sud) {
  return C(ud)->OnExtendMaxStreamData(id, sud);
}

int Ngtcp2Callbacks::ExtendMaxLocalBidi(ngtcp2_conn*, uint64_t, void* ud) {
  return C(ud)->OnExtendMaxLocalStreams(/*bidi=*/true);
}

int Ngtcp2Callbacks::ExtendMaxLocalUni(ngtcp2_conn*, uint64_t, void* ud) {
  return C(ud)->OnExtendMaxLocalStreams(/*bidi=*/false);
}

int Ngtcp2Callbacks::RecvDatagram(ngtcp2_conn*, uint32_t, const uint8_t* data, size_t len,
                                  void* ud) {
  return C(ud)->OnRecvDatagram(data, len);
}

int Ngtcp2Callbacks::HandshakeCompleted(ngtcp2_conn*, void* ud) {
  return C(ud)->OnHandshakeCompleted();
}

void Ngtcp2Callbacks::Rand(uint8_t* dest, size_t len, const ngtcp2_rand_ctx*) {
  gnutls_rnd(GNUTLS_RND_RANDOM, dest, len);
}

int Ngtcp2Callbacks::NewCid(ngtcp2_conn*, ngtcp2_cid* cid, uint8_t* token, size_t cidlen,
                            void* ud) {
  return C(ud)->OnNewCid(cid, token, cidlen);
}

int Ngtcp2Callbacks::RemoveCid(ngtcp2_conn*, const ngtcp2_cid* cid, void* ud) {
  return C(ud)->OnRemoveCid(cid);
}

}  // namespace kvcs::quic
