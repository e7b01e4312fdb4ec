// KVCS recovery over real QUIC and real HTTP on 127.0.0.1 (recovery.h): the publisher serves
// directly (its TrackStore behind one MoqtServer) and relay-like copies of it that lose or corrupt
// one object serve behind others; a real `kvcs store` process, loaded with the same cache by one
// aggregated PUT, is the KVSP §8 holder (HttpHolderSource over the HolderClient). Recovery from a
// missing object (another source of the same publication), a corrupt object (the store over
// HTTP), a publisher that stops mid-production (the store for what it holds, the rest reported
// for recompute), and a relay killed mid-production (another relay), each within the recompute
// bound; and `kvcs get --holder`. Every wait is bounded.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "common/asio.h"
#include "common/hex.h"
#include "kvcs_stream/publisher.h"
#include "kvcs_stream/recovery.h"
#include "kvcs_stream/test_tools/test_cache.h"
#include "kvcs_stream/test_tools/track_copy.h"
#include "kvsp/container.h"
#include "kvsp_http/holder_client.h"
#include "kvsp_http/http_holder_source.h"
#include "moqt_endpoint/moqt_endpoint.h"
#include "objcache/block_layout.h"
#include "objcache/client.h"
#include "quic/tls.h"

namespace kvcs::stream {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;

constexpr char kAccess[] = "recoverykey";
constexpr char kSecret[] = "recoverysecret0123456789";
constexpr uint64_t kHeldBlocks = 8;  // the store holds blocks 0..7 of the 12

uint64_t NowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// A child process running the kvcs binary with `args`, its stdout on a pipe.
class Child {
 public:
  static std::unique_ptr<Child> Spawn(std::vector<std::string> args) {
    int out[2];
    if (::pipe(out) != 0) return nullptr;
    pid_t pid = ::fork();
    if (pid == 0) {
      ::dup2(out[1], 1);
      ::close(out[0]);
      ::close(out[1]);
      ::setenv("KVCS_S3_ACCESS_KEY", kAccess, 1);
      ::setenv("KVCS_S3_SECRET_KEY", kSecret, 1);
      std::vector<char*> argv = {const_cast<char*>(KVCS_BIN)};
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(KVCS_BIN, argv.data());
      ::_exit(127);
    }
    ::close(out[1]);
    ::fcntl(out[0], F_SETFL, O_NONBLOCK);
    return std::unique_ptr<Child>(new Child(pid, out[0]));
  }
  ~Child() {
    if (!exited_) {
      ::kill(pid_, SIGTERM);
      int st = 0;
      ::waitpid(pid_, &st, 0);
    }
    ::close(fd_);
  }
  // Reads what is there (waiting at most `wait_ms` for something).
  void Read(int wait_ms) {
    pollfd pfd{fd_, POLLIN, 0};
    if (::poll(&pfd, 1, wait_ms) <= 0) return;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd_, buf, sizeof buf)) > 0) out_.append(buf, static_cast<size_t>(n));
  }
  // The exit status once it exited (without waiting), else nullopt.
  std::optional<int> Exited() {
    if (!exited_) {
      int st = 0;
      if (::waitpid(pid_, &st, WNOHANG) != pid_) return std::nullopt;
      exited_ = true;
      status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      Read(0);
    }
    return status_;
  }
  const std::string& out() const { return out_; }

 private:
  Child(pid_t pid, int fd) : pid_(pid), fd_(fd) {}
  pid_t pid_;
  int fd_;
  bool exited_ = false;
  int status_ = 0;
  std::string out_;
};

// A `kvcs store` child process on an ephemeral 127.0.0.1 port.
class StoreProcess {
 public:
  static std::unique_ptr<StoreProcess> Start(const std::string& root) {
    auto c =
        Child::Spawn({"store", "--root", root, "--listen", "127.0.0.1:0", "--shm-socket", "none"});
    if (c == nullptr) return nullptr;
    const std::string marker = "listening on http://127.0.0.1:";
    const uint64_t deadline = NowMs() + 20000;
    while (NowMs() < deadline && !c->Exited()) {
      c->Read(200);
      size_t at = c->out().find(marker);
      if (at != std::string::npos && c->out().find(' ', at + marker.size()) != std::string::npos) {
        auto p = std::unique_ptr<StoreProcess>(new StoreProcess(std::move(c)));
        p->port_ = static_cast<uint16_t>(std::stoi(p->child_->out().substr(at + marker.size())));
        return p;
      }
    }
    ADD_FAILURE() << "kvcs store did not start: " << c->out();
    return nullptr;
  }
  uint16_t port() const { return port_; }

