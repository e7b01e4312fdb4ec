// QuicServer's implementation: the server socket and its receive pump, connection routing by
// CID (every CID of every connection, kept in step with the CID callbacks), admission (Retry,
// refusals, evictions and handshake deadlines decided by QuicAdmission), and graceful shutdown.
#include "quic/server.h"

#include <gnutls/crypto.h>
#include <ngtcp2/ngtcp2_crypto.h>

#include <algorithm>
#include <chrono>
#include <unordered_map>

#include "common/asio.h"
#include "common/log.h"
#include "quic/cid_key.h"
#include "quic/connection.h"
#include "quic/rx_pump.h"
#include "quic/tls.h"

namespace kvcs::quic {
namespace {

namespace asio = boost::asio;
using transport::CloseInfo;

// Retry tokens older than this are refused (the client retries within one RTT).
constexpr ngtcp2_duration kRetryTokenLifetime = 10 * NGTCP2_SECONDS;

// The peer's IP address without the port, as bytes: the key of the per-address limits.
std::string AddressKey(const SockAddr& a) {
  const sockaddr* sa = a.get();
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    return std::string(reinterpret_cast<const char*>(&in->sin_addr), sizeof(in->sin_addr));
  }
  if (sa->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    return std::string(reinterpret_cast<const char*>(&in6->sin6_addr), sizeof(in6->sin6_addr));
  }
  return a.ToString();
}

uint64_t WallNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

class ServerImpl : public QuicServer, public ConnectionOwner {
 public:
  ServerImpl(asio::io_context& io, ServerConfig config)
      : io_(io),
        config_(std::move(config)),
        admission_(config_.max_connections, config_.require_retry, config_.admission),
        drain_timer_(io),
        deadline_timer_(io) {
    gnutls_rnd(GNUTLS_RND_RANDOM, secret_, sizeof(secret_));
  }
  ~ServerImpl() override {
    alive_ = std::make_shared<char>(0);
    if (pump_) pump_->Stop();
    for (auto& [p, c] : conns_) c->Kill();
    conns_.clear();
  }

  Status Init() {
    KVCS_ASSIGN_OR_RETURN(
        tls_, TlsServerContext::Create(config_.cert_file, config_.key_file, config_.alpns));
    KVCS_ASSIGN_OR_RETURN(SockAddr local, SockAddr::Resolve(config_.host, config_.port));
    KVCS_ASSIGN_OR_RETURN(sock_, UdpSocket::Open(local, nullptr));
    pump_ = std::make_unique<RxPump>(
        io_, sock_.get(), config_.loss_shim,
        [this](const SockAddr& from, const uint8_t* d, size_t n) { OnPacket(from, d, n); },
        [this] { AfterBatch(); });
    pump_->Start();
    return Status::Ok();
  }

  uint16_t port() const override { return sock_->local().port(); }
  bool gso_enabled() const override { return sock_->gso(); }
  ServerStats stats() const override {
    ServerStats s = stats_;
    s.live_connections = conns_.size();
    s.handshakes_in_progress = admission_.handshakes();
    s.retry_on = admission_.retry_on();
    s.admission = admission_.metrics();
    if (sock_) s.io = sock_->stats();
    return s;
  }

  void Shutdown(std::chrono::milliseconds drain, transport::ErrorCode code,
                std::function<void()> done) override {
    accepting_ = false;
    shutdown_done_ = std::move(done);
    shutdown_code_ = code;
    if (MaybeFinishShutdown()) return;
    drain_timer_.expires_after(drain);
    std::weak_ptr<char> alive = alive_;
    drain_timer_.async_wait([this, alive](const boost::system::error_code& ec) {
      if (ec || alive.expired()) return;
      std::vector<Connection*> live;
      for (auto& [p, c] : conns_) live.push_back(p);
      for (Connection* c : live) c->CloseSession(shutdown_code_, "server shutting down");
    });
  }

  // --- ConnectionOwner ---
  UdpSocket& socket() override { return *sock_; }
  const uint8_t* static_secret() const override { return secret_; }
  void AssociateCid(const ngtcp2_cid& cid, Connection* c) override { cids_[CidKey(cid)] = c; }
  void DissociateCid(const ngtcp2_cid& cid) override { cids_.erase(CidKey(cid)); }
  void OnConnectionReady(Connection* c) override {
    if (auto it = ids_.find(c); it != ids_.end()) admission_.HandshakeCompleted(it->second);
    ++stats_.connections_accepted;
    if (config_.on_session) config_.on_session(*c);
  }
  void OnConnectionFailed(Connection* c, const CloseInfo& info) override {
    Unadmit(c);
    ++stats_.handshake_failures;
    KVCS_LOG_DEBUG("quic server: connection from {} failed: {}", c->remote().ToString(),
                   info.ToString());
    if (config_.on_connection_error) config_.on_connection_error(c->remote(), info);
  }
  void OnConnectionFinished(Connection* c) override {
    Unadmit(c);
    for (const CidKey& k : c->cids()) cids_.erase(k);
    std::weak_ptr<char> alive = alive_;
    asio::post(io_, [this, alive, c] {
      if (alive.expired()) return;
      conns_.erase(c);
      MaybeFinishShutdown();
    });
  }
  void WaitWritable() override {
    pump_->WaitWrite([this] {
      if (!sock_->FlushPending()) {
        WaitWritable();
        return;
      }
      std::vector<Connection*> live;
      for (auto& [p, c] : conns_) live.push_back(p);
      for (Connection* c : live) {
        if (conns_.count(c)) c->Flush();
        if (sock_->blocked()) break;
      }
    });
  }

