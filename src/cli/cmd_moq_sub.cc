// kvcs moq-sub: a MOQT draft-22 subscriber for debugging any draft-22 peer. Connects (raw QUIC,
// ALPN moqt-22), then SUBSCRIBEs (Next Object, Absolute Start or a range; with or without a fill),
// FETCHes a range, or discovers namespaces under a prefix (SUBSCRIBE_NAMESPACE); prints what
// arrives and exits 0 once the request completed.
#include <iostream>
#include <map>

#include "cli/command.h"
#include "cli/moq_util.h"
#include "common/asio.h"
#include "moqt_endpoint/moqt_endpoint.h"

namespace kvcs::cli {
namespace {

namespace asio = boost::asio;
using moqt::DeliveryKind;
using moqt::Location;
using moqt::LocationFilter;
using T = moqt::LocationFilterType;

constexpr char kCmd[] = "moq-sub";

struct Args {
  std::string url;
  std::string ns = "kvcs-demo/synthetic";
  std::string track = "data";
  bool fetch = false;
  std::string discover;
  bool discover_set = false;
  std::string start, end;
  bool fill = false;
  std::string objects;
  std::string print = "object";
  bool quiet = false;
  bool verify = false;
  double timeout_s = 60;
  uint64_t count = 1;
  ClientTlsOptions tls;
};

const char* ViaName(DeliveryKind k) {
  switch (k) {
    case DeliveryKind::kSubscription:
      return "live";
    case DeliveryKind::kDatagram:
      return "datagram";
    case DeliveryKind::kFill:
      return "fill";
    case DeliveryKind::kFetch:
      return "fetch";
  }
  return "?";
}

const char* StatusName(moqt::ObjectStatus s) {
  switch (s) {
    case moqt::ObjectStatus::kNormal:
      return "normal";
    case moqt::ObjectStatus::kEndOfGroup:
      return "end-of-group";
    case moqt::ObjectStatus::kEndOfTrack:
      return "end-of-track";
  }
  return "?";
}

class Subscriber;

// Receives objects for both SUBSCRIBE and FETCH and forwards completion to the Subscriber.
class Receiver : public moqt::SubscribeVisitor, public moqt::FetchVisitor {
 public:
  explicit Receiver(Subscriber* s) : s_(s) {}
  void OnSubscribeOk(const moqt::SubscribeOkInfo& info) override;
  void OnObject(const moqt::ReceivedObject& o) override;
  void OnComplete(const moqt::SubscriptionDone& d) override;
  void OnComplete(const moqt::FetchDone& d) override;

 private:
  Subscriber* s_;
};

class NsReceiver : public moqt::NamespaceVisitor {
 public:
  explicit NsReceiver(Subscriber* s) : s_(s) {}
  void OnRequestOk() override;
  void OnNamespace(const moqt::TrackNamespace& suffix) override;
  void OnNamespaceDone(const moqt::TrackNamespace& suffix) override;
  void OnClosed(const std::optional<moqt::RequestError>& e) override;

 private:
  Subscriber* s_;
};

class Subscriber : public moqt::MoqtSessionCallbacks {
 public:
  explicit Subscriber(const Args& a) : a_(a), timer_(io_), signals_(io_, SIGINT, SIGTERM) {}

  int Run() {
    if (int rc = ParseArgs(); rc != 0) return rc;
    auto url = moqt::ParseMoqtUrl(a_.url);
    if (!url.ok()) {
      return Fail(kCmd, url.status().message(), "the URL looks like moqt://127.0.0.1:4443/path");
    }
    auto c = moqt::MoqtClient::Connect(io_, a_.tls.ClientConfig(*url), this, nullptr);
    if (!c.ok()) return Fail(kCmd, "cannot connect to " + a_.url + ": " + c.status().message());
    client_ = std::move(*c);
    start_ = std::chrono::steady_clock::now();
    if (a_.timeout_s > 0) {
      timer_.expires_after(std::chrono::milliseconds(static_cast<int64_t>(a_.timeout_s * 1000)));
      timer_.async_wait([this](const boost::system::error_code& ec) {
        if (ec) return;
        Done(Fail(kCmd,
                  "timed out after " + Fmt(a_.timeout_s) + " s (" + std::to_string(objects_) +
                      " objects so far)",
                  client_->setup_complete() ? "the request did not complete; raise --timeout"
                                            : "no SETUP from the server: is it a draft-22 peer?"));
      });
    }
    signals_.async_wait([this](const boost::system::error_code& ec, int) {
      if (!ec) Done(Fail(kCmd, "interrupted"));
    });
    io_.run();
    // Close cleanly, so the publisher sees NO_ERROR (bounded wait).
    if (!client_->closed()) {
      client_->Close(moqt::SessionError::kNoError, "done");
      io_.restart();
      auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
      while (!client_->closed() && std::chrono::steady_clock::now() < deadline) {
        io_.run_one_for(std::chrono::milliseconds(20));
      }
    }
    return rc_;
  }

