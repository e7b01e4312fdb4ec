// Same-host delivery (docs/protocols/objectcache-aggregated.md §8) end to end over real sockets:
// the S3 server on 127.0.0.1, the registration socket in /tmp, clients with shared buffers. The
// shared extension cases already run every behaviour through this path (LocalDiskSharedMemory);
// these tests pin what is particular to it: the slot ring, refusals, cancel, bad registrations.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "common/hex.h"
#include "extension_cases.h"
#include "objcache/shm_buffer.h"
#include "objcache/shm_wire.h"
#include "store/local_store.h"

namespace kvcs::objcache {
namespace {

class LocalBackend final : public ExtensionBackend {
 public:
  LocalBackend() {
    char tmpl[] = "/tmp/kvcs-shm-e2e-XXXXXX";
    EXPECT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    store::LocalStoreOptions so;
    so.sync = false;
    auto st = store::LocalStore::Open(dir_, so);
    EXPECT_TRUE(st.ok());
    if (st.ok()) store_ = std::move(*st);
  }
  ~LocalBackend() override {
    store_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  store::ObjectStore& store() override { return *store_; }
  void Corrupt(const std::string&, const std::string&, const Bytes&, size_t) override {}

 private:
  std::string dir_;
  std::unique_ptr<store::LocalStore> store_;
};

class ShmDelivery : public ExtensionFixture {
 protected:
  static constexpr uint32_t kBlocks = 6, kLayers = 5;
  void SetUp() override {
    Start(std::make_unique<LocalBackend>(), kBlocks, kLayers, {}, /*shm=*/true);
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

}  // namespace
}  // namespace kvcs::objcache
