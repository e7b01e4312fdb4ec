// The caching relay's fan-out (issue 12, bench): one publisher, 1, 8 and 32 subscribers of a
// publication in the Llama-3.1-8B 4K layout (tracks k and v, 32 groups of 256 objects of 32 KiB:
// 512 MiB), over real QUIC on 127.0.0.1, against one raw QUIC stream measured in the same run.
//
// One process, three threads: the RelayServer on its own io_context thread (its thread CPU time
// is "relay CPU"); the publisher (a TrackStore holding the whole publication, a MoqtClient
// announcing it to the relay, and a MoqtServer serving it directly) on another; every
// subscriber (a MoqtClient per subscriber, k and v subscribed with Next Object + fill from
// {0,0}) on the main thread. Each fan-out run uses a fresh publication, so the relay receives
// it once (its upstream subscription per track) while serving the subscribers; the cache budget
// holds one publication, so each run evicts the previous one.
//
// Figures:
//   - raw QUIC stream: the relay's thread sends the publication's size on one stream (the
//     baseline per core: bytes / sender thread CPU seconds), once copying from one buffer and
//     once referencing shared 32 KiB buffers (WriteShared, what the relay does with cached
//     objects); each relay run's per-core ratio to both is printed;
//   - per fan-out run: relay egress (delivered bytes x 8 / wall seconds), relay CPU seconds per
//     delivered GB, egress per relay core (delivered bytes / relay thread CPU seconds; the relay
//     also receives the publication) and its ratio to the raw stream per core;
//   - memory beyond the cached payload, per cached GB, after the 1-subscriber run (cache holds the
//     publication, every subscriber gone, malloc_trim): the byte budget's charge, the allocator's
//     bytes in use (mallinfo2 uordblks + hblkhd, every arena) and RSS, each as its growth minus
//     the payload. The allocator and RSS figures are of the whole process (an upper bound on the
//     relay's own: the publisher's and subscribers' sessions are counted too);
//   - a late subscriber: the whole publication from the relay's cache once the publisher has
//     gone, against the same subscriber served directly by the publisher.
// Wall-clock figures depend on the machine's load (printed); CPU per GB much less so.
//
//   kvcs_relay_bench [--mib N] [--subscribers A,B,...]   (defaults: 512 MiB; 1,8,32)
// N MiB keeps 32 groups per track and 32 KiB objects: N/2 objects per group.
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/support/bench_util.h"
#include "bench/support/raw_quic_stream.h"
#include "common/asio.h"
#include "moqt_endpoint/moqt_endpoint.h"
#include "moqt_session/moqt_byte_budget.h"
#include "moqt_session/moqt_track_store.h"
#include "relay/relay_server.h"

namespace asio = boost::asio;
using namespace kvcs;
using namespace kvcs::bench;
using namespace kvcs::moqt;

