#include "quic/connection.h"

#include <gnutls/crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#include <arpa/inet.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "common/log.h"
#include "quic/ngtcp2_callbacks.h"

namespace kvcs::quic {

using transport::CloseInfo;
using transport::TransportError;

ngtcp2_tstamp NowTs() {
  return static_cast<ngtcp2_tstamp>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

Status TransportErr(TransportError e, std::string msg, Code code) {
  return {code, std::move(msg), static_cast<int>(e)};
}

namespace {
// Vectors handed to one ngtcp2_conn_writev_stream call (a packet spans at most 2 chunks).
constexpr size_t kMaxIov = 4;
// ngtcp2 0.12.1 (NGTCP2_PKT_PACING_OVERHEAD, private) sends a paced packet when its pacing time
// is at most this far ahead: event loops cannot wait shorter than that with any precision.
constexpr ngtcp2_tstamp kPacingSlack = NGTCP2_MILLISECONDS;

bool IsLoopback(const SockAddr& a) {
  if (a.storage.ss_family == AF_INET) {
    uint32_t ip = ntohl(reinterpret_cast<const sockaddr_in*>(&a.storage)->sin_addr.s_addr);
    return (ip >> 24) == 127;
  }
  if (a.storage.ss_family == AF_INET6) {
    const in6_addr& ip = reinterpret_cast<const sockaddr_in6*>(&a.storage)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&ip)) return true;
    if (IN6_IS_ADDR_V4MAPPED(&ip)) return ip.s6_addr[12] == 127;
  }
  return false;
}
}  // namespace

// ----------------------------------------------------------------------------------------------
Connection::Connection(boost::asio::io_context& io, ConnectionOwner* owner, bool is_server,
                       const TransportLimits& limits)
    : io_(io),
      owner_(owner),
      is_server_(is_server),
      limits_(limits),
      sched_(limits.connection_send_budget),
      timer_(io) {
  conn_ref_.get_conn = Ngtcp2Callbacks::GetConn;
  conn_ref_.user_data = this;
}

void Connection::ChoosePacketSize() {
  size_t size = limits_.max_udp_payload;
  if (limits_.loopback_udp_payload > 0 && IsLoopback(remote_)) size = limits_.loopback_udp_payload;
  // ngtcp2 needs room for a 1200-byte Initial; kMaxUdpPayload is UDP's own limit.
  limits_.max_udp_payload = std::clamp<size_t>(size, NGTCP2_MAX_UDP_PAYLOAD_SIZE, kMaxUdpPayload);
}

Connection::~Connection() {
  // A client destroyed while open tells the server (best effort) instead of letting it time out.
  if (!is_server_ && conn_ && owner_ && state_ < State::kClosing) {
    CloseSession(0, "client closed");
  }
  Kill();
  streams_.clear();
  if (conn_) ngtcp2_conn_del(conn_);
}

void Connection::Kill() {
  alive_ = std::make_shared<char>(0);  // invalidates posted work and timer handlers
  timer_.cancel();
  events_.clear();
  sched_.ClearQueue();
}

void Connection::FillSettings(ngtcp2_settings* s) const {
  ngtcp2_settings_default(s);
  s->initial_ts = NowTs();
  s->max_tx_udp_payload_size = limits_.max_udp_payload;
  if (limits_.max_udp_payload > NGTCP2_MAX_PMTUD_UDP_PAYLOAD_SIZE) {
    // Larger than path MTU discovery would ever try: use the size as configured (bounded by
    // the peer's max_udp_payload_size), as TransportLimits::max_udp_payload documents.
    s->no_tx_udp_payload_size_shaping = 1;
    s->no_pmtud = 1;
  }
  s->max_window = limits_.max_connection_window;
  s->max_stream_window = limits_.max_stream_window;
  s->handshake_timeout =
      static_cast<ngtcp2_duration>(limits_.handshake_timeout.count()) * NGTCP2_MILLISECONDS;
  switch (limits_.congestion_control) {
    case CongestionControl::kReno:
      s->cc_algo = NGTCP2_CC_ALGO_RENO;
      break;
    case CongestionControl::kCubic:
      s->cc_algo = NGTCP2_CC_ALGO_CUBIC;
      break;
    case CongestionControl::kBbr:
      s->cc_algo = NGTCP2_CC_ALGO_BBR;
      break;
    case CongestionControl::kBbr2:
      s->cc_algo = NGTCP2_CC_ALGO_BBR2;
      break;
  }
  s->ack_thresh = limits_.ack_threshold;
}

void Connection::FillParams(ngtcp2_transport_params* p) const {
  ngtcp2_transport_params_default(p);
  p->initial_max_stream_data_bidi_local = limits_.initial_stream_window;
  p->initial_max_stream_data_bidi_remote = limits_.initial_stream_window;
  p->initial_max_stream_data_uni = limits_.initial_stream_window;
  p->initial_max_data = limits_.initial_connection_window;
  p->initial_max_streams_bidi = limits_.max_incoming_bidi_streams;
  p->initial_max_streams_uni = limits_.max_incoming_uni_streams;
  p->max_idle_timeout =
      static_cast<ngtcp2_duration>(limits_.idle_timeout.count()) * NGTCP2_MILLISECONDS;
  p->max_udp_payload_size = owner_->socket().max_rx_payload();
  p->active_connection_id_limit = 7;
  p->max_datagram_frame_size = limits_.max_datagram_frame_size;
}

