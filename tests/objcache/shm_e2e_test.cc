// Same-host delivery (docs/protocols/objectcache-aggregated.md §8) end to end over real sockets:
// the S3 server on 127.0.0.1, the registration socket in /tmp, clients with shared buffers. The
// shared extension cases already run every behaviour through this path (LocalDiskSharedMemory);
// these tests pin what is particular to it: the slot ring, refusals, cancel, bad registrations.
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <variant>

#include "common/crypto.h"
#include "common/hex.h"
#include "extension_cases.h"
#include "objcache/shm_buffer.h"
#include "objcache/shm_server.h"
#include "objcache/shm_wire.h"
#include "store/forwarding_store.h"

namespace kvcs::objcache {
namespace {

class ShmDelivery : public ExtensionFixture {
 protected:
  static constexpr uint32_t kBlocks = 6, kLayers = 5;
  void SetUp() override {
    Start(MakeLocalDiskBackend(), kBlocks, kLayers, {}, /*shm=*/true);
    PutAll();
  }
  // Layer bytes of kBlocks blocks (64-byte aligned already: 64 KiB each).
  uint64_t LayerBytes() const { return uint64_t{kBlocks} * 2 * cache_.section_bytes; }
  Client MakeClient(uint64_t buffer, uint32_t slots) const {
    ClientOptions o = Options(s3::kDevSecretKey);
    o.shm_buffer_bytes = buffer;
    o.shm_slots = slots;
    return Client(o);
  }
  // Every layer of every block, checked byte for byte.
  void ExpectAll(Client& c) {
    uint32_t next = 0;
    auto r =
        c.AggregateGet(kBucket, Req(cache_.block_keys, 0, kLayers), [&](const DeliveredLayer& l) {
          EXPECT_EQ(l.layer, next++);
          for (uint32_t b = 0; b < kBlocks; ++b) {
            EXPECT_EQ(l.blocks[b].status, BlockStatus::kPresent);
            EXPECT_TRUE(std::equal(l.blocks[b].data.begin(), l.blocks[b].data.end(),
                                   SyntheticLayerBytes(cache_, b, l.layer).begin()));
          }
          return Status::Ok();
        });
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(next, kLayers);
    EXPECT_EQ(r->payload_bytes, LayerBytes() * kLayers);
  }
  // A raw connection to the registration socket.
  int Connect() const {
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, shm_path_.c_str(), sizeof a.sun_path - 1);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    return fd;
  }
  // Sends REGISTER (with `fd` attached unless -1) and reads the answer.
  static Result<ShmMessage> Register(int sock, int fd) {
    Bytes m;
    EncodeShmMessage(ShmMessage{ShmMessageType::kRegister}, &m);
    if (fd >= 0) {
      KVCS_RETURN_IF_ERROR(SendWithFd(sock, m, fd));
    } else if (send(sock, m.data(), m.size(), MSG_NOSIGNAL) != ssize_t(m.size())) {
      return Status(Code::kUnavailable, "send");
    }
    uint8_t in[kShmMessageBytes];
    size_t got = 0;
    while (got < sizeof in) {
      ssize_t n = recv(sock, in + got, sizeof in - got, 0);
      if (n <= 0) return Status(Code::kUnavailable, "closed");
      got += size_t(n);
    }
    return DecodeShmMessage(ByteSpan(in, sizeof in));
  }
};

// One slot: the store writes a layer only after the engine released the previous one; three
// slots: the ring wraps. Both deliver every byte in order.
TEST_F(ShmDelivery, SlotRingOfOneAndThree) {
  Client one = MakeClient(LayerBytes(), 1);
  ExpectAll(one);
  Client three = MakeClient(3 * LayerBytes(), 3);
  ExpectAll(three);
  ExpectAll(three);  // the buffer serves request after request
}

// A buffer whose slots cannot hold a layer is refused before streaming, saying what is needed.
TEST_F(ShmDelivery, BufferTooSmallSaysWhatItNeeds) {
  Client c = MakeClient(LayerBytes() - 64, 1);
  auto r = c.AggregateGet(kBucket, Req(cache_.block_keys, 0, kLayers),
                          [](const DeliveredLayer&) { return Status::Ok(); });
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("shm buffer too small"), std::string::npos)
      << r.status().ToString();
  EXPECT_NE(r.status().message().find(std::to_string(LayerBytes())), std::string::npos);
}

