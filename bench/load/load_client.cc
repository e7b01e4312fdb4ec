// kvcs_load_client: the client side of the sustained-load runs (bench/load/run_load.py starts
// the servers as real processes, samples their RSS and calls this once per phase). For
// `--duration` seconds, `--clients` well-behaved clients keep one request each in flight against
// one server, optionally alongside a hostile client, then one JSON line goes to stdout:
// requests, errors (with the first few messages), retries, requests/s and p50/p99/max latency of
// the well-behaved clients, and what the hostile client did.
//
//   --service store   objcache::Client per client (one keep-alive connection, SigV4): a mix of
//                     S3 PUT (4 KiB), GET of that object and an aggregated GET of 2 blocks × 2
//                     layers (256 KiB, digests verified); credentials from $KVCS_S3_ACCESS_KEY
//                     and $KVCS_S3_SECRET_KEY.
//   --service index   index::IndexClient per client (a fresh connection per request, as holders
//                     and consumers do): register 4 keys (one of 16 sets per client, so the
//                     registry stays bounded), then look them up.
//   --service relay   one MoqtClient session per client on one event loop: SUBSCRIBE to the
//                     track (--track NS/NAME, --objects per subscription, all cached at the
//                     relay), receive every object, UNSUBSCRIBE, again. Sessions open 16 at a
//                     time and are closed (not abandoned) at the end.
//   --hostile slowloris | idle   (HTTP) http::test::ConnectionHog: --hog-connections partial
//                     request heads / idle keep-alive connections from 127.0.0.3.. (15
//                     addresses), each reopened when the server closes it.
//   --hostile flood   (QUIC) real half-open handshakes (captured client Initials replayed from
//                     fresh ports of 127.0.0.3) and junk Initials, --flood-pps packets/s.
//
// Well-behaved clients connect from 127.0.0.1, the hostile one from other loopback addresses: the
// per-address limits are what keep it from the well-behaved clients' share. An HTTP request that
// fails on a reused keep-alive connection before any answer is retried once on a new one (what
// HTTP clients do for a connection the server closed while idle); retries are counted apart.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/support/bench_util.h"
#include "common/asio.h"
#include "common/hex.h"
#include "http/test_tools/connection_hog.h"
#include "index/index_client.h"
#include "moqt_endpoint/moqt_endpoint.h"
#include "objcache/client.h"
#include "objcache/synthetic.h"
#include "quic/test_tools/initial_flood.h"

namespace kvcs::load {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

struct Args {
  std::string service;
  uint16_t port = 0;
  size_t clients = 100;
  double duration_s = 20;
  std::string hostile = "none";
  size_t hog_connections = 2000;
  double flood_pps = 2000;
  std::string track = "kvcs-load/t";
  size_t objects = 64;
};

// What the well-behaved clients saw; thread-safe.
class Results {
 public:
  void Ok(double latency_s) {
    std::lock_guard<std::mutex> l(mu_);
    latencies_.push_back(latency_s);
  }
  void Error(const std::string& what) {
    std::lock_guard<std::mutex> l(mu_);
    if (errors_.size() < 5) errors_.push_back(what);
    ++error_count_;
  }
  void Retry() { ++retries_; }
  std::string Json(double seconds, const std::string& hostile_json) {
    std::lock_guard<std::mutex> l(mu_);
    std::sort(latencies_.begin(), latencies_.end());
    auto pct = [&](double p) {
      if (latencies_.empty()) return 0.0;
      return latencies_[std::min(latencies_.size() - 1, size_t(p * latencies_.size()))] * 1e3;
    };
    std::string e = "[";
    for (size_t i = 0; i < errors_.size(); ++i) {
      std::string m;
      for (char c : errors_[i]) m += (c == '"' || c == '\\') ? '\'' : (c < ' ' ? ' ' : c);
      e += (i ? ",\"" : "\"") + m + "\"";
    }
    e += "]";
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "{\"requests\":%zu,\"errors\":%zu,\"retries\":%zu,\"seconds\":%.2f,"
                  "\"rps\":%.1f,\"p50_ms\":%.2f,\"p99_ms\":%.2f,\"max_ms\":%.2f,",
                  latencies_.size(), error_count_, size_t(retries_), seconds,
                  latencies_.size() / seconds, pct(0.5), pct(0.99), pct(1.0));
    return std::string(buf) + "\"error_samples\":" + e + ",\"hostile\":" + hostile_json + "}";
  }

