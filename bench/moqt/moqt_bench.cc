// MOQT publisher-to-subscriber goodput over QUIC loopback, against the raw QUIC stream goodput of
// the same transport measured in the same run:
//   - raw:   a QuicServer writes N bytes on one stream to a QuicClientSession (server -> client).
//   - moqt:  a MoqtServer publishes a live track of 64 KiB objects (64 per group, one subgroup
//            stream per group) produced as fast as possible on the server thread; a MoqtClient
//            subscribed with Next Object receives them (server -> client), N bytes in all.
//   - moqt 1 KiB objects: objects per second for small objects (1000 per group).
// The producer stays at most 32 MiB ahead of the subscriber (Flow) and the track retains twice
// that, as a live publisher's cache would; the raw run is back-pressured by its stream too.
// The server (publisher) runs on its own thread and io_context, the client (subscriber) on the
// main thread, like a real deployment's two processes on two cores. Both MOQT runs start the
// clock when SUBSCRIBE_OK arrives and stop it at the last object (End of Track). Thread CPU time
// is reported as seconds per GB (independent of machine load); goodput depends on the load, which
// is printed with the figures.
//
//   kvcs_moqt_bench [--mib N] [--small-objects N]
// Defaults: 256 MiB per goodput run, 100000 objects of 1 KiB; well under 30 s on 2 cores.
#include <atomic>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <string>

#include "bench/support/bench_util.h"
#include "bench/support/raw_quic_stream.h"
#include "common/asio.h"
#include "moqt_endpoint/moqt_endpoint.h"
#include "moqt_session/moqt_track_store.h"

namespace asio = boost::asio;
using namespace kvcs;
using namespace kvcs::moqt;
using namespace kvcs::bench;