  // ---- MoqtSessionCallbacks
  void OnSetupComplete(const moqt::SetupOptions& peer) override {
    Say("connected to '" + peer.implementation.value_or("?") +
        "' (max filter ranges: " + std::to_string(peer.max_filter_ranges.value_or(0)) + ")");
    Status st = SendRequest();
    if (!st.ok()) Done(Fail(kCmd, "request refused locally: " + st.message()));
  }
  void OnSessionClosed(uint64_t, const std::string&, bool) override {
    // The endpoint records the full reason right after this callback.
    asio::post(io_, [this] {
      if (finished_) return;
      const auto& end = client_->end();
      std::string why = end ? end->ToString() : "session closed";
      if (end && !end->handshake_completed) {
        Done(Fail(kCmd, "cannot connect to " + a_.url + ": " + why, ConnectHint(*end)));
      } else {
        Done(Fail(kCmd, "session ended before the request completed: " + why,
                  end ? ConnectHint(*end) : ""));
      }
    });
  }
  void OnGoAway(const std::string& uri) override {
    Say("GOAWAY from the server" + (uri.empty() ? "" : " (new session: " + uri + ")"));
  }

  // ---- from the receivers
  void SubscribeOk(const moqt::SubscribeOkInfo& info) {
    std::string largest = info.largest ? Loc(*info.largest) : "none";
    Say("SUBSCRIBE_OK track alias " + std::to_string(info.track_alias) + ", largest " + largest);
  }
  void Object(const moqt::ReceivedObject& o) {
    if (o.status != moqt::ObjectStatus::kNormal) {
      if (a_.print == "object") {
        Say("status  group " + std::to_string(o.location.group) + " object " +
            std::to_string(o.location.object) + " " + StatusName(o.status));
      }
      if (o.status == moqt::ObjectStatus::kEndOfGroup) FlushGroup(o.location.group);
      return;
    }
    ++objects_;
    bytes_ += o.payload.size();
    GroupStat& g = groups_[o.location.group];
    ++g.objects;
    g.bytes += o.payload.size();
    bool bad = a_.verify && !CheckSynthetic(o.location.group, o.location.object, o.payload);
    if (bad) ++bad_;
    auto key = std::make_pair(o.location.group, o.location.object);
    if (!seen_.insert(key).second) ++duplicates_;
    if (a_.print == "object") {
      Say("object  group " + std::to_string(o.location.group) + " object " +
          std::to_string(o.location.object) + " size " + std::to_string(o.payload.size()) +
          " via " + ViaName(o.via) + (bad ? " PAYLOAD MISMATCH" : ""));
    }
  }
  void SubscriptionComplete(const moqt::SubscriptionDone& d) {
    if (d.error) {
      Done(Fail(kCmd, "SUBSCRIBE refused: " + ErrText(*d.error), RefusedHint(*d.error)));
      return;
    }
    if (d.session_closed) return;  // OnSessionClosed reports it
    std::string how = d.track_ended ? "track ended" : "publisher ended the subscription";
    if (d.status) how += " (PUBLISH_DONE status " + std::to_string(*d.status) + ")";
    if (!d.all_streams_received) how += "; some data streams were lost or reset";
    cut_off_ = d.status == static_cast<uint64_t>(moqt::PublishDoneCode::kTooFarBehind);
    Complete(how);
  }
  void FetchComplete(const moqt::FetchDone& d) {
    if (d.error) {
      Done(Fail(kCmd, "FETCH refused: " + ErrText(*d.error), RefusedHint(*d.error)));
      return;
    }
    if (d.session_closed) return;
    std::string how = "fetch complete";
    if (d.end_location) how += ", end location " + Loc(*d.end_location);
    if (d.end_of_track) how += ", end of track";
    Complete(how);
  }
  void NamespaceOk() { Say("SUBSCRIBE_NAMESPACE accepted"); }
  void Namespace(const moqt::TrackNamespace& suffix, bool added) {
    ++objects_;
    moqt::TrackNamespace ns = prefix_;
    ns.insert(ns.end(), suffix.begin(), suffix.end());
    const std::string full = NamespaceArgText(ns);
    if (!a_.quiet) std::cout << (added ? "namespace " : "namespace-done ") << full << std::endl;
    if (added && ++namespaces_ >= a_.count) {
      Complete(std::to_string(namespaces_) + " namespace(s) found");
    }
  }
  void NamespaceClosed(const std::optional<moqt::RequestError>& e) {
    if (finished_) return;
    if (e) {
      Done(Fail(kCmd, "SUBSCRIBE_NAMESPACE ended: " + ErrText(*e)));
    } else {
      Done(Fail(kCmd, "the publisher ended SUBSCRIBE_NAMESPACE"));
    }
  }