 private:
  std::mutex mu_;
  std::vector<double> latencies_;
  std::vector<std::string> errors_;
  size_t error_count_ = 0;
  std::atomic<size_t> retries_{0};
};

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// ---- store ------------------------------------------------------------------------------------

constexpr char kBucket[] = "load";

objcache::ClientOptions StoreOptions(const Args& a) {
  objcache::ClientOptions o;
  o.port = a.port;
  const char* ak = std::getenv("KVCS_S3_ACCESS_KEY");
  const char* sk = std::getenv("KVCS_S3_SECRET_KEY");
  o.access_key = ak ? ak : "";
  o.secret_key = sk ? sk : "";
  o.verify_threads = 1;
  return o;
}

// The bucket and the aggregated blocks every client reads.
Status SetUpStore(const Args& a, const objcache::SyntheticCache& cache) {
  objcache::Client c(StoreOptions(a));
  KVCS_RETURN_IF_ERROR(c.CreateBucket(kBucket));
  std::vector<Bytes> containers;
  std::vector<ByteSpan> spans;
  for (uint32_t i = 0; i < cache.block_keys.size(); ++i) {
    KVCS_ASSIGN_OR_RETURN(Bytes b, objcache::MakeSyntheticContainer(cache, i));
    containers.push_back(std::move(b));
  }
  for (const auto& b : containers) spans.emplace_back(b.data(), b.size());
  KVCS_ASSIGN_OR_RETURN(auto put, c.AggregatePut(kBucket, cache.scope_id, spans, false));
  if (put.stored != containers.size()) return InvalidArgument("aggregated PUT stored too few");
  return Status::Ok();
}

// One store client: PUT, GET, aggregated GET, in turn, until `stop`.
void StoreClient(const Args& a, size_t id, const objcache::SyntheticCache& cache,
                 const std::atomic<bool>& stop, Results& r) {
  objcache::Client c(StoreOptions(a));
  Bytes body(4096, static_cast<uint8_t>(id));
  objcache::AggregateRequest agg = objcache::SyntheticRequest(cache);
  for (uint64_t i = 0; !stop; ++i) {
    std::string key =
        "/" + std::string(kBucket) + "/c" + std::to_string(id) + "-" + std::to_string((i / 3) % 16);
    auto t0 = Clock::now();
    std::string failure;
    for (int attempt = 0; attempt < 2; ++attempt) {
      failure.clear();
      bool transport = false;
      if (i % 3 == 2) {
        auto s = c.AggregateGet(kBucket, agg, [](const objcache::DeliveredLayer& l) {
          for (const auto& b : l.blocks)
            if (b.status != objcache::BlockStatus::kPresent)
              return Status(Code::kCorruption, "block not present");
          return Status::Ok();
        });
        if (!s.ok()) {
          failure = "aggregated GET: " + s.status().ToString();
          transport = s.status().code() != Code::kCorruption &&
                      s.status().message().find("HTTP") == std::string::npos;
        } else if (s->corrupt_blocks) {
          failure = "aggregated GET: corrupt blocks";
        }
      } else {
        bool put = i % 3 == 0;
        auto res = c.Request(put ? "PUT" : "GET", key, "", put ? ByteSpan(body) : ByteSpan());
        if (!res.ok()) {
          failure = std::string(put ? "PUT: " : "GET: ") + res.status().ToString();
          transport = true;
        } else if (res->status != 200) {
          failure = std::string(put ? "PUT: HTTP " : "GET: HTTP ") + std::to_string(res->status);
        }
      }
      if (failure.empty() || !transport || attempt == 1) break;
      r.Retry();
    }
    if (failure.empty())
      r.Ok(Since(t0));
    else
      r.Error(failure);
  }
}

// ---- index ------------------------------------------------------------------------------------

