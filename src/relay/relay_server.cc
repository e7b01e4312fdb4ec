// RelayServer: the relay on QUIC, its upstream link and its metrics endpoint (relay_server.h).
#include "relay/relay_server.h"

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <thread>

#include "http/server.h"
#include "moqt_endpoint/moqt_endpoint.h"

namespace kvcs::relay {

namespace {
// How often the relay's deadlines are checked and session counters summed for the metrics.
constexpr std::chrono::milliseconds kTick{100};
// Reconnecting to the upstream: first retry after 200 ms, doubling up to 5 s.
constexpr std::chrono::milliseconds kReconnectMin{200};
constexpr std::chrono::milliseconds kReconnectMax{5000};

uint64_t SteadyMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}
int64_t WallS() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Result<std::pair<std::string, uint16_t>> SplitHostPort(const std::string& s) {
  auto colon = s.rfind(':');
  if (colon == std::string::npos) return InvalidArgument("'" + s + "' is not HOST:PORT");
  std::string host = s.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  int port = 0;
  try {
    port = std::stoi(s.substr(colon + 1));
  } catch (...) {
    return InvalidArgument("'" + s + "' has a bad port");
  }
  if (port < 0 || port > 65535) return InvalidArgument("'" + s + "' has a bad port");
  return std::make_pair(host, static_cast<uint16_t>(port));
}
}  // namespace

struct RelayServer::Impl {
  // The upstream link's callbacks: its state goes to the Relay.
  struct UpstreamCallbacks : moqt::MoqtSessionCallbacks {
    explicit UpstreamCallbacks(Impl* i) : impl(i) {}
    void OnSetupComplete(const moqt::SetupOptions&) override {
      impl->Say("upstream " + impl->config.upstream_url + ": connected");
      impl->backoff = kReconnectMin;
      impl->relay->SetUpstream(&impl->upstream->session());
    }
    void OnSessionClosed(uint64_t, const std::string& reason, bool) override {
      impl->Say("upstream " + impl->config.upstream_url + ": session ended: " + reason);
      impl->relay->SetUpstream(nullptr);
      impl->upstream_lost = true;
    }
    // This relay PUBLISHes up its tree, never down: a PUBLISH from the upstream relay would go
    // back up to it (a loop).
    moqt::PublishAnswer OnPublish(const moqt::IncomingPublish& publish) override {
      impl->relay->metrics().Refuse(Refusal::kLoop);
      moqt::PublishAnswer refused;
      refused.error = moqt::RequestErrorCode::kNotSupported;
      refused.reason = "relay loop: a PUBLISH from the upstream relay would be sent back to it";
      return refused;
    }
    Impl* impl;
  };

  Impl(boost::asio::io_context& io, RelayServerConfig c, Log l)
      : io(io), config(std::move(c)), log(std::move(l)), tick(io), reconnect(io) {}

  void Say(const std::string& s) {
    if (log) log(s);
  }

  Status ConnectUpstream() {
    auto url = moqt::ParseMoqtUrl(config.upstream_url);
    if (!url.ok()) return url.status().WithContext("upstream");
    moqt::MoqtClientConfig cc;
    cc.quic.host = url->host;
    cc.quic.port = url->port;
    cc.quic.ca_file = config.upstream_ca_file;
    cc.quic.insecure = config.upstream_insecure;
    if (!url->path.empty()) cc.session.path = url->path;
    cc.session.authority = url->authority();
    cc.session.implementation = "kvcs-relay/0.1 " + relay->id();
    for (const moqt::AuthToken& t : config.relay.upstream_tokens) {
      cc.session.setup_auth_tokens.push_back(t);
    }
    if (upstream) relay->SetUpstream(nullptr);  // never left pointing at a destroyed session
    upstream.reset();
    auto c = moqt::MoqtClient::Connect(io, cc, up_cb.get(), relay.get());
    if (!c.ok()) return c.status().WithContext("upstream");
    upstream = std::move(*c);
    upstream_lost = false;
    return Status::Ok();
  }

  void Tick() {
    tick.expires_after(kTick);
    tick.async_wait([this, alive = std::weak_ptr<int>(alive)](const boost::system::error_code& ec) {
      if (ec || alive.expired()) return;
      relay->OnTimer();
      uint64_t objects = 0, bytes = 0;
      server->ForEachSession([&](const moqt::MoqtServerSessionInfo& i) {
        objects += i.session->stats().objects_sent;
        bytes += i.session->stats().payload_bytes_sent;
      });
      objects_out = objects_out_closed + objects;
      bytes_out = bytes_out_closed + bytes;
      if (upstream && upstream_lost && !stopping && !reconnect_armed) ScheduleReconnect();
      Tick();
    });
  }

  void ScheduleReconnect() {
    reconnect_armed = true;
    reconnect.expires_after(backoff);
    backoff = std::min(backoff * 2, kReconnectMax);
    reconnect.async_wait(
        [this, alive = std::weak_ptr<int>(alive)](const boost::system::error_code& ec) {
          reconnect_armed = false;
          if (ec || alive.expired() || stopping) return;
          Status st = ConnectUpstream();
          if (!st.ok()) {
            Say("upstream: " + st.message());
            upstream_lost = true;
          }
        });
  }