Status Connection::InitServer(const TlsServerContext& tls, const ngtcp2_pkt_hd& hd,
                              const ngtcp2_cid* odcid, const SockAddr& remote) {
  remote_ = remote;
  ChoosePacketSize();
  ngtcp2_callbacks cb = Ngtcp2Callbacks::Make(is_server_);
  ngtcp2_settings settings;
  FillSettings(&settings);
  settings.token = hd.token;
  ngtcp2_transport_params params;
  FillParams(&params);
  ngtcp2_cid scid;
  scid.datalen = kServerScidLen;
  gnutls_rnd(GNUTLS_RND_RANDOM, scid.data, scid.datalen);
  if (odcid) {
    params.original_dcid = *odcid;
    params.retry_scid = hd.dcid;
    params.retry_scid_present = 1;
  } else {
    params.original_dcid = hd.dcid;
  }
  gnutls_rnd(GNUTLS_RND_RANDOM, params.stateless_reset_token, sizeof(params.stateless_reset_token));
  params.stateless_reset_token_present = 1;
  UdpSocket& sock = owner_->socket();
  ngtcp2_path path{{const_cast<sockaddr*>(sock.local().get()), sock.local().len},
                   {const_cast<sockaddr*>(remote.get()), remote.len},
                   nullptr};
  if (int rv = ngtcp2_conn_server_new(&conn_, &hd.scid, &scid, &path, hd.version, &cb, &settings,
                                      &params, nullptr, this);
      rv != 0) {
    return Internal(std::string("ngtcp2_conn_server_new: ") + ngtcp2_strerror(rv));
  }
  KVCS_RETURN_IF_ERROR(tls_.InitServer(tls, &conn_ref_));
  ngtcp2_conn_set_tls_native_handle(conn_, tls_.native());
  if (limits_.keep_alive.count() > 0) {
    ngtcp2_conn_set_keep_alive_timeout(
        conn_, static_cast<ngtcp2_duration>(limits_.keep_alive.count()) * NGTCP2_MILLISECONDS);
  }
  return Status::Ok();
}

Status Connection::InitClient(const TlsClientContext& tls, const std::string& sni,
                              const SockAddr& remote) {
  remote_ = remote;
  ChoosePacketSize();
  ngtcp2_callbacks cb = Ngtcp2Callbacks::Make(is_server_);
  ngtcp2_settings settings;
  FillSettings(&settings);
  ngtcp2_transport_params params;
  FillParams(&params);
  ngtcp2_cid dcid, scid;
  dcid.datalen = NGTCP2_MIN_INITIAL_DCIDLEN;
  gnutls_rnd(GNUTLS_RND_RANDOM, dcid.data, dcid.datalen);
  scid.datalen = 16;
  gnutls_rnd(GNUTLS_RND_RANDOM, scid.data, scid.datalen);
  UdpSocket& sock = owner_->socket();
  ngtcp2_path path{{const_cast<sockaddr*>(sock.local().get()), sock.local().len},
                   {const_cast<sockaddr*>(remote.get()), remote.len},
                   nullptr};
  if (int rv = ngtcp2_conn_client_new(&conn_, &dcid, &scid, &path, NGTCP2_PROTO_VER_V1, &cb,
                                      &settings, &params, nullptr, this);
      rv != 0) {
    return Internal(std::string("ngtcp2_conn_client_new: ") + ngtcp2_strerror(rv));
  }
  KVCS_RETURN_IF_ERROR(tls_.InitClient(tls, sni, &conn_ref_));
  ngtcp2_conn_set_tls_native_handle(conn_, tls_.native());
  if (limits_.keep_alive.count() > 0) {
    ngtcp2_conn_set_keep_alive_timeout(
        conn_, static_cast<ngtcp2_duration>(limits_.keep_alive.count()) * NGTCP2_MILLISECONDS);
  }
  return Status::Ok();
}

void Connection::RemoveCid(const CidKey& k) {
  for (size_t i = 0; i < cids_.size(); ++i) {
    if (cids_[i] == k) {
      cids_[i] = cids_.back();
      cids_.pop_back();
      return;
    }
  }
}

// ---------------------------------------------------------------------------------- callbacks
int Connection::OnRecvStreamData(uint32_t flags, int64_t id, const uint8_t* data, size_t len,
                                 void* sud) {
  auto* s = static_cast<QuicStream*>(sud);
  if (!s) return 0;
  if (s->read_finished_) {
    // The application abandoned reading; hand the credit straight back.
    ngtcp2_conn_extend_max_stream_offset(conn_, id, len);
    ngtcp2_conn_extend_max_offset(conn_, len);
    return 0;
  }
  if (len) s->recv_.Append(data, len);
  if (flags & NGTCP2_STREAM_DATA_FLAG_FIN) s->fin_received_ = true;
  if (!s->read_event_pending_) {
    s->read_event_pending_ = true;
    Push(Ev::kCanRead, id);
  }
  return 0;
}

int Connection::OnAcked(int64_t id, uint64_t offset, uint64_t len, void* sud) {
  auto* s = static_cast<QuicStream*>(sud);
  if (!s) return 0;
  s->send_.Ack(offset + len);
  if (s->want_can_write_ && s->CanWrite()) {
    s->want_can_write_ = false;
    Push(Ev::kCanWrite, id);
  }
  if (s->fin_sent_ && !s->fin_acked_ && offset + len >= s->send_.end() &&
      s->send_.Buffered() == 0) {
    s->fin_acked_ = true;
    Push(Ev::kWriteDone, id);
  }
  return 0;
}

