// Shared buffers and descriptor passing. See shm_buffer.h.
#include "objcache/shm_buffer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace kvcs::objcache {
namespace {

Status Errno(const char* what) {
  return Status(Code::kInternal, std::string(what) + ": " + std::strerror(errno), errno);
}

}  // namespace

Result<std::unique_ptr<SharedBuffer>> SharedBuffer::Create(uint64_t bytes) {
  if (bytes == 0) return InvalidArgument("shared buffer: size must be at least 1 byte");
  int fd = memfd_create("kvcs-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return Errno("memfd_create");
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    Status s = Errno("sizing or sealing the shared buffer");
    close(fd);
    return s;
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED) {
    Status s = Errno("mmap of the shared buffer (is the size within memory limits?)");
    close(fd);
    return s;
  }
  return std::unique_ptr<SharedBuffer>(new SharedBuffer(fd, static_cast<uint8_t*>(p), bytes));
}

Result<std::unique_ptr<SharedBuffer>> SharedBuffer::Adopt(int fd, uint64_t max_bytes,
                                                          ShmRegisterStatus* why) {
  auto refuse = [&](ShmRegisterStatus s, const char* what) -> Status {
    *why = s;
    close(fd);
    return Status(Code::kInvalidArgument, std::string("shared buffer: ") + what,
                  static_cast<int>(s));
  };
  int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0 || !(seals & F_SEAL_SHRINK))
    return refuse(ShmRegisterStatus::kNotSealed, "not a memfd sealed against shrinking");
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size <= 0 || uint64_t(st.st_size) > max_bytes)
    return refuse(ShmRegisterStatus::kBadSize, "empty or over the store's bound");
  const uint64_t size = uint64_t(st.st_size);
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED) return refuse(ShmRegisterStatus::kMapFailed, "cannot map it read-write");
  *why = ShmRegisterStatus::kOk;
  return std::unique_ptr<SharedBuffer>(new SharedBuffer(fd, static_cast<uint8_t*>(p), size));
}

SharedBuffer::~SharedBuffer() {
  munmap(data_, size_);
  close(fd_);
}

Status SendWithFd(int sock, ByteSpan bytes, int fd) {
  size_t sent = 0;
  bool fd_sent = false;
  while (sent < bytes.size()) {
    iovec iov{const_cast<uint8_t*>(bytes.data() + sent), bytes.size() - sent};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    if (!fd_sent) {
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
    }
    ssize_t n = sendmsg(sock, &msg, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status(Code::kUnavailable, std::string("sendmsg: ") + std::strerror(errno));
    fd_sent = true;
    sent += size_t(n);
  }
  return Status::Ok();
}

Result<size_t> RecvWithFds(int sock, std::span<uint8_t> out, std::vector<int>* fds) {
  iovec iov{out.data(), out.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerRecv)];
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    int e = errno;
    return Status(Code::kUnavailable, std::string("recvmsg: ") + std::strerror(e), e);
  }
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      fds->push_back(fd);
    }
  }
  if (msg.msg_flags & MSG_CTRUNC)
    return Status(Code::kInvalidArgument, "recvmsg: more descriptors than the protocol allows");
  return size_t(n);
}

}  // namespace kvcs::objcache
