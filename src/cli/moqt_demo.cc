// The MOQT part of `kvcs demo`: see moqt_demo.h.
#include "cli/moqt_demo.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli/dev_cert.h"
#include "common/asio.h"
#include "kvcs_stream/publisher.h"
#include "kvcs_stream/recovery.h"
#include "kvcs_stream/retrieval.h"
#include "kvsp_http/holder_client.h"
#include "kvsp_http/http_holder_source.h"
#include "moqt_endpoint/moqt_endpoint.h"
#include "objcache/client.h"
#include "objcache/served_store.h"
#include "profile/cose.h"
#include "relay/relay_server.h"
#include "store/local_store.h"

namespace kvcs::cli {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
constexpr auto kTick = std::chrono::milliseconds(2);

struct Consumer {
  std::string name;
  uint32_t joined_after = 0;  // layers published when it connected
  std::unique_ptr<moqt::MoqtClient> client;
  std::unique_ptr<stream::Retrieval> retrieval;
  std::unique_ptr<stream::Recovery> recovery;  // consumer C: through the corrupting relay
  std::vector<double> ready_ms;                // per layer, since production start; < 0: not yet
  uint64_t bytes = 0, mismatches = 0;
  double start_ms = 0, done_ms = 0;
  std::optional<stream::RetrievalReport> report;
};

// The KVSP §8 holder of the leg with the corrupting relay: a LocalStore on a temporary directory
// behind the S3 server with the ObjectCache extensions (its /_kvsp/blocks endpoint), on its own
// thread, loaded with the published blocks by one aggregated PUT.
class DemoHolderStore {
 public:
  ~DemoHolderStore() {
    served_.reset();  // stops the server before its store goes
    store_.reset();
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  Status Start(const tensorio::KvCacheView& cache, const stream::CacheIdentity& id,
               uint64_t blocks) {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/kvcs-demo-holder-XXXXXX";
    if (!mkdtemp(tmpl.data())) return IoError("demo: cannot create a temporary directory");
    dir_ = tmpl;
    store::LocalStoreOptions so;
    so.sync = false;  // a throw-away demo store
    KVCS_ASSIGN_OR_RETURN(store_, store::LocalStore::Open(dir_, so));
    KVCS_ASSIGN_OR_RETURN(served_, objcache::ServedStore::Start(*store_, "", /*io_threads=*/1));
    std::vector<Bytes> containers;
    for (uint64_t b = 1; b <= blocks; ++b) {
      KVCS_ASSIGN_OR_RETURN(
          Bytes c, tensorio::EncodeBlockContainer(cache, b, id.compat_id, id.block_keys[b - 1],
                                                  kvsp::Codec::kRaw));
      containers.push_back(std::move(c));
    }
    return served_->PutBlocks(objcache::kDefaultKvBucket, id.scope_id, containers);
  }
  std::string url() const { return served_->url(); }

 private:
  std::string dir_;
  std::unique_ptr<store::LocalStore> store_;
  std::unique_ptr<objcache::ServedStore> served_;
};

class Demo : public moqt::MoqtSessionCallbacks {
 public:
  Demo(const tensorio::KvCacheView& cache, const kvsp::ScopeKey& scope, const MoqtDemoOptions& o,
       std::ostream& out)
      : cache_(cache), scope_(scope), o_(o), out_(out), tick_(io_), produce_(io_) {}

