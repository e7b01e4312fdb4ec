#include "quic/udp.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/udp.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

namespace kvcs::quic {
namespace {
// Transmit buffer: a full batch of Ethernet-sized packets (sendmmsg without GSO), plus room for
// one more packet of any size, so NextPacketBuffer always has kMaxUdpPayload bytes.
constexpr size_t kTxBufferBytes = kMaxBatchPackets * kMaxPacketSize + kMaxUdpPayload;
}  // namespace

std::string SockAddr::ToString() const {
  char host[INET6_ADDRSTRLEN] = "?";
  uint16_t p = port();
  if (storage.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, host,
              sizeof(host));
    return std::string(host) + ":" + std::to_string(p);
  }
  inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr, host,
            sizeof(host));
  std::string out = "[";  // built by appends: GCC 12 warns falsely on "[" + std::string
  out += host;
  out += "]:";
  out += std::to_string(p);
  return out;
}

uint16_t SockAddr::port() const {
  if (storage.ss_family == AF_INET) {
    return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  }
  return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
}

Result<SockAddr> SockAddr::Resolve(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string service = std::to_string(port);
  if (int rv = getaddrinfo(host.c_str(), service.c_str(), &hints, &res); rv != 0) {
    return Status(Code::kUnavailable, "cannot resolve '" + host + "': " + gai_strerror(rv));
  }
  SockAddr out;
  memcpy(&out.storage, res->ai_addr, res->ai_addrlen);
  out.len = res->ai_addrlen;
  freeaddrinfo(res);
  return out;
}

UdpSocket::~UdpSocket() {
  if (fd_ >= 0) close(fd_);
}

