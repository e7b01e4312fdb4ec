// MoqtServer / MoqtClient: see moqt_endpoint.h. Two small adapters do the work:
//   - SessionTap sits between the QUIC session and the MoqtSession (it is a transport::Session
//     for the MoqtSession and the SessionVisitor of the QUIC session). It forwards everything and
//     records the exact transport CloseInfo (TLS failure, idle timeout...), which the MoqtSession
//     callbacks do not carry, then tells the endpoint that the session ended.
//   - ForwardingCallbacks passes MoqtSessionCallbacks on to the application's (if any) and
//     remembers whether SETUP completed.
#include "moqt_endpoint/moqt_endpoint.h"

#include <algorithm>
#include <charconv>

#include "common/asio.h"
#include "common/hex.h"
#include "common/log.h"

namespace kvcs::moqt {

namespace asio = boost::asio;

namespace internal {

class SessionTap : public transport::Session, public transport::SessionVisitor {
 public:
  using EndFn = std::function<void(const transport::CloseInfo&, bool handshake_completed)>;
  explicit SessionTap(EndFn on_end) : on_end_(std::move(on_end)) {}
  ~SessionTap() override {
    // After OnSessionClosed the QUIC session may already be gone: never touch it then.
    if (inner_ && !closed_) inner_->SetVisitor(nullptr);
  }
  void Attach(transport::Session* inner) { inner_ = inner; }
  bool ready() const { return ready_; }

  // ---- transport::Session (what the MoqtSession calls)
  void SetVisitor(transport::SessionVisitor* v) override { visitor_ = v; }
  transport::Stream* AcceptIncomingBidirectionalStream() override {
    return Live() ? inner_->AcceptIncomingBidirectionalStream() : nullptr;
  }
  transport::Stream* AcceptIncomingUnidirectionalStream() override {
    return Live() ? inner_->AcceptIncomingUnidirectionalStream() : nullptr;
  }
  bool CanOpenNextOutgoingBidirectionalStream() override {
    return Live() && inner_->CanOpenNextOutgoingBidirectionalStream();
  }
  bool CanOpenNextOutgoingUnidirectionalStream() override {
    return Live() && inner_->CanOpenNextOutgoingUnidirectionalStream();
  }
  transport::Stream* OpenOutgoingBidirectionalStream() override {
    return Live() ? inner_->OpenOutgoingBidirectionalStream() : nullptr;
  }
  transport::Stream* OpenOutgoingUnidirectionalStream() override {
    return Live() ? inner_->OpenOutgoingUnidirectionalStream() : nullptr;
  }
  transport::Stream* GetStreamById(transport::StreamId id) override {
    return Live() ? inner_->GetStreamById(id) : nullptr;
  }
  Status SendOrQueueDatagram(ByteSpan d) override {
    if (!Live()) {
      return Status(Code::kFailedPrecondition, "session closed",
                    static_cast<int>(transport::TransportError::kSessionClosed));
    }
    return inner_->SendOrQueueDatagram(d);
  }
  size_t GetMaxDatagramSize() const override { return Live() ? inner_->GetMaxDatagramSize() : 0; }
  void CloseSession(transport::ErrorCode code, std::string_view reason) override {
    if (Live()) inner_->CloseSession(code, reason);
  }
  std::string GetNegotiatedAlpn() const override {
    return Live() ? inner_->GetNegotiatedAlpn() : std::string();
  }
  bool IsOpen() const override { return Live() && inner_->IsOpen(); }