namespace {

constexpr uint64_t kGroups = 32;
constexpr size_t kObjectBytes = 32 << 10;
const char* const kTracks[] = {"k", "v"};

uint64_t RssBytes() {
  std::ifstream f("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  f >> size >> resident;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}
// Bytes the allocator has handed out and not had back, over every arena (glibc).
uint64_t HeapInUse() {
  struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

TrackNamespace RunNamespace(const std::string& run) { return TrackNamespace{{"bench-relay", run}}; }

// Counts one subscribed track's objects.
struct Counter : SubscribeVisitor {
  void OnObject(const ReceivedObject& o) override {
    if (o.status != ObjectStatus::kNormal) return;
    if (objects == 0) first_at = Now();
    ++objects;
    bytes += o.payload.size();
  }
  void OnComplete(const SubscriptionDone& d) override {
    done = true;
    failed = d.error.has_value() || d.session_closed || (d.status && !d.track_ended);
  }
  uint64_t objects = 0, bytes = 0;
  double first_at = 0;
  bool done = false, failed = false;
};

// The publisher's thread: the whole publication(s) in a TrackStore, announced to the relay by a
// MoqtClient and served directly by a MoqtServer.
struct Publisher : BenchThread, MoqtSessionCallbacks {
  ~Publisher() override {
    Call([this] {
      client.reset();
      server.reset();
    });
  }
  void OnSetupComplete(const SetupOptions&) override {
    for (const auto& ns : namespaces) {
      auto id = client->session().PublishNamespace(
          ns,
          [this](const std::optional<RequestError>& e) { (e ? refused : accepted).fetch_add(1); });
      if (!id.ok()) refused.fetch_add(1);
    }
  }

  TrackStore store;
  std::vector<TrackNamespace> namespaces;
  std::unique_ptr<MoqtServer> server;
  std::unique_ptr<MoqtClient> client;
  std::atomic<int> accepted{0}, refused{0};
};

struct RelayThread : BenchThread {
  ~RelayThread() {
    Call([this] { server.reset(); });
  }
  std::unique_ptr<relay::RelayServer> server;
};

std::unique_ptr<MoqtClient> Connect(asio::io_context& io, uint16_t port) {
  MoqtClientConfig cc;
  cc.quic.port = port;
  cc.quic.insecure = true;
  auto c = MoqtClient::Connect(io, cc, nullptr);
  if (!c.ok()) return nullptr;
  return std::move(*c);
}

struct Delivery {
  double secs = 0, relay_cpu = 0, sub_cpu = 0, pub_cpu = 0;
  double first_object_s = 0;  // from the first SUBSCRIBE to the first object received
  uint64_t bytes = 0, bytes_in = 0;
  bool ok = false;
};

// `n` subscribers on this thread, each subscribing k and v of `ns` at `port` (Next Object + fill
// from {0,0}); the clock runs from the first SUBSCRIBE to the last object.
Delivery Deliver(uint16_t port, const TrackNamespace& ns, size_t n, uint64_t objects_per_track,
                 RelayThread& relay, Publisher& pub) {
  Delivery d;
  asio::io_context io;
  std::vector<std::unique_ptr<MoqtClient>> clients;
  for (size_t i = 0; i < n; ++i) {
    clients.push_back(Connect(io, port));
    if (!clients.back()) return d;
  }
  auto all_setup = [&] {
    for (auto& c : clients) {
      if (!c->setup_complete() && !c->closed()) return false;
    }
    return true;
  };
  if (!RunUntil(io, all_setup, 30)) return d;
  for (auto& c : clients) {
    if (!c->setup_complete()) return d;
  }
  auto in0 = relay.server ? relay.server->relay().metrics().bytes_in.load() : 0;
  std::vector<std::shared_ptr<Counter>> counters;
  double cpu0 = ThreadCpu(), rcpu0 = relay.cpu(), pcpu0 = pub.cpu(), t0 = Now();
  SubscribeOptions o;
  o.filter = {LocationFilterType::kNextObject};
  o.fill = LocationFilter{LocationFilterType::kAbsoluteStart, 0, 0};
  for (auto& c : clients) {
    for (const char* t : kTracks) {
      counters.push_back(std::make_shared<Counter>());
      if (!c->session().Subscribe({ns, t}, o, counters.back()).ok()) return d;
    }
  }
  bool failed = false;
  auto finished = [&] {
    for (auto& k : counters) {
      if (k->failed) failed = true;
      if (k->objects < objects_per_track && !k->failed) return false;
    }
    return true;
  };
  d.ok = RunUntil(io, finished, 600) && !failed;
  d.secs = Now() - t0;
  d.sub_cpu = ThreadCpu() - cpu0;
  d.relay_cpu = relay.cpu() - rcpu0;
  d.pub_cpu = pub.cpu() - pcpu0;
  d.first_object_s = d.secs;
  for (auto& k : counters) {
    if (k->objects > 0) d.first_object_s = std::min(d.first_object_s, k->first_at - t0);
    d.bytes += k->bytes;
    if (k->objects != objects_per_track) d.ok = false;
  }
  if (relay.server) d.bytes_in = relay.server->relay().metrics().bytes_in.load() - in0;
  if (!d.ok) fprintf(stderr, "delivery to %zu subscriber(s) incomplete\n", n);
  for (auto& c : clients) c->Close(SessionError::kNoError, "done");
  RunUntil(
      io, [&] { return false; }, 0.2);  // lets the CONNECTION_CLOSEs go out
  return d;
}

double Gbps(uint64_t bytes, double secs) { return secs > 0 ? bytes * 8 / secs / 1e9 : 0; }

}  // namespace

int main(int argc, char** argv) {
  uint64_t mib = 512;
  std::vector<size_t> fanouts = {1, 8, 32};
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--mib")) mib = std::stoull(argv[i + 1]);
    if (!strcmp(argv[i], "--subscribers")) {
      fanouts.clear();
      std::string s = argv[i + 1];
      for (size_t p = 0; p < s.size();) {
        size_t q = s.find(',', p);
        if (q == std::string::npos) q = s.size();
        fanouts.push_back(std::stoul(s.substr(p, q - p)));
        p = q + 1;
      }
    }
  }
  const uint64_t per_group = std::max<uint64_t>(1, mib / 2);
  const uint64_t per_track = kGroups * per_group;
  const uint64_t payload = 2 * per_track * kObjectBytes;
  TempCert tc("kvcs_relay_bench");
  if (!tc.ok || fanouts.empty()) return 1;
  printf(
      "kvcs_relay_bench: publication %.0f MiB (k+v, %llu groups x %llu objects x 32 KiB); "
      "loadavg before %s\n",
      payload / 1048576.0, static_cast<unsigned long long>(kGroups),
      static_cast<unsigned long long>(per_group), LoadAvg().c_str());

  RelayThread relay;
  Publisher pub;
  // The baseline on the relay's thread: one raw stream of the publication's size.
  RawStreamRun raw = RunRawQuicStream(relay, tc.cert, tc.key, payload);
  // The same, sending references to shared 32 KiB buffers as the relay sends cached objects.
  RawStreamRun raw_shared = RunRawQuicStream(relay, tc.cert, tc.key, payload, kObjectBytes);

  // The publications (one per fan-out run), built from one set of shared buffers.
  std::vector<std::shared_ptr<const Bytes>> buffers;
  for (uint64_t i = 0; i < per_group; ++i) {
    Bytes b(kObjectBytes, 0xa5);
    b[0] = static_cast<uint8_t>(i);
    buffers.push_back(std::make_shared<const Bytes>(std::move(b)));
  }
  for (size_t n : fanouts) pub.namespaces.push_back(RunNamespace("fanout-" + std::to_string(n)));
  bool ok = true;
  pub.Call([&] {
    for (const auto& ns : pub.namespaces) {
      for (const char* name : kTracks) {
        TrackOptions to;
        to.max_groups = kGroups + 1;
        to.max_bytes = payload;
        auto t = pub.store.CreateTrack({ns, name}, to);
        if (!t.ok()) {
          ok = false;
          return;
        }
        for (uint64_t g = 0; g < kGroups; ++g) {
          ok = ok && (*t)->StartGroup(g).ok();
          for (const auto& b : buffers) ok = ok && (*t)->AppendObject(b).ok();
          ok = ok && (*t)->EndGroup().ok();
        }
        ok = ok && (*t)->EndTrack().ok();
      }
    }
    MoqtServerConfig sc;
    sc.quic.cert_file = tc.cert;
    sc.quic.key_file = tc.key;
    auto s = MoqtServer::Create(pub.io, sc, &pub.store);
    if (s.ok()) pub.server = std::move(*s);
  });
  relay.Call([&] {
    relay::RelayServerConfig rc;
    rc.cert_file = tc.cert;
    rc.key_file = tc.key;
    rc.relay.relay_id = "bench";
    // One publication (payload plus the per-object and per-group charges), with room to spare.
    rc.relay.cache_bytes = payload + payload / 8 + (16 << 20);
    auto s = relay::RelayServer::Start(relay.io, rc);
    if (s.ok()) relay.server = std::move(*s);
  });
  if (!ok || !pub.server || !relay.server) {
    fprintf(stderr, "setup failed (publication, publisher server or relay)\n");
    return 1;
  }
  const uint16_t relay_port = relay.server->port();
  pub.Call([&] {
    MoqtClientConfig cc;
    cc.quic.port = relay_port;
    cc.quic.insecure = true;
    auto c = MoqtClient::Connect(pub.io, cc, &pub, &pub.store);
    if (c.ok()) pub.client = std::move(*c);
  });
  const double announce_deadline = Now() + 30;
  while (pub.accepted.load() + pub.refused.load() < static_cast<int>(fanouts.size()) &&
         Now() < announce_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (pub.accepted.load() != static_cast<int>(fanouts.size())) {
    fprintf(stderr, "the relay did not accept the publisher's namespaces\n");
    return 1;
  }

  // Directly from the publisher: the reference for the late subscriber.
  Delivery direct = Deliver(pub.server->port(), pub.namespaces.back(), 1, per_track, relay, pub);

  std::vector<Delivery> runs;
  uint64_t budget0 = 0, budget1 = 0, heap0 = 0, heap1 = 0, rss0 = 0, rss1 = 0;
  auto quiesce = [&](uint64_t& budget, uint64_t& heap, uint64_t& rss) {
    relay.Call([&] { budget = relay.server->relay().cache().budget()->used(); });
    malloc_trim(0);
    heap = HeapInUse();
    rss = RssBytes();
  };
  for (size_t i = 0; i < fanouts.size(); ++i) {
    if (i == 0) quiesce(budget0, heap0, rss0);
    runs.push_back(Deliver(relay_port, pub.namespaces[i], fanouts[i], per_track, relay, pub));
    ok = ok && runs.back().ok;
    if (i == 0) {
      relay.Call([] {});  // the relay has seen the subscribers leave
      quiesce(budget1, heap1, rss1);
    }
  }

  // The publisher leaves; a late subscriber is served the last publication from the cache.
  pub.Call([&] { pub.client->Close(SessionError::kNoError, "publisher done"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  Delivery late = Deliver(relay_port, pub.namespaces.back(), 1, per_track, relay, pub);

  auto per_core_of = [](const RawStreamRun& r) {
    return r.server_cpu > 0 ? r.bytes / r.server_cpu : 0;
  };
  const double raw_per_core = per_core_of(raw), shared_per_core = per_core_of(raw_shared);
  for (const auto& [name, r] : {std::pair{"raw QUIC stream (baseline)     ", &raw},
                                std::pair{"raw QUIC stream, shared buffers", &raw_shared}}) {
    printf("%s %6.2f Gbit/s  sender cpu s/GB %.3f  per core %.2f Gbit/s%s\n", name,
           Gbps(r->bytes, r->secs), r->bytes ? r->server_cpu / (r->bytes / 1e9) : 0,
           per_core_of(*r) * 8 / 1e9, r->ok ? "" : "  (INCOMPLETE)");
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    const Delivery& r = runs[i];
    const double gb = r.bytes / 1e9;
    const double per_core = r.relay_cpu > 0 ? r.bytes / r.relay_cpu : 0;
    printf(
        "relay, %2zu subscriber(s)         egress %6.2f Gbit/s (in %.2f)  relay cpu s/GB %.3f  "
        "per relay core %.2f Gbit/s  ratio vs raw per core %.2f (aim >= 0.7), vs raw shared "
        "%.2f  %.2f s  cpu s: subs %.2f pub %.2f%s\n",
        fanouts[i], Gbps(r.bytes, r.secs), Gbps(r.bytes_in, r.secs), gb > 0 ? r.relay_cpu / gb : 0,
        per_core * 8 / 1e9, raw_per_core > 0 ? per_core / raw_per_core : 0,
        shared_per_core > 0 ? per_core / shared_per_core : 0, r.secs, r.sub_cpu, r.pub_cpu,
        r.ok ? "" : "  (INCOMPLETE)");
  }
  auto beyond = [&](uint64_t before, uint64_t after) {
    return (static_cast<double>(after) - before - payload) / payload * 100;
  };
  auto mb = [&](uint64_t before, uint64_t after) {
    return (static_cast<double>(after) - before - payload) / 1e6;
  };
  printf(
      "memory beyond the cached payload (%.0f MiB cached), per cached GB: budget charge %.2f %% "
      "(%+.1f MB); allocator in use %.2f %% (%+.1f MB); RSS %.2f %% (%+.1f MB) (aim <= 3 %%; "
      "allocator and RSS: the whole process, fixed costs included)\n",
      payload / 1048576.0, beyond(budget0, budget1), mb(budget0, budget1), beyond(heap0, heap1),
      mb(heap0, heap1), beyond(rss0, rss1), mb(rss0, rss1));
  printf(
      "late subscriber (publisher gone, from the relay's cache) %.2f s  vs  directly from the "
      "publisher %.2f s  (ratio %.2f; first object after %.0f ms vs %.0f ms)%s\n",
      late.secs, direct.secs, direct.secs > 0 ? late.secs / direct.secs : 0,
      late.first_object_s * 1e3, direct.first_object_s * 1e3,
      late.ok && direct.ok ? "" : "  (INCOMPLETE)");
  printf("loadavg after %s (2 shared cores; other engineers may be compiling)\n",
         LoadAvg().c_str());
  return ok && raw.ok && raw_shared.ok && direct.ok && late.ok ? 0 : 1;
}