 private:
  explicit StoreProcess(std::unique_ptr<Child> c) : child_(std::move(c)) {}
  std::unique_ptr<Child> child_;
  uint16_t port_ = 0;
};

struct Got {
  std::map<std::pair<uint64_t, uint32_t>, int> pairs;  // (block, layer) -> deliveries
  int mismatches = 0;
  std::optional<RetrievalReport> report;
  uint64_t done_ms = 0;
};

class RecoveryE2E : public ::testing::Test {
 protected:
  static inline std::unique_ptr<StoreProcess> store_process_;
  static inline fs::path dir_;

  kvsp::Descriptor d_ = test::SmallDescriptor(/*layers=*/32, /*block_tokens=*/16);
  kvsp::ScopeKey scope_{};
  std::vector<uint32_t> tokens_ = test::Tokens(16 * 12);  // 12 blocks
  moqt::TrackStore store_, relay_;
  std::unique_ptr<Publisher> pub_;
  asio::io_context io_;
  std::vector<std::unique_ptr<moqt::MoqtServer>> servers_;
  std::vector<std::unique_ptr<moqt::MoqtClient>> clients_;
  std::string cert_, key_;
  profile::KeySet keys_;
  std::optional<profile::SigningKey> producer_;
  std::unique_ptr<kvsp_http::HttpHolderSource> holder_;

  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("kvcs_recovery_e2e_" + std::to_string(getpid()));
    fs::create_directories(dir_ / "store");
    store_process_ = StoreProcess::Start((dir_ / "store").string());
  }
  static void TearDownTestSuite() {
    store_process_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  void SetUp() override {
    ASSERT_NE(store_process_, nullptr);
    scope_[0] = 7;
    auto pem = quic::GenerateSelfSignedCert("localhost");
    ASSERT_TRUE(pem.ok());
    cert_ = (dir_ / "cert.pem").string();
    key_ = (dir_ / "key.pem").string();
    std::ofstream(cert_) << pem->cert_pem;
    std::ofstream(key_) << pem->key_pem;
    producer_ = *profile::SigningKey::Generate(profile::CoseAlg::kES256, Bytes{'p'});
    ASSERT_TRUE(keys_.Add(producer_->Public()).ok());
    PublisherConfig c;
    c.descriptor = d_;
    c.scope_key = scope_;
    c.producer_key = producer_;
    auto p = Publisher::Create(&store_, c, tokens_);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    pub_ = std::move(*p);
    LoadHolder();
    auto hc = kvsp_http::HolderClient::Create(
        "http://127.0.0.1:" + std::to_string(store_process_->port()), {});
    ASSERT_TRUE(hc.ok()) << hc.status().ToString();
    holder_ = std::make_unique<kvsp_http::HttpHolderSource>(
        std::move(*hc), [this](std::function<void()> f) { asio::post(io_, std::move(f)); });
  }
  void TearDown() override {
    holder_.reset();
    clients_.clear();
    servers_.clear();
  }

  // The same cache, blocks 0..kHeldBlocks-1 with every layer, into the store (idempotent).
  void LoadHolder() {
    CacheIdentity id = *CacheIdentity::Compute(d_, scope_, tokens_);
    objcache::ClientOptions co;
    co.port = store_process_->port();
    co.access_key = kAccess;
    co.secret_key = kSecret;
    objcache::Client client(co);
    (void)client.CreateBucket(objcache::kDefaultKvBucket);
    std::vector<Bytes> containers;
    for (uint64_t b = 0; b < kHeldBlocks; ++b) {
      auto c = test::BlockContainer(d_, id.compat_id, id.block_keys[b], b, 0, d_.layers - 1);
      ASSERT_TRUE(c.ok()) << c.status().ToString();
      containers.push_back(std::move(*c));
    }
    std::vector<ByteSpan> spans(containers.begin(), containers.end());
    auto put = client.AggregatePut(objcache::kDefaultKvBucket, id.scope_id, spans, true);
    ASSERT_TRUE(put.ok()) << put.status().ToString();
    ASSERT_EQ(put->stored, kHeldBlocks);
  }

  uint16_t Serve(moqt::TrackSource* source) {
    moqt::MoqtServerConfig sc;
    sc.quic.host = "127.0.0.1";
    sc.quic.cert_file = cert_;
    sc.quic.key_file = key_;
    auto s = moqt::MoqtServer::Create(io_, sc, source);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    servers_.push_back(std::move(*s));
    return servers_.back()->port();
  }
  moqt::MoqtSession* Connect(uint16_t port) {
    moqt::MoqtClientConfig c;
    c.quic.host = "127.0.0.1";
    c.quic.port = port;
    c.quic.server_name = "localhost";
    c.quic.ca_file = cert_;
    c.session.path = "/kvcs";
    auto cl = moqt::MoqtClient::Connect(io_, c, nullptr);
    EXPECT_TRUE(cl.ok()) << cl.status().ToString();
    moqt::MoqtClient* raw = cl->get();
    clients_.push_back(std::move(*cl));
    EXPECT_TRUE(RunUntil([&] { return raw->setup_complete() || raw->closed(); }));
    EXPECT_TRUE(raw->setup_complete());
    return &raw->session();
  }
  bool RunUntil(const std::function<bool()>& pred, Recovery* r = nullptr) {
    const uint64_t deadline = NowMs() + 30000;
    while (!pred()) {
      if (NowMs() > deadline) return false;
      io_.run_one_for(std::chrono::milliseconds(10));
      if (io_.stopped()) io_.restart();
      if (r != nullptr) r->OnTimer();
    }
    return true;
  }
  void Produce(uint32_t to) {
    for (uint32_t l = pub_->next_layer(); l < to; ++l) {
      ASSERT_TRUE(
          pub_->PublishLayer(l, test::LayerK(d_, l, 0, 12), test::LayerV(d_, l, 0, 12)).ok());
    }
  }
  Status Copy(const test::Tamper& t) {
    std::vector<std::string> names = {"manifest.cose", "k.raw.s0", "v.raw.s0"};
    return test::CopyTracks(store_, pub_->track_namespace(), names, relay_, t);
  }
  RecoveryOptions Options(RetrievalMode mode) {
    RecoveryOptions o;
    o.retrieval.mode = mode;
    o.retrieval.verifier.identity = *CacheIdentity::Compute(d_, scope_, tokens_);
    o.retrieval.verifier.publication = pub_->ns();
    o.retrieval.verifier.keys = &keys_;
    // 12 blocks · 16 tokens · 32 layers · 0.5 ms = 3.07 s: the primary gets half.
    o.retrieval.compute_ns_per_token_layer = 500'000;
    return o;
  }
  std::unique_ptr<Recovery> Start(moqt::MoqtSession* primary, RecoveryOptions o, Got* got) {
    const kvsp::Descriptor d = d_;
    auto r = Recovery::Start(
        primary, std::move(o),
        [got, d](const VerifiedLayer& l) {
          for (size_t i = 0; i < l.k.size(); ++i) {
            got->pairs[{l.first_block + i, l.layer}]++;
            if (Bytes(l.k[i].begin(), l.k[i].end()) !=
                    test::LayerK(d, l.layer, l.first_block + i, 1) ||
                Bytes(l.v[i].begin(), l.v[i].end()) !=
                    test::LayerV(d, l.layer, l.first_block + i, 1)) {
              got->mismatches++;
            }
          }
        },
        [got](const RetrievalReport& rep) {
          got->report = rep;
          got->done_ms = NowMs();
        },
        NowMs);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(*r) : nullptr;
  }
  void ExpectEverythingOnce(const Got& g) {
    ASSERT_TRUE(g.report.has_value());
    EXPECT_TRUE(g.report->all_retrieved()) << g.report->recompute_count();
    EXPECT_EQ(g.mismatches, 0);
    EXPECT_EQ(g.pairs.size(), 12u * d_.layers);
    for (const auto& [k, n] : g.pairs) EXPECT_EQ(n, 1) << k.first << "/" << k.second;
    EXPECT_LE(g.done_ms, g.report->deadline_ms);
  }
};

