// Connection: one QUIC connection (client or server side), the driving loop of one ngtcp2_conn.
// It owns the ngtcp2_conn and its TLS session, its streams (quic/quic_stream.h), its send
// scheduler (quic/send_scheduler.h), the datagram queues, the expiry timer and the event queue
// that feeds the application's visitors. The ngtcp2 callbacks (quic/ngtcp2_callbacks.h) forward
// to its On* members. The endpoint that owns it (quic/server.cc, quic/client.cc) is its
// ConnectionOwner. Internal to src/quic (includes Asio). See docs/protocols/quic-transport.md.
//
// Driving rules (ngtcp2 0.12.1): ngtcp2 callbacks only record state and queue events; packets
// are written only from Flush() (never from inside a callback); visitor events are dispatched
// after ngtcp2 returns; the expiry timer is re-armed after every read, write and expiry.
#ifndef KVCS_QUIC_CONNECTION_H_
#define KVCS_QUIC_CONNECTION_H_

#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "common/asio.h"
#include "common/status.h"
#include "quic/cid_key.h"
#include "quic/client.h"
#include "quic/quic_stream.h"
#include "quic/send_scheduler.h"
#include "quic/stream_buffer.h"
#include "quic/tls.h"
#include "quic/transport_limits.h"
#include "quic/udp.h"

namespace kvcs::quic {

class Connection;

// What a connection needs from the endpoint that owns it (server or client).
class ConnectionOwner {
 public:
  virtual ~ConnectionOwner() = default;
  virtual UdpSocket& socket() = 0;
  // 32 bytes used to derive stateless-reset tokens.
  virtual const uint8_t* static_secret() const = 0;
  virtual void AssociateCid(const ngtcp2_cid& cid, Connection* c) {}
  virtual void DissociateCid(const ngtcp2_cid& cid) {}
  // The handshake completed (server: hand the session to the application).
  virtual void OnConnectionReady(Connection* c) {}
  // The connection ended before reaching the application (handshake failure...).
  virtual void OnConnectionFailed(Connection* c, const transport::CloseInfo& info) {}
  // The closing/draining period ended: the owner may destroy `c` (not from inside this call).
  virtual void OnConnectionFinished(Connection* c) {}
  // The socket would block: call Connection::Flush on every connection once writable.
  virtual void WaitWritable() = 0;
};

ngtcp2_tstamp NowTs();

// Length of the connection IDs a server issues (random; ngtcp2's examples use the same length).
inline constexpr size_t kServerScidLen = 18;

// A Status carrying a transport::TransportError (transport/session.h) for the application.
Status TransportErr(transport::TransportError e, std::string msg,
                    Code code = Code::kFailedPrecondition);

class Connection : public QuicClientSession {
 public:
  Connection(boost::asio::io_context& io, ConnectionOwner* owner, bool is_server,
             const TransportLimits& limits);
  ~Connection() override;

  // Server side: `hd` is the client's first Initial; `odcid` is set after a Retry.
  Status InitServer(const TlsServerContext& tls, const ngtcp2_pkt_hd& hd, const ngtcp2_cid* odcid,
                    const SockAddr& remote);
  Status InitClient(const TlsClientContext& tls, const std::string& sni, const SockAddr& remote);

  // One received UDP datagram for this connection.
  void OnDatagram(const SockAddr& from, const uint8_t* data, size_t len);
  // After a batch of OnDatagram calls (or any state change): deliver events, write, re-arm.
  void AfterIo();
  void Flush();

  ngtcp2_conn* conn() const { return conn_; }
  bool finished() const { return state_ == State::kFinished; }
  const SockAddr& remote() const { return remote_; }
  bool announced() const { return announced_; }
  const std::vector<CidKey>& cids() const { return cids_; }
  void AddCid(const CidKey& k) { cids_.push_back(k); }
  void RemoveCid(const CidKey& k);
  // Drops every timer and event without sending anything (owner teardown, Abandon).
  void Kill();

  // --- transport::Session ---
  void SetVisitor(transport::SessionVisitor* visitor) override { visitor_ = visitor; }
  transport::Stream* AcceptIncomingBidirectionalStream() override;
  transport::Stream* AcceptIncomingUnidirectionalStream() override;
  bool CanOpenNextOutgoingBidirectionalStream() override;
  bool CanOpenNextOutgoingUnidirectionalStream() override;
  transport::Stream* OpenOutgoingBidirectionalStream() override;
  transport::Stream* OpenOutgoingUnidirectionalStream() override;
  transport::Stream* GetStreamById(transport::StreamId id) override;
  Status SendOrQueueDatagram(ByteSpan datagram) override;
  size_t GetMaxDatagramSize() const override;
  void CloseSession(transport::ErrorCode code, std::string_view reason) override;
  std::string GetNegotiatedAlpn() const override;
  bool IsOpen() const override { return state_ == State::kOpen; }
  // --- QuicClientSession ---
  void Abandon() override;
  bool gso_enabled() const override;
  std::string negotiated_cipher() const override;
  IoStats io_stats() const override;

  // Owned-endpoint hook for clients (the connection keeps its endpoint alive).
  void set_owned_endpoint(std::unique_ptr<ConnectionOwner> ep) { owned_ep_ = std::move(ep); }
  void set_owned_tls(std::unique_ptr<TlsClientContext> tls) { owned_tls_ = std::move(tls); }

