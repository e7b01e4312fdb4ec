#include "engine/moqt_link.h"

#include <chrono>
#include <utility>

#include "common/asio.h"
#include "engine/engine_client.h"
#include "kvcs_stream/discovery.h"
#include "moqt_endpoint/moqt_endpoint.h"

namespace kvcs::engine {
namespace {

namespace asio = boost::asio;
constexpr auto kTick = std::chrono::milliseconds(10);
constexpr auto kKeepAlive = std::chrono::seconds(10);  // under the 30 s QUIC idle timeout
// Block Keys remembered at most (all are forgotten beyond: they are found again by discovery).
constexpr size_t kMaxRemembered = size_t{1} << 16;

uint64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Status Transport(std::string message) {
  return EngineStatus(Code::kUnavailable, EngineError::kTransport, std::move(message));
}

}  // namespace

struct MoqtLink::TimerBox {
  explicit TimerBox(asio::io_context& io) : timer(io) {}
  asio::steady_timer timer;
};

struct MoqtLink::Callbacks : moqt::MoqtSessionCallbacks {
  explicit Callbacks(MoqtLink* l) : link(l) {}
  void OnSetupComplete(const moqt::SetupOptions&) override { link->OnSetupComplete(); }
  void OnSessionClosed(uint64_t, const std::string&, bool) override {
    // The endpoint records why the session ended right after this callback. A session that
    // ended after a newer one was started changes nothing.
    uint64_t gen = 0;
    {
      std::lock_guard<std::mutex> l(link->mu_);
      gen = link->session_gen_;
    }
    asio::post(*link->io_, [l = link, gen] { l->OnSessionClosed(gen); });
  }
  MoqtLink* link;
};

MoqtLink::MoqtLink(MoqtLinkOptions options)
    : options_(std::move(options)), io_(std::make_unique<asio::io_context>()) {}

Result<std::unique_ptr<MoqtLink>> MoqtLink::Start(MoqtLinkOptions options) {
  auto url = moqt::ParseMoqtUrl(options.relay_url);
  if (!url.ok()) return Status(Code::kInvalidArgument, "relay_url: " + url.status().message());
  std::unique_ptr<MoqtLink> link(new MoqtLink(std::move(options)));
  if (link->options_.producer_key) {
    KVCS_RETURN_IF_ERROR(link->keys_.Add(link->options_.producer_key->Public()));
  }
  link->callbacks_ = std::make_unique<Callbacks>(link.get());
  link->timer_ = std::make_unique<TimerBox>(*link->io_);
  MoqtLink* l = link.get();
  l->Tick();
  l->thread_ = std::thread([l] {
    // The link's work: until the destructor stops the io_context (the tick keeps it busy).
    for (;;) {
      try {
        l->io_->run();
        return;
      } catch (const std::exception&) {
        // A task threw (a bug): keep serving the others.
      }
    }
  });
  return link;
}

MoqtLink::~MoqtLink() {
  Call([this] {
    timer_->timer.cancel();
    tickers_.clear();
    client_.reset();  // CONNECTION_CLOSE, best effort
    own_.clear();
    return 0;
  });
  io_->stop();
  thread_.join();
}

void MoqtLink::Post(std::function<void()> fn) { asio::post(*io_, std::move(fn)); }

void MoqtLink::Tick() {
  // A ticker may remove itself or others: iterate over a snapshot of the ids.
  std::vector<uint64_t> ids;
  for (const auto& [id, fn] : tickers_) ids.push_back(id);
  for (uint64_t id : ids) {
    auto it = tickers_.find(id);
    if (it == tickers_.end()) continue;
    std::function<void()> fn = it->second;  // it may remove itself
    fn();
  }
  timer_->timer.expires_after(kTick);
  timer_->timer.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) Tick();
  });
}

uint64_t MoqtLink::AddTicker(std::function<void()> fn) {
  uint64_t id = next_ticker_++;
  tickers_[id] = std::move(fn);
  return id;
}

void MoqtLink::RemoveTicker(uint64_t id) { tickers_.erase(id); }

moqt::MoqtSession* MoqtLink::session() {
  return client_ && client_->setup_complete() && !client_->closed() ? &client_->session() : nullptr;
}