// An engine that stops mid-stream cancels; the store stops writing and frees the buffer, and the
// same client's next request gets everything.
TEST_F(ShmDelivery, CallbackErrorCancelsAndTheBufferIsReused) {
  Client c = MakeClient(LayerBytes(), 1);
  int calls = 0;
  auto r = c.AggregateGet(kBucket, Req(cache_.block_keys, 0, kLayers), [&](const DeliveredLayer&) {
    return ++calls == 2 ? Status(Code::kFailedPrecondition, "engine stops") : Status::Ok();
  });
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(calls, 2);
  ExpectAll(c);
}

// Two clients with their own buffers at once.
TEST_F(ShmDelivery, TwoClientsAtOnce) {
  std::thread other([&] {
    Client c = MakeClient(2 * LayerBytes(), 2);
    ExpectAll(c);
  });
  Client c = MakeClient(2 * LayerBytes(), 2);
  ExpectAll(c);
  other.join();
}

// What the registration socket refuses, each on its own connection, while the store keeps
// serving: no descriptor, an unsealed memfd, a plain file, a second REGISTER, garbage.
TEST_F(ShmDelivery, RegistrationRefusals) {
  int s = Connect();
  auto r = Register(s, -1);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, ShmRegisterStatus::kNoDescriptor);
  close(s);

  int unsealed = memfd_create("unsealed", MFD_CLOEXEC);
  ASSERT_EQ(ftruncate(unsealed, 1 << 20), 0);
  s = Connect();
  r = Register(s, unsealed);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, ShmRegisterStatus::kNotSealed);
  close(s);
  close(unsealed);

  char path[] = "/tmp/kvcs-shm-file-XXXXXX";
  int file = mkstemp(path);
  ASSERT_GE(file, 0);
  ASSERT_EQ(ftruncate(file, 1 << 20), 0);
  unlink(path);
  s = Connect();
  r = Register(s, file);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, ShmRegisterStatus::kNotSealed);
  close(s);
  close(file);

  auto buf = SharedBuffer::Create(1 << 20);
  ASSERT_TRUE(buf.ok());
  s = Connect();
  r = Register(s, (*buf)->fd());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, ShmRegisterStatus::kOk);
  EXPECT_EQ(r->value, uint64_t{1} << 20);
  r = Register(s, (*buf)->fd());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, ShmRegisterStatus::kAlreadyRegistered);
  close(s);

  s = Connect();
  uint8_t garbage[kShmMessageBytes];
  std::memset(garbage, 0xee, sizeof garbage);
  ASSERT_EQ(send(s, garbage, sizeof garbage, MSG_NOSIGNAL), ssize_t(sizeof garbage));
  uint8_t one;
  EXPECT_EQ(recv(s, &one, 1, 0), 0);  // the store closed it
  close(s);

  Client c = MakeClient(LayerBytes(), 1);
  ExpectAll(c);
}