 private:
  struct GroupStat {
    uint64_t objects = 0, bytes = 0;
    bool printed = false;
  };

  int ParseArgs() {
    if (a_.print != "object" && a_.print != "group" && a_.print != "none") {
      return Fail(kCmd, "--print must be object, group or none");
    }
    if (a_.quiet) a_.print = "none";
    if (a_.discover_set) {
      auto p = ParseNamespaceArg(a_.discover);
      if (!p.ok()) return Fail(kCmd, "--discover: " + p.status().message());
      prefix_ = *p;
      return 0;
    }
    auto ns = ParseNamespaceArg(a_.ns);
    if (!ns.ok()) return Fail(kCmd, "--namespace: " + ns.status().message());
    track_ = {*ns, a_.track};
    std::optional<LocationArg> start, end;
    if (!a_.start.empty()) {
      auto s = ParseLocationArg(a_.start, "--start");
      if (!s.ok()) return Fail(kCmd, s.status().message(), "--start GROUP or GROUP:OBJECT");
      start = *s;
    }
    if (!a_.end.empty()) {
      auto e = ParseLocationArg(a_.end, "--end");
      if (!e.ok()) return Fail(kCmd, e.status().message(), "--end GROUP or GROUP:OBJECT");
      end = *e;
      if (!start) return Fail(kCmd, "--end needs --start");
      if (end->loc.group < start->loc.group) return Fail(kCmd, "--end is before --start");
    }
    if (start && end) {
      uint64_t delta = end->loc.group - start->loc.group;
      filter_ = end->has_object ? LocationFilter{T::kAbsoluteRange, start->loc.group,
                                                 start->loc.object, delta, end->loc.object}
                                : LocationFilter{T::kAbsoluteStartGroupEnd, start->loc.group,
                                                 start->loc.object, delta};
    } else if (start) {
      filter_ = LocationFilter{T::kAbsoluteStart, start->loc.group, start->loc.object};
    }
    if (!a_.objects.empty()) {
      auto r = ParseRangeArg(a_.objects, "--objects");
      if (!r.ok()) return Fail(kCmd, r.status().message(), "--objects FIRST-LAST, e.g. 0-9");
      object_ranges_ = {*r};
    }
    if (a_.fetch && a_.fill) return Fail(kCmd, "--fill applies to subscriptions, not --fetch");
    return 0;
  }

