// One QUIC connection (client or server side): an ngtcp2_conn plus its TLS session, streams,
// datagram queue, timer and the event queue that feeds the application's visitors.
// Internal to src/quic (includes Asio). See docs/protocols/quic-transport.md.
//
// Driving rules (ngtcp2 0.12.1): ngtcp2 callbacks only record state and queue events; packets
// are written only from Flush() (never from inside a callback); visitor events are dispatched
// after ngtcp2 returns; the expiry timer is re-armed after every read, write and expiry.
#ifndef KVCS_QUIC_CONNECTION_H_
#define KVCS_QUIC_CONNECTION_H_

#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "common/asio.h"
#include "quic/quic.h"
#include "quic/stream_buffer.h"
#include "quic/tls.h"
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

class QuicStream;

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
  IoStats io_stats() const override;

  // Owned-endpoint hook for clients (the connection keeps its endpoint alive).
  void set_owned_endpoint(std::unique_ptr<ConnectionOwner> ep) { owned_ep_ = std::move(ep); }
  void set_owned_tls(std::unique_ptr<TlsClientContext> tls) { owned_tls_ = std::move(tls); }

 private:
  friend class QuicStream;
  friend struct Callbacks;

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

  ngtcp2_callbacks MakeCallbacks() const;
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
  // Send queue: streams with bytes (or a FIN) to send, by send order, FIFO within one order.
  void Enqueue(QuicStream* s);
  void SendqRemove(QuicStream* s);
  // `s` is at the front of its queue: rotate it to the back (requeue) or drop it.
  void SendqPopFront(QuicStream* s, bool requeue);
  // Connection send budget (TransportLimits::connection_send_budget): a stream's counted unsent
  // bytes went from `before` to `after`; wakes budget waiters when that freed room.
  void Recount(size_t before, size_t after);
  // `s` found the budget used up in CanWrite(): it gets OnCanWrite when room frees.
  void AddBudgetWaiter(const QuicStream* s);
  void MaybeWakeBudgetWaiters();
  // Calls OnCanWrite for waiters, lowest send order first (FIFO within one order), while the
  // budget has room. Returns false when a visitor destroyed the session.
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
  std::unordered_map<int64_t, std::unique_ptr<QuicStream>> streams_;
  std::deque<int64_t> incoming_bidi_, incoming_uni_;
  // Lowest send order first (Stream::SetSendOrder); each queue is served round-robin.
  std::map<uint64_t, std::deque<QuicStream*>> sendq_;
  std::vector<int64_t> sweep_;  // ids of streams that may be finished
  // Unsent bytes of every stream that could go on the wire now (QuicStream::Counted); CanWrite()
  // is false while this is at least limits_.connection_send_budget.
  size_t unsent_total_ = 0;
  // Streams waiting for budget: (send order, arrival) -> stream id.
  std::map<std::pair<uint64_t, uint64_t>, int64_t> budget_waiters_;
  uint64_t budget_seq_ = 0;
  bool budget_event_pending_ = false;
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