QuicStream* Connection::NewStream(int64_t id) {
  auto s = std::make_unique<QuicStream>(this, id);
  QuicStream* p = s.get();
  streams_[id] = std::move(s);
  ngtcp2_conn_set_stream_user_data(conn_, id, p);
  return p;
}

int Connection::OnStreamOpen(int64_t id) {
  if (ngtcp2_conn_is_local_stream(conn_, id)) return 0;
  NewStream(id);
  if (ngtcp2_is_bidi_stream(id)) {
    incoming_bidi_.push_back(id);
    Push(Ev::kIncomingBidi, id);
  } else {
    incoming_uni_.push_back(id);
    Push(Ev::kIncomingUni, id);
  }
  return 0;
}

int Connection::OnStreamClose(uint32_t flags, int64_t id, uint64_t code, void* sud) {
  auto* s = static_cast<QuicStream*>(sud);
  if (!s) return 0;
  // ngtcp2 0.12.1 reports no callback when the peer's STOP_SENDING arrives (it just answers with
  // RESET_STREAM). If our write side ended neither by an acknowledged FIN nor by our own reset,
  // the peer stopped it: report that now, with the stream's application error code.
  if (s->HasWriteSide() && !s->fin_acked_ && !s->local_reset_ && !s->stop_notified_ &&
      (flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET)) {
    s->stop_notified_ = true;
    Push(Ev::kStopSending, id, code);
  }
  s->transport_closed_ = true;
  size_t before = s->Counted();
  s->send_.Clear();  // ngtcp2 no longer references the bytes
  Recount(before, s->Counted());
  s->write_closed_ = true;
  sweep_.push_back(s->stream_id());
  return 0;
}

int Connection::OnStreamReset(int64_t id, uint64_t code, void* sud) {
  auto* s = static_cast<QuicStream*>(sud);
  if (!s || s->read_finished_) return 0;
  s->read_finished_ = true;
  size_t dropped = s->recv_.Clear();
  if (dropped) ngtcp2_conn_extend_max_offset(conn_, dropped);
  Push(Ev::kReset, id, code);
  sweep_.push_back(s->stream_id());
  return 0;
}

int Connection::OnExtendMaxStreamData(int64_t, void* sud) {
  auto* s = static_cast<QuicStream*>(sud);
  if (!s) return 0;
  size_t before = s->Counted();
  s->blocked_ = false;
  Recount(before, s->Counted());
  Enqueue(s);
  return 0;
}

int Connection::OnRecvDatagram(const uint8_t* data, size_t len) {
  // Bound memory if the application stops draining events (it cannot: events are dispatched
  // right after this packet), so a simple cap suffices.
  if (dgram_rx_.size() >= 1024) return 0;
  std::vector<uint8_t> buf;
  if (!dgram_free_.empty()) {
    buf = std::move(dgram_free_.back());
    dgram_free_.pop_back();
  }
  buf.assign(data, data + len);
  dgram_rx_.push_back(std::move(buf));
  Push(Ev::kDatagram);
  return 0;
}

int Connection::OnNewCid(ngtcp2_cid* cid, uint8_t* token, size_t cidlen) {
  cid->datalen = cidlen;
  gnutls_rnd(GNUTLS_RND_RANDOM, cid->data, cidlen);
  if (ngtcp2_crypto_generate_stateless_reset_token(token, owner_->static_secret(), 32, cid) != 0) {
    return NGTCP2_ERR_CALLBACK_FAILURE;
  }
  cids_.push_back(CidKey(*cid));
  owner_->AssociateCid(*cid, this);
  return 0;
}

int Connection::OnRemoveCid(const ngtcp2_cid* cid) {
  RemoveCid(CidKey(*cid));
  owner_->DissociateCid(*cid);
  return 0;
}

int Connection::OnHandshakeCompleted() {
  if (state_ == State::kHandshaking) state_ = State::kOpen;
  Push(Ev::kReady);
  return 0;
}

int Connection::OnExtendMaxLocalStreams(bool bidi) {
  Push(bidi ? Ev::kCanOpenBidi : Ev::kCanOpenUni);
  return 0;
}

// ---------------------------------------------------------------------------------- read path
void Connection::OnDatagram(const SockAddr& from, const uint8_t* data, size_t len) {
  if (!conn_) return;
  switch (state_) {
    case State::kClosing:
      // Answer late packets with the same CONNECTION_CLOSE (RFC 9000 §10.2.1).
      if (!close_buf_.empty()) owner_->socket().SendOne(from, close_buf_.data(), close_buf_.size());
      return;
    case State::kDraining:
    case State::kFinished:
      return;
    default:
      break;
  }
  UdpSocket& sock = owner_->socket();
  ngtcp2_path path{{const_cast<sockaddr*>(sock.local().get()), sock.local().len},
                   {const_cast<sockaddr*>(from.get()), from.len},
                   nullptr};
  ngtcp2_pkt_info pi{};
  int rv = ngtcp2_conn_read_pkt(conn_, &path, &pi, data, len, NowTs());
  if (rv != 0) HandleLibError(rv);
}