namespace {

struct Run {
  double secs = 0;
  uint64_t bytes = 0;
  uint64_t objects = 0;
  double client_cpu = 0, server_cpu = 0;
  bool ok = false;
};

// The server side: its own thread and io_context (the raw QUIC baseline runs there too).
struct ServerThread : BenchThread {
  ~ServerThread() {
    Call([this] { moqt.reset(); });
  }
  TrackStore store;
  std::unique_ptr<MoqtServer> moqt;
};

Run RunRaw(ServerThread& srv, const std::string& cert, const std::string& key, uint64_t total) {
  RawStreamRun r = RunRawQuicStream(srv, cert, key, total);
  Run res;
  res.secs = r.secs;
  res.bytes = r.bytes;
  res.client_cpu = r.client_cpu;
  res.server_cpu = r.server_cpu;
  res.ok = r.ok;
  return res;
}

// ------------------------------------------------------------------------------ MOQT
// Producer back-pressure shared by the two threads: the producer stays at most kWindow bytes
// ahead of what the subscriber has received (like a live source that cannot outrun its audience
// by more than the cache), so the track keeps a bounded set of groups in memory instead of the
// whole run (256 MiB of fresh memory measured page faults, not MOQT).
struct Flow {
  // 32 MiB: 8 groups of 64 KiB objects; far above the ~2-3 MiB congestion window on loopback,
  // so the window never starves the connection.
  static constexpr uint64_t kWindow = 32 << 20;
  std::atomic<uint64_t> produced{0}, received{0};
  std::atomic<bool> paused{false};
  bool Ahead() const { return produced.load() - received.load() > kWindow; }
  bool Resumable() const { return produced.load() - received.load() <= kWindow / 2; }
};

struct Counter : SubscribeVisitor {
  void OnSubscribeOk(const SubscribeOkInfo&) override { ok = true; }
  void OnObject(const ReceivedObject& o) override {
    if (o.status != ObjectStatus::kNormal) return;
    ++objects;
    bytes += o.payload.size();
    if (flow) {
      flow->received.store(bytes);
      if (flow->paused.load() && flow->Resumable() && flow->paused.exchange(false)) resume();
    }
  }
  void OnComplete(const SubscriptionDone& d) override {
    done = true;
    ended = d.track_ended;
  }
  bool ok = false, done = false, ended = false;
  uint64_t objects = 0, bytes = 0;
  Flow* flow = nullptr;
  std::function<void()> resume;  // posts the producer's next step to the server thread
};

// Produces `groups` x `per_group` objects of `size` bytes on the server thread, a batch per
// event-loop turn so the sessions send while it produces.
struct Producer {
  ServerThread* srv;
  std::shared_ptr<Track> track;
  uint64_t groups, per_group;
  // One immutable buffer per Object ID of a group (byte 0 = the ID), made before the clock:
  // the producer publishes objects it already holds (Track::AppendObject(shared_ptr), no copy),
  // so the run measures MOQT and QUIC, not payload generation (the raw run does not generate).
  std::vector<std::shared_ptr<const Bytes>> payloads;
  uint64_t g = 0, o = 0;
  size_t batch;
  Flow* flow;
  void Step() {
    for (size_t i = 0; i < batch && g < groups; ++i) {
      if (flow->Ahead()) {
        // Pause; the subscriber's thread resumes us. Re-check after publishing the pause so a
        // wakeup between the check and the store is not lost.
        flow->paused.store(true);
        if (!(flow->Resumable() && flow->paused.exchange(false))) return;
      }
      if (o == 0) (void)track->StartGroup(g);
      (void)track->AppendObject(payloads[o]);
      flow->produced.fetch_add(payloads[o]->size());
      if (++o == per_group) {
        (void)track->EndGroup();
        o = 0;
        ++g;
      }
    }
    if (g == groups) {
      (void)track->EndTrack();
      return;
    }
    asio::post(srv->io, [this] { Step(); });
  }
};

std::vector<std::shared_ptr<const Bytes>> MakePayloads(size_t size, uint64_t n) {
  std::vector<std::shared_ptr<const Bytes>> v;
  for (uint64_t i = 0; i < n; ++i) {
    Bytes b(size, 0xa5);
    b[0] = static_cast<uint8_t>(i);
    v.push_back(std::make_shared<const Bytes>(std::move(b)));
  }
  return v;
}

Run RunMoqt(ServerThread& srv, const std::string& cert, const std::string& key, size_t size,
            uint64_t groups, uint64_t per_group, const std::string& name) {
  Run res;
  FullTrackName tn{{"bench"}, name};
  std::shared_ptr<Track> track;
  srv.Call([&] {
    MoqtServerConfig cfg;
    cfg.quic.cert_file = cert;
    cfg.quic.key_file = key;
    auto s = MoqtServer::Create(srv.io, cfg, &srv.store);
    if (s.ok()) srv.moqt = std::move(*s);
    TrackOptions to;
    // Retains twice the producer's window (Flow): no group is evicted before it is received.
    to.max_groups = 2 * (Flow::kWindow / (size * per_group) + 1) + 2;
    to.max_bytes = uint64_t{4} << 30;
    auto t = srv.store.CreateTrack(tn, to);
    if (t.ok()) track = *t;
  });
  if (!srv.moqt || !track) return res;
  asio::io_context io;
  MoqtClientConfig cc;
  cc.quic.port = srv.moqt->port();
  cc.quic.insecure = true;
  auto c = MoqtClient::Connect(io, cc, nullptr);
  if (!c.ok() ||
      !RunUntil(
          io, [&] { return (*c)->setup_complete() || (*c)->closed(); }, 10) ||
      !(*c)->setup_complete()) {
    fprintf(stderr, "moqt connect failed\n");
    return res;
  }
  Flow flow;
  auto counter = std::make_shared<Counter>();
  counter->flow = &flow;
  if (!(*c)->session().Subscribe(tn, {}, counter).ok()) return res;
  if (!RunUntil(
          io, [&] { return counter->ok || counter->done; }, 10) ||
      !counter->ok)
    return res;
  Producer prod{&srv,
                track,
                groups,
                per_group,
                MakePayloads(size, per_group),
                0,
                0,
                std::max<size_t>(1, (512 << 10) / size),
                &flow};
  counter->resume = [&srv, &prod] { asio::post(srv.io, [&prod] { prod.Step(); }); };
  double cpu0 = ThreadCpu(), scpu0 = srv.cpu(), t0 = Now();
  asio::post(srv.io, [&prod] { prod.Step(); });
  res.ok = RunUntil(
               io, [&] { return counter->done || (*c)->closed(); }, 120) &&
           counter->done;
  res.secs = Now() - t0;
  res.client_cpu = ThreadCpu() - cpu0;
  res.server_cpu = srv.cpu() - scpu0;
  res.bytes = counter->bytes;
  res.objects = counter->objects;
  res.ok = res.ok && counter->ended && counter->objects == groups * per_group;
  if (!res.ok) {
    fprintf(stderr, "moqt run incomplete: %llu of %llu objects\n",
            static_cast<unsigned long long>(counter->objects),
            static_cast<unsigned long long>(groups * per_group));
  }
  c->reset();
  srv.Call([&] {
    srv.moqt.reset();
    srv.store.RemoveTrack(tn);
  });
  return res;
}

void Print(const char* what, const Run& r) {
  double mbps = r.bytes / r.secs / 1e6;
  double gb = r.bytes / 1e9;
  printf("%-34s %8.1f MB/s  %9.0f obj/s  %6.2f s  cpu s/GB: sub %.2f pub %.2f%s\n", what, mbps,
         r.objects ? r.objects / r.secs : 0.0, r.secs, gb > 0 ? r.client_cpu / gb : 0,
         gb > 0 ? r.server_cpu / gb : 0, r.ok ? "" : "  (INCOMPLETE)");
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t mib = 256, small = 100000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--mib")) mib = std::stoull(argv[i + 1]);
    if (!strcmp(argv[i], "--small-objects")) small = std::stoull(argv[i + 1]);
  }
  TempCert tc("kvcs_moqt_bench");
  if (!tc.ok) return 1;
  const std::string& cert = tc.cert;
  const std::string& key = tc.key;