  // ---- transport::SessionVisitor (what the QUIC session reports)
  void OnSessionReady() override {
    ready_ = true;
    if (visitor_) visitor_->OnSessionReady();
  }
  void OnSessionClosed(const transport::CloseInfo& info) override {
    if (closed_) return;
    closed_ = true;
    if (visitor_) visitor_->OnSessionClosed(info);
    if (on_end_) on_end_(info, ready_);
  }
  void OnIncomingBidirectionalStreamAvailable() override {
    if (visitor_) visitor_->OnIncomingBidirectionalStreamAvailable();
  }
  void OnIncomingUnidirectionalStreamAvailable() override {
    if (visitor_) visitor_->OnIncomingUnidirectionalStreamAvailable();
  }
  void OnDatagramReceived(ByteSpan d) override {
    if (visitor_) visitor_->OnDatagramReceived(d);
  }
  void OnCanCreateNewOutgoingBidirectionalStream() override {
    if (visitor_) visitor_->OnCanCreateNewOutgoingBidirectionalStream();
  }
  void OnCanCreateNewOutgoingUnidirectionalStream() override {
    if (visitor_) visitor_->OnCanCreateNewOutgoingUnidirectionalStream();
  }

 private:
  bool Live() const { return inner_ && !closed_; }
  transport::Session* inner_ = nullptr;
  transport::SessionVisitor* visitor_ = nullptr;
  EndFn on_end_;
  bool ready_ = false;
  bool closed_ = false;
};

class ForwardingCallbacks : public MoqtSessionCallbacks {
 public:
  void set_app(MoqtSessionCallbacks* app) { app_ = app; }
  bool setup_completed() const { return setup_completed_; }

  void OnSetupComplete(const SetupOptions& peer) override {
    setup_completed_ = true;
    if (app_) app_->OnSetupComplete(peer);
  }
  void OnSessionClosed(uint64_t code, const std::string& reason, bool by_peer) override {
    if (app_) app_->OnSessionClosed(code, reason, by_peer);
  }
  void OnGoAway(const std::string& uri) override {
    if (app_) app_->OnGoAway(uri);
  }
  std::optional<SessionError> OnPeerSetup(const SetupOptions& peer) override {
    return app_ ? app_->OnPeerSetup(peer) : std::nullopt;
  }
  std::optional<RequestErrorCode> OnPublishNamespace(const TrackNamespace& ns) override {
    return app_ ? app_->OnPublishNamespace(ns) : std::nullopt;
  }
  void OnPublishNamespaceDone(const TrackNamespace& ns) override {
    if (app_) app_->OnPublishNamespaceDone(ns);
  }
  std::optional<RequestErrorCode> AuthorizeRequest(MessageType type, const FullTrackName& track,
                                                   const std::vector<AuthToken>& tokens) override {
    return app_ ? app_->AuthorizeRequest(type, track, tokens) : std::nullopt;
  }
  void OnSubscriberCutOff(MessageType type, const FullTrackName& track, uint64_t request_id,
                          uint64_t stalled_ms) override {
    if (app_) app_->OnSubscriberCutOff(type, track, request_id, stalled_ms);
  }
  PublishAnswer OnPublish(const IncomingPublish& publish) override {
    return app_ ? app_->OnPublish(publish) : PublishAnswer{};
  }

 private:
  MoqtSessionCallbacks* app_ = nullptr;
  bool setup_completed_ = false;
};

}  // namespace internal

namespace {

std::function<uint64_t()> SteadyMs() {
  auto start = std::chrono::steady_clock::now();
  return [start] {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                     std::chrono::steady_clock::now() - start)
                                     .count());
  };
}

}  // namespace

std::string SessionEnd::ToString() const {
  if (!handshake_completed || transport.kind != transport::CloseInfo::Kind::kApplication) {
    return transport.ToString();
  }
  char hex[32];
  snprintf(hex, sizeof(hex), "0x%llx", static_cast<unsigned long long>(transport.code));
  std::string s = "MOQT " +
                  std::string(SessionErrorName(static_cast<SessionError>(transport.code))) + " (" +
                  hex + ") " + (transport.by_peer ? "from the peer" : "sent by us");
  if (!transport.reason.empty()) s += ": " + transport.reason;
  return s;
}

// ------------------------------------------------------------------------------------ server

struct MoqtServer::TimerBox {
  explicit TimerBox(asio::io_context& io) : timer(io) {}
  asio::steady_timer timer;
};