// A token the store does not know (never registered, or registered with a store since restarted)
// is refused before streaming with ShmUnknownToken; a store without a shm socket says how to start
// one.
// The registration socket is the store user's alone (0600); a path another store listens on is
// refused, and a stale socket left by a dead store is replaced.
TEST_F(ShmDelivery, SocketModeLiveAndStalePaths) {
  struct stat st {};
  ASSERT_EQ(stat(shm_path_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  Service second;
  Status busy = second.ListenShm(shm_path_);
  EXPECT_EQ(busy.code(), Code::kAlreadyExists) << busy.ToString();
  Client c = MakeClient(LayerBytes(), 1);
  ExpectAll(c);  // the first store still serves

  const std::string stale = shm_path_ + ".stale";
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, stale.c_str(), sizeof a.sun_path - 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  close(fd);  // bound, never listened: what a killed store leaves
  Service third;
  Status replaced = third.ListenShm(stale);
  EXPECT_TRUE(replaced.ok()) << replaced.ToString();
}

TEST_F(ShmDelivery, UnknownTokenIsRefused) {
  AggregateRequest req = Req(cache_.block_keys, 0, 1);
  req.shm = ShmTarget{ShmToken{}, 1, 1};
  req.shm->token.fill(0x42);
  std::string json = SerializeAggregateRequest(req);
  Client plain(ExtensionFixture::Options(s3::kDevSecretKey));
  auto r = plain.Request("POST", "/" + kBucket, "kvcs-aggregate", AsBytes(json));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(std::string(AsStringView(r->body)).find("ShmUnknownToken"), std::string::npos);
}

// A store that parks the first ReadMany batch `match` accepts until Let(): a request held inside a
// read on the service's offload pool, with no timing involved. Everything else is forwarded.
class GatedStore final : public store::ForwardingStore {
 public:
  using Match = std::function<bool(std::span<store::RangeRead>)>;
  explicit GatedStore(store::ObjectStore& inner) : ForwardingStore(inner) {}
  void Arm(Match match) {
    std::lock_guard<std::mutex> l(mu_);
    match_ = std::move(match);
  }
  void WaitEntered() {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return entered_; });
  }
  void Let() {
    std::lock_guard<std::mutex> l(mu_);
    let_ = true;
    cv_.notify_all();
  }
  void ReadMany(std::span<store::RangeRead> ranges) override {
    {
      std::unique_lock<std::mutex> l(mu_);
      if (match_ && match_(ranges)) {
        match_ = nullptr;
        entered_ = true;
        cv_.notify_all();
        cv_.wait(l, [&] { return let_; });
      }
    }
    inner().ReadMany(ranges);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  Match match_;
  bool entered_ = false;
  bool let_ = false;
};

class GatedBackend final : public ExtensionBackend {
 public:
  store::ObjectStore& store() override { return gated; }
  void Corrupt(const std::string&, const std::string&, const Bytes&, size_t) override {}
  std::unique_ptr<ExtensionBackend> local = MakeLocalDiskBackend();
  GatedStore gated{local->store()};
};

// ShmDelivery over a GatedStore.
class ShmGated : public ShmDelivery {
 protected:
  void SetUp() override {
    auto backend = std::make_unique<GatedBackend>();
    gated_ = &backend->gated;
    Start(std::move(backend), kBlocks, kLayers, {}, /*shm=*/true);
    PutAll();
  }
  void TearDown() override {
    gated_->Let();
    ShmDelivery::TearDown();
  }
  // Matches a batch of block-layer reads (K+V of 64 KiB each), not the probe's 4 KiB reads.
  GatedStore::Match LayerRead() const {
    const size_t kv = 2 * cache_.section_bytes;
    return [kv](std::span<store::RangeRead> rs) {
      return std::any_of(rs.begin(), rs.end(), [&](auto& r) { return r.out.size() == kv; });
    };
  }
  GatedStore* gated_ = nullptr;
};

// A CANCEL ends the request at the next layer even while the ring has free slots (§8 step 5):
// with S = the layer count the store never waits for a release, and must still stop writing.
TEST_F(ShmGated, CancelStopsTheStoreWhileSlotsAreFree) {
  auto buf = SharedBuffer::Create(kLayers * LayerBytes());
  ASSERT_TRUE(buf.ok());
  int s = Connect();
  auto reg = Register(s, (*buf)->fd());
  ASSERT_TRUE(reg.ok() && reg->status == ShmRegisterStatus::kOk);
  AggregateRequest req = Req(cache_.block_keys, 0, kLayers);
  constexpr uint64_t kNonce = 7;
  req.shm = ShmTarget{reg->token, kNonce, kLayers};
  const std::string json = SerializeAggregateRequest(req);

  gated_->Arm(LayerRead());
  Result<HttpResult> resp = Status(Code::kInternal, "not run");
  std::thread t([&] {
    Client plain(ExtensionFixture::Options(s3::kDevSecretKey));
    resp = plain.Request("POST", "/" + kBucket, "kvcs-aggregate", AsBytes(json));
  });
  gated_->WaitEntered();  // the request owns the buffer and reads layer 0
  Bytes cancel;
  EncodeShmMessage(ShmMessage{ShmMessageType::kCancel, ShmRegisterStatus::kOk, kNonce}, &cancel);
  ASSERT_EQ(send(s, cancel.data(), cancel.size(), MSG_NOSIGNAL), ssize_t(cancel.size()));
  // Messages of one connection are handled in order: once this answer is back, so is the CANCEL.
  auto again = Register(s, -1);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->status, ShmRegisterStatus::kAlreadyRegistered);
  gated_->Let();
  t.join();
  close(s);

  ASSERT_TRUE(resp.ok()) << resp.status().ToString();
  ASSERT_EQ(resp->status, 200);
  StreamDecoder d;
  std::vector<StreamEvent> events;
  (void)d.Feed(resp->body, &events);  // an end status ≠ 0 is reported as an error
  uint32_t layers = 0;
  std::optional<uint32_t> end;
  for (auto& e : events) {
    if (std::holds_alternative<LayerEvent>(e)) ++layers;
    if (auto* x = std::get_if<EndEvent>(&e)) end = x->status;
  }
  EXPECT_LE(layers, 1u);  // at most the layer that was being read when the CANCEL came
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(*end, 1u);
}