TEST_F(RecoveryE2E, HolderClientFetchesVerifiedContainersWithTypedErrors) {
  auto c = kvsp_http::HolderClient::Create(
      "http://127.0.0.1:" + std::to_string(store_process_->port()) + "/_kvsp/", {});
  ASSERT_TRUE(c.ok());
  CacheIdentity id = *CacheIdentity::Compute(d_, scope_, tokens_);
  kvsp_http::HolderBlockRequest req{
      id.compat_id, id.scope_id, id.block_keys[3], 4, kvsp::Codec::kRaw, 5, 9};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  auto got = (*c)->FetchBlock(d_, req, deadline);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->view.header.layer_first, 5u);
  EXPECT_EQ(got->view.header.layer_count, 5u);
  auto l7 = kvsp::LayerBytes(got->view, got->bytes, 7);
  ASSERT_TRUE(l7.ok());
  EXPECT_EQ(Bytes(l7->k.begin(), l7->k.end()), test::LayerK(d_, 7, 3, 1));
  EXPECT_TRUE((*c)->HasBlock(req, deadline).ok());
  req.block_key = id.block_keys[10];  // not held
  EXPECT_TRUE((*c)->FetchBlock(d_, req, deadline).status().Is(kvsp_http::HolderError::kNotHeld));
  req.block_key = id.block_keys[3];
  req.codec = kvsp::Codec::kZstd;
  EXPECT_TRUE(
      (*c)->FetchBlock(d_, req, deadline).status().Is(kvsp_http::HolderError::kCodecUnavailable));
  req.codec = kvsp::Codec::kRaw;
  req.block_index = 5;  // the container says 4
  EXPECT_TRUE(
      (*c)->FetchBlock(d_, req, deadline).status().Is(kvsp_http::HolderError::kBadContainer));
  req.block_index = 4;
  kvsp::Descriptor other = d_;
  other.head_dim = 16;  // the sections' lengths disagree with this descriptor
  EXPECT_TRUE(
      (*c)->FetchBlock(other, req, deadline).status().Is(kvsp_http::HolderError::kBadContainer));
  auto small = kvsp_http::HolderClient::Create(
      "http://127.0.0.1:" + std::to_string(store_process_->port()), {.max_container_bytes = 1000});
  ASSERT_TRUE(small.ok());
  {
    Status too_big = (*small)->FetchBlock(d_, req, deadline).status();
    EXPECT_TRUE(too_big.Is(kvsp_http::HolderError::kBadResponse)) << too_big.ToString();
  }
  auto closed = kvsp_http::HolderClient::Create("http://127.0.0.1:9", {});
  ASSERT_TRUE(closed.ok());
  EXPECT_TRUE(
      (*closed)->FetchBlock(d_, req, deadline).status().Is(kvsp_http::HolderError::kConnect));
  EXPECT_TRUE(
      kvsp_http::HolderClient::Create("ftp://x/", {}).status().Is(kvsp_http::HolderError::kBadUrl));
}