void Connection::HandleLibError(int rv) {
  if (state_ >= State::kClosing) return;
  switch (rv) {
    case NGTCP2_ERR_DRAINING:
      EnterDraining();
      return;
    case NGTCP2_ERR_DROP_CONN:
    case NGTCP2_ERR_RETRY: {
      CloseInfo info{CloseInfo::Kind::kLocalError, false, 0, "connection dropped"};
      close_info_ = info;
      Push(Ev::kClosed);
      state_ = State::kDraining;
      StartClosePeriod();
      return;
    }
    case NGTCP2_ERR_IDLE_CLOSE:
    case NGTCP2_ERR_HANDSHAKE_TIMEOUT: {
      bool idle = rv == NGTCP2_ERR_IDLE_CLOSE;
      CloseInfo info{idle ? CloseInfo::Kind::kIdleTimeout : CloseInfo::Kind::kHandshakeTimeout,
                     false, 0,
                     idle ? "no packets from the peer within the idle timeout (" +
                                std::to_string(limits_.idle_timeout.count()) + " ms)"
                          : "handshake did not complete in time"};
      close_info_ = info;
      Push(Ev::kClosed);
      state_ = State::kFinished;
      return;
    }
    default:
      break;
  }
  ngtcp2_connection_close_error ccerr;
  ngtcp2_connection_close_error_default(&ccerr);
  CloseInfo info;
  info.by_peer = false;
  if (rv == NGTCP2_ERR_CRYPTO) {
    uint8_t alert = ngtcp2_conn_get_tls_alert(conn_);
    ngtcp2_connection_close_error_set_transport_error_tls_alert(&ccerr, alert, nullptr, 0);
    info.kind = CloseInfo::Kind::kTls;
    info.code = NGTCP2_CRYPTO_ERROR | alert;
    info.reason = tls_.FailureDetail();
  } else {
    ngtcp2_connection_close_error_set_transport_error_liberr(&ccerr, rv, nullptr, 0);
    info.kind = CloseInfo::Kind::kTransport;
    info.code = ccerr.error_code;
    info.reason = std::string("local transport error: ") + ngtcp2_strerror(rv);
  }
  StartClosing(ccerr, std::move(info));
}

CloseInfo Connection::InfoFromCcerr(const ngtcp2_connection_close_error& e, bool by_peer) const {
  CloseInfo info;
  info.by_peer = by_peer;
  info.code = e.error_code;
  info.reason.assign(reinterpret_cast<const char*>(e.reason), e.reasonlen);
  switch (e.type) {
    case NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_APPLICATION:
      info.kind = CloseInfo::Kind::kApplication;
      break;
    case NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_TRANSPORT_IDLE_CLOSE:
      info.kind = CloseInfo::Kind::kIdleTimeout;
      break;
    default:
      info.kind = (e.error_code & ~uint64_t{0xff}) == NGTCP2_CRYPTO_ERROR
                      ? CloseInfo::Kind::kTls
                      : CloseInfo::Kind::kTransport;
      if (info.kind == CloseInfo::Kind::kTls && by_peer) {
        std::string detail = tls_.FailureDetail();
        if (!detail.empty()) info.reason += (info.reason.empty() ? "" : "; ") + detail;
      }
  }
  return info;
}

void Connection::EnterDraining() {
  ngtcp2_connection_close_error ccerr;
  ngtcp2_conn_get_connection_close_error(conn_, &ccerr);
  close_info_ = InfoFromCcerr(ccerr, /*by_peer=*/true);
  state_ = State::kDraining;
  Push(Ev::kClosed);
  StartClosePeriod();
}

void Connection::StartClosing(const ngtcp2_connection_close_error& ccerr, CloseInfo info) {
  if (state_ >= State::kClosing) return;
  close_info_ = std::move(info);
  Push(Ev::kClosed);
  close_buf_.resize(kMaxPacketSize);
  ngtcp2_path_storage ps;
  ngtcp2_path_storage_zero(&ps);
  ngtcp2_pkt_info pi;
  ngtcp2_ssize n = ngtcp2_conn_write_connection_close(conn_, &ps.path, &pi, close_buf_.data(),
                                                      close_buf_.size(), &ccerr, NowTs());
  close_buf_.resize(n > 0 ? static_cast<size_t>(n) : 0);
  state_ = State::kClosing;
  if (!close_buf_.empty()) owner_->socket().SendOne(remote_, close_buf_.data(), close_buf_.size());
  StartClosePeriod();
}

void Connection::StartClosePeriod() {
  timer_expiry_ = UINT64_MAX;
  ngtcp2_duration pto = ngtcp2_conn_get_pto(conn_);
  timer_.expires_after(std::chrono::nanoseconds(3 * pto));
  std::weak_ptr<char> alive = alive_;
  timer_.async_wait([this, alive](const boost::system::error_code& ec) {
    if (ec || alive.expired()) return;
    state_ = State::kFinished;
    AfterIo();
  });
}

void Connection::Finish() {
  std::weak_ptr<char> alive = alive_;
  Kill();
  owner_->OnConnectionFinished(this);
}

// ---------------------------------------------------------------------------------- events
void Connection::AfterIo() {
  DispatchEvents();
  if (state_ == State::kFinished) {
    Finish();
    return;
  }
  Flush();
}