// The store shuts down while a k-only request is inside a read on the offload pool: the handler's
// frame goes with the HTTP server, and the read, still running, must write only into memory the
// job owns (ASan reports a heap-use-after-free of the scratch window otherwise).
TEST_F(ShmGated, KOnlyReadOutlivesItsHandler) {
  gated_->Arm(LayerRead());
  Status got;
  std::thread t([&] {
    Client c(Options(s3::kDevSecretKey));
    auto r = c.AggregateGet(kBucket, Req(cache_.block_keys, 0, kLayers, Components::kK),
                            [](const DeliveredLayer&) { return Status::Ok(); });
    got = r.status();
  });
  gated_->WaitEntered();
  server_->Stop();  // the connection is busy: the server stops after its grace period
  runner_.join();
  server_.reset();  // destroys the handler's coroutine frame
  gated_->Let();
  t.join();
  EXPECT_FALSE(got.ok());
  service_.reset();  // joins the pool: the read has finished
}

// A fake same-host store for the client's side: it registers the buffer, writes `kLayers` layers
// of one block into it, closes the registration (as a store going away does) and only then answers
// the aggregated GET with the records. The client's RELEASE after layer 0 fails; the layers already
// in the buffer must still be delivered from it.
TEST(ShmClient, RegistrationClosedMidRequest) {
  constexpr uint32_t kLayers = 3;
  constexpr uint64_t kSection = 2048, kSlot = 4096;
  const std::string path = "/tmp/kvcs-shm-fake-" + std::to_string(getpid()) + ".sock";
  unlink(path.c_str());
  int ul = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un ua{};
  ua.sun_family = AF_UNIX;
  std::strncpy(ua.sun_path, path.c_str(), sizeof ua.sun_path - 1);
  ASSERT_EQ(bind(ul, reinterpret_cast<sockaddr*>(&ua), sizeof ua), 0);
  ASSERT_EQ(listen(ul, 1), 0);
  int tl = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in ta{};
  ta.sin_family = AF_INET;
  ta.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(tl, reinterpret_cast<sockaddr*>(&ta), sizeof ta), 0);
  ASSERT_EQ(listen(tl, 1), 0);
  socklen_t tlen = sizeof ta;
  ASSERT_EQ(getsockname(tl, reinterpret_cast<sockaddr*>(&ta), &tlen), 0);

  AggregateRequest req;
  req.scope_id.fill(1);
  req.compat_id.fill(2);
  req.layer_count = kLayers;
  req.block_keys = {Digest{}};
  auto layer_bytes = [&](uint32_t l) { return Bytes(2 * kSection, uint8_t(0x10 + l)); };

  std::thread fake([&] {
    int u = accept(ul, nullptr, nullptr);
    if (u < 0) return;  // the client gave up first (see the shutdowns below)
    uint8_t m[kShmMessageBytes];
    std::vector<int> fds;
    size_t got = 0;
    while (got < sizeof m) {
      auto n = RecvWithFds(u, std::span<uint8_t>(m + got, sizeof m - got), &fds);
      if (!n.ok() || *n == 0) break;
      got += *n;
    }
    EXPECT_EQ(fds.size(), 1u);
    if (fds.size() != 1) {
      for (int f : fds) close(f);
      close(u);
      return;
    }
    struct stat st {};
    fstat(fds[0], &st);
    auto* mem = static_cast<uint8_t*>(
        mmap(nullptr, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0));
    Bytes stream;
    StreamHeader sh{Components::kKV, req.codec,     0, kLayers, 1, req.compat_id,
                    req.scope_id,    Delivery::kShm};
    EncodeStreamHeader(sh, &stream);
    for (uint32_t l = 0; l < kLayers; ++l) {
      Bytes b = layer_bytes(l);
      std::memcpy(mem + l * kSlot, b.data(), b.size());
      EncodeLayerFrameHead(uint16_t(l), 1, &stream, Delivery::kShm);
      EncodeShmBlockRecord(BlockRecord{BlockStatus::kPresent, DigestKind::kLayer, kSection,
                                       kSection, Sha256::Hash(b)},
                           l * kSlot, &stream);
    }
    EncodeEndFrame(0, &stream);
    ShmMessage ok{ShmMessageType::kRegistered, ShmRegisterStatus::kOk, uint64_t(st.st_size)};
    ok.token.fill(0x33);
    Bytes answer;
    EncodeShmMessage(ok, &answer);
    EXPECT_EQ(send(u, answer.data(), answer.size(), MSG_NOSIGNAL), ssize_t(answer.size()));

    int h = accept(tl, nullptr, nullptr);
    if (h < 0) {
      close(u);
      munmap(mem, st.st_size);
      close(fds[0]);
      return;
    }
    std::string in;  // the request: head, then a JSON body of Content-Length bytes
    char c[4096];
    for (;;) {
      size_t end = in.find("\r\n\r\n");
      if (end != std::string::npos) {
        size_t cl = in.find("Content-Length: ");
        if (cl == std::string::npos) cl = in.find("content-length: ");
        if (cl != std::string::npos && in.size() >= end + 4 + std::stoul(in.substr(cl + 16))) break;
      }
      ssize_t n = recv(h, c, sizeof c, 0);
      if (n <= 0) break;
      in.append(c, size_t(n));
    }
    close(u);  // the registration ends before the records are sent
    char size_line[32];
    std::snprintf(size_line, sizeof size_line, "%zx\r\n", stream.size());
    std::string out =
        "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: "
        "chunked\r\nConnection: close\r\n\r\n" +
        std::string(size_line) + std::string(AsStringView(stream)) + "\r\n0\r\n\r\n";
    EXPECT_EQ(send(h, out.data(), out.size(), MSG_NOSIGNAL), ssize_t(out.size()));
    close(h);
    munmap(mem, st.st_size);
    close(fds[0]);
  });

  ClientOptions o;
  o.port = ntohs(ta.sin_port);
  o.shm_socket = path;
  o.shm_buffer_bytes = kLayers * kSlot;
  o.shm_slots = kLayers;
  o.verify_threads = 1;
  std::vector<Bytes> seen;
  {
    Client client(o);
    auto r = client.AggregateGet("bucket", req, [&](const DeliveredLayer& l) {
      seen.emplace_back(l.blocks[0].data.begin(), l.blocks[0].data.end());
      return Status::Ok();
    });
    // A client that failed early leaves the fake in accept: wake it.
    shutdown(ul, SHUT_RDWR);
    shutdown(tl, SHUT_RDWR);
    fake.join();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
  }
  ASSERT_EQ(seen.size(), kLayers);
  for (uint32_t l = 0; l < kLayers; ++l) EXPECT_EQ(seen[l], layer_bytes(l)) << l;
  close(ul);
  close(tl);
  unlink(path.c_str());
}