  Status SendRequest() {
    moqt::MoqtSession& s = client_->session();
    auto receiver = std::make_shared<Receiver>(this);
    if (a_.discover_set) {
      Say("SUBSCRIBE_NAMESPACE " + NamespaceArgText(prefix_));
      return s.SubscribeNamespace(prefix_, std::make_shared<NsReceiver>(this)).status();
    }
    std::string what = NamespaceArgText(track_.track_namespace) + " " + track_.name;
    if (a_.fetch) {
      moqt::FetchOptions o;
      o.range = filter_;
      o.object_id_ranges = object_ranges_;
      Say("FETCH " + what);
      return s.Fetch(track_, o, receiver).status();
    }
    moqt::SubscribeOptions o;
    o.filter = filter_.value_or(LocationFilter{T::kNextObject});
    if (a_.fill) o.fill = LocationFilter{T::kAbsoluteStart, 0, 0};
    o.object_id_ranges = object_ranges_;
    Say("SUBSCRIBE " + what + (a_.fill ? " with fill from 0:0" : ""));
    return s.Subscribe(track_, o, receiver).status();
  }

  void FlushGroup(uint64_t group) {
    auto it = groups_.find(group);
    if (a_.print != "group" || it == groups_.end() || it->second.printed) return;
    it->second.printed = true;
    std::cout << "group " << group << ": " << it->second.objects << " objects, " << it->second.bytes
              << " bytes" << std::endl;
  }

  void Complete(const std::string& how) {
    if (finished_) return;
    for (auto& [g, st] : groups_) FlushGroup(g);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (a_.discover_set) {
      std::cout << "complete: " << how << " in " << Fmt(secs) << " s" << std::endl;
      Done(0);
      return;
    }
    std::cout << "complete: " << objects_ << " objects in " << groups_.size() << " groups, "
              << bytes_ << " bytes, " << Fmt(secs) << " s ("
              << Fmt(secs > 0 ? bytes_ / secs / (1 << 20) : 0) << " MiB/s); " << how;
    if (a_.verify) std::cout << "; payload errors " << bad_;
    if (duplicates_) std::cout << "; DUPLICATES " << duplicates_;
    std::cout << std::endl;
    if (a_.verify && bad_ > 0) {
      Done(Fail(kCmd, std::to_string(bad_) + " object payloads do not match the synthetic format",
                "--verify expects objects published by kvcs moq-pub"));
      return;
    }
    if (cut_off_) {
      Done(Fail(kCmd, "cut off by the publisher: too far behind (PUBLISH_DONE TOO_FAR_BEHIND)",
                "this subscriber took no data for the publisher's stall deadline (kvcs relay "
                "--subscriber-stall-ms)"));
      return;
    }
    Done(duplicates_ > 0 ? Fail(kCmd, std::to_string(duplicates_) + " objects arrived twice") : 0);
  }

  void Done(int rc) {
    if (finished_) return;
    finished_ = true;
    rc_ = rc;
    timer_.cancel();
    signals_.cancel();
    io_.stop();
  }

  void Say(const std::string& line) {
    if (a_.print != "none") std::cout << line << std::endl;
  }
  static std::string ErrText(const moqt::RequestError& e) {
    std::string name(moqt::RequestErrorCodeName(static_cast<moqt::RequestErrorCode>(e.error_code)));
    return name + " (0x" + ToHexU(e.error_code) + ")" + (e.reason.empty() ? "" : ": " + e.reason);
  }
  static std::string RefusedHint(const moqt::RequestError& e) {
    if (e.error_code == static_cast<uint64_t>(moqt::RequestErrorCode::kDoesNotExist)) {
      return "check --namespace and --track (kvcs moq-sub URL --discover PREFIX lists "
             "namespaces)";
    }
    return "";
  }
  static std::string ToHexU(uint64_t v) {
    char b[24];
    snprintf(b, sizeof(b), "%llx", static_cast<unsigned long long>(v));
    return b;
  }
  static std::string Loc(const Location& l) {
    return std::to_string(l.group) + ":" + std::to_string(l.object);
  }