TEST_F(RecoveryE2E, CorruptObjectRecoveredFromTheStoreOverKvspHttp) {
  Produce(d_.layers);
  Bytes bad = *store_.FindTrack({pub_->track_namespace(), "v.raw.s0"})->Find({5, 3})->payload;
  bad[bad.size() / 2] ^= 0x10;
  ASSERT_TRUE(Copy({"v.raw.s0", {5, 3}, bad}).ok());
  moqt::MoqtSession* s = Connect(Serve(&relay_));
  RecoveryOptions o = Options(RetrievalMode::kCompleted);
  o.holders = {holder_.get()};
  Got got;
  auto r = Start(s, o, &got);
  ASSERT_TRUE(RunUntil([&] { return got.report.has_value(); }, r.get()));
  const RetrievalReport& rep = *got.report;
  EXPECT_EQ(got.mismatches, 0);
  EXPECT_LE(got.done_ms, rep.deadline_ms);
  EXPECT_FALSE(rep.timed_out);
  // Layer 5 never completed over MOQT: the store held blocks 0..7 of it, the rest must be
  // recomputed; every other layer came by FETCH.
  EXPECT_EQ(rep.at(3, 5).source, BlockSource::kHttpHolder);
  EXPECT_EQ(rep.sources[rep.at(3, 5).source_index].rfind("http holder http://127.0.0.1:", 0), 0u);
  EXPECT_EQ(rep.count(BlockSource::kHttpHolder), kHeldBlocks);
  EXPECT_EQ(rep.count(BlockSource::kMoqtFetch), 12u * (d_.layers - 1));
  EXPECT_EQ(rep.recompute_count(), 12 - kHeldBlocks);
  EXPECT_EQ(rep.at(9, 5).reason, StreamError::kMissing);
  EXPECT_EQ(got.pairs.size(), 12u * d_.layers - (12 - kHeldBlocks));
  bool refused_object = false;
  for (const Refusal& f : rep.refusals) refused_object |= f.status.Is(StreamError::kObjectInvalid);
  EXPECT_TRUE(refused_object);
}