  Status Run() {
    const kvsp::Descriptor& d = cache_.descriptor;
    blocks_ = std::min<uint64_t>(o_.blocks, cache_.full_blocks());
    if (blocks_ == 0) return InvalidArgument("no full block to publish");
    tokens_.assign(cache_.token_ids.begin(), cache_.token_ids.begin() + blocks_ * d.block_tokens);
    KVCS_ASSIGN_OR_RETURN(DevCertFiles cert, WriteDevCertificate("kvcs-demo-moqt"));
    cert_dir_ = std::filesystem::path(cert.cert).parent_path();
    relay::RelayServerConfig rc;
    rc.cert_file = cert.cert;
    rc.key_file = cert.key;
    KVCS_ASSIGN_OR_RETURN(relay_, relay::RelayServer::Start(io_, rc));
    ca_ = cert.cert;
    key_ = cert.key;

    KVCS_ASSIGN_OR_RETURN(profile::SigningKey producer,
                          profile::SigningKey::Generate(profile::CoseAlg::kES256, Bytes{'d'}));
    KVCS_RETURN_IF_ERROR(keys_.Add(producer.Public()));
    stream::PublisherConfig pc;
    pc.descriptor = d;
    pc.scope_key = scope_;
    pc.producer_key = producer;
    pc.manifest_every_layers = 1;  // each layer handed over as soon as it is complete
    KVCS_ASSIGN_OR_RETURN(pub_, stream::Publisher::Create(&store_, pc, tokens_));
    KVCS_ASSIGN_OR_RETURN(identity_, stream::CacheIdentity::Compute(d, scope_, tokens_));
    KVCS_ASSIGN_OR_RETURN(publisher_, moqt::MoqtClient::Connect(io_, Config(), this, &store_));
    published_ms_.assign(d.layers, -1);

    out_ << "            relay moqt://127.0.0.1:" << relay_->port() << "/ (in-process, open); "
         << blocks_ << " blocks x " << d.layers << " layers, one layer every " << o_.layer_ms
         << " ms (modeled compute), signed manifest.cose after every layer\n"
         << "            namespace " << profile::ToString(pub_->ns()) << "\n";
    out_.flush();
    const auto give_up = Clock::now() + std::chrono::milliseconds(o_.timeout_ms);
    Tick();
    while (!finished_ && Clock::now() < give_up) io_.run_one_for(std::chrono::milliseconds(50));
    Status result = finished_ ? error_ : Internal("the MOQT part did not finish in time");
    Cleanup();
    if (!result.ok()) return result;
    Print();
    return Status::Ok();
  }

  // The publisher's session: announce, then produce.
  void OnSetupComplete(const moqt::SetupOptions&) override {
    auto id = publisher_->session().PublishNamespace(
        pub_->track_namespace(), [this](const std::optional<moqt::RequestError>& e) {
          if (e) return Finish(Internal("the relay refused PUBLISH_NAMESPACE: " + e->reason));
          t0_ = Clock::now();
          ProduceNext();
        });
    if (!id.ok()) Finish(id.status());
  }

 private:
  moqt::MoqtClientConfig Config() const {
    moqt::MoqtClientConfig c;
    c.quic.host = "127.0.0.1";
    c.quic.port = relay_->port();
    c.quic.server_name = "localhost";
    c.quic.ca_file = ca_;
    c.session.implementation = "kvcs-demo/0.1";
    return c;
  }
  double Ms() const {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0_).count();
  }