struct MoqtServer::Entry {
  uint64_t id = 0;
  std::unique_ptr<internal::SessionTap> tap;
  std::unique_ptr<internal::ForwardingCallbacks> callbacks;
  std::unique_ptr<MoqtSessionCallbacks> app;
  std::unique_ptr<MoqtSession> session;
  bool ended = false;
  ~Entry() {
    // The session detaches from the tap first; the callbacks it uses die after it.
    session.reset();
    app.reset();
    callbacks.reset();
    tap.reset();
  }
};

MoqtServer::MoqtServer(asio::io_context& io, MoqtServerConfig config, TrackSource* source,
                       SessionFactory factory, SessionEndCallback on_end)
    : io_(io),
      config_(std::move(config)),
      source_(source),
      factory_(std::move(factory)),
      on_end_(std::move(on_end)),
      timer_(std::make_unique<TimerBox>(io)) {}

Result<std::unique_ptr<MoqtServer>> MoqtServer::Create(asio::io_context& io,
                                                       MoqtServerConfig config, TrackSource* source,
                                                       SessionFactory factory,
                                                       SessionEndCallback on_end) {
  if (config.quic.on_session) {
    return InvalidArgument("MoqtServerConfig.quic.on_session must be empty (the server uses it)");
  }
  if (config.quic.alpns.empty()) config.quic.alpns = {std::string(kMoqtAlpn)};
  config.session.perspective = Perspective::kServer;
  if (!config.session.clock_ms) config.session.clock_ms = SteadyMs();
  if (config.timer_tick.count() <= 0) config.timer_tick = kDefaultTimerTick;
  std::unique_ptr<MoqtServer> server(
      new MoqtServer(io, std::move(config), source, std::move(factory), std::move(on_end)));
  quic::ServerConfig qc = server->config_.quic;
  MoqtServer* self = server.get();
  qc.on_session = [self](transport::Session& s) { self->OnQuicSession(s); };
  auto quic = quic::QuicServer::Create(io, std::move(qc));
  if (!quic.ok()) return quic.status().WithContext("MOQT server");
  server->quic_ = std::move(*quic);
  server->ArmTimer();
  return server;
}

MoqtServer::~MoqtServer() {
  timer_->timer.cancel();
  sessions_.clear();  // detach every MoqtSession while its QUIC session still exists
  quic_.reset();
}

uint16_t MoqtServer::port() const { return quic_->port(); }
quic::ServerStats MoqtServer::transport_stats() const { return quic_->stats(); }

void MoqtServer::OnQuicSession(transport::Session& s) {
  if (shutting_down_) {
    s.CloseSession(static_cast<uint64_t>(SessionError::kNoError), "server shutting down");
    return;
  }
  uint64_t id = next_id_++;
  auto e = std::make_unique<Entry>();
  e->id = id;
  std::weak_ptr<char> alive = alive_;
  e->tap = std::make_unique<internal::SessionTap>(
      [this, alive, id](const transport::CloseInfo& info, bool handshake) {
        if (alive.expired()) return;
        auto it = sessions_.find(id);
        if (it == sessions_.end()) return;
        SessionEnd end;
        end.transport = info;
        end.handshake_completed = handshake;
        end.setup_completed = it->second->callbacks->setup_completed();
        OnSessionEnded(id, end);
      });
  e->tap->Attach(&s);
  e->callbacks = std::make_unique<internal::ForwardingCallbacks>();
  s.SetVisitor(e->tap.get());
  // The QUIC session is open already: the MoqtSession sends SETUP at once.
  e->session =
      std::make_unique<MoqtSession>(e->tap.get(), config_.session, e->callbacks.get(), source_);
  MoqtServerSessionInfo info{id, e->session.get()};
  Entry* raw = e.get();
  sessions_[id] = std::move(e);
  if (factory_) {
    raw->app = factory_(info);
    raw->callbacks->set_app(raw->app.get());
  }
  KVCS_LOG_DEBUG("moqt server: session {} accepted", id);
}

void MoqtServer::OnSessionEnded(uint64_t id, const SessionEnd& end) {
  auto it = sessions_.find(id);
  if (it == sessions_.end() || it->second->ended) return;
  it->second->ended = true;
  KVCS_LOG_DEBUG("moqt server: session {} ended: {}", id, end.ToString());
  if (on_end_) on_end_(MoqtServerSessionInfo{id, it->second->session.get()}, end);
  // Destroyed outside the MoqtSession's callback.
  std::weak_ptr<char> alive = alive_;
  asio::post(io_, [this, alive, id] {
    if (!alive.expired()) sessions_.erase(id);
  });
}