void IndexClient(const Args& a, size_t id, const std::atomic<bool>& stop, Results& r) {
  index::IndexClientOptions o;
  o.url = "http://127.0.0.1:" + std::to_string(a.port);
  o.timeout = std::chrono::seconds(10);
  auto client = index::IndexClient::Create(o);
  if (!client.ok()) return r.Error(client.status().ToString());
  Digest compat{};
  compat[0] = 1;
  for (uint64_t i = 0; !stop; ++i) {
    index::RegisterRequest reg;
    reg.compat_id = compat;
    reg.replica.holder = "http://127.0.0.1:9/holder-" + std::to_string(id);
    reg.replica.codecs = {kvsp::Codec::kRaw};
    reg.replica.layer_count = 32;
    reg.ttl_ms = 60000;
    // 16 sets of 4 keys per client, registered again and again (a renewal): the registry's
    // size stays bounded, so the server's memory must too.
    std::mt19937_64 rng(id * 16 + i % 16);
    for (int k = 0; k < 4; ++k) {
      Digest d{};
      for (auto& b : d) b = static_cast<uint8_t>(rng());
      reg.block_keys.push_back(d);
    }
    auto t0 = Clock::now();
    Status s = client->Register(reg);
    if (!s.ok()) {
      r.Error("register: " + s.ToString());
      continue;
    }
    r.Ok(Since(t0));
    index::LookupRequest look;
    look.compat_id = compat;
    look.block_keys = reg.block_keys;
    t0 = Clock::now();
    auto l = client->Lookup(look);
    if (!l.ok())
      r.Error("lookup: " + l.status().ToString());
    else if (l->matched != 4)
      r.Error("lookup: matched " + std::to_string(l->matched) + " of 4");
    else
      r.Ok(Since(t0));
  }
}

// ---- relay ------------------------------------------------------------------------------------

moqt::MoqtClientConfig RelayClientConfig(uint16_t port) {
  moqt::MoqtClientConfig c;
  c.quic.host = "127.0.0.1";
  c.quic.port = port;
  c.quic.server_name = "localhost";
  c.quic.insecure = true;
  return c;
}

moqt::FullTrackName ParseTrack(const std::string& text) {
  moqt::FullTrackName t;
  size_t slash = text.rfind('/');
  std::string ns = text.substr(0, slash);
  for (size_t at = 0; at <= ns.size();) {
    size_t next = ns.find('/', at);
    if (next == std::string::npos) next = ns.size();
    t.track_namespace.push_back(ns.substr(at, next - at));
    at = next + 1;
  }
  t.name = text.substr(slash + 1);
  return t;
}

// One subscriber: a session, and one subscription after the other.
struct Subscriber : moqt::SubscribeVisitor {
  void OnObject(const moqt::ReceivedObject& o) override {
    if (o.status == moqt::ObjectStatus::kNormal) ++objects;
  }
  void OnComplete(const moqt::SubscriptionDone&) override { done = true; }
  size_t objects = 0;
  bool done = false;
};

struct RelaySubscriber {
  std::unique_ptr<moqt::MoqtClient> client;
  std::shared_ptr<Subscriber> sub;
  uint64_t request_id = 0;
  Clock::time_point started;
  bool failed = false;
};

