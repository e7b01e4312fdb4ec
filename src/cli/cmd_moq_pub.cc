// kvcs moq-pub: a MOQT draft-22 publisher of synthetic tracks, for debugging any draft-22 peer.
// Serves a namespace over raw QUIC (ALPN moqt-22) as a server, or connects to a relay and
// announces the namespace there (PUBLISH_NAMESPACE) and PUBLISHes every track (unless
// --on-demand or --start-on-subscribe: then the relay pulls them); produces G groups x M objects of
// S bytes per track at a chosen rate, optionally ending the tracks; prints progress. Payloads
// follow the synthetic format of moq_util.h, which `kvcs moq-sub --verify` checks.
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/admission_options.h"
#include "cli/command.h"
#include "cli/dev_cert.h"
#include "cli/moq_util.h"
#include "common/asio.h"
#include "moqt_endpoint/moqt_endpoint.h"
#include "moqt_session/moqt_publish_set.h"
#include "moqt_session/moqt_track_store.h"
#include "quic/tls.h"

namespace kvcs::cli {
namespace {

namespace asio = boost::asio;
using moqt::FullTrackName;
using moqt::MoqtClient;
using moqt::MoqtServer;
using moqt::SessionEnd;
using moqt::Track;

constexpr char kCmd[] = "moq-pub";
// Bounds on what one invocation produces (a debugging tool, not a load generator): 16 MiB objects
// (below the session's 64 MiB object bound) and 1 Mi objects per track.
constexpr uint64_t kMaxObjectBytes = uint64_t{16} << 20;
constexpr uint64_t kMaxObjectsPerTrack = uint64_t{1} << 20;
constexpr size_t kMaxTracks = 64;
// Production tick when rate-limited, and the batch produced per event-loop turn when not.
constexpr auto kProduceTick = std::chrono::milliseconds(10);
constexpr uint64_t kUnlimitedBatch = 64;
// How long a relay publisher waits at exit for the relay to hold every PUBLISHed track whole.
constexpr auto kPublishDrain = std::chrono::seconds(30);

struct Args {
  std::string listen = "127.0.0.1:4443";
  std::string relay;
  std::string ns = "kvcs-demo/synthetic";
  std::vector<std::string> tracks;
  uint64_t groups = 10;
  uint64_t objects = 10;
  uint64_t size = 1024;
  double rate = 100;
  bool end_track = true;
  bool start_on_subscribe = false;
  bool on_demand = false;  // --relay: no PUBLISH
  uint64_t sessions = 0;
  double linger_s = -1;
  std::string cert, key;
  ClientTlsOptions tls;
  bool quiet = false;
  QuicAdmissionOptions quic;  // when serving
};

class Publisher {
 public:
  explicit Publisher(const Args& a)
      : a_(a), prod_timer_(io_), linger_timer_(io_), signals_(io_, SIGINT, SIGTERM) {}

  int Run() {
    if (a_.size > kMaxObjectBytes) {
      return Fail(kCmd, "--size " + std::to_string(a_.size) + " is above the limit",
                  "at most " + std::to_string(kMaxObjectBytes) + " bytes per object");
    }
    if (a_.groups == 0 || a_.objects == 0) {
      return Fail(kCmd, "--groups and --objects must be at least 1");
    }
    // Divided, not multiplied: --groups x --objects may not fit 64 bits.
    if (a_.objects > kMaxObjectsPerTrack || a_.groups > kMaxObjectsPerTrack / a_.objects) {
      return Fail(kCmd, "--groups x --objects is above " + std::to_string(kMaxObjectsPerTrack),
                  "this is a debugging tool; publish fewer objects");
    }
    if (a_.rate < 0) return Fail(kCmd, "--rate must be >= 0 (0 = as fast as possible)");
    auto ns = ParseNamespaceArg(a_.ns);
    if (!ns.ok()) return Fail(kCmd, ns.status().message(), "e.g. --namespace kvcs-demo/synthetic");
    if (ns->empty()) return Fail(kCmd, "--namespace must not be empty");
    ns_ = *ns;
    std::vector<std::string> names =
        a_.tracks.empty() ? std::vector<std::string>{"data"} : a_.tracks;
    if (names.size() > kMaxTracks) return Fail(kCmd, "at most 64 --track");
    for (const std::string& n : names) {
      moqt::TrackOptions to;
      // Keep everything produced (fills and fetches serve it), up to the store's byte bound.
      to.max_groups = static_cast<size_t>(a_.groups) + 1;
      auto t = store_.CreateTrack(FullTrackName{ns_, n}, to);
      if (!t.ok()) return Fail(kCmd, "track '" + n + "': " + t.status().message());
      tracks_.push_back(*t);
    }
    signals_.async_wait([this](const boost::system::error_code& ec, int) {
      if (!ec) Stop(0, "interrupted");
    });
    int rc = a_.relay.empty() ? StartServer() : StartRelayClient();
    if (rc != 0) return rc;
    if (!a_.start_on_subscribe && a_.relay.empty()) StartProducing();
    io_.run();
    return exit_code_;
  }