void Connection::DispatchEvents() {
  if (dispatching_) return;
  dispatching_ = true;
  std::weak_ptr<char> alive = alive_;
  for (size_t i = 0; i < events_.size(); ++i) {
    Event e = events_[i];
    QuicStream* s = nullptr;
    if (e.stream_id >= 0) {
      auto it = streams_.find(e.stream_id);
      if (it == streams_.end()) continue;
      s = it->second.get();
    }
    transport::StreamVisitor* sv = s ? s->visitor_.get() : nullptr;
    switch (e.type) {
      case Ev::kReady:
        if (is_server_) {
          announced_ = true;
          owner_->OnConnectionReady(this);
        } else {
          announced_ = true;
        }
        if (visitor_ && state_ == State::kOpen) visitor_->OnSessionReady();
        break;
      case Ev::kClosed: {
        // Streams die with the session.
        auto streams = std::move(streams_);
        streams_.clear();
        sched_.Clear();
        incoming_bidi_.clear();
        incoming_uni_.clear();
        sweep_.clear();
        for (auto& [id, st] : streams) {
          if (st->visitor_) st->visitor_->OnStreamClosed();
        }
        streams.clear();
        if (announced_) {
          if (visitor_) visitor_->OnSessionClosed(*close_info_);
        } else {
          if (visitor_ && !is_server_) visitor_->OnSessionClosed(*close_info_);
          owner_->OnConnectionFailed(this, *close_info_);
        }
        visitor_ = nullptr;
        break;
      }
      case Ev::kIncomingBidi:
        if (visitor_) visitor_->OnIncomingBidirectionalStreamAvailable();
        break;
      case Ev::kIncomingUni:
        if (visitor_) visitor_->OnIncomingUnidirectionalStreamAvailable();
        break;
      case Ev::kCanRead:
        s->read_event_pending_ = false;
        if (sv) sv->OnCanRead();
        break;
      case Ev::kCanWrite:
        if (sv) sv->OnCanWrite();
        break;
      case Ev::kReset:
        if (sv) sv->OnResetStreamReceived(e.code);
        break;
      case Ev::kStopSending:
        if (sv) sv->OnStopSendingReceived(e.code);
        break;
      case Ev::kWriteDone:
        if (sv) sv->OnWriteSideInDataRecvdState();
        break;
      case Ev::kDatagram:
        if (!dgram_rx_.empty()) {
          std::vector<uint8_t> d = std::move(dgram_rx_.front());
          dgram_rx_.pop_front();
          if (visitor_) visitor_->OnDatagramReceived(ByteSpan(d.data(), d.size()));
          if (dgram_free_.size() < 64) dgram_free_.push_back(std::move(d));
        }
        break;
      case Ev::kCanOpenBidi:
        if (visitor_ && state_ == State::kOpen)
          visitor_->OnCanCreateNewOutgoingBidirectionalStream();
        break;
      case Ev::kBudget:
        sched_.set_wake_pending(false);
        if (!WakeBudgetWaiters(alive)) return;
        break;
      case Ev::kCanOpenUni:
        if (visitor_ && state_ == State::kOpen)
          visitor_->OnCanCreateNewOutgoingUnidirectionalStream();
        break;
    }
    if (alive.expired()) return;  // a visitor destroyed the session
  }
  events_.clear();
  dispatching_ = false;
  SweepStreams();
}

void Connection::SweepStreams() {
  if (sweep_.empty()) return;
  // Ids, not pointers: a stream may be listed twice and is freed on its first turn.
  std::vector<int64_t> candidates;
  candidates.swap(sweep_);
  for (int64_t id : candidates) {
    auto it = streams_.find(id);
    if (it == streams_.end()) continue;
    QuicStream* s = it->second.get();
    bool remote = !ngtcp2_conn_is_local_stream(conn_, s->stream_id());
    bool bidi = ngtcp2_is_bidi_stream(s->stream_id());
    // A peer's unidirectional stream has no write side, so it is finished once its read side is.
    // ngtcp2 0.12.1 never closes such a stream itself (no stream_close callback: it waits for a
    // FIN acknowledgement that cannot happen; fixed upstream in 0.14.0, commit 1d591bde), so
    // waiting for transport_closed_ here would keep it, and its stream-count credit, forever.
    bool remote_uni = remote && !bidi;
    if (!(s->transport_closed_ || remote_uni) || !s->ReadDone()) continue;
    if (s->visitor_) s->visitor_->OnStreamClosed();
    // ngtcp2 may still hold the stream (see above): it must not call back with a freed pointer.
    if (!s->transport_closed_) ngtcp2_conn_set_stream_user_data(conn_, s->stream_id(), nullptr);
    sched_.Remove(s);
    streams_.erase(it);
    // Return the stream-count credit only now that the application is done with the stream.
    if (remote && state_ < State::kClosing) {
      if (bidi) {
        ngtcp2_conn_extend_max_streams_bidi(conn_, 1);
      } else {
        ngtcp2_conn_extend_max_streams_uni(conn_, 1);
      }
    }
  }
}

void Connection::MaybeWakeBudgetWaiters() {
  if (state_ != State::kOpen || !sched_.WakeDue()) return;
  sched_.set_wake_pending(true);
  Push(Ev::kBudget);
  ScheduleFlush();  // dispatches it (while dispatching, the dispatch loop reaches it anyway)
}

bool Connection::WakeBudgetWaiters(const std::weak_ptr<char>& alive) {
  auto find = [this](int64_t id) -> SendScheduler::Entry* {
    auto it = streams_.find(id);
    return it == streams_.end() ? nullptr : it->second.get();
  };
  while (SendScheduler::Entry* e = sched_.NextWaiter(find)) {
    auto* s = static_cast<QuicStream*>(e);
    // A stream whose own buffer is full gets OnCanWrite from OnAcked (want_can_write_).
    if (!s->StreamWritable()) continue;
    s->want_can_write_ = false;
    if (s->visitor_) s->visitor_->OnCanWrite();
    if (alive.expired()) return false;
  }
  return true;
}