 private:
  bool MaybeFinishShutdown() {
    if (accepting_ || !conns_.empty() || !shutdown_done_) return false;
    drain_timer_.cancel();
    deadline_timer_.cancel();
    pump_->Stop();
    auto done = std::move(shutdown_done_);
    shutdown_done_ = nullptr;
    asio::post(io_, std::move(done));
    return true;
  }

  // Forgets `c` in the admission (it failed or finished).
  void Unadmit(Connection* c) {
    auto it = ids_.find(c);
    if (it == ids_.end()) return;
    admission_.Release(it->second);
    by_id_.erase(it->second);
    ids_.erase(it);
  }

  // Drops an admitted connection whose handshake is still in progress at once and silently
  // (evicted at the cap, or past its handshake deadline; admission_ already forgot it): no
  // CONNECTION_CLOSE, so it keeps no state for a closing period. A real client's later packets
  // match no CID and are dropped; it times out (or retries with a new Initial).
  void Drop(QuicAdmission::ConnectionId id) {
    auto it = by_id_.find(id);
    if (it == by_id_.end()) return;
    Connection* c = it->second;
    by_id_.erase(it);
    ids_.erase(c);
    for (const CidKey& k : c->cids()) cids_.erase(k);
    c->Kill();
    conns_.erase(c);  // touched_ may still name it: AfterBatch checks conns_
  }

  void ArmDeadline() {
    std::optional<QuicAdmission::TimePoint> next = admission_.NextDeadline();
    if (!next || (deadline_armed_ && deadline_at_ <= *next)) return;
    deadline_armed_ = true;
    deadline_at_ = *next;
    deadline_timer_.expires_at(*next);
    std::weak_ptr<char> alive = alive_;
    deadline_timer_.async_wait([this, alive](const boost::system::error_code& ec) {
      if (alive.expired()) return;
      deadline_armed_ = false;
      if (ec) return;
      for (QuicAdmission::ConnectionId id : admission_.Expire(std::chrono::steady_clock::now())) {
        Drop(id);
      }
      ArmDeadline();
      MaybeFinishShutdown();
    });
  }

  void Touch(Connection* c) {
    for (Connection* t : touched_) {
      if (t == c) return;
    }
    touched_.push_back(c);
  }

  void AfterBatch() {
    // AfterIo never receives packets, so touched_ cannot grow while we walk it; clearing keeps
    // its capacity (no allocation per batch).
    for (size_t i = 0; i < touched_.size(); ++i) {
      Connection* c = touched_[i];
      if (conns_.count(c) && !c->finished()) c->AfterIo();
    }
    touched_.clear();
  }