void MoqtServer::ForEachSession(const std::function<void(const MoqtServerSessionInfo&)>& fn) {
  std::vector<uint64_t> ids;
  for (auto& [id, e] : sessions_) ids.push_back(id);
  for (uint64_t id : ids) {
    auto it = sessions_.find(id);
    if (it != sessions_.end() && !it->second->ended) fn({id, it->second->session.get()});
  }
}

void MoqtServer::ArmTimer() {
  timer_->timer.expires_after(config_.timer_tick);
  std::weak_ptr<char> alive = alive_;
  timer_->timer.async_wait([this, alive](const boost::system::error_code& ec) {
    if (ec || alive.expired()) return;
    std::vector<uint64_t> ids;
    for (auto& [id, e] : sessions_) ids.push_back(id);
    for (uint64_t id : ids) {
      auto it = sessions_.find(id);
      if (it != sessions_.end() && !it->second->ended) it->second->session->OnTimer();
    }
    ArmTimer();
  });
}

void MoqtServer::Shutdown(std::chrono::milliseconds drain, std::function<void()> done) {
  if (shutting_down_) return;
  shutting_down_ = true;
  for (auto& [id, e] : sessions_) {
    if (!e->ended && e->session->setup_complete()) {
      (void)e->session->GoAway("", static_cast<uint64_t>(drain.count()));
    }
  }
  std::weak_ptr<char> alive = alive_;
  quic_->Shutdown(drain, static_cast<transport::ErrorCode>(SessionError::kNoError),
                  [this, alive, done = std::move(done)] {
                    if (!alive.expired()) timer_->timer.cancel();
                    if (done) done();
                  });
}

// ------------------------------------------------------------------------------------ client

struct MoqtClient::TimerBox {
  explicit TimerBox(asio::io_context& io) : timer(io) {}
  asio::steady_timer timer;
};

MoqtClient::MoqtClient(asio::io_context& io, MoqtClientConfig config)
    : io_(io), config_(std::move(config)), timer_(std::make_unique<TimerBox>(io)) {}

Result<std::unique_ptr<MoqtClient>> MoqtClient::Connect(asio::io_context& io,
                                                        MoqtClientConfig config,
                                                        MoqtSessionCallbacks* callbacks,
                                                        TrackSource* source) {
  if (config.quic.alpns.empty()) config.quic.alpns = {std::string(kMoqtAlpn)};
  config.session.perspective = Perspective::kClient;
  if (!config.session.clock_ms) config.session.clock_ms = SteadyMs();
  if (config.timer_tick.count() <= 0) config.timer_tick = kDefaultTimerTick;
  std::unique_ptr<MoqtClient> c(new MoqtClient(io, std::move(config)));
  MoqtClient* self = c.get();
  std::weak_ptr<char> alive = c->alive_;
  c->tap_ = std::make_unique<internal::SessionTap>(
      [self, alive](const transport::CloseInfo& info, bool handshake) {
        if (alive.expired() || self->end_) return;
        SessionEnd end;
        end.transport = info;
        end.handshake_completed = handshake;
        end.setup_completed = self->callbacks_->setup_completed();
        self->end_ = end;
        self->timer_->timer.cancel();
        KVCS_LOG_DEBUG("moqt client: session ended: {}", end.ToString());
      });
  c->callbacks_ = std::make_unique<internal::ForwardingCallbacks>();
  c->callbacks_->set_app(callbacks);
  auto quic = quic::QuicClientSession::Connect(io, c->config_.quic, c->tap_.get());
  if (!quic.ok()) return quic.status().WithContext("MOQT client");
  c->quic_ = std::move(*quic);
  c->tap_->Attach(c->quic_.get());
  // Not open yet: the MoqtSession sends SETUP when the tap reports OnSessionReady.
  c->session_ =
      std::make_unique<MoqtSession>(c->tap_.get(), c->config_.session, c->callbacks_.get(), source);
  c->ArmTimer();
  return c;
}