void Connection::ScheduleFlush() {
  if (flush_posted_ || dispatching_) return;  // AfterIo flushes after dispatching anyway
  flush_posted_ = true;
  std::weak_ptr<char> alive = alive_;
  boost::asio::post(io_, [this, alive] {
    if (alive.expired()) return;
    flush_posted_ = false;
    AfterIo();
  });
}

// ---------------------------------------------------------------------------------- write path
bool Connection::CommitAndMaybeSend(size_t nwrite, const ngtcp2_path& path) {
  UdpSocket& sock = owner_->socket();
  if (sock.batch_packets() == 0) {
    memcpy(&remote_.storage, path.remote.addr, path.remote.addrlen);
    remote_.len = path.remote.addrlen;
  }
  if (sock.CommitPacket(nwrite)) {
    if (!sock.SendBatch(&remote_)) {
      owner_->WaitWritable();
      return false;
    }
  }
  return true;
}

bool Connection::WriteDatagrams(ngtcp2_path_storage* ps, size_t max_pkt, size_t* pkts,
                                size_t max_pkts, bool* stop, ngtcp2_tstamp ts) {
  UdpSocket& sock = owner_->socket();
  while (!dgram_tx_.empty() && *pkts < max_pkts) {
    auto& d = dgram_tx_.front();
    ngtcp2_vec v{d.data(), d.size()};
    int accepted = 0;
    ngtcp2_pkt_info pi;
    ngtcp2_ssize n = ngtcp2_conn_writev_datagram(
        conn_, &ps->path, &pi, sock.NextPacketBuffer(), max_pkt, &accepted,
        NGTCP2_WRITE_DATAGRAM_FLAG_MORE, next_dgram_id_, &v, 1, ts);
    if (accepted) {
      ++next_dgram_id_;
      if (dgram_free_.size() < 64) dgram_free_.push_back(std::move(d));
      dgram_tx_.pop_front();
    }
    if (n == NGTCP2_ERR_WRITE_MORE) continue;
    if (n < 0) {
      if (n == NGTCP2_ERR_INVALID_ARGUMENT && !accepted) {
        dgram_tx_.pop_front();  // too large for the peer: drop it
        continue;
      }
      HandleLibError(static_cast<int>(n));
      *stop = true;
      return false;
    }
    if (n == 0) {
      *stop = true;  // congestion limited
      return true;
    }
    ++*pkts;
    if (!CommitAndMaybeSend(static_cast<size_t>(n), ps->path)) {
      *stop = true;
      return false;
    }
  }
  return true;
}