  void ProduceNext() {
    const kvsp::Descriptor& d = cache_.descriptor;
    const uint32_t l = pub_->next_layer();
    const uint64_t bytes = blocks_ * cache_.KSection(l, 1).size();
    const uint64_t vbytes = cache_.v[l].empty() ? 0 : blocks_ * cache_.VSection(l, 1).size();
    Status s = pub_->PublishLayer(l, cache_.k[l].subspan(0, bytes), cache_.v[l].subspan(0, vbytes));
    if (!s.ok()) return Finish(s);
    published_ms_[l] = Ms();
    if (l + 1 == d.layers / 2) Join("A (joins mid-production)", l + 1);
    if (l + 1 == d.layers) {
      Join("B (joins after the end)", l + 1);
      return;
    }
    // The modeled compute of the next layer: the pace is one layer per layer_ms from the start.
    produce_.expires_at(t0_ + std::chrono::milliseconds(o_.layer_ms * (l + 2)));
    produce_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec && !finished_) ProduceNext();
    });
  }

  void Join(const std::string& name, uint32_t after) {
    auto c = std::make_unique<Consumer>();
    c->name = name;
    c->joined_after = after;
    c->ready_ms.assign(cache_.descriptor.layers, -1);
    c->start_ms = Ms();
    auto cl = moqt::MoqtClient::Connect(io_, Config(), nullptr);
    if (!cl.ok()) return Finish(cl.status());
    c->client = std::move(*cl);
    consumers_.push_back(std::move(c));
  }

  void StartRetrieval(Consumer& c) {
    stream::RetrievalOptions o;
    // Per segment by the manifest: A's is still produced (joined live), B's complete (FETCHed).
    o.mode = stream::RetrievalMode::kAuto;
    o.verifier.identity = identity_;
    o.verifier.publication = pub_->ns();
    o.verifier.keys = &keys_;
    o.verifier.require_signature = true;
    o.min_deadline_ms = o_.timeout_ms;
    Consumer* cp = &c;
    auto r = stream::Retrieval::Start(
        &c.client->session(), o, [this, cp](const stream::VerifiedLayer& l) { Check(*cp, l); },
        [this, cp](const stream::RetrievalReport& rep) {
          cp->report = rep;
          cp->done_ms = Ms();
        },
        EpochMs);
    if (!r.ok()) return Finish(r.status());
    c.retrieval = std::move(*r);
  }

  // Consumer C's leg: a second relay hop that serves relay 1's copy of the publication with one
  // bit flipped in one object, and the store as a KVSP §8 holder.
  Status StartCorruptLeg() {
    const kvsp::Descriptor& d = cache_.descriptor;
    holder_ = std::make_unique<DemoHolderStore>();
    KVCS_RETURN_IF_ERROR(holder_->Start(cache_, identity_, blocks_));
    const moqt::TrackNamespace ns = pub_->track_namespace();
    c_blocks_ = std::min<uint64_t>(4, blocks_);
    bad_layer_ = d.layers / 3;
    bad_block_ = c_blocks_ / 2;
    bad_track_ = "k.raw.s0";
    const std::vector<std::string> names = {std::string(profile::kManifestCoseTrack), bad_track_,
                                            "v.raw.s0"};
    for (const std::string& name : names) {
      auto src = relay_->relay().FindTrack({ns, name});
      if (src == nullptr) return Internal("relay 1 holds no " + name);
      moqt::TrackOptions to = src->options();
      to.budget = nullptr;  // the copy is not in relay 1's cache budget
      to.keep_whole = false;
      KVCS_ASSIGN_OR_RETURN(auto dst, corrupt_store_.CreateTrack({ns, name}, std::move(to)));
      for (auto g = src->NextGroup(std::nullopt, moqt::GroupOrder::kAscending); g;
           g = src->NextGroup(*g, moqt::GroupOrder::kAscending)) {
        for (const moqt::PublishedObject* o = src->NextInGroup(*g, 0); o != nullptr;
             o = src->NextInGroup(*g, o->location.object + 1)) {
          moqt::PublishedObject c = *o;
          if (name == bad_track_ && o->location == moqt::Location{bad_layer_, bad_block_} &&
              c.payload && c.payload->size() > profile::kObjectHeaderSize) {
            Bytes flipped = *c.payload;
            flipped[profile::kObjectHeaderSize + flipped.size() / 3] ^= 0x01;  // one Data bit
            c.payload = std::make_shared<const Bytes>(std::move(flipped));
          }
          KVCS_RETURN_IF_ERROR(dst->AddObject(std::move(c)));
        }
      }
    }
    moqt::MoqtServerConfig sc;
    sc.quic.host = "127.0.0.1";
    sc.quic.cert_file = ca_;
    sc.quic.key_file = key_;
    KVCS_ASSIGN_OR_RETURN(corrupt_server_, moqt::MoqtServer::Create(io_, sc, &corrupt_store_));
    KVCS_ASSIGN_OR_RETURN(auto hc, kvsp_http::HolderClient::Create(holder_->url(), {}));
    http_holder_ = std::make_unique<kvsp_http::HttpHolderSource>(
        std::move(hc), [this](std::function<void()> fn) { asio::post(io_, std::move(fn)); });
    auto c = std::make_unique<Consumer>();
    c->name = "C (through a corrupting relay)";
    c->joined_after = d.layers;
    c->ready_ms.assign(d.layers, -1);
    c->start_ms = Ms();
    moqt::MoqtClientConfig cc = Config();
    cc.quic.port = corrupt_server_->port();
    KVCS_ASSIGN_OR_RETURN(c->client, moqt::MoqtClient::Connect(io_, cc, nullptr));
    corrupt_ = std::move(c);
    return Status::Ok();
  }

  void StartRecovery(Consumer& c) {
    const kvsp::Descriptor& d = cache_.descriptor;
    stream::RecoveryOptions o;
    o.retrieval.mode = stream::RetrievalMode::kAuto;  // the copy is complete: FETCHed
    o.retrieval.verifier.identity = identity_;
    o.retrieval.verifier.publication = pub_->ns();
    o.retrieval.verifier.keys = &keys_;
    o.retrieval.verifier.require_signature = true;
    o.retrieval.verifier.max_blocks = c_blocks_;
    // The modeled compute: one layer of the published blocks every layer_ms.
    o.retrieval.compute_ns_per_token_layer = o_.layer_ms * 1'000'000 / (blocks_ * d.block_tokens);
    o.retrieval.min_deadline_ms = o_.recovery_floor_ms;
    o.holders = {http_holder_.get()};
    Consumer* cp = &c;
    auto r = stream::Recovery::Start(
        &c.client->session(), std::move(o),
        [this, cp](const stream::VerifiedLayer& l) { Check(*cp, l); },
        [this, cp](const stream::RetrievalReport& rep) {
          cp->report = rep;
          cp->done_ms = Ms();
        },
        EpochMs);
    if (!r.ok()) return Finish(r.status());
    c.recovery = std::move(*r);
    c_deadline_ms_ = c.recovery->deadline_ms() - EpochMs();
  }

  static uint64_t EpochMs() {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch())
            .count());
  }

  // Compares a delivered layer with the source.
  void Check(Consumer& c, const stream::VerifiedLayer& l) {
    for (size_t i = 0; i < l.k.size(); ++i) {
      const uint64_t b = l.first_block + i + 1;
      ByteSpan k = cache_.KSection(l.layer, b);
      c.mismatches +=
          l.k[i].size() != k.size() || std::memcmp(l.k[i].data(), k.data(), k.size()) != 0;
      c.bytes += l.k[i].size();
      if (i < l.v.size()) {
        ByteSpan v = cache_.VSection(l.layer, b);
        c.mismatches +=
            l.v[i].size() != v.size() || std::memcmp(l.v[i].data(), v.data(), v.size()) != 0;
        c.bytes += l.v[i].size();
      }
    }
    c.ready_ms[l.layer] = std::max(c.ready_ms[l.layer], Ms());
  }

  void Tick() {
    if (finished_) return;
    if (publisher_->closed()) return Finish(Internal("the publisher's relay session ended"));
    size_t done = 0;
    for (auto& c : consumers_) {
      if (c->client->closed() && !c->report) return Finish(Internal(c->name + ": session ended"));
      if (!c->retrieval && c->client->setup_complete()) StartRetrieval(*c);
      if (c->retrieval) c->retrieval->OnTimer();
      done += c->report.has_value();
    }
    if (corrupt_) {
      if (corrupt_->client->closed() && !corrupt_->report) {
        return Finish(Internal("C: session ended"));
      }
      if (!corrupt_->recovery && corrupt_->client->setup_complete()) StartRecovery(*corrupt_);
      if (corrupt_->recovery) corrupt_->recovery->OnTimer();
      if (corrupt_->report) return Finish(Status::Ok());
    } else if (done == 2) {
      for (auto& c : consumers_) {
        if (!c->report->all_retrieved()) {
          return Finish(Internal(c->name + ": " + std::to_string(c->report->recompute_count()) +
                                 " (block, layer) not retrieved; block 0: " +
                                 stream::DescribeBlockSources(*c->report, 0)));
        }
      }
      if (!o_.corrupt_leg) return Finish(Status::Ok());
      Status s = StartCorruptLeg();
      if (!s.ok()) return Finish(s);
    }
    tick_.expires_after(kTick);
    tick_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) Tick();
    });
  }

  void Finish(Status s) {
    if (finished_) return;
    finished_ = true;
    error_ = std::move(s);
    tick_.cancel();
    produce_.cancel();
  }

  void Cleanup() {
    if (corrupt_) {
      corrupt_->recovery.reset();
      if (corrupt_->client && !corrupt_->client->closed()) {
        corrupt_->client->Close(moqt::SessionError::kNoError, "");
      }
    }
    for (auto& c : consumers_) {
      c->retrieval.reset();
      if (c->client && !c->client->closed()) c->client->Close(moqt::SessionError::kNoError, "");
    }
    if (publisher_ && !publisher_->closed()) publisher_->Close(moqt::SessionError::kNoError, "");
    io_.poll();
    consumers_keep_ = std::move(consumers_);
    for (auto& c : consumers_keep_) c->client.reset();
    corrupt_keep_ = std::move(corrupt_);
    if (corrupt_keep_) corrupt_keep_->client.reset();
    corrupt_server_.reset();
    http_holder_.reset();
    holder_.reset();
    publisher_.reset();
    relay_upstream_ = relay_->relay().metrics().upstream_requests.load();
    relay_.reset();
    io_.poll();
    std::error_code ec;
    std::filesystem::remove_all(cert_dir_, ec);
  }

  void Print() {
    const kvsp::Descriptor& d = cache_.descriptor;
    char line[160];
    out_ << "            per-layer timeline (ms since production start; ready = every block of "
            "the layer verified):\n";
    std::snprintf(line, sizeof line, "            %5s %10s %12s %12s\n", "layer", "published",
                  "A ready", "B ready");
    out_ << line;
    for (uint32_t l = 0; l < d.layers; ++l) {
      std::snprintf(line, sizeof line, "            %5u %10.1f %12.1f %12.1f\n", l,
                    published_ms_[l], consumers_keep_[0]->ready_ms[l],
                    consumers_keep_[1]->ready_ms[l]);
      out_ << line;
    }
    for (const auto& c : consumers_keep_) {
      const stream::RetrievalReport& r = *c->report;
      const double s = (c->done_ms - c->start_ms) / 1e3;
      std::snprintf(line, sizeof line,
                    "            consumer %s: joined after %u layers, %llu/%llu (block, layer) "
                    "verified, %llu recompute, %llu duplicates, ",
                    c->name.c_str(), c->joined_after,
                    (unsigned long long)(r.blocks * r.layers - r.recompute_count()),
                    (unsigned long long)(r.blocks * r.layers),
                    (unsigned long long)r.recompute_count(), (unsigned long long)r.duplicates);
      out_ << line << (c->mismatches == 0 ? "bit-exact" : "MISMATCHES") << ", "
           << c->bytes / (1024 * 1024) << " MiB in " << std::fixed;
      out_.precision(2);
      out_ << s << " s, " << HowRetrieved(r) << "\n";
      out_.unsetf(std::ios::fixed);
    }
    out_ << "            relay: " << relay_upstream_ << " upstream subscriptions for 2 consumers\n";
    if (corrupt_keep_) PrintCorruptLeg(*corrupt_keep_);
  }

  // "live (SUBSCRIBE)", "by FETCH", or both with their (block, layer) counts.
  static std::string HowRetrieved(const stream::RetrievalReport& r) {
    const uint64_t live = r.count(stream::BlockSource::kMoqt);
    const uint64_t fetched = r.count(stream::BlockSource::kMoqtFetch);
    if (fetched == 0) return "live (SUBSCRIBE)";
    if (live == 0) return "by FETCH";
    return std::to_string(fetched) + " by FETCH, " + std::to_string(live) +
           " live (a short FETCH continued)";
  }

  void PrintCorruptLeg(const Consumer& c) {
    const stream::RetrievalReport& r = *c.report;
    out_ << "            consumer " << c.name << ": blocks 0.." << c_blocks_ - 1
         << " from a second relay hop serving relay 1's copy with one bit flipped in " << bad_track_
         << " layer " << bad_layer_ << " block " << bad_block_ << "\n";
    for (const stream::Refusal& f : r.refusals) {
      out_ << "              detected: " << f.track << " " << f.location.group << ":"
           << f.location.object << " " << f.status.message() << "\n";
    }
    out_ << "              (a layer is handed over only once every block of it verified: layer "
         << bad_layer_ << " of each block came from the store)\n";
    for (uint64_t b = 0; b < r.blocks; ++b) {
      out_ << "              block " << b << ": " << stream::DescribeBlockSources(r, b) << "\n";
    }
    char line[200];
    std::snprintf(line, sizeof line,
                  "              %llu/%llu (block, layer) verified (%llu from the store over KVSP "
                  "HTTP), %llu recompute, %s; done in %.0f ms, bound %llu ms\n",
                  (unsigned long long)(r.blocks * r.layers - r.recompute_count()),
                  (unsigned long long)(r.blocks * r.layers),
                  (unsigned long long)r.count(stream::BlockSource::kHttpHolder),
                  (unsigned long long)r.recompute_count(),
                  c.mismatches == 0 ? "bit-exact" : "MISMATCHES", c.done_ms - c.start_ms,
                  (unsigned long long)c_deadline_ms_);
    out_ << line;
  }

 public:
  bool all_ok() const {
    for (const auto& c : consumers_keep_) {
      if (!c->report || !c->report->all_retrieved() || c->mismatches != 0 ||
          c->report->duplicates != 0) {
        return false;
      }
    }
    if (corrupt_keep_) {
      const auto& r = corrupt_keep_->report;
      if (!r || !r->all_retrieved() || corrupt_keep_->mismatches != 0 ||
          r->count(stream::BlockSource::kHttpHolder) == 0 || r->refusals.empty()) {
        return false;
      }
    }
    return true;
  }

 private:
  const tensorio::KvCacheView& cache_;
  const kvsp::ScopeKey scope_;
  const MoqtDemoOptions o_;
  std::ostream& out_;
  asio::io_context io_;
  asio::steady_timer tick_, produce_;
  std::filesystem::path cert_dir_;
  std::string ca_, key_;
  std::unique_ptr<relay::RelayServer> relay_;
  moqt::TrackStore store_;
  profile::KeySet keys_;
  std::unique_ptr<stream::Publisher> pub_;
  stream::CacheIdentity identity_;
  std::unique_ptr<moqt::MoqtClient> publisher_;
  std::vector<std::unique_ptr<Consumer>> consumers_, consumers_keep_;
  std::vector<uint32_t> tokens_;
  std::vector<double> published_ms_;
  uint64_t blocks_ = 0;
  uint64_t relay_upstream_ = 0;
  // The leg with the corrupting relay (consumer C).
  std::unique_ptr<DemoHolderStore> holder_;
  std::unique_ptr<kvsp_http::HttpHolderSource> http_holder_;
  moqt::TrackStore corrupt_store_;
  std::unique_ptr<moqt::MoqtServer> corrupt_server_;
  std::unique_ptr<Consumer> corrupt_, corrupt_keep_;
  uint64_t c_blocks_ = 0, bad_block_ = 0, c_deadline_ms_ = 0;
  uint32_t bad_layer_ = 0;
  std::string bad_track_;
  Clock::time_point t0_ = Clock::now();
  bool finished_ = false;
  Status error_;
};

}  // namespace

Status RunMoqtDemo(const tensorio::KvCacheView& cache, const kvsp::ScopeKey& scope,
                   const MoqtDemoOptions& options, std::ostream& out) {
  Demo demo(cache, scope, options, out);
  KVCS_RETURN_IF_ERROR(demo.Run());
  if (!demo.all_ok()) return Internal("a consumer did not verify every (block, layer) bit-exact");
  return Status::Ok();
}

}  // namespace kvcs::cli
