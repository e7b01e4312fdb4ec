// KVCS verified delivery per consumer core through the relay, against SHA-256 alone and the raw
// MOQT rate of the same transport, in the same run (issue 13, bench):
//   - sha256:   one thread hashes the Data of every object (what §5.4 verification must hash).
//   - moqt raw: a MoqtClient subscribes k.raw.s0 and v.raw.s0 of a completed publication (fill
//               from 0:0) and only counts the payloads.
//   - kvcs:     a Retrieval (kLive, fill from 0:0) of the same publication: every object checked
//               by §3.5 and against the manifest's digests, each layer handed over verified; once
//               with everything on the receive thread, once with the hashing on one worker
//               thread (RetrievalOptions::verify_threads).
// The publisher (a Llama-3.1-8B-shaped cache: 32 layers, 8 KV heads x 128, bf16, 16-token blocks,
// 64 KiB of K+V per block and layer) runs on its own thread and PUBLISH_NAMESPACEs to an
// in-process relay on a third thread (`--direct`: it serves the consumer itself); the consumer
// runs on the main thread. Rates per consumer core = Data bytes / consumer CPU seconds: the
// receive thread's, and (kvcs with a worker) every consumer thread's together (the process's
// CPU less the publisher's and the relay's threads). Independent of the machine's load, which is
// printed; goodput = Data bytes / wall seconds.
//
// Pipelining (after the rates): a second publication of the same cache produced live, one layer
// every `--layer-ms` with a manifest version after every layer, and a live Retrieval (joined before
// production) through the relay; per layer, the time from the producer finishing it (its last
// block published) to the consumer holding it verified, against one layer's transfer time (its
// bytes at that goodput). The aim: every layer within one transfer time. The publisher's thread
// both produces and sends, so the default pace is twice the largest of one layer's transfer time,
// that thread's own CPU per layer (publishing, measured on the first publication, plus sending,
// the raw run's) and every thread's CPU per layer over the cores (publishing plus the verified
// run with a worker): a faster pace saturates the thread or the machine, production drifts late
// and nothing is sent meanwhile. Each block is published by its own handler, so the thread sends
// between blocks and a layer's objects leave while it is produced; `--whole-layers` publishes each
// layer by one PublishLayer call instead, during which (~2 times the SHA-256 of the layer here)
// none of it is sent.
//
// --no-pipelining skips the pipelining part; --phase-times prints, per run, where its wall time
// went: the session's setup, the wait for the first object (raw) or layer (kvcs), the data, and
// the tail from the last object or layer to completion.
//
//   kvcs_stream_bench [--blocks N] [--direct] [--layer-ms N] [--whole-layers] [--no-pipelining]
//                     [--phase-times]
//                     (default 64 blocks = 1024 tokens = 128 MiB)
#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "bench/support/bench_util.h"
#include "common/asio.h"
#include "common/crypto.h"
#include "kvcs_stream/publisher.h"
#include "kvcs_stream/retrieval.h"
#include "moqt_endpoint/moqt_endpoint.h"
#include "quic/tls.h"
#include "relay/relay_server.h"

namespace asio = boost::asio;
using namespace kvcs;
using namespace kvcs::bench;