void Connection::Flush() {
  if (!conn_ || state_ >= State::kClosing) return;
  UdpSocket& sock = owner_->socket();
  if (sock.blocked()) {
    owner_->WaitWritable();
    return;
  }
  ngtcp2_tstamp ts = NowTs();
  ngtcp2_path_storage ps;
  ngtcp2_path_storage_zero(&ps);
  bool handshake_done = ngtcp2_conn_get_handshake_completed(conn_) != 0;
  // Handshake datagrams stay Ethernet-sized: with a large configured size ngtcp2 would pad each
  // Initial up to it (it pads Initials to the whole buffer when size shaping is off).
  size_t max_pkt =
      handshake_done ? limits_.max_udp_payload
                     : std::min<size_t>(limits_.max_udp_payload, NGTCP2_MAX_PMTUD_UDP_PAYLOAD_SIZE);
  size_t max_pkts =
      std::clamp<size_t>(ngtcp2_conn_get_send_quantum(conn_) / max_pkt, 1, kMaxBatchPackets);
  size_t pkts = 0;
  bool stop = false;
  if (!WriteDatagrams(&ps, max_pkt, &pkts, max_pkts, &stop, ts)) return;
  while (!stop && pkts < max_pkts) {
    QuicStream* s = nullptr;
    // The stream to feed: the front of the lowest send order's queue (transport/session.h).
    while (SendScheduler::Entry* front = sched_.Front()) {
      auto* f = static_cast<QuicStream*>(front);
      if (f->Sendable()) {
        s = f;
        break;
      }
      sched_.PopFront(f, /*requeue=*/false);
    }
    if (s && s->send_.Unsent() > 0 && ngtcp2_conn_get_max_data_left(conn_) == 0) {
      s = nullptr;  // connection-level credit exhausted: only control frames now
    }
    ngtcp2_vec vec[kMaxIov];
    size_t vcnt = 0;
    uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_MORE;
    int64_t sid = -1;
    bool fin_attempt = false;
    size_t unsent_before = 0;
    if (s) {
      sid = s->stream_id();
      vcnt = s->send_.GatherUnsent(vec, kMaxIov);
      unsent_before = s->send_.Unsent();
      size_t gathered = 0;
      for (size_t i = 0; i < vcnt; ++i) gathered += vec[i].len;
      if (s->fin_requested_ && gathered == unsent_before) {
        flags |= NGTCP2_WRITE_STREAM_FLAG_FIN;
        fin_attempt = true;
      }
    }
    ngtcp2_ssize ndatalen = -1;
    ngtcp2_pkt_info pi;
    ngtcp2_ssize n = ngtcp2_conn_writev_stream(conn_, &ps.path, &pi, sock.NextPacketBuffer(),
                                               max_pkt, &ndatalen, flags, sid, vec, vcnt, ts);
    if (s && ndatalen >= 0) {
      size_t before = s->Counted();
      s->send_.MarkSent(static_cast<size_t>(ndatalen));
      Recount(before, s->Counted());
      if (fin_attempt && static_cast<size_t>(ndatalen) == unsent_before) s->fin_sent_ = true;
    }
    if (n < 0) {
      switch (n) {
        case NGTCP2_ERR_WRITE_MORE:
          if (s && !s->HasPendingSend()) sched_.PopFront(s, /*requeue=*/false);
          continue;
        case NGTCP2_ERR_STREAM_DATA_BLOCKED: {
          size_t before = s->Counted();
          s->blocked_ = true;
          Recount(before, s->Counted());
          sched_.PopFront(s, /*requeue=*/false);
          continue;
        }
        case NGTCP2_ERR_STREAM_SHUT_WR: {
          // The peer's STOP_SENDING shut our write side (reported at stream close).
          size_t before = s->Counted();
          s->write_closed_ = s->write_reset_ = true;
          Recount(before, s->Counted());
          sched_.PopFront(s, /*requeue=*/false);
          continue;
        }
        case NGTCP2_ERR_STREAM_NOT_FOUND:
          sched_.PopFront(s, /*requeue=*/false);
          continue;
        default:
          HandleLibError(static_cast<int>(n));
          AfterIo();
          return;
      }
    }
    if (n == 0) break;  // nothing more to send now, or congestion/pacing limited
    if (pkts == 0) ++sock.stats().flushes;
    ++pkts;
    if (s) sched_.PopFront(s, /*requeue=*/s->HasPendingSend());
    if (!CommitAndMaybeSend(static_cast<size_t>(n), ps.path)) break;
  }
  if (sock.batch_packets() > 0 && !sock.blocked()) {
    if (!sock.SendBatch(&remote_)) owner_->WaitWritable();
  }
  // No pacing during the handshake: before the first RTT sample ngtcp2 paces with its 333 ms
  // initial RTT, which held the client's Finished back ~21 ms after a 1200-byte Initial (and
  // 130 ms after a 16000-byte one) on every connection. The amplification limit and the initial
  // window bound the handshake flights anyway.
  if (handshake_done) ngtcp2_conn_update_pkt_tx_time(conn_, ts);
  if (pkts >= max_pkts && !sock.blocked()) {
    // The burst cap stopped us, not ngtcp2: more may be sendable now. Yield to the event loop
    // (so received ACKs are processed first) and continue, instead of waking on the pacing
    // timer: ngtcp2 0.12.1 lets a packet go when its pacing time is < 1 ms away anyway.
    ++sock.stats().flush_yields;
    ScheduleFlush();
  }
  ArmTimer();
}

void Connection::ArmTimer() {
  if (state_ >= State::kClosing || !conn_) return;
  ngtcp2_tstamp expiry = ngtcp2_conn_get_expiry(conn_);
  ngtcp2_tstamp now = NowTs();
  if (expiry <= now + kPacingSlack) {
    // A deadline this close is usually the pacer's next-packet time, which ngtcp2 treats as
    // already reached (it sends when that time is < kPacingSlack away; its pacing never waits
    // less). Waking on a timer for it costs a timerfd update and an epoll wakeup per burst (on
    // this VM ~17% of all CPU). handle_expiry with the real time clears such a pacing time and
    // runs whatever else is due; then only timers that truly lie ahead are armed.
    if (int rv = ngtcp2_conn_handle_expiry(conn_, now); rv != 0) {
      HandleLibError(rv);
      ScheduleFlush();
      return;
    }
    ngtcp2_tstamp handled = expiry;
    expiry = ngtcp2_conn_get_expiry(conn_);
    // Whatever handle_expiry cleared or ran must be followed by a flush: an expired timer left
    // packets to write (ACK, probe...), and a cleared pacing time means the pacer now lets the
    // next packet go. The Flush that called us may have been refused by that very pacing time
    // (it checked against its own, earlier timestamp) and nothing else would wake us: no timer
    // is armed for a deadline handle_expiry cleared, so the stream stalled until a packet
    // arrived (with everything acknowledged, none does: QuicE2E.FlowControlStallResumes hung
    // until its deadline in ~0.5-3% of runs). At most one extra, possibly empty, flush per burst.
    if (expiry != handled) ScheduleFlush();
    if (expiry <= now) {
      ScheduleFlush();  // still due after handling (cannot normally happen): retry via a post
      return;
    }
  }
  // Re-arm only when the deadline moves earlier. A later deadline keeps the armed (earlier) wait:
  // it fires early, ngtcp2_conn_handle_expiry does nothing for unexpired timers, and we re-arm.
  // This avoids a timerfd update per flush (measured: ~9% of CPU at full rate).
  if (expiry >= timer_expiry_) return;
  timer_expiry_ = expiry;
  ++owner_->socket().stats().timer_sets;
  auto delay = std::chrono::nanoseconds(expiry > now ? expiry - now : 0);
  timer_.expires_after(delay);
  std::weak_ptr<char> alive = alive_;
  timer_.async_wait([this, alive](const boost::system::error_code& ec) {
    if (ec || alive.expired()) return;
    OnTimer();
  });
}