  printf("kvcs_moqt_bench: %llu MiB per goodput run, %llu x 1 KiB objects; loadavg before %s\n",
         static_cast<unsigned long long>(mib), static_cast<unsigned long long>(small),
         LoadAvg().c_str());
  uint64_t total = mib << 20;
  constexpr size_t kBig = 64 << 10;
  // 64 objects (4 MiB) per group, one subgroup stream per group.
  constexpr uint64_t kBigPerGroup = 64;
  uint64_t big_groups = std::max<uint64_t>(1, total / (kBig * kBigPerGroup));
  constexpr uint64_t kSmallPerGroup = 1000;
  uint64_t small_groups = std::max<uint64_t>(1, small / kSmallPerGroup);
  Run raw, big, tiny;
  {
    ServerThread srv;
    raw = RunRaw(srv, cert, key, big_groups * kBigPerGroup * kBig);
    big = RunMoqt(srv, cert, key, kBig, big_groups, kBigPerGroup, "big");
    tiny = RunMoqt(srv, cert, key, 1024, small_groups, kSmallPerGroup, "small");
  }
  Print("raw QUIC stream (baseline)", raw);
  Print("MOQT 64 KiB objects", big);
  Print("MOQT 1 KiB objects", tiny);
  double rb = raw.bytes / raw.secs, bb = big.bytes / big.secs, tb = tiny.bytes / tiny.secs;
  printf("ratio MOQT 64 KiB / raw QUIC goodput: %.2f (aim >= 0.8)\n", bb / rb);
  printf("ratio MOQT 1 KiB / raw QUIC goodput:  %.2f (%.0f objects/s)\n", tb / rb,
         tiny.objects / tiny.secs);
  printf("loadavg after %s (2 shared cores; other engineers may be compiling)\n",
         LoadAvg().c_str());
  return raw.ok && big.ok && tiny.ok ? 0 : 1;
}