// Drives every subscriber on the calling thread until `stop`; the flood (if any) is sent from
// the same loop.
void RelayClients(const Args& a, asio::io_context& io, const std::atomic<bool>& stop,
                  const std::function<void()>& flood, Results& r) {
  moqt::FullTrackName track = ParseTrack(a.track);
  std::vector<RelaySubscriber> subs(a.clients);
  auto connect = [&](RelaySubscriber& s) {
    auto c = moqt::MoqtClient::Connect(io, RelayClientConfig(a.port), nullptr);
    if (!c.ok()) {
      r.Error("connect: " + c.status().ToString());
      s.failed = true;
      return;
    }
    s.client = std::move(*c);
    s.sub.reset();
    s.failed = false;
  };
  // A pool opens its sessions a few at a time, as a client starting many at once should: more
  // than the server's max_handshakes_per_address (32) at once would be refused past a Retry.
  constexpr size_t kMaxConnecting = 16;
  size_t started = 0;
  auto subscribe = [&](RelaySubscriber& s) {
    s.sub = std::make_shared<Subscriber>();
    moqt::SubscribeOptions opts;
    opts.fill = moqt::LocationFilter{moqt::LocationFilterType::kAbsoluteStart, 0, 0, 0};
    s.started = Clock::now();
    auto id = s.client->session().Subscribe(track, opts, s.sub);
    if (!id.ok()) {
      r.Error("subscribe: " + id.status().ToString());
      s.sub.reset();
      return;
    }
    s.request_id = *id;
  };
  while (!stop) {
    io.run_for(std::chrono::milliseconds(5));
    if (io.stopped()) io.restart();
    if (flood) flood();
    size_t connecting = 0;
    for (auto& s : subs)
      connecting += s.client && !s.client->setup_complete() && !s.client->closed();
    for (; started < subs.size() && connecting < kMaxConnecting; ++started, ++connecting)
      connect(subs[started]);
    for (auto& s : subs) {
      if (!s.client) continue;
      if (s.client->closed()) {
        r.Error("session closed: " + (s.client->end() ? s.client->end()->ToString() : ""));
        s.client.reset();
        connect(s);  // at once: a pool replaces a lost session
        continue;
      }
      if (!s.client->setup_complete()) continue;
      if (!s.sub) {
        subscribe(s);
        continue;
      }
      if (s.sub->objects >= a.objects) {
        r.Ok(Since(s.started));
        if (!s.sub->done) (void)s.client->session().Unsubscribe(s.request_id);
        s.sub.reset();
      } else if (s.sub->done) {
        r.Error("subscription done after " + std::to_string(s.sub->objects) + " objects");
        s.sub.reset();
      } else if (Since(s.started) > 10) {
        r.Error("subscription: no objects for 10 s");
        (void)s.client->session().Unsubscribe(s.request_id);
        s.sub.reset();
      }
    }
  }
  // Closed, not abandoned: the server frees each session at once (an abandoned one would hold
  // its slot until the idle timeout, into the next phase).
  for (auto& s : subs)
    if (s.client && !s.client->closed()) s.client->Close(moqt::SessionError::kNoError, "done");
  bench::RunUntil(
      io,
      [&] {
        for (auto& s : subs)
          if (s.client && !s.client->closed()) return false;
        return true;
      },
      2);
  subs.clear();
  io.run_for(std::chrono::milliseconds(50));
}

// ---- the QUIC flood ---------------------------------------------------------------------------

class QuicFlood {
 public:
  QuicFlood(asio::io_context& io, const Args& a) : port_(a.port), pps_(a.flood_pps), rng_(19) {
    std::vector<std::unique_ptr<moqt::MoqtClient>> clients;
    initials_ = quic::test::CaptureInitials(
        256,
        [&](uint16_t hole) {
          for (int i = 0; i < 256; ++i) {
            auto c = moqt::MoqtClient::Connect(io, RelayClientConfig(hole), nullptr);
            if (c.ok()) clients.push_back(std::move(*c));
          }
        },
        [&](const std::function<bool()>& pred) { bench::RunUntil(io, pred, 10); });
    for (auto& c : clients) c->transport().Abandon();
    t0_ = Clock::now();
  }
  // Sends what is due: half replays of real Initials (half-open handshakes), half junk.
  void operator()() {
    size_t due = size_t(Since(t0_) * pps_);
    while (sent_ < due) {
      if (fds_.size() >= 64) fds_.CloseAll();  // bounds the open descriptors
      int fd = fds_.Open("127.0.0.3");
      if (fd < 0) break;
      if (sent_ % 2 == 0 && !initials_.empty()) {
        quic::test::RawSockets::Send(fd, port_, initials_[(sent_ / 2) % initials_.size()]);
        ++handshakes_;
      } else {
        quic::test::RawSockets::Send(fd, port_, quic::test::JunkInitial(rng_));
      }
      ++sent_;
    }
  }
  std::string Json() const {
    return "{\"kind\":\"flood\",\"packets\":" + std::to_string(sent_) +
           ",\"half_open_replays\":" + std::to_string(handshakes_) +
           ",\"captured_initials\":" + std::to_string(initials_.size()) + "}";
  }