  void OnPacket(const SockAddr& from, const uint8_t* data, size_t len) {
    ngtcp2_version_cid vc;
    int rv = ngtcp2_pkt_decode_version_cid(&vc, data, len, kServerScidLen);
    if (rv != 0) {
      ++stats_.datagrams_dropped;  // garbage, or a version we do not speak
      return;
    }
    if (auto it = cids_.find(CidKey(vc.dcid, vc.dcidlen)); it != cids_.end()) {
      it->second->OnDatagram(from, data, len);
      Touch(it->second);
      return;
    }
    ngtcp2_pkt_hd hd;
    if (ngtcp2_accept(&hd, data, len) != 0) {
      ++stats_.datagrams_dropped;
      return;
    }
    if (!accepting_) {
      ++stats_.connections_refused;
      SendClose(hd, from, NGTCP2_CONNECTION_REFUSED, "server shutting down");
      return;
    }
    ngtcp2_cid odcid;
    const ngtcp2_cid* podcid = nullptr;
    if (hd.token.len > 0 && hd.token.base[0] == NGTCP2_CRYPTO_TOKEN_MAGIC_RETRY) {
      if (ngtcp2_crypto_verify_retry_token(&odcid, hd.token.base, hd.token.len, secret_,
                                           sizeof(secret_), hd.version, from.get(), from.len,
                                           &hd.dcid, kRetryTokenLifetime, WallNs()) != 0) {
        ++stats_.connections_refused;
        SendClose(hd, from, NGTCP2_INVALID_TOKEN, "invalid retry token");
        return;
      }
      podcid = &odcid;
    } else {
      hd.token.base = nullptr;
      hd.token.len = 0;
    }
    QuicAdmission::Decision d =
        admission_.OnInitial(AddressKey(from), podcid != nullptr, std::chrono::steady_clock::now());
    for (QuicAdmission::ConnectionId victim : d.evict) Drop(victim);
    switch (d.verdict) {
      case QuicAdmission::Verdict::kAdmitted:
        break;
      case QuicAdmission::Verdict::kRetry:
        SendRetry(hd, from, len);
        return;
      case QuicAdmission::Verdict::kRefusedAddress:
      case QuicAdmission::Verdict::kRefusedFull:
        ++stats_.connections_refused;
        SendClose(hd, from, NGTCP2_CONNECTION_REFUSED,
                  d.verdict == QuicAdmission::Verdict::kRefusedFull
                      ? "connection limit reached"
                      : "connection limit for this address reached");
        return;
    }
    auto c = std::make_unique<Connection>(io_, this, true, config_.limits);
    if (Status st = c->InitServer(*tls_, hd, podcid, from); !st.ok()) {
      KVCS_LOG_WARN("quic server: cannot create connection: {}", st.ToString());
      admission_.Release(d.id);
      return;
    }
    Connection* p = c.get();
    conns_[p] = std::move(c);
    ids_[p] = d.id;
    by_id_[d.id] = p;
    ArmDeadline();
    // Route by the client's chosen DCID (until it switches) and by every SCID we issued.
    CidKey odkey(hd.dcid);
    cids_[odkey] = p;
    p->AddCid(odkey);
    ngtcp2_cid scids[8];
    size_t n = ngtcp2_conn_get_num_scid(p->conn());
    if (n <= 8) {
      ngtcp2_conn_get_scid(p->conn(), scids);
      for (size_t i = 0; i < n; ++i) {
        CidKey k(scids[i]);
        cids_[k] = p;
        p->AddCid(k);
      }
    }
    p->OnDatagram(from, data, len);
    Touch(p);
  }

  void SendRetry(const ngtcp2_pkt_hd& hd, const SockAddr& from, size_t pktlen) {
    ngtcp2_cid scid;
    scid.datalen = kServerScidLen;
    gnutls_rnd(GNUTLS_RND_RANDOM, scid.data, scid.datalen);
    uint8_t token[NGTCP2_CRYPTO_MAX_RETRY_TOKENLEN];
    ngtcp2_ssize tlen =
        ngtcp2_crypto_generate_retry_token(token, secret_, sizeof(secret_), hd.version, from.get(),
                                           from.len, &scid, &hd.dcid, WallNs());
    if (tlen < 0) return;
    uint8_t buf[kMaxPacketSize];
    ngtcp2_ssize n =
        ngtcp2_crypto_write_retry(buf, std::min(sizeof(buf), pktlen * 3), hd.version, &hd.scid,
                                  &scid, &hd.dcid, token, static_cast<size_t>(tlen));
    if (n <= 0) return;
    ++stats_.retries_sent;
    sock_->SendOne(from, buf, static_cast<size_t>(n));
  }

  void SendClose(const ngtcp2_pkt_hd& hd, const SockAddr& from, uint64_t code,
                 std::string_view reason) {
    uint8_t buf[kMaxPacketSize];
    ngtcp2_ssize n = ngtcp2_crypto_write_connection_close(
        buf, sizeof(buf), hd.version, &hd.scid, &hd.dcid, code,
        reinterpret_cast<const uint8_t*>(reason.data()), reason.size());
    if (n > 0) sock_->SendOne(from, buf, static_cast<size_t>(n));
  }

  asio::io_context& io_;
  ServerConfig config_;
  std::unique_ptr<TlsServerContext> tls_;
  std::unique_ptr<UdpSocket> sock_;
  std::unique_ptr<RxPump> pump_;
  uint8_t secret_[32];
  std::unordered_map<CidKey, Connection*, CidKeyHash> cids_;
  std::unordered_map<Connection*, std::unique_ptr<Connection>> conns_;
  std::vector<Connection*> touched_;
  QuicAdmission admission_;
  // Admitted connections (until they fail, finish or are dropped) and their admission ids.
  std::unordered_map<Connection*, QuicAdmission::ConnectionId> ids_;
  std::unordered_map<QuicAdmission::ConnectionId, Connection*> by_id_;
  ServerStats stats_;
  bool accepting_ = true;
  std::function<void()> shutdown_done_;
  transport::ErrorCode shutdown_code_ = 0;
  asio::steady_timer drain_timer_;
  asio::steady_timer deadline_timer_;  // the oldest handshake's deadline
  bool deadline_armed_ = false;
  QuicAdmission::TimePoint deadline_at_;
  std::shared_ptr<char> alive_ = std::make_shared<char>(0);
};

}  // namespace

Result<std::unique_ptr<QuicServer>> QuicServer::Create(asio::io_context& io, ServerConfig config) {
  auto s = std::make_unique<ServerImpl>(io, std::move(config));
  KVCS_RETURN_IF_ERROR(s->Init());
  return std::unique_ptr<QuicServer>(std::move(s));
}

}  // namespace kvcs::quic