 private:
  // ------------------------------------------------------------------ server mode
  struct SessionPrinter : moqt::MoqtSessionCallbacks {
    SessionPrinter(Publisher* p, uint64_t id) : p(p), id(id) {}
    void OnSetupComplete(const moqt::SetupOptions& peer) override {
      p->Say("session " + std::to_string(id) + ": SETUP from '" +
             peer.implementation.value_or("?") + "' path=" + peer.path.value_or("-"));
    }
    std::optional<moqt::RequestErrorCode> AuthorizeRequest(
        moqt::MessageType type, const FullTrackName& track,
        const std::vector<moqt::AuthToken>&) override {
      p->Say("session " + std::to_string(id) + ": " + std::string(moqt::MessageTypeName(type)) +
             " " + NamespaceArgText(track.track_namespace) +
             (track.name.empty() ? "" : " " + track.name));
      if (p->a_.start_on_subscribe) p->StartProducing();
      return {};
    }
    Publisher* p;
    uint64_t id;
  };

  int StartServer() {
    auto colon = a_.listen.rfind(':');
    if (colon == std::string::npos) {
      return Fail(kCmd, "--listen '" + a_.listen + "' is not HOST:PORT", "e.g. 127.0.0.1:4443");
    }
    auto port = ParseU64(a_.listen.substr(colon + 1), "--listen port");
    if (!port.ok() || *port > 65535) {
      return Fail(kCmd, "--listen '" + a_.listen + "' has a bad port", "0..65535 (0: any)");
    }
    std::string host = a_.listen.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
    moqt::MoqtServerConfig cfg;
    cfg.quic.host = host;
    cfg.quic.port = static_cast<uint16_t>(*port);
    cfg.session.implementation = "kvcs-moq-pub/0.1";
    if (Status st = a_.quic.Validate(); !st.ok()) return Fail(kCmd, st.message());
    a_.quic.ApplyTo(&cfg.quic);
    if (a_.cert.empty() != a_.key.empty()) {
      return Fail(kCmd, "--cert and --key go together", "pass both, or neither for a dev cert");
    }
    if (a_.cert.empty()) {
      auto dev = WriteDevCertificate("kvcs-moq-pub");
      if (!dev.ok()) return Fail(kCmd, dev.status().message());
      a_.cert = dev->cert;
      a_.key = dev->key;
      std::cout << "dev certificate " << a_.cert
                << " (name localhost; clients: --ca this file, or --insecure)" << std::endl;
    }
    cfg.quic.cert_file = a_.cert;
    cfg.quic.key_file = a_.key;
    auto server = MoqtServer::Create(
        io_, cfg, &store_,
        [this](const moqt::MoqtServerSessionInfo& i) {
          Say("session " + std::to_string(i.id) + ": connected");
          return std::make_unique<SessionPrinter>(this, i.id);
        },
        [this](const moqt::MoqtServerSessionInfo& i, const SessionEnd& end) {
          Say("session " + std::to_string(i.id) + ": ended: " + end.ToString());
          ++sessions_ended_;
          MaybeFinish();
        });
    if (!server.ok()) {
      return Fail(kCmd, "cannot serve on " + a_.listen + ": " + server.status().message(),
                  "is the UDP port in use? is the certificate/key pair readable?");
    }
    server_ = std::move(*server);
    std::string shown = host.find(':') != std::string::npos ? "[" + host + "]" : host;
    std::cout << "listening on moqt://" << shown << ":" << server_->port() << " namespace " << a_.ns
              << " tracks";
    for (auto& t : tracks_) std::cout << " " << t->name().name;
    std::cout << std::endl;
    return 0;
  }