Result<std::unique_ptr<UdpSocket>> UdpSocket::Open(const SockAddr& local,
                                                   const SockAddr* connect_to) {
  std::unique_ptr<UdpSocket> s(new UdpSocket());
  s->fd_ = socket(local.storage.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s->fd_ < 0) return IoError(std::string("socket: ") + strerror(errno));
  int size = kSocketBufferBytes;
  setsockopt(s->fd_, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
  setsockopt(s->fd_, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
  socklen_t sl = sizeof(int);
  getsockopt(s->fd_, SOL_SOCKET, SO_RCVBUF, &s->rcvbuf_, &sl);
  sl = sizeof(int);
  getsockopt(s->fd_, SOL_SOCKET, SO_SNDBUF, &s->sndbuf_, &sl);
  if (bind(s->fd_, local.get(), local.len) != 0) {
    return IoError("bind " + local.ToString() + ": " + strerror(errno));
  }
  if (connect_to) {
    if (connect(s->fd_, connect_to->get(), connect_to->len) != 0) {
      return IoError("connect " + connect_to->ToString() + ": " + strerror(errno));
    }
    s->connected_ = true;
  }
  s->local_.len = sizeof(s->local_.storage);
  getsockname(s->fd_, s->local_.get(), &s->local_.len);
  // GSO probe: the option exists on kernels >= 4.18. Setting 0 is a no-op default.
  int zero = 0;
  s->gso_ = setsockopt(s->fd_, SOL_UDP, UDP_SEGMENT, &zero, sizeof(zero)) == 0;
  // GRO probe (kernel >= 5.0): receive a peer's GSO run as one buffer.
  int one = 1;
  s->gro_ = setsockopt(s->fd_, SOL_UDP, UDP_GRO, &one, sizeof(one)) == 0;
  if (s->gro_) {
    s->rx_slot_ = kGroSlotSize;
    s->rx_batch_ = kGroBatch;
  }
  s->rx_ring_.reset(new uint8_t[s->rx_batch_ * s->rx_slot_]);
  s->rx_addrs_.resize(s->rx_batch_);
  s->tx_buf_.reset(new uint8_t[kTxBufferBytes]);
  return s;
}

size_t UdpSocket::RecvBatch(std::vector<RxDatagram>* out) {
  out->clear();
  mmsghdr msgs[kRxBatch];
  iovec iovs[kRxBatch];
  // Control space for the UDP_GRO segment size (an int).
  alignas(cmsghdr) char ctrl[kRxBatch][CMSG_SPACE(sizeof(int))];
  for (size_t i = 0; i < rx_batch_; ++i) {
    iovs[i] = {rx_ring_.get() + i * rx_slot_, rx_slot_};
    msgs[i].msg_hdr = {};
    msgs[i].msg_hdr.msg_name = &rx_addrs_[i].storage;
    msgs[i].msg_hdr.msg_namelen = sizeof(sockaddr_storage);
    msgs[i].msg_hdr.msg_iov = &iovs[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
    if (gro_) {
      msgs[i].msg_hdr.msg_control = ctrl[i];
      msgs[i].msg_hdr.msg_controllen = sizeof(ctrl[i]);
    }
    msgs[i].msg_len = 0;
  }
  int n = recvmmsg(fd_, msgs, static_cast<unsigned>(rx_batch_), MSG_DONTWAIT, nullptr);
  if (n <= 0) return 0;
  ++stats_.recv_calls;
  stats_.recv_buffers += static_cast<uint64_t>(n);
  for (int i = 0; i < n; ++i) {
    msghdr& h = msgs[i].msg_hdr;
    if (h.msg_flags & MSG_TRUNC) continue;
    rx_addrs_[i].len = h.msg_namelen;
    uint8_t* base = rx_ring_.get() + i * rx_slot_;
    size_t len = msgs[i].msg_len;
    size_t seg = len;
    if (gro_) {
      for (cmsghdr* cm = CMSG_FIRSTHDR(&h); cm; cm = CMSG_NXTHDR(&h, cm)) {
        if (cm->cmsg_level == SOL_UDP && cm->cmsg_type == UDP_GRO) {
          int v = 0;
          memcpy(&v, CMSG_DATA(cm), sizeof(v));
          if (v > 0) seg = static_cast<size_t>(v);
        }
      }
    }
    for (size_t off = 0; off < len; off += seg) {
      out->push_back({base + off, std::min(seg, len - off), &rx_addrs_[i]});
      ++stats_.datagrams_received;
    }
  }
  return out->size();
}

uint8_t* UdpSocket::NextPacketBuffer() { return tx_buf_.get() + tx_offsets_[batch_count_]; }

bool UdpSocket::CommitPacket(size_t len) {
  ++batch_count_;
  tx_offsets_[batch_count_] = tx_offsets_[batch_count_ - 1] + len;
  if (batch_count_ >= kMaxBatchPackets) return true;
  if (tx_offsets_[batch_count_] + kMaxUdpPayload > kTxBufferBytes) return true;
  if (!gso_) return false;
  size_t first = tx_offsets_[1];
  // A GSO run is equal-sized packets with an optional shorter last one; 64 KiB at most.
  return len < first || tx_offsets_[batch_count_] + first > kMaxGsoBytes;
}

bool UdpSocket::SendBatch(const SockAddr* to) {
  if (batch_count_ == 0) return true;
  batch_has_to_ = to != nullptr && !connected_;
  if (batch_has_to_) batch_to_ = *to;
  batch_sent_ = 0;
  if (!SendFrom(0)) {
    blocked_ = true;
    return false;
  }
  batch_count_ = 0;
  return true;
}

bool UdpSocket::FlushPending() {
  if (!blocked_) return true;
  if (!SendFrom(batch_sent_)) return false;
  blocked_ = false;
  batch_count_ = 0;
  return true;
}

bool UdpSocket::SendFrom(size_t first) {
  uint8_t* base = tx_buf_.get();
  sockaddr* name = batch_has_to_ ? batch_to_.get() : nullptr;
  socklen_t namelen = batch_has_to_ ? batch_to_.len : 0;
  while (first < batch_count_) {
    size_t seg = tx_offsets_[first + 1] - tx_offsets_[first];
    if (gso_ && batch_count_ - first > 1) {
      // All remaining packets form one GSO run (CommitPacket guarantees the shape).
      iovec iov{base + tx_offsets_[first], tx_offsets_[batch_count_] - tx_offsets_[first]};
      alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(uint16_t))] = {};
      msghdr msg{};
      msg.msg_name = name;
      msg.msg_namelen = namelen;
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = ctrl;
      msg.msg_controllen = sizeof(ctrl);
      cmsghdr* cm = CMSG_FIRSTHDR(&msg);
      cm->cmsg_level = SOL_UDP;
      cm->cmsg_type = UDP_SEGMENT;
      cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
      uint16_t seg16 = static_cast<uint16_t>(seg);
      memcpy(CMSG_DATA(cm), &seg16, sizeof(seg16));
      ++stats_.send_calls;
      ssize_t rv = sendmsg(fd_, &msg, 0);
      if (rv < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          ++stats_.send_blocked;
          batch_sent_ = first;
          return false;
        }
        if (errno == EIO || errno == EINVAL || errno == EOPNOTSUPP) {
          gso_ = false;  // the device cannot segment: fall back to sendmmsg for good
          continue;
        }
        first = batch_count_;  // drop; loss recovery resends
        break;
      }
      stats_.packets_sent += batch_count_ - first;
      first = batch_count_;
      break;
    }
    mmsghdr msgs[kMaxBatchPackets];
    iovec iovs[kMaxBatchPackets];
    size_t n = batch_count_ - first;
    for (size_t i = 0; i < n; ++i) {
      size_t k = first + i;
      iovs[i] = {base + tx_offsets_[k], tx_offsets_[k + 1] - tx_offsets_[k]};
      msgs[i].msg_hdr = {};
      msgs[i].msg_hdr.msg_name = name;
      msgs[i].msg_hdr.msg_namelen = namelen;
      msgs[i].msg_hdr.msg_iov = &iovs[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
    }
    ++stats_.send_calls;
    int rv = sendmmsg(fd_, msgs, static_cast<unsigned>(n), 0);
    if (rv < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        ++stats_.send_blocked;
        batch_sent_ = first;
        return false;
      }
      first = batch_count_;
      break;
    }
    stats_.packets_sent += static_cast<uint64_t>(rv);
    first += rv;
  }
  return true;
}

void UdpSocket::SendOne(const SockAddr& to, const uint8_t* data, size_t len) {
  if (connected_) {
    (void)send(fd_, data, len, 0);
  } else {
    (void)sendto(fd_, data, len, 0, to.get(), to.len);
  }
  ++stats_.send_calls;
  ++stats_.packets_sent;
}

}  // namespace kvcs::quic
