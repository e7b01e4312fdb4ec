// The store's side of same-host delivery (docs/protocols/objectcache-aggregated.md §8): a Unix
// socket on which clients register shared buffers (shm_buffer.h) and, per aggregated GET, release
// layer slots or cancel; and the registry the aggregated GET handler finds a buffer in by token.
//
// Who may register is who may connect: the socket file is created mode 0600 (the store's user).
// Registering grants nothing to read: an aggregated GET is still authorized by SigV4 over HTTP;
// the token only names where its bytes go, and is 128 random bits known to the registering client.
//
// ShmServer runs the listener on its own thread. ShmRegistration is shared by that thread (release,
// cancel, close) and the HTTP handlers (claim, wait, unclaim): thread-safe. A registration lives
// while its connection is open and any request still uses it.
#ifndef KVCS_OBJCACHE_SHM_SERVER_H_
#define KVCS_OBJCACHE_SHM_SERVER_H_

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/asio.h"
#include "common/status.h"
#include "objcache/shm_buffer.h"
#include "objcache/wait_list.h"

namespace kvcs::objcache {

// One shared buffer: a client's memory the store may map at most this large. Mapping costs the
// store address space and page tables (8 bytes per 4 KiB page); the pages are the client's (the
// store populates only pages already in memory, and writes only what the client's own requests
// deliver).
inline constexpr uint64_t kDefaultMaxShmBufferBytes = 64ull << 30;
// Buffers registered at once: bounds the descriptors, mappings and page tables the store holds.
inline constexpr size_t kDefaultMaxShmRegistrations = 64;

struct ShmServerOptions {
  std::string path;  // Unix socket path (replaced if a stale socket is there)
  uint64_t max_buffer_bytes = kDefaultMaxShmBufferBytes;
  size_t max_registrations = kDefaultMaxShmRegistrations;
};

class ShmRegistration {
 public:
  using Clock = WaitList::Clock;
  ShmRegistration(std::unique_ptr<SharedBuffer> buffer, ShmToken token)
      : buffer_(std::move(buffer)), token_(token) {}

  SharedBuffer& buffer() const { return *buffer_; }
  const ShmToken& token() const { return token_; }

  // HTTP side. Claim makes `nonce` the request that owns the buffer, once no other request does;
  // false if the deadline passes first or the registration closes.
  boost::asio::awaitable<bool> Claim(uint64_t nonce, boost::asio::any_io_executor ex,
                                     Clock::time_point deadline);
  // Waits until the client has released at least `layers` layers of request `nonce`; false when it
  // cancelled the request, the registration closed, or the deadline passed.
  boost::asio::awaitable<bool> WaitReleased(uint64_t nonce, uint64_t layers,
                                            boost::asio::any_io_executor ex,
                                            Clock::time_point deadline);
  // Whether request `nonce` still owns the buffer and was neither cancelled nor closed (checked
  // before each layer: a CANCEL must stop the writes even while the ring has free slots).
  bool Live(uint64_t nonce);
  void Unclaim(uint64_t nonce);

  // Listener side.
  void Release(uint64_t nonce, uint32_t released);
  void Cancel(uint64_t nonce);
  void Close();

 private:
  std::unique_ptr<SharedBuffer> buffer_;
  ShmToken token_;
  std::mutex mu_;
  uint64_t active_ = 0;    // nonce of the request that owns the buffer; 0 = none
  uint64_t released_ = 0;  // layers of that request the client released
  bool cancelled_ = false;
  bool closed_ = false;
  WaitList waiters_;  // requests waiting to claim the buffer or for a release
};

class ShmServer {
 public:
  // Binds and listens on options.path, then serves on its own thread.
  static Result<std::unique_ptr<ShmServer>> Start(ShmServerOptions options);
  ~ShmServer();  // stops, closes every registration (waking their requests), unlinks the path
  ShmServer(const ShmServer&) = delete;
  ShmServer& operator=(const ShmServer&) = delete;

  std::shared_ptr<ShmRegistration> Find(const ShmToken& token) const;
  const std::string& path() const;

  struct Impl;

 private:
  explicit ShmServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvcs::objcache

#endif  // KVCS_OBJCACHE_SHM_SERVER_H_