TEST_F(RecoveryE2E, MissingObjectRecoveredFromAnotherSourceOfThePublication) {
  Produce(d_.layers);
  ASSERT_TRUE(Copy({"k.raw.s0", {7, 10}, std::nullopt}).ok());  // block 10: not in the store
  moqt::MoqtSession* lossy = Connect(Serve(&relay_));
  moqt::MoqtSession* direct = Connect(Serve(&store_));
  RecoveryOptions o = Options(RetrievalMode::kLive);
  o.alternates = {{direct, pub_->ns(), "the publisher"}};
  o.holders = {holder_.get()};
  Got got;
  auto r = Start(lossy, o, &got);
  ASSERT_TRUE(RunUntil([&] { return got.report.has_value(); }, r.get()));
  ExpectEverythingOnce(got);
  EXPECT_EQ(got.report->count(BlockSource::kAltMoqt), 12u);  // layer 7
  EXPECT_EQ(got.report->at(10, 7).source, BlockSource::kAltMoqt);
  EXPECT_EQ(got.report->count(BlockSource::kMoqt), 12u * (d_.layers - 1));
  EXPECT_EQ(got.report->count(BlockSource::kHttpHolder), 0u);
}

TEST_F(RecoveryE2E, PublisherThatStopsMidProductionRecoversWhatTheStoreHolds) {
  moqt::MoqtSession* s = Connect(Serve(&store_));
  RecoveryOptions o = Options(RetrievalMode::kLive);
  o.holders = {holder_.get()};
  Got got;
  const uint64_t start = NowMs();
  auto r = Start(s, o, &got);
  Produce(10);  // then the publisher stops: no more layers, no End of Track
  ASSERT_TRUE(RunUntil([&] { return got.report.has_value(); }, r.get()));
  const RetrievalReport& rep = *got.report;
  EXPECT_EQ(got.mismatches, 0);
  EXPECT_LE(got.done_ms, rep.deadline_ms);
  EXPECT_LE(rep.deadline_ms, start + 3072 + 100);
  // Layers 0..7 (listed by the manifest after layer 8) came live; the rest of blocks 0..7 from
  // the store; blocks 8..11 of layers 8..31 must be recomputed.
  EXPECT_EQ(rep.count(BlockSource::kMoqt), 12u * 8);
  EXPECT_EQ(rep.count(BlockSource::kHttpHolder), kHeldBlocks * 24);
  EXPECT_EQ(rep.recompute_count(), 4u * 24);
  EXPECT_EQ(rep.at(9, 8).source, BlockSource::kRecompute);
  EXPECT_EQ(rep.at(9, 8).reason, StreamError::kDeadline);
  EXPECT_TRUE(rep.timed_out);
  EXPECT_EQ(got.pairs.size(), 12u * 8 + kHeldBlocks * 24);
}