void Connection::OnTimer() {
  timer_expiry_ = UINT64_MAX;
  ++owner_->socket().stats().timer_fires;
  if (state_ >= State::kClosing) return;
  int rv = ngtcp2_conn_handle_expiry(conn_, NowTs());
  if (rv != 0) HandleLibError(rv);
  AfterIo();
}

// ---------------------------------------------------------------------------------- Session API
transport::Stream* Connection::AcceptIncomingBidirectionalStream() {
  while (!incoming_bidi_.empty()) {
    int64_t id = incoming_bidi_.front();
    incoming_bidi_.pop_front();
    if (auto it = streams_.find(id); it != streams_.end()) return it->second.get();
  }
  return nullptr;
}

transport::Stream* Connection::AcceptIncomingUnidirectionalStream() {
  while (!incoming_uni_.empty()) {
    int64_t id = incoming_uni_.front();
    incoming_uni_.pop_front();
    if (auto it = streams_.find(id); it != streams_.end()) return it->second.get();
  }
  return nullptr;
}

bool Connection::CanOpenNextOutgoingBidirectionalStream() {
  return IsOpen() && ngtcp2_conn_get_streams_bidi_left(conn_) > 0;
}
bool Connection::CanOpenNextOutgoingUnidirectionalStream() {
  return IsOpen() && ngtcp2_conn_get_streams_uni_left(conn_) > 0;
}

transport::Stream* Connection::OpenOutgoingBidirectionalStream() {
  if (!IsOpen()) return nullptr;
  int64_t id;
  if (ngtcp2_conn_open_bidi_stream(conn_, &id, nullptr) != 0) return nullptr;
  return NewStream(id);
}

transport::Stream* Connection::OpenOutgoingUnidirectionalStream() {
  if (!IsOpen()) return nullptr;
  int64_t id;
  if (ngtcp2_conn_open_uni_stream(conn_, &id, nullptr) != 0) return nullptr;
  return NewStream(id);
}

transport::Stream* Connection::GetStreamById(transport::StreamId id) {
  auto it = streams_.find(static_cast<int64_t>(id));
  return it == streams_.end() ? nullptr : it->second.get();
}

size_t Connection::GetMaxDatagramSize() const {
  if (!conn_ || state_ != State::kOpen) return 0;
  const ngtcp2_transport_params* rp = ngtcp2_conn_get_remote_transport_params(conn_);
  if (!rp || rp->max_datagram_frame_size == 0) return 0;
  // DATAGRAM frame: type (1) + length varint (up to 2 here). Packet: short header with our
  // peer's CID (up to 21), packet number (up to 4), AEAD tag (16).
  constexpr size_t kFrameOverhead = 3, kPacketOverhead = 1 + 20 + 4 + 16;
  size_t by_frame = rp->max_datagram_frame_size > kFrameOverhead
                        ? static_cast<size_t>(rp->max_datagram_frame_size) - kFrameOverhead
                        : 0;
  size_t path = ngtcp2_conn_get_path_max_tx_udp_payload_size(conn_);
  size_t by_packet =
      path > kFrameOverhead + kPacketOverhead ? path - kFrameOverhead - kPacketOverhead : 0;
  return std::min(by_frame, by_packet);
}

Status Connection::SendOrQueueDatagram(ByteSpan datagram) {
  if (state_ != State::kOpen)
    return TransportErr(TransportError::kSessionClosed, "session is not open");
  size_t max = GetMaxDatagramSize();
  if (max == 0)
    return TransportErr(TransportError::kDatagramsDisabled, "peer does not accept datagrams");
  if (datagram.size() > max) {
    return TransportErr(
        TransportError::kDatagramTooLarge,
        "datagram of " + std::to_string(datagram.size()) + " bytes exceeds " + std::to_string(max),
        Code::kInvalidArgument);
  }
  if (dgram_tx_.size() >= limits_.max_queued_datagrams) {
    return TransportErr(TransportError::kDatagramQueueFull, "datagram queue full",
                        Code::kResourceExhausted);
  }
  std::vector<uint8_t> buf;
  if (!dgram_free_.empty()) {
    buf = std::move(dgram_free_.back());
    dgram_free_.pop_back();
  }
  buf.assign(datagram.begin(), datagram.end());
  dgram_tx_.push_back(std::move(buf));
  ScheduleFlush();
  return Status::Ok();
}

void Connection::CloseSession(transport::ErrorCode code, std::string_view reason) {
  if (!conn_ || state_ >= State::kClosing) return;
  ngtcp2_connection_close_error ccerr;
  ngtcp2_connection_close_error_default(&ccerr);
  ngtcp2_connection_close_error_set_application_error(
      &ccerr, code, reinterpret_cast<const uint8_t*>(reason.data()), reason.size());
  StartClosing(ccerr, CloseInfo{CloseInfo::Kind::kApplication, false, code, std::string(reason)});
  ScheduleFlush();  // dispatches the kClosed event outside this call
}

std::string Connection::negotiated_cipher() const {
  return state_ == State::kOpen ? tls_.CipherName() : "";
}

std::string Connection::GetNegotiatedAlpn() const {
  return state_ == State::kOpen ? tls_.SelectedAlpn() : "";
}

void Connection::Abandon() {
  Kill();
  state_ = State::kFinished;
  visitor_ = nullptr;
  owner_ = nullptr;
  owned_ep_.reset();
}

bool Connection::gso_enabled() const { return owner_ && owner_->socket().gso(); }

IoStats Connection::io_stats() const { return owner_ ? owner_->socket().stats() : IoStats{}; }

}  // namespace kvcs::quic