  boost::asio::io_context& io;
  RelayServerConfig config;
  Log log;
  std::unique_ptr<Relay> relay;
  std::unique_ptr<moqt::MoqtServer> server;
  std::unique_ptr<UpstreamCallbacks> up_cb;
  std::unique_ptr<moqt::MoqtClient> upstream;
  bool upstream_lost = false;
  bool reconnect_armed = false;
  bool stopping = false;
  std::chrono::milliseconds backoff = kReconnectMin;
  boost::asio::steady_timer tick, reconnect;
  std::atomic<uint64_t> objects_out{0}, bytes_out{0};
  uint64_t objects_out_closed = 0, bytes_out_closed = 0;
  std::unique_ptr<http::Server> metrics;
  std::thread metrics_thread;
  std::shared_ptr<int> alive = std::make_shared<int>(0);
};

RelayServer::RelayServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RelayServer::~RelayServer() {
  impl_->alive.reset();
  impl_->stopping = true;
  impl_->tick.cancel();
  impl_->reconnect.cancel();
  if (impl_->metrics) {
    impl_->metrics->Stop();
    if (impl_->metrics_thread.joinable()) impl_->metrics_thread.join();
  }
  // The Relay forgets the upstream session before it is destroyed: MoqtSession's destructor
  // tells nobody, so the Relay would otherwise keep a dangling pointer that the RelayPeers'
  // teardown below uses (a publisher's announcement withdrawn upstream, PUBLISH_NAMESPACE_DONE)
  // and that ~Relay uses (its feeds from the upstream unsubscribed).
  if (impl_->relay) impl_->relay->SetUpstream(nullptr);
  // Sessions (and their RelayPeers) before the Relay they point to.
  impl_->upstream.reset();
  impl_->server.reset();
  impl_->relay.reset();
}

Result<std::unique_ptr<RelayServer>> RelayServer::Start(boost::asio::io_context& io,
                                                        RelayServerConfig config, Log log) {
  auto impl = std::make_unique<Impl>(io, std::move(config), std::move(log));
  Impl* p = impl.get();
  RelayOptions ro = p->config.relay;
  if (!ro.clock_ms) ro.clock_ms = SteadyMs;
  if (!ro.clock_s) ro.clock_s = WallS;
  if (!ro.log && p->log) ro.log = p->log;
  ro.publish_upstream = !p->config.upstream_url.empty();
  p->relay = std::make_unique<Relay>(std::move(ro));
  moqt::MoqtServerConfig sc;
  sc.quic.host = p->config.listen_host;
  sc.quic.port = p->config.port;
  sc.quic.cert_file = p->config.cert_file;
  sc.quic.key_file = p->config.key_file;
  sc.quic.max_connections = p->config.max_sessions;
  sc.quic.admission = p->config.admission;
  sc.quic.require_retry = p->config.require_retry;
  sc.session.implementation = "kvcs-relay/0.1 " + p->relay->id();
  sc.session.subscriber_stall_ms = p->config.subscriber_stall_ms;
  auto server = moqt::MoqtServer::Create(
      io, sc, p->relay.get(),
      [p](const moqt::MoqtServerSessionInfo& i) {
        p->Say("session " + std::to_string(i.id) + ": connected");
        return p->relay->AcceptSession(i.session);
      },
      [p](const moqt::MoqtServerSessionInfo& i, const moqt::SessionEnd& end) {
        p->objects_out_closed += i.session->stats().objects_sent;
        p->bytes_out_closed += i.session->stats().payload_bytes_sent;
        p->Say("session " + std::to_string(i.id) + ": ended: " + end.ToString());
      });
  if (!server.ok()) return server.status().WithContext("relay: cannot listen");
  p->server = std::move(*server);
  p->up_cb = std::make_unique<Impl::UpstreamCallbacks>(p);
  if (!p->config.upstream_url.empty()) {
    KVCS_RETURN_IF_ERROR(p->ConnectUpstream());
  }
  if (!p->config.metrics_listen.empty()) {
    KVCS_ASSIGN_OR_RETURN(auto hp, SplitHostPort(p->config.metrics_listen));
    http::ServerOptions mo;
    mo.name = "relay-metrics";
    mo.listen_host = hp.first;
    mo.port = hp.second;
    mo.io_threads = 1;
    mo.limits = p->config.metrics_limits;
    p->metrics = std::make_unique<http::Server>(mo);
    p->metrics->router().Add(http::Route{
        "metrics", http::Router::MethodAndPath("GET", "/metrics"),
        [p](http::HandlerContext& ctx) -> http::Awaitable<void> {
          std::string body = p->relay->metrics().Render(p->bytes_out.load(), p->objects_out.load());
          http::HeaderList headers;
          headers.emplace_back("Content-Type", "text/plain; version=0.0.4");
          (void)co_await http::SendComplete(ctx.response, 200, std::move(headers), body);
        }});
    KVCS_RETURN_IF_ERROR(p->metrics->Start());
    p->metrics_thread = std::thread([p] { p->metrics->Run(false); });
  }
  p->Tick();
  return std::unique_ptr<RelayServer>(new RelayServer(std::move(impl)));
}

uint16_t RelayServer::port() const { return impl_->server->port(); }
uint16_t RelayServer::metrics_port() const { return impl_->metrics ? impl_->metrics->port() : 0; }
Relay& RelayServer::relay() { return *impl_->relay; }

void RelayServer::Shutdown(std::chrono::milliseconds drain, std::function<void()> done) {
  impl_->stopping = true;
  impl_->reconnect.cancel();
  if (impl_->upstream) impl_->upstream->Close(moqt::SessionError::kNoError, "relay stopping");
  impl_->server->Shutdown(drain, std::move(done));
}

}  // namespace kvcs::relay