TEST_F(RecoveryE2E, KilledRelayRecoveredFromAnotherRelayWhileProductionGoesOn) {
  // Two "relays" serve the publisher's TrackStore; the primary one dies after 12 layers.
  moqt::MoqtSession* first = Connect(Serve(&store_));
  moqt::MoqtSession* second = Connect(Serve(&store_));
  RecoveryOptions o = Options(RetrievalMode::kLive);
  o.alternates = {{second, pub_->ns(), "relay-2"}};
  o.holders = {holder_.get()};
  Got got;
  auto r = Start(first, o, &got);
  Produce(12);
  ASSERT_TRUE(RunUntil([&] { return got.pairs.size() >= 12u * 8; }, r.get()));
  servers_.front().reset();  // killed: its sessions go with it
  Produce(d_.layers);
  ASSERT_TRUE(RunUntil([&] { return got.report.has_value(); }, r.get()));
  ExpectEverythingOnce(got);
  EXPECT_EQ(got.report->count(BlockSource::kMoqt), 12u * 8);  // before the relay died
  EXPECT_EQ(got.report->count(BlockSource::kAltMoqt), 12u * 24);
  EXPECT_EQ(got.report->count(BlockSource::kHttpHolder), 0u);
  // The dead relay's QUIC connection is not closed to us: the primary gives up at its half of
  // the bound (T/2), and the rest comes from relay-2 well within T.
}

TEST_F(RecoveryE2E, KvcsGetWithAHolderPrintsWhereEveryBlockCameFrom) {
  // An unsigned publication of the same cache; its relay corrupts (layer 5, block 3).
  moqt::TrackStore unsigned_store;
  PublisherConfig c;
  c.descriptor = d_;
  c.scope_key = scope_;
  auto p = Publisher::Create(&unsigned_store, c, tokens_);
  ASSERT_TRUE(p.ok());
  for (uint32_t l = 0; l < d_.layers; ++l) {
    ASSERT_TRUE((*p)->PublishLayer(l, test::LayerK(d_, l, 0, 12), test::LayerV(d_, l, 0, 12)).ok());
  }
  Bytes bad =
      *unsigned_store.FindTrack({(*p)->track_namespace(), "k.raw.s0"})->Find({5, 3})->payload;
  bad[100] ^= 1;
  ASSERT_TRUE(test::CopyTracks(unsigned_store, (*p)->track_namespace(),
                               {"manifest", "k.raw.s0", "v.raw.s0"}, relay_,
                               {"k.raw.s0", {5, 3}, bad})
                  .ok());
  const uint16_t port = Serve(&relay_);
  const std::string tokens = (dir_ / "prompt.txt").string(), desc = (dir_ / "d.json").string(),
                    scope = (dir_ / "s.key").string(), out = (dir_ / "got.safetensors").string();
  {
    std::ofstream t(tokens);
    for (uint32_t tok : tokens_) t << tok << " ";
  }
  std::ofstream(desc) << kvsp::CanonicalJson(d_);
  std::ofstream(scope) << ToHex(scope_) << "\n";
  const std::string holder = "http://127.0.0.1:" + std::to_string(store_process_->port());
  auto get = Child::Spawn({"get",
                           "moqt://127.0.0.1:" + std::to_string(port) + "/",
                           "--ca",
                           cert_,
                           "--server-name",
                           "localhost",
                           "--tokens",
                           tokens,
                           "--descriptor",
                           desc,
                           "--scope-key-file",
                           scope,
                           "--completed",
                           "--blocks",
                           "8",
                           "--holder",
                           holder,
                           "--ns-per-token-layer",
                           "500000",
                           "--out",
                           out});
  ASSERT_NE(get, nullptr);
  ASSERT_TRUE(RunUntil([&] {
    get->Read(0);
    return get->Exited().has_value();
  }));
  const std::string& o = get->out();
  EXPECT_EQ(*get->Exited(), 0) << o;
  EXPECT_NE(o.find("0 (block, layer) to recompute"), std::string::npos) << o;
  for (int b : {0, 7}) {
    EXPECT_NE(
        o.find("  block " + std::to_string(b) + ": http holder " + holder + " x1, moqt fetch x31"),
        std::string::npos)
        << o;
  }
  EXPECT_NE(o.find("refused: "), std::string::npos) << o;  // the corrupt object, named
  EXPECT_NE(o.find("wrote " + out), std::string::npos) << o;
  EXPECT_TRUE(fs::exists(out));
}

}  // namespace
}  // namespace kvcs::stream