void MoqtLink::Connect() {
  auto url = moqt::ParseMoqtUrl(options_.relay_url);  // checked in Start
  moqt::MoqtClientConfig cfg;
  cfg.quic.host = url->host;
  cfg.quic.port = url->port;
  cfg.quic.ca_file = options_.ca_file;
  cfg.quic.insecure = options_.insecure;
  cfg.quic.limits.handshake_timeout = std::chrono::milliseconds(options_.connect_timeout_ms);
  // PINGs while idle: the session (and with it the relay's route to this client's publications)
  // outlives the QUIC idle timeout between an engine's requests.
  cfg.quic.limits.keep_alive = kKeepAlive;
  if (!url->path.empty()) cfg.session.path = url->path;
  cfg.session.authority = url->authority();
  cfg.session.implementation = "kvcs-engine/0.1";
  {
    std::lock_guard<std::mutex> l(mu_);
    ready_ = false;
    ended_ = false;
    end_reason_.clear();
    ++session_gen_;
  }
  client_.reset();
  auto c = moqt::MoqtClient::Connect(*io_, cfg, callbacks_.get(), &store_);
  if (!c.ok()) {
    std::lock_guard<std::mutex> l(mu_);
    ended_ = true;
    end_reason_ = "cannot connect to " + options_.relay_url + ": " + c.status().message();
    cv_.notify_all();
    return;
  }
  client_ = std::move(*c);
}

void MoqtLink::OnSetupComplete() {
  {
    std::lock_guard<std::mutex> l(mu_);
    ready_ = true;
  }
  cv_.notify_all();
  for (auto& a : own_) Announce(*a);  // again after a reconnect
}

void MoqtLink::OnSessionClosed(uint64_t gen) {
  std::string why = client_ && client_->end() ? client_->end()->ToString() : "closed";
  {
    std::lock_guard<std::mutex> l(mu_);
    if (gen != session_gen_) return;
    ready_ = false;
    ended_ = true;
    end_reason_ = "relay session ended: " + why;
    for (auto& a : own_) {
      if (!a->answer) a->answer = Transport(end_reason_);
    }
  }
  cv_.notify_all();
}

Status MoqtLink::EnsureSession() {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.connect_timeout_ms);
  {
    std::lock_guard<std::mutex> l(mu_);
    if (ready_) return Status::Ok();
  }
  Call([this] {
    bool needed = false;
    {
      std::lock_guard<std::mutex> l(mu_);
      needed = !ready_ && (!client_ || ended_);  // no session, or it ended: a new one
    }
    if (needed) Connect();
    return 0;
  });
  std::unique_lock<std::mutex> l(mu_);
  if (!cv_.wait_until(l, deadline, [&] { return ready_ || ended_; })) {
    return Transport("relay " + options_.relay_url + ": no MOQT session within " +
                     std::to_string(options_.connect_timeout_ms) + " ms");
  }
  if (ready_) return Status::Ok();
  return Transport(end_reason_.empty() ? "relay session ended" : end_reason_);
}

void MoqtLink::Announce(Announced& a) {
  moqt::MoqtSession* s = session();
  if (!s) return;  // announced once the session is set up
  {
    std::lock_guard<std::mutex> l(mu_);
    a.answer.reset();
  }
  Announced* ap = &a;
  auto id = s->PublishNamespace(
      a.pub->track_namespace(), [this, ap](const std::optional<moqt::RequestError>& e) {
        {
          std::lock_guard<std::mutex> l(mu_);
          ap->answer = e ? Transport("the relay refused PUBLISH_NAMESPACE: " +
                                     std::string(moqt::RequestErrorCodeName(
                                         static_cast<moqt::RequestErrorCode>(e->error_code))) +
                                     ": " + e->reason)
                         : Status::Ok();
        }
        cv_.notify_all();
      });
  if (!id.ok()) {
    std::lock_guard<std::mutex> l(mu_);
    a.answer = Transport("PUBLISH_NAMESPACE: " + id.status().message());
    cv_.notify_all();
  }
}

void MoqtLink::AddPublication(std::unique_ptr<stream::Publisher> pub,
                              std::span<const Digest> block_keys) {
  if (remembered_.size() + block_keys.size() > kMaxRemembered) remembered_.clear();
  for (size_t b = 0; b < block_keys.size(); ++b) {
    remembered_[block_keys[b]] = LinkPublication{pub->ns(), b + 1, block_keys.size()};
  }
  own_.push_back(std::make_unique<Announced>());
  own_.back()->pub = std::move(pub);
  Announce(*own_.back());
}