  Args a_;
  asio::io_context io_;
  asio::steady_timer timer_;
  asio::signal_set signals_;
  std::unique_ptr<moqt::MoqtClient> client_;
  moqt::FullTrackName track_;
  moqt::TrackNamespace prefix_;
  std::optional<LocationFilter> filter_;
  std::vector<moqt::FilterRange> object_ranges_;
  std::chrono::steady_clock::time_point start_;
  std::map<uint64_t, GroupStat> groups_;
  std::set<std::pair<uint64_t, uint64_t>> seen_;
  uint64_t objects_ = 0, bytes_ = 0, bad_ = 0, duplicates_ = 0, namespaces_ = 0;
  bool finished_ = false;
  bool cut_off_ = false;  // PUBLISH_DONE TOO_FAR_BEHIND: the publisher gave up on us
  int rc_ = 0;
};

void Receiver::OnSubscribeOk(const moqt::SubscribeOkInfo& info) { s_->SubscribeOk(info); }
void Receiver::OnObject(const moqt::ReceivedObject& o) { s_->Object(o); }
void Receiver::OnComplete(const moqt::SubscriptionDone& d) { s_->SubscriptionComplete(d); }
void Receiver::OnComplete(const moqt::FetchDone& d) { s_->FetchComplete(d); }
void NsReceiver::OnRequestOk() { s_->NamespaceOk(); }
void NsReceiver::OnNamespace(const moqt::TrackNamespace& n) { s_->Namespace(n, true); }
void NsReceiver::OnNamespaceDone(const moqt::TrackNamespace& n) { s_->Namespace(n, false); }
void NsReceiver::OnClosed(const std::optional<moqt::RequestError>& e) { s_->NamespaceClosed(e); }

RunFn Setup(CLI::App& app) {
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      kCmd, "Subscribe to, fetch from, or discover namespaces of a MOQT draft-22 peer");
  cmd->add_option("url", a->url, "moqt://host:port/path of the publisher or relay")->required();
  cmd->add_option("--namespace", a->ns,
                  "track namespace, fields separated by '/' (0x<hex>: a binary field; a KVCS "
                  "namespace as kvcs-1/<scope>/<compat>/<anchor>/<pub_id> in hex)")
      ->capture_default_str();
  cmd->add_option("--track", a->track, "track name")->capture_default_str();
  auto* fetch = cmd->add_flag("--fetch", a->fetch,
                              "FETCH the range (--start/--end; default the whole track) "
                              "instead of subscribing");
  cmd->add_option("--discover", a->discover,
                  "SUBSCRIBE_NAMESPACE to this prefix and print the namespaces under it")
      ->each([a](const std::string&) { a->discover_set = true; })
      ->excludes(fetch);
  cmd->add_option("--start", a->start,
                  "start at GROUP[:OBJECT] (Absolute Start; default: Next Object)");
  cmd->add_option("--end", a->end,
                  "end at GROUP (Absolute Start + Group End) or GROUP:OBJECT (Absolute Range)");
  cmd->add_flag("--fill", a->fill,
                "add FILL_PARAMETERS Absolute Start 0:0: everything already published arrives "
                "on a fill stream, the rest live, each object once");
  cmd->add_option("--objects", a->objects, "only object IDs FIRST-LAST (OBJECTID_FILTER)");
  cmd->add_option("--print", a->print, "object (one line each), group (a line per group), none")
      ->capture_default_str();
  cmd->add_flag("--quiet,-q", a->quiet, "print only the final counts");
  cmd->add_flag("--verify", a->verify, "check payloads against kvcs moq-pub's synthetic format");
  cmd->add_option("--timeout", a->timeout_s, "give up after this many seconds (0: never)")
      ->capture_default_str();
  cmd->add_option("--count", a->count, "--discover: exit after this many namespaces")
      ->capture_default_str();
  a->tls.Add(cmd);
  cmd->footer(
      "Example:\n"
      "  kvcs moq-sub moqt://127.0.0.1:4443/ --insecure --fill --verify --print group\n"
      "  kvcs moq-sub moqt://127.0.0.1:4443/ --ca cert.pem --fetch --start 5 --end 8 "
      "--objects 0-9\n"
      "  kvcs moq-sub moqt://127.0.0.1:4443/ --insecure --discover kvcs-demo\n"
      "Exits 0 when the subscription or fetch completed (End of Track / PUBLISH_DONE / FIN).");
  return [a] { return Subscriber(*a).Run(); };
}

}  // namespace
KVCS_REGISTER_COMMAND(moq_sub, 71, Setup);
}  // namespace kvcs::cli