boost::asio::awaitable<void> ClaimAndUnclaim(ShmRegistration* reg, uint64_t nonce,
                                             std::atomic<int>* refused) {
  auto ex = co_await boost::asio::this_coro::executor;
  bool ok =
      co_await reg->Claim(nonce, ex, ShmRegistration::Clock::now() + std::chrono::seconds(30));
  if (ok) {
    reg->Unclaim(nonce);
  } else {
    ++*refused;
  }
}

// Two requests claiming one free buffer at the same moment, on two threads: one gets it, the other
// waits for its Unclaim and then gets it too. Neither is refused (a refusal is a 409 ShmBufferBusy
// for a buffer that was free a moment later).
TEST(ShmRegistrationRace, SimultaneousClaimsAreServedInTurn) {
  auto buf = SharedBuffer::Create(4096);
  ASSERT_TRUE(buf.ok());
  ShmRegistration reg(std::move(*buf), ShmToken{});
  constexpr int kRounds = 3000;
  // Both threads spin until both arrived (a futex wake-up would skew them by far more than the
  // few instructions in which the claims can collide).
  std::atomic<int> arrived{0};
  std::atomic<int> refused{0};
  auto claimant = [&](uint64_t parity) {
    boost::asio::io_context io(1);
    for (int r = 0; r < kRounds; ++r) {
      arrived.fetch_add(1);
      while (arrived.load() < 2 * (r + 1)) {
      }
      boost::asio::co_spawn(io, ClaimAndUnclaim(&reg, 2 * uint64_t(r) + parity, &refused),
                            boost::asio::detached);
      io.run();
      io.restart();
    }
  };
  std::thread a(claimant, 1), b(claimant, 2);
  a.join();
  b.join();
  EXPECT_EQ(refused.load(), 0);
}

}  // namespace
}  // namespace kvcs::objcache