namespace {

uint64_t NowMs() { return static_cast<uint64_t>(Now() * 1e3); }

double ProcessCpu() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

struct Run {
  double secs = 0, cpu = 0, server_cpu = 0;
  double process_cpu = 0;  // every thread's: publisher, relay, consumer
  double all_cpu = 0;      // every consumer thread (receive + workers); 0: only the receive thread
  uint64_t bytes = 0;
  bool ok = false;
  // --phase-times: seconds from the start of the run (after setup) to the first and the last
  // object or layer, and the setup itself.
  double setup_s = 0, first_s = 0, last_s = 0;
  double per_core() const { return cpu > 0 ? bytes / cpu / 1e6 : 0.0; }
  double per_all() const { return all_cpu > 0 ? bytes / all_cpu / 1e6 : per_core(); }
};

void Print(const char* what, const Run& r) {
  printf(
      "%-34s %7.1f MB/s per receive core  %7.1f MB/s per consumer core  %7.1f MB/s goodput  "
      "%6.3f s  cpu %.3f s%s\n",
      what, r.per_core(), r.per_all(), r.secs > 0 ? r.bytes / r.secs / 1e6 : 0.0, r.secs,
      r.all_cpu > 0 ? r.all_cpu : r.cpu, r.ok ? "" : "  (INCOMPLETE)");
}

void PrintPhases(const char* what, const Run& r) {
  printf("phases %-34s setup %7.1f ms  first %7.1f ms  data %8.1f ms  tail %7.1f ms\n", what,
         r.setup_s * 1e3, r.first_s * 1e3, (r.last_s - r.first_s) * 1e3, (r.secs - r.last_s) * 1e3);
}

class ServerThread {
 public:
  ServerThread() : work_(io.get_executor()) {
    th_ = std::thread([this] { io.run(); });
    pthread_getcpuclockid(th_.native_handle(), &cpu_clock_);
  }
  ~ServerThread() {
    Call([this] {
      announcer.reset();
      server.reset();
      relay.reset();
    });
    work_.reset();
    th_.join();
  }
  template <typename F>
  void Call(F fn) {
    std::promise<void> p;
    asio::post(io, [&] {
      fn();
      p.set_value();
    });
    p.get_future().wait();
  }
  double cpu() const { return ThreadCpuOf(cpu_clock_); }

  asio::io_context io;
  moqt::TrackStore store;
  std::unique_ptr<stream::Publisher> pub;
  std::unique_ptr<moqt::MoqtServer> server;
  std::unique_ptr<relay::RelayServer> relay;    // on the relay thread
  std::unique_ptr<moqt::MoqtClient> announcer;  // the publisher's session to the relay