  // ------------------------------------------------------------------ relay mode
  struct RelayCallbacks : moqt::MoqtSessionCallbacks {
    explicit RelayCallbacks(Publisher* p) : p(p) {}
    void OnSetupComplete(const moqt::SetupOptions& peer) override {
      p->Say("connected to '" + peer.implementation.value_or("?") + "'; PUBLISH_NAMESPACE " +
             p->a_.ns);
      auto id = p->client_->session().PublishNamespace(
          p->ns_, [p = p](const std::optional<moqt::RequestError>& e) {
            if (e) {
              p->Stop(
                  Fail(kCmd,
                       "the relay refused PUBLISH_NAMESPACE: " +
                           std::string(moqt::RequestErrorCodeName(
                               static_cast<moqt::RequestErrorCode>(e->error_code))) +
                           " (code " + std::to_string(e->error_code) + "): " + e->reason,
                       e->error_code == static_cast<uint64_t>(moqt::RequestErrorCode::kUnauthorized)
                           ? "the --auth-token does not grant publish on this namespace"
                           : ""),
                  "");
              return;
            }
            p->Say("namespace accepted");
            if (!p->a_.on_demand && !p->a_.start_on_subscribe) {
              p->publish_set_ = std::make_unique<moqt::PublishSet>(&p->client_->session());
              std::vector<FullTrackName> names;
              for (auto& t : p->tracks_) names.push_back(t->name());
              Status st = p->publish_set_->Publish(names);
              if (!st.ok()) {
                p->Stop(Fail(kCmd, "PUBLISH: " + st.message()), "");
                return;
              }
              p->Say("PUBLISH " + std::to_string(names.size()) + " track(s)");
            }
            if (!p->a_.start_on_subscribe) p->StartProducing();
          });
      if (!id.ok()) p->Stop(Fail(kCmd, "PUBLISH_NAMESPACE: " + id.status().message()), "");
    }
    std::optional<moqt::RequestErrorCode> AuthorizeRequest(
        moqt::MessageType type, const FullTrackName& track,
        const std::vector<moqt::AuthToken>&) override {
      p->Say(std::string(moqt::MessageTypeName(type)) + " " + track.name + " from the relay");
      if (p->a_.start_on_subscribe) p->StartProducing();
      return {};
    }
    void OnSessionClosed(uint64_t, const std::string&, bool) override {
      // Reported (with the transport's view) once the endpoint has it.
      asio::post(p->io_, [p = p] {
        if (p->stopping_) return;
        const auto& end = p->client_->end();
        std::string why = end ? end->ToString() : "session closed";
        p->Stop(Fail(kCmd, "relay session ended: " + why, end ? ConnectHint(*end) : ""), "");
      });
    }
    Publisher* p;
  };

  int StartRelayClient() {
    auto url = moqt::ParseMoqtUrl(a_.relay);
    if (!url.ok()) {
      return Fail(kCmd, "--relay: " + url.status().message(), "e.g. --relay moqt://relay:4443/");
    }
    relay_cb_ = std::make_unique<RelayCallbacks>(this);
    auto c = MoqtClient::Connect(io_, a_.tls.ClientConfig(*url), relay_cb_.get(), &store_);
    if (!c.ok()) return Fail(kCmd, "cannot connect to " + a_.relay + ": " + c.status().message());
    client_ = std::move(*c);
    return 0;
  }

  // ------------------------------------------------------------------ production
  void StartProducing() {
    if (producing_) return;
    producing_ = true;
    start_ = std::chrono::steady_clock::now();
    Say("producing " + std::to_string(a_.groups) + " groups x " + std::to_string(a_.objects) +
        " objects x " + std::to_string(a_.size) + " bytes on " + std::to_string(tracks_.size()) +
        " track(s)" + (a_.rate > 0 ? " at " + Fmt(a_.rate) + " objects/s" : ""));
    Produce();
  }