 private:
  uint16_t port_;
  double pps_;
  std::mt19937 rng_;
  std::vector<quic::test::Packet> initials_;
  quic::test::RawSockets fds_;
  Clock::time_point t0_;
  size_t sent_ = 0, handshakes_ = 0;
};

int Main(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--service")
      a.service = v;
    else if (k == "--port")
      a.port = static_cast<uint16_t>(std::stoul(v));
    else if (k == "--clients")
      a.clients = std::stoul(v);
    else if (k == "--duration")
      a.duration_s = std::stod(v);
    else if (k == "--hostile")
      a.hostile = v;
    else if (k == "--hog-connections")
      a.hog_connections = std::stoul(v);
    else if (k == "--flood-pps")
      a.flood_pps = std::stod(v);
    else if (k == "--track")
      a.track = v;
    else if (k == "--objects")
      a.objects = std::stoul(v);
    else
      return std::fprintf(stderr, "unknown option %s\n", k.c_str()), 2;
  }
  if (a.port == 0 || (a.service != "store" && a.service != "index" && a.service != "relay")) {
    std::fprintf(stderr,
                 "usage: kvcs_load_client --service store|index|relay --port P [--clients N] "
                 "[--duration S] [--hostile none|slowloris|idle|flood] [--hog-connections N] "
                 "[--flood-pps N] [--track NS/NAME --objects N]\n");
    return 2;
  }
  rlimit nofile{};  // the hog's connections
  getrlimit(RLIMIT_NOFILE, &nofile);
  nofile.rlim_cur = nofile.rlim_max;
  setrlimit(RLIMIT_NOFILE, &nofile);
  Results results;
  std::atomic<bool> stop{false};
  std::string hostile_json = "null";
  auto t0 = Clock::now();
  if (a.service == "relay") {
    asio::io_context io;
    std::unique_ptr<QuicFlood> flood;
    if (a.hostile == "flood") flood = std::make_unique<QuicFlood>(io, a);
    std::thread timer([&] {
      std::this_thread::sleep_for(std::chrono::duration<double>(a.duration_s));
      stop = true;
    });
    t0 = Clock::now();
    std::function<void()> f;
    if (flood) f = [&] { (*flood)(); };
    RelayClients(a, io, stop, f, results);
    timer.join();
    if (flood) hostile_json = flood->Json();
  } else {
    std::unique_ptr<http::test::ConnectionHog> hog;
    if (a.hostile == "slowloris" || a.hostile == "idle") {
      std::vector<std::string> from;
      for (int i = 3; i < 18; ++i) from.push_back("127.0.0." + std::to_string(i));
      hog = std::make_unique<http::test::ConnectionHog>(
          a.port, from, a.hog_connections,
          a.hostile == "idle" ? http::test::kWholeRequest : http::test::kPartialHead);
    }
    auto cache = objcache::MakeSyntheticCache(2, 2);
    if (!cache.ok()) return std::fprintf(stderr, "%s\n", cache.status().ToString().c_str()), 1;
    if (a.service == "store") {
      Status s = SetUpStore(a, *cache);
      if (!s.ok()) return std::fprintf(stderr, "store setup: %s\n", s.ToString().c_str()), 1;
    }
    t0 = Clock::now();
    std::vector<std::thread> threads;
    for (size_t i = 0; i < a.clients; ++i) {
      threads.emplace_back([&, i] {
        if (a.service == "store")
          StoreClient(a, i, *cache, stop, results);
        else
          IndexClient(a, i, stop, results);
      });
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(a.duration_s));
    stop = true;
    for (auto& t : threads) t.join();
    if (hog) {
      hostile_json = "{\"kind\":\"" + a.hostile + "\",\"open\":" + std::to_string(hog->open()) +
                     ",\"reopened\":" + std::to_string(hog->reopened()) + "}";
    }
  }
  std::printf("%s\n", results.Json(Since(t0), hostile_json).c_str());
  return 0;
}

}  // namespace
}  // namespace kvcs::load

int main(int argc, char** argv) { return kvcs::load::Main(argc, argv); }