 private:
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::thread th_;
  clockid_t cpu_clock_{};
};

// Counts the payload bytes of one subscribed track.
struct Counter : moqt::SubscribeVisitor {
  uint64_t bytes = 0, objects = 0;
  bool done = false;
  double first = 0, last = 0;  // Now() at the first and the last object
  void OnObject(const moqt::ReceivedObject& o) override {
    if (o.status != moqt::ObjectStatus::kNormal) return;
    bytes += o.payload.size();
    ++objects;
    last = Now();
    if (first == 0) first = last;
  }
  void OnComplete(const moqt::SubscriptionDone&) override { done = true; }
};

std::unique_ptr<moqt::MoqtClient> Connect(asio::io_context& io, uint16_t port) {
  moqt::MoqtClientConfig cc;
  cc.quic.port = port;
  cc.quic.insecure = true;
  auto c = moqt::MoqtClient::Connect(io, cc, nullptr);
  if (!c.ok() ||
      !RunUntil(
          io, [&] { return (*c)->setup_complete() || (*c)->closed(); }, 10) ||
      !(*c)->setup_complete()) {
    fprintf(stderr, "connect failed\n");
    return nullptr;
  }
  return std::move(*c);
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t blocks = 64;
  bool direct = false, pipelining = true, phase_times = false, whole_layers = false;
  double layer_ms = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--no-pipelining")) pipelining = false;
    if (!strcmp(argv[i], "--phase-times")) phase_times = true;
    if (!strcmp(argv[i], "--layer-ms") && i + 1 < argc) layer_ms = std::stod(argv[++i]);
    if (!strcmp(argv[i], "--blocks") && i + 1 < argc) blocks = std::stoull(argv[++i]);
    if (!strcmp(argv[i], "--direct")) direct = true;
    if (!strcmp(argv[i], "--whole-layers")) whole_layers = true;
  }
  auto pem = quic::GenerateSelfSignedCert("localhost");
  if (!pem.ok()) return 1;
  auto dir =
      std::filesystem::temp_directory_path() / ("kvcs_stream_bench_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string cert = (dir / "cert.pem").string(), key = (dir / "key.pem").string();
  std::ofstream(cert) << pem->cert_pem;
  std::ofstream(key) << pem->key_pem;

  kvsp::Descriptor d;
  d.model = "meta-llama/Llama-3.1-8B-Instruct";
  d.model_rev = "r";
  d.tokenizer_rev = "t";
  d.attn = "gqa";
  d.layers = 32;
  d.kv_heads = 8;
  d.head_dim = 128;
  d.kv_dtype = "bf16";
  d.block_tokens = 16;
  d.layout = "thd";
  kvsp::ScopeKey scope{};
  scope[0] = 1;
  std::vector<uint32_t> tokens(blocks * d.block_tokens);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<uint32_t>(i * 7 + 3);
  const uint64_t section = uint64_t{d.block_tokens} * d.kv_heads * d.head_dim * 2;
  Bytes layer_k(blocks * section), layer_v(blocks * section);
  uint32_t x = 12345;
  for (auto* b : {&layer_k, &layer_v}) {
    for (auto& c : *b) {
      x ^= x << 13, x ^= x >> 17, x ^= x << 5;
      c = static_cast<uint8_t>(x);
    }
  }

  ServerThread srv, rel;
  bool ok = true;
  double publish_cpu = 0;  // the first publication's, on the publisher's thread
  srv.Call([&] {
    stream::PublisherConfig pc;
    pc.descriptor = d;
    pc.scope_key = scope;
    pc.max_track_bytes = uint64_t{4} << 30;
    auto p = stream::Publisher::Create(&srv.store, pc, tokens);
    ok = p.ok();
    if (!ok) return;
    srv.pub = std::move(*p);
    const double c0 = ThreadCpu();
    for (uint32_t l = 0; l < d.layers && ok; ++l)
      ok = srv.pub->PublishLayer(l, layer_k, layer_v).ok();
    publish_cpu = ThreadCpu() - c0;
    if (!direct) return;
    moqt::MoqtServerConfig cfg;
    cfg.quic.cert_file = cert;
    cfg.quic.key_file = key;
    auto s = moqt::MoqtServer::Create(srv.io, cfg, &srv.store);
    ok = ok && s.ok();
    if (s.ok()) srv.server = std::move(*s);
  });
  if (!ok) {
    fprintf(stderr, "publishing failed\n");
    return 1;
  }
  uint16_t port = direct ? srv.server->port() : 0;
  if (!direct) {
    // The relay on its own thread; the publisher announces its publication there.
    rel.Call([&] {
      relay::RelayServerConfig rc;
      rc.cert_file = cert;
      rc.key_file = key;
      rc.relay.cache_bytes = uint64_t{4} << 30;
      auto r = relay::RelayServer::Start(rel.io, rc);
      ok = r.ok();
      if (ok) rel.relay = std::move(*r);
    });
    if (!ok) return 1;
    port = rel.relay->port();
    std::promise<bool> accepted;
    srv.Call([&] {
      moqt::MoqtClientConfig cc;
      cc.quic.port = port;
      cc.quic.insecure = true;
      auto c = moqt::MoqtClient::Connect(srv.io, cc, nullptr, &srv.store);
      if (c.ok()) srv.announcer = std::move(*c);
    });
    if (!srv.announcer) return 1;
    // SETUP, then PUBLISH_NAMESPACE, on the publisher's thread.
    for (int i = 0; i < 1000; ++i) {
      bool up = false;
      srv.Call([&] { up = srv.announcer && srv.announcer->setup_complete(); });
      if (up) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    srv.Call([&] {
      auto id = srv.announcer->session().PublishNamespace(
          srv.pub->track_namespace(),
          [&](const std::optional<moqt::RequestError>& e) { accepted.set_value(!e); });
      if (!id.ok()) accepted.set_value(false);
    });
    auto f = accepted.get_future();
    if (f.wait_for(std::chrono::seconds(10)) != std::future_status::ready || !f.get()) {
      fprintf(stderr, "the relay did not accept the publication\n");
      return 1;
    }
  }
  const uint64_t data_bytes = 2 * section * blocks * d.layers;
  printf("cache: %llu blocks x %u layers, %.1f MiB of K+V Data, %s; load %s\n",
         static_cast<unsigned long long>(blocks), d.layers, data_bytes / 1048576.0,
         direct ? "served by the publisher" : "through the relay", LoadAvg().c_str());

  // SHA-256 alone, over the same Data sizes (one section per object).
  Run sha;
  uint8_t sink = 0;
  {
    double c0 = ThreadCpu(), t0 = Now();
    Digest acc{};
    for (uint32_t l = 0; l < d.layers; ++l) {
      for (uint64_t b = 0; b < blocks; ++b) {
        for (const Bytes* s : {&layer_k, &layer_v}) {
          Digest h = Sha256::Hash(ByteSpan(s->data() + b * section, section));
          acc[0] ^= h[0];
        }
      }
    }
    sha.secs = Now() - t0;
    sha.cpu = ThreadCpu() - c0;
    sha.bytes = data_bytes;
    sha.ok = true;
    sink = acc[0];
  }

  const moqt::TrackNamespace ns = srv.pub->track_namespace();
  const profile::Namespace pns = srv.pub->ns();
  // Raw MOQT: the two data tracks, counted only.
  Run raw;
  {
    asio::io_context io;
    const double setup0 = Now();
    auto c = Connect(io, port);
    if (!c) return 1;
    raw.setup_s = Now() - setup0;
    auto k = std::make_shared<Counter>(), v = std::make_shared<Counter>();
    moqt::SubscribeOptions o;
    o.filter = {moqt::LocationFilterType::kNextObject};
    o.fill = moqt::LocationFilter{moqt::LocationFilterType::kAbsoluteStart, 0, 0};
    double c0 = ThreadCpu(), s0 = srv.cpu(), t0 = Now();
    bool sub = c->session().Subscribe({ns, "k.raw.s0"}, o, k).ok() &&
               c->session().Subscribe({ns, "v.raw.s0"}, o, v).ok();
    const uint64_t want = blocks * d.layers;
    raw.ok = sub && RunUntil(
                        io, [&] { return k->objects >= want && v->objects >= want; }, 120);
    raw.secs = Now() - t0;
    raw.cpu = ThreadCpu() - c0;
    raw.server_cpu = srv.cpu() - s0;
    raw.bytes = k->bytes + v->bytes;  // 68-byte headers included
    raw.first_s = std::min(k->first, v->first) - t0;
    raw.last_s = std::max(k->last, v->last) - t0;
  }
  // KVCS: verified delivery, with `threads` hashing workers (0: all on the receive thread).
  auto verified = [&](uint32_t threads) {
    Run run;
    asio::io_context io;
    const double setup0 = Now();
    auto c = Connect(io, port);
    if (!c) return run;
    run.setup_s = Now() - setup0;
    stream::RetrievalOptions o;
    o.verifier.identity = *stream::CacheIdentity::Compute(d, scope, tokens);
    o.verifier.publication = pns;
    o.verifier.require_signature = false;
    o.compute_ns_per_token_layer = 100'000'000;
    o.verify_threads = threads;
    o.post = [&io](std::function<void()> fn) { asio::post(io, std::move(fn)); };
    uint64_t delivered = 0;
    bool done = false, all = false;
    double first_layer = 0, last_layer = 0;
    double c0 = ThreadCpu(), p0 = ProcessCpu(), s0 = srv.cpu(), r0 = rel.cpu(), t0 = Now();
    auto r = stream::Retrieval::Start(
        &c->session(), o,
        [&](const stream::VerifiedLayer& l) {
          for (size_t i = 0; i < l.k.size(); ++i) delivered += l.k[i].size() + l.v[i].size();
          last_layer = Now();
          if (first_layer == 0) first_layer = last_layer;
        },
        [&](const stream::RetrievalReport& rep) {
          done = true;
          all = rep.all_retrieved();
        },
        NowMs);
    run.ok = r.ok() &&
             RunUntil(
                 io, [&] { return done; }, 120) &&
             all;
    run.secs = Now() - t0;
    run.cpu = ThreadCpu() - c0;
    run.server_cpu = srv.cpu() - s0;
    run.process_cpu = ProcessCpu() - p0;
    if (threads > 0) run.all_cpu = run.process_cpu - run.server_cpu - (rel.cpu() - r0);
    run.bytes = delivered;
    run.first_s = first_layer > 0 ? first_layer - t0 : 0;
    run.last_s = last_layer > 0 ? last_layer - t0 : 0;
    return run;
  };
  Run kvcs = verified(0);
  Run kvcs_worker = verified(1);
  if (sink == 0x5a) printf(" ");  // keeps the hashing
  Print("sha256 alone", sha);
  Print("moqt raw (k+v tracks)", raw);
  Print("kvcs verified (receive thread)", kvcs);
  Print("kvcs verified (1 hashing worker)", kvcs_worker);
  const double s = sha.per_core(), m = raw.per_core();
  printf("verified / sha256 per core: receive thread %.2f, worker: receive %.2f all %.2f\n",
         kvcs.per_core() / s, kvcs_worker.per_core() / s, kvcs_worker.per_all() / s);
  printf("verified / raw moqt per core: receive thread %.2f, worker: receive %.2f all %.2f\n",
         kvcs.per_core() / m, kvcs_worker.per_core() / m, kvcs_worker.per_all() / m);
  printf("bound for one core doing both: 1/(1/sha + 1/raw) = %.1f MB/s (%.2f of sha256)\n",
         1 / (1 / s + 1 / m), 1 / (1 / s + 1 / m) / s);
  if (phase_times) {
    PrintPhases("moqt raw (k+v tracks)", raw);
    PrintPhases("kvcs verified (receive thread)", kvcs);
    PrintPhases("kvcs verified (1 hashing worker)", kvcs_worker);
  }
  // Pipelining: a live production through the relay, a consumer joined before it starts.
  bool piped = !pipelining;
  if (pipelining) {
    const double layer_bytes = 2.0 * section * blocks;
    const double goodput = raw.secs > 0 ? raw.bytes / raw.secs : 0;
    const double transfer_ms = goodput > 0 ? layer_bytes / goodput * 1e3 : 0;
    // The publisher's thread both produces and serves (or feeds the relay): per layer it spends
    // the publishing CPU (encoding, hashing, the store) and the sending CPU. A pace under their
    // sum saturates it: production drifts late and nothing is sent meanwhile, which measures the
    // thread's overload, not pipelining. The default leaves it half idle.
    const double thread_ms = (publish_cpu + raw.server_cpu) / d.layers * 1e3;
    // And every thread together (publishing, relaying, receiving, hashing) shares the cores.
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    const double cores_ms = (publish_cpu + kvcs_worker.process_cpu) / d.layers * 1e3 / cores;
    const double pace_ms =
        layer_ms > 0 ? layer_ms : 2 * std::max({transfer_ms, thread_ms, cores_ms});
    moqt::TrackStore* store = &srv.store;
    std::unique_ptr<stream::Publisher> live;
    std::vector<double> finished(d.layers, -1), ready(d.layers, -1);
    srv.Call([&] {
      stream::PublisherConfig pc;
      pc.descriptor = d;
      pc.scope_key = scope;
      pc.manifest_every_layers = 1;
      pc.max_track_bytes = uint64_t{4} << 30;
      auto p = stream::Publisher::Create(store, pc, tokens);
      if (p.ok()) live = std::move(*p);
    });
    bool announced = direct;
    if (live && !direct) {
      std::promise<bool> acc;
      srv.Call([&] {
        auto id = srv.announcer->session().PublishNamespace(
            live->track_namespace(),
            [&](const std::optional<moqt::RequestError>& e) { acc.set_value(!e); });
        if (!id.ok()) acc.set_value(false);
      });
      auto f = acc.get_future();
      announced = f.wait_for(std::chrono::seconds(10)) == std::future_status::ready && f.get();
    }
    asio::io_context io;
    auto c = announced ? Connect(io, port) : nullptr;
    std::unique_ptr<stream::Retrieval> r;
    bool done = false, all = false;
    if (c) {
      stream::RetrievalOptions o;
      o.verifier.identity = *stream::CacheIdentity::Compute(d, scope, tokens);
      o.verifier.publication = live->ns();
      o.verifier.require_signature = false;
      o.compute_ns_per_token_layer = 100'000'000;
      o.verify_threads = 1;
      o.post = [&io](std::function<void()> fn) { asio::post(io, std::move(fn)); };
      auto rr = stream::Retrieval::Start(
          &c->session(), o, [&](const stream::VerifiedLayer& l) { ready[l.layer] = Now(); },
          [&](const stream::RetrievalReport& rep) {
            done = true;
            all = rep.all_retrieved();
          },
          NowMs);
      if (rr.ok()) r = std::move(*rr);
    }
    if (r) {
      // Let the subscriptions reach the publisher before production starts.
      RunUntil(
          io, [] { return false; }, 0.3);
      // Production on the publisher's thread, one layer per pace_ms from t0. Block by block, each
      // its own handler, so that the thread sends (and reads ACKs) between blocks and a layer's
      // objects leave while it is produced (--whole-layers: one PublishLayer per layer, during
      // which nothing of it is sent); finished = its last block published.
      auto timer = std::make_shared<asio::steady_timer>(srv.io);
      const auto t0 = std::chrono::steady_clock::now();
      const uint64_t kb = section;  // K (or V) bytes per block
      std::function<void(uint32_t, uint64_t)> produce = [&, timer, t0, kb](uint32_t l, uint64_t b) {
        if (whole_layers) {
          if (!live->PublishLayer(l, layer_k, layer_v).ok()) return;
          b = blocks - 1;
        } else if (!live->PublishBlock(l, b, ByteSpan(layer_k).subspan(b * kb, kb),
                                       ByteSpan(layer_v).subspan(b * kb, kb))
                        .ok()) {
          return;
        }
        if (b + 1 < blocks) {
          asio::post(srv.io, [&, l, b] { produce(l, b + 1); });
          return;
        }
        finished[l] = Now();
        if (l + 1 == d.layers) return;
        timer->expires_at(t0 +
                          std::chrono::microseconds(static_cast<int64_t>(pace_ms * 1e3 * (l + 1))));
        timer->async_wait([&, l](const boost::system::error_code& ec) {
          if (!ec) produce(l + 1, 0);
        });
      };
      srv.Call([&] { produce(0, 0); });
      RunUntil(
          io, [&] { return done; }, 120);
      srv.Call([&] { timer->cancel(); });
    }
    printf(
        "\npipelining through %s: one layer (%.1f MiB) every %.1f ms, %s; one layer's "
        "transfer at the raw goodput (%.1f MB/s): %.1f ms; the publisher's thread per layer: "
        "%.1f ms publishing + %.1f ms sending; all threads per layer per core: %.1f ms\n",
        direct ? "the publisher's server" : "the relay", layer_bytes / 1048576.0, pace_ms,
        whole_layers ? "one PublishLayer each" : "block by block", goodput / 1e6, transfer_ms,
        publish_cpu / d.layers * 1e3, raw.server_cpu / d.layers * 1e3, cores_ms);
    printf("%6s %12s %12s %12s %s\n", "layer", "finished ms", "ready ms", "lag ms",
           "lag / transfer");
    int within = 0;
    double worst = 0;
    for (uint32_t l = 0; l < d.layers; ++l) {
      const double base = finished[0];
      const double lag = (ready[l] - finished[l]) * 1e3;
      const bool ok = finished[l] > 0 && ready[l] > 0 && lag <= transfer_ms;
      within += ok;
      worst = std::max(worst, lag);
      printf("%6u %12.1f %12.1f %12.1f %8.2f%s\n", l, (finished[l] - base) * 1e3,
             (ready[l] - base) * 1e3, lag, transfer_ms > 0 ? lag / transfer_ms : 0.0,
             ok ? "" : "  > one transfer");
    }
    printf(
        "layers ready within one layer's transfer time of being produced: %d/%u (worst lag "
        "%.1f ms = %.2f transfers)%s\n",
        within, d.layers, worst, transfer_ms > 0 ? worst / transfer_ms : 0.0,
        done && all ? "" : "  (RETRIEVAL INCOMPLETE)");
    piped = done && all;
    srv.Call([&] { live.reset(); });
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return raw.ok && kvcs.ok && kvcs_worker.ok && piped ? 0 : 1;
}