  void Produce() {
    if (stopping_ || finished_) return;
    uint64_t total = a_.groups * a_.objects;
    uint64_t due = kUnlimitedBatch;
    if (a_.rate > 0) {
      double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      uint64_t want = std::min<uint64_t>(total, static_cast<uint64_t>(elapsed * a_.rate) + 1);
      due = want > produced_ ? want - produced_ : 0;
    }
    for (uint64_t i = 0; i < due && produced_ < total; ++i) ProduceOne();
    if (produced_ == total) {
      Finish();
      return;
    }
    if (a_.rate > 0) {
      prod_timer_.expires_after(kProduceTick);
      prod_timer_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec) Produce();
      });
    } else {
      asio::post(io_, [this] { Produce(); });  // let the sessions send between batches
    }
  }

  void ProduceOne() {
    uint64_t g = produced_ / a_.objects, o = produced_ % a_.objects;
    // One buffer per object, kept by every track (no copy per track).
    auto payload = std::make_shared<Bytes>(a_.size);
    FillSynthetic(g, o, payload->data(), payload->size());
    for (auto& t : tracks_) {
      if (o == 0) (void)t->StartGroup(g);
      auto r = t->AppendObject(payload);
      if (!r.ok()) {
        Stop(Fail(kCmd, "track " + t->name().name + ": " + r.status().message()), "");
        return;
      }
      if (o + 1 == a_.objects) (void)t->EndGroup();
    }
    ++produced_;
    if (o + 1 == a_.objects) {
      Say("published group " + std::to_string(g) + " (" + std::to_string(a_.objects) +
          " objects per track)");
    }
  }

  void Finish() {
    finished_ = true;
    if (a_.end_track) {
      for (auto& t : tracks_) (void)t->EndTrack();
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    std::cout << "produced " << produced_ * tracks_.size() << " objects ("
              << produced_ * tracks_.size() * a_.size << " bytes) in " << Fmt(secs) << " s"
              << (a_.end_track ? "; tracks ended" : "; tracks left open") << std::endl;
    if (a_.linger_s >= 0) {
      linger_timer_.expires_after(
          std::chrono::milliseconds(static_cast<int64_t>(a_.linger_s * 1000)));
      linger_timer_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec) Stop(0, "linger time over");
      });
    }
    MaybeFinish();
  }

  void MaybeFinish() {
    if (finished_ && a_.sessions > 0 && sessions_ended_ >= a_.sessions) {
      Stop(0, std::to_string(sessions_ended_) + " session(s) served");
    }
  }

  void Stop(int rc, const std::string& why) {
    if (stopping_) return;
    stopping_ = true;
    exit_code_ = rc;
    if (!why.empty()) Say("stopping: " + why);
    prod_timer_.cancel();
    linger_timer_.cancel();
    signals_.cancel();
    if (server_) {
      server_->Shutdown(std::chrono::milliseconds(1000), [this] { io_.stop(); });
    } else if (publish_set_ && client_ && !client_->closed() && rc == 0 && finished_ &&
               a_.end_track) {
      // The tracks ended: close once the relay holds every PUBLISHed one whole (bounded).
      linger_timer_.expires_after(kPublishDrain);
      linger_timer_.async_wait([this](const boost::system::error_code& ec) {
        if (ec) return;
        Say("the relay did not confirm every track in time");
        CloseClient();
      });
      publish_set_->WhenDone([this] {
        asio::post(io_, [this] {
          Say("the relay holds " + std::to_string(publish_set_->delivered()) + " track(s)" +
              (publish_set_->failed().empty()
                   ? ""
                   : ", " + std::to_string(publish_set_->failed().size()) + " not (" +
                         publish_set_->failed()[0].first.name + ": " +
                         (publish_set_->failed()[0].second
                              ? publish_set_->failed()[0].second->reason
                              : std::string("ended early")) +
                         ")"));
          linger_timer_.cancel();
          CloseClient();
        });
      });
    } else {
      CloseClient();
    }
  }

  void CloseClient() {
    if (client_ && !client_->closed()) client_->Close(moqt::SessionError::kNoError, "done");
    // Give the CONNECTION_CLOSE a moment to leave, then exit.
    linger_timer_.expires_after(std::chrono::milliseconds(50));
    linger_timer_.async_wait([this](const boost::system::error_code&) { io_.stop(); });
  }

  void Say(const std::string& line) {
    if (!a_.quiet) std::cout << line << std::endl;
  }

  Args a_;
  asio::io_context io_;
  moqt::TrackStore store_;
  moqt::TrackNamespace ns_;
  std::vector<std::shared_ptr<Track>> tracks_;
  asio::steady_timer prod_timer_, linger_timer_;
  asio::signal_set signals_;
  std::unique_ptr<RelayCallbacks> relay_cb_;
  std::unique_ptr<MoqtServer> server_;
  std::unique_ptr<MoqtClient> client_;
  std::unique_ptr<moqt::PublishSet> publish_set_;
  std::chrono::steady_clock::time_point start_;
  uint64_t produced_ = 0;  // objects per track
  uint64_t sessions_ended_ = 0;
  bool producing_ = false, finished_ = false, stopping_ = false;
  int exit_code_ = 0;
};

