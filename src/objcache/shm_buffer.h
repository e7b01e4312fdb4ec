// SharedBuffer: a memory region one client and the store share on one host, the stand-in for a
// registered RDMA buffer (objectcache.md §4). The client creates it (an anonymous memfd, sized,
// sealed so it can never shrink or grow, mapped and populated) and passes its descriptor to the
// store over a Unix socket (SendWithFd / RecvWithFd, SCM_RIGHTS); the store adopts the descriptor
// only if it carries F_SEAL_SHRINK (a client shrinking a mapped file would make the store fault)
// and maps it too. Both sides populate their mapping up front: a page fault per 4 KiB while
// delivering costs as much as the copy on the machines we measured.
//
// Ownership: a SharedBuffer owns its descriptor and mapping; both go with it. Thread-compatible.
#ifndef KVCS_OBJCACHE_SHM_BUFFER_H_
#define KVCS_OBJCACHE_SHM_BUFFER_H_

#include <cstdint>
#include <memory>
#include <span>

#include "common/bytes.h"
#include "common/status.h"
#include "objcache/shm_wire.h"

namespace kvcs::objcache {

class SharedBuffer {
 public:
  // Client side. REQUIRES: bytes ≥ 1.
  static Result<std::unique_ptr<SharedBuffer>> Create(uint64_t bytes);
  // Store side: takes ownership of `fd` (closed on failure too). Refuses, with the status to
  // answer, a descriptor that is not sealed against shrinking, is empty or over `max_bytes`, or
  // cannot be mapped read-write.
  static Result<std::unique_ptr<SharedBuffer>> Adopt(int fd, uint64_t max_bytes,
                                                     ShmRegisterStatus* why);
  ~SharedBuffer();
  SharedBuffer(const SharedBuffer&) = delete;
  SharedBuffer& operator=(const SharedBuffer&) = delete;

  uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  int fd() const { return fd_; }

 private:
  SharedBuffer(int fd, uint8_t* data, uint64_t size) : fd_(fd), data_(data), size_(size) {}
  int fd_;
  uint8_t* data_;
  uint64_t size_;
};

// Sends all of `bytes` on a connected Unix stream socket with `fd` attached to the first byte
// (SCM_RIGHTS). Blocking; retries on EINTR.
Status SendWithFd(int sock, ByteSpan bytes, int fd);
// One recvmsg of up to out.size() bytes. Any descriptors that arrive are appended to *fds, which
// the caller then owns (at most kMaxFdsPerRecv per call; more are closed by the kernel and the
// call fails). Returns the byte count (0 at end of stream); kUnavailable with EAGAIN on a
// non-blocking socket with nothing to read.
inline constexpr int kMaxFdsPerRecv = 4;  // the protocol sends one; room to detect and refuse more
Result<size_t> RecvWithFds(int sock, std::span<uint8_t> out, std::vector<int>* fds);

}  // namespace kvcs::objcache

#endif  // KVCS_OBJCACHE_SHM_BUFFER_H_