 private:
  friend class QuicStream;
  friend class Ngtcp2Callbacks;

  enum class State { kHandshaking, kOpen, kClosing, kDraining, kFinished };
  enum class Ev : uint8_t {
    kReady,
    kClosed,
    kIncomingBidi,
    kIncomingUni,
    kCanRead,
    kCanWrite,
    kReset,
    kStopSending,
    kWriteDone,
    kDatagram,
    kCanOpenBidi,
    kCanOpenUni,
    kBudget,  // the connection send budget has room: OnCanWrite for waiting streams
  };
  struct Event {
    Ev type;
    int64_t stream_id;
    uint64_t code;
  };

  // Sets limits_.max_udp_payload to the size used towards remote_ (see TransportLimits).
  void ChoosePacketSize();
  void FillSettings(ngtcp2_settings* s) const;
  void FillParams(ngtcp2_transport_params* p) const;
  void Push(Ev t, int64_t sid = -1, uint64_t code = 0) { events_.push_back({t, sid, code}); }
  void DispatchEvents();
  void SweepStreams();
  void ScheduleFlush();
  void ArmTimer();
  void OnTimer();
  void HandleLibError(int rv);
  void StartClosing(const ngtcp2_connection_close_error& ccerr, transport::CloseInfo info);
  void EnterDraining();
  void StartClosePeriod();
  void Finish();
  transport::CloseInfo InfoFromCcerr(const ngtcp2_connection_close_error& e, bool by_peer) const;
  QuicStream* NewStream(int64_t id);
  // Puts `s` in the send queue if it has something it may send.
  void Enqueue(QuicStream* s) {
    if (s->Sendable()) sched_.Enqueue(s);
  }
  // A stream's counted unsent bytes (QuicStream::Counted) went from `before` to `after`; wakes
  // the budget waiters when that freed room.
  void Recount(size_t before, size_t after) {
    if (sched_.Recount(before, after) && sched_.WakeDue()) MaybeWakeBudgetWaiters();
  }
  void MaybeWakeBudgetWaiters();
  // Calls OnCanWrite for budget waiters, lowest send order first (FIFO within one order), while
  // the budget has room. Returns false when a visitor destroyed the session.
  bool WakeBudgetWaiters(const std::weak_ptr<char>& alive);
  bool WriteDatagrams(ngtcp2_path_storage* ps, size_t max_pkt, size_t* pkts, size_t max_pkts,
                      bool* stop, ngtcp2_tstamp ts);
  bool CommitAndMaybeSend(size_t nwrite, const ngtcp2_path& path);

  // ngtcp2 callback bodies.
  int OnRecvStreamData(uint32_t flags, int64_t id, const uint8_t* data, size_t len, void* sud);
  int OnAcked(int64_t id, uint64_t offset, uint64_t len, void* sud);
  int OnStreamOpen(int64_t id);
  int OnStreamClose(uint32_t flags, int64_t id, uint64_t code, void* sud);
  int OnStreamReset(int64_t id, uint64_t code, void* sud);
  int OnExtendMaxStreamData(int64_t id, void* sud);
  int OnRecvDatagram(const uint8_t* data, size_t len);
  int OnNewCid(ngtcp2_cid* cid, uint8_t* token, size_t cidlen);
  int OnRemoveCid(const ngtcp2_cid* cid);
  int OnHandshakeCompleted();
  int OnExtendMaxLocalStreams(bool bidi);

  boost::asio::io_context& io_;
  std::unique_ptr<ConnectionOwner> owned_ep_;    // clients only; destroyed last
  std::unique_ptr<TlsClientContext> owned_tls_;  // clients only; outlives tls_
  ConnectionOwner* owner_;
  bool is_server_;
  TransportLimits limits_;
  ngtcp2_conn* conn_ = nullptr;
  TlsSession tls_;
  ngtcp2_crypto_conn_ref conn_ref_{};
  SockAddr remote_;
  State state_ = State::kHandshaking;
  bool announced_ = false;
  transport::SessionVisitor* visitor_ = nullptr;
  std::optional<transport::CloseInfo> close_info_;
  std::vector<uint8_t> close_buf_;
  std::vector<CidKey> cids_;

  ChunkPool pool_;
  // The send queue and the connection send budget (TransportLimits::connection_send_budget).
  // Declared before streams_: a stream's destructor returns its share of the budget.
  SendScheduler sched_;
  std::unordered_map<int64_t, std::unique_ptr<QuicStream>> streams_;
  std::deque<int64_t> incoming_bidi_, incoming_uni_;
  std::vector<int64_t> sweep_;  // ids of streams that may be finished
  std::deque<std::vector<uint8_t>> dgram_tx_;
  std::deque<std::vector<uint8_t>> dgram_rx_;
  std::vector<std::vector<uint8_t>> dgram_free_;  // recycled datagram buffers
  uint64_t next_dgram_id_ = 0;

  std::vector<Event> events_;
  bool dispatching_ = false;
  bool flush_posted_ = false;
  boost::asio::steady_timer timer_;
  ngtcp2_tstamp timer_expiry_ = UINT64_MAX;
  std::shared_ptr<char> alive_ = std::make_shared<char>(0);
};

}  // namespace kvcs::quic

#endif  // KVCS_QUIC_CONNECTION_H_