RunFn Setup(CLI::App& app) {
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      kCmd, "Publish synthetic MOQT draft-22 tracks (serve them, or announce them to a relay)");
  auto* listen = cmd->add_option("--listen", a->listen, "serve on HOST:PORT (UDP; port 0: any)")
                     ->capture_default_str();
  a->quic.Add(cmd);  // serving: the QUIC admission limits
  cmd->add_option("--relay", a->relay,
                  "instead of serving: connect to this relay (moqt://host:port/path) and "
                  "PUBLISH_NAMESPACE there")
      ->excludes(listen);
  cmd->add_flag("--on-demand", a->on_demand,
                "with --relay: only PUBLISH_NAMESPACE, the relay pulls each track when asked "
                "(default: PUBLISH every track, so the relay keeps them after this exits)");
  cmd->add_option("--namespace", a->ns,
                  "track namespace, fields separated by '/' (0x<hex>: a binary field; a KVCS "
                  "namespace as kvcs-1/<scope>/<compat>/<anchor>/<pub_id> in hex)")
      ->capture_default_str();
  cmd->add_option("--track", a->tracks, "track name (repeatable; default: data)");
  cmd->add_option("--groups", a->groups, "groups per track")->capture_default_str();
  cmd->add_option("--objects", a->objects, "objects per group")->capture_default_str();
  cmd->add_option("--size", a->size, "bytes per object")->capture_default_str();
  cmd->add_option("--rate", a->rate, "objects per second per track (0: as fast as possible)")
      ->capture_default_str();
  cmd->add_flag("--end-track,!--no-end-track", a->end_track,
                "end each track (End of Track) after the last group (default: yes)");
  cmd->add_flag("--start-on-subscribe", a->start_on_subscribe,
                "start producing at the first incoming request instead of at once");
  cmd->add_option("--sessions", a->sessions,
                  "exit once production ended and this many sessions have closed (0: never)")
      ->capture_default_str();
  cmd->add_option("--linger", a->linger_s,
                  "exit this many seconds after production ended (default: keep serving)");
  cmd->add_option("--cert", a->cert,
                  "server certificate (PEM); default: a fresh dev certificate "
                  "for 'localhost' written to a temp dir (path printed)");
  cmd->add_option("--key", a->key, "server private key (PEM)");
  a->tls.Add(cmd);
  cmd->add_flag("--quiet,-q", a->quiet, "print only the listening address and the summary");
  cmd->footer(
      "Example:\n"
      "  kvcs moq-pub --listen 127.0.0.1:4443 --groups 32 --objects 64 --size 1024 --rate 500\n"
      "  kvcs moq-sub moqt://127.0.0.1:4443/ --insecure --namespace kvcs-demo/synthetic "
      "--fill --verify\n"
      "  kvcs moq-pub --relay moqt://relay.example:4443/ --ca relay.pem --namespace a/b\n"
      "Payloads: u64 group, u64 object, then byte i = (31*group + 7*object + i) mod 256.\n"
      "SIGINT/SIGTERM stop it gracefully (GOAWAY, then close); --log debug for endpoint logs.");
  return [a] { return Publisher(*a).Run(); };
}

}  // namespace
KVCS_REGISTER_COMMAND(moq_pub, 70, Setup);
}  // namespace kvcs::cli