MoqtClient::~MoqtClient() {
  timer_->timer.cancel();
  // Detach in order while the QUIC session still exists: the MoqtSession from the tap, the tap
  // from the QUIC session; then close the QUIC session.
  session_.reset();
  tap_.reset();
  quic_.reset();
}

void MoqtClient::Close(SessionError code, std::string_view reason) {
  if (end_) return;
  session_->Close(code, reason);
}

void MoqtClient::ArmTimer() {
  timer_->timer.expires_after(config_.timer_tick);
  std::weak_ptr<char> alive = alive_;
  timer_->timer.async_wait([this, alive](const boost::system::error_code& ec) {
    if (ec || alive.expired() || end_) return;
    session_->OnTimer();
    ArmTimer();
  });
}

// ------------------------------------------------------------------------------ URL, names

std::string MoqtUrl::authority() const {
  bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<MoqtUrl> ParseMoqtUrl(std::string_view url) {
  constexpr std::string_view kScheme = "moqt://";
  if (url.substr(0, kScheme.size()) != kScheme) {
    return InvalidArgument("'" + std::string(url) + "' is not a moqt:// URL");
  }
  std::string_view rest = url.substr(kScheme.size());
  MoqtUrl u;
  size_t slash = rest.find('/');
  std::string_view hostport = rest.substr(0, slash);
  if (slash != std::string_view::npos) u.path = std::string(rest.substr(slash));
  std::string_view port_text;
  if (!hostport.empty() && hostport.front() == '[') {
    size_t close = hostport.find(']');
    if (close == std::string_view::npos) return InvalidArgument("unterminated [IPv6] host");
    u.host = std::string(hostport.substr(1, close - 1));
    std::string_view after = hostport.substr(close + 1);
    if (after.empty() || after.front() != ':') return InvalidArgument("missing :port after ]");
    port_text = after.substr(1);
  } else {
    size_t colon = hostport.rfind(':');
    if (colon == std::string_view::npos) {
      return InvalidArgument("'" + std::string(url) + "' has no port (moqt://host:port/path)");
    }
    u.host = std::string(hostport.substr(0, colon));
    port_text = hostport.substr(colon + 1);
  }
  if (u.host.empty()) return InvalidArgument("'" + std::string(url) + "' has no host");
  unsigned port = 0;
  auto [p, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || p != port_text.data() + port_text.size() || port == 0 || port > 65535) {
    return InvalidArgument("bad port '" + std::string(port_text) + "' (1..65535)");
  }
  u.port = static_cast<uint16_t>(port);
  return u;
}

Result<TrackNamespace> ParseNamespace(std::string_view text) {
  TrackNamespace ns;
  if (text.empty()) return ns;
  size_t start = 0;
  for (;;) {
    size_t slash = text.find('/', start);
    std::string_view field = text.substr(
        start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (field.empty()) {
      return InvalidArgument("namespace '" + std::string(text) + "' has an empty field");
    }
    if (field.substr(0, 2) == "0x") {
      auto bytes = FromHex(field.substr(2));
      if (!bytes.ok() || bytes->empty()) {
        return InvalidArgument("namespace field '" + std::string(field) +
                               "' is not 0x and an even number of hex digits");
      }
      ns.emplace_back(bytes->begin(), bytes->end());
    } else {
      ns.emplace_back(field);
    }
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return ns;
}

std::string NamespaceToString(const TrackNamespace& ns) {
  std::string s;
  for (size_t i = 0; i < ns.size(); ++i) {
    if (i) s += '/';
    const std::string& f = ns[i];
    bool literal =
        !f.empty() && f.substr(0, 2) != "0x" &&
        std::all_of(f.begin(), f.end(), [](char c) { return c >= ' ' && c < 0x7f && c != '/'; });
    s += literal ? f : "0x" + ToHex(AsBytes(f));
  }
  return s;
}

}  // namespace kvcs::moqt