Status MoqtLink::WaitAnnounced(const profile::Namespace& ns) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.connect_timeout_ms);
  Announced* a = Call([&]() -> Announced* {
    for (auto& o : own_) {
      if (o->pub->ns() == ns) return o.get();
    }
    return nullptr;
  });
  if (!a) return Status(Code::kInternal, "publication not kept by the link");
  std::unique_lock<std::mutex> l(mu_);
  if (!cv_.wait_until(l, deadline, [&] { return a->answer.has_value(); })) {
    return Transport("the relay did not answer PUBLISH_NAMESPACE within " +
                     std::to_string(options_.connect_timeout_ms) + " ms");
  }
  return *a->answer;
}

void MoqtLink::Remember(const profile::Namespace& ns, uint64_t anchor_blocks) {
  if (remembered_.size() >= kMaxRemembered) remembered_.clear();
  remembered_[ns.anchor_key] = LinkPublication{ns, anchor_blocks, anchor_blocks};
}

void MoqtLink::MarkComplete(const profile::Namespace& ns) {
  for (auto& [key, p] : remembered_) {
    if (p.ns == ns) p.complete = true;
  }
}

void MoqtLink::Forget(const profile::Namespace& ns) {
  std::erase_if(remembered_, [&](const auto& e) { return e.second.ns == ns; });
}

Result<std::optional<LinkPublication>> MoqtLink::FindPublication(
    const stream::CacheIdentity& identity, uint64_t min_blocks) {
  min_blocks = std::max<uint64_t>(min_blocks, 1);
  if (identity.blocks() < min_blocks) return std::optional<LinkPublication>();
  // Known here: the longest remembered prefix.
  auto known = Call([&]() -> std::optional<LinkPublication> {
    for (uint64_t b = identity.blocks(); b >= min_blocks; --b) {
      auto it = remembered_.find(identity.block_keys[b - 1]);
      if (it != remembered_.end() && it->second.ns.scope_id == identity.scope_id &&
          it->second.ns.compat_id == identity.compat_id) {
        return LinkPublication{it->second.ns, b, it->second.anchor_blocks, it->second.complete};
      }
    }
    return std::nullopt;
  });
  // A remembered publication is used on the session too: (re)connect first, or a load after the
  // session ended (the relay restarted) would find no session and fail every block.
  KVCS_RETURN_IF_ERROR(EnsureSession());
  if (known) return known;
  // Discovery at the relay, on the link thread; this thread waits for its result.
  auto promise = std::make_shared<std::promise<Result<stream::DiscoveryResult>>>();
  std::future<Result<stream::DiscoveryResult>> result = promise->get_future();
  Post([this, &identity, min_blocks, promise] {
    moqt::MoqtSession* s = session();
    if (!s) {
      promise->set_value(Transport("relay session ended"));
      return;
    }
    stream::DiscoveryOptions o;
    o.min_blocks = min_blocks;
    o.timeout_ms = options_.connect_timeout_ms;
    auto holder = std::make_shared<std::unique_ptr<stream::Discovery>>();
    auto ticker = std::make_shared<uint64_t>(0);
    auto d = stream::Discovery::Start(
        s, identity, o,
        [this, promise, holder, ticker](const stream::DiscoveryResult& r) {
          promise->set_value(r);
          RemoveTicker(*ticker);
          // Destroyed after its callback returned.
          Post([holder] { holder->reset(); });
        },
        NowMs);
    if (!d.ok()) {
      promise->set_value(Transport("discovery: " + d.status().message()));
      return;
    }
    if ((*d)->done()) return;  // answered inside Start
    *holder = std::move(*d);
    *ticker = AddTicker([holder] {
      if (*holder && !(*holder)->done()) (*holder)->OnTimer();
    });
  });
  auto r = result.get();
  if (!r.ok()) return r.status();
  const stream::FoundPublication* best = r->best();
  if (!best) return std::optional<LinkPublication>();
  LinkPublication p{best->ns, best->anchor_blocks, best->anchor_blocks};
  Call([&] {
    Remember(p.ns, p.blocks);
    return 0;
  });
  return std::optional<LinkPublication>(p);
}

}  // namespace kvcs::engine
