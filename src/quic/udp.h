// Batched UDP I/O for QUIC endpoints: recvmmsg on receive; on send, UDP GSO (one sendmsg with a
// UDP_SEGMENT control message carrying up to kMaxBatchPackets equal-sized packets) when the
// kernel supports it, else sendmmsg. Large socket buffers. No allocation per packet: receive
// slots and the transmit batch are allocated once per socket.
//
// Also LossShim: a deterministic drop/delay decision per received datagram, for tests.
//
// Not thread-safe; owned and used by one endpoint on its executor. The file descriptor is
// non-blocking; the owner waits for readiness (Asio) and calls RecvBatch / FlushPending.
#ifndef KVCS_QUIC_UDP_H_
#define KVCS_QUIC_UDP_H_

#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/status.h"

namespace kvcs::quic {

// Largest datagram we receive; also advertised as max_udp_payload_size. Loopback and Ethernet
// paths never need more than 1500; 2048 leaves headroom and keeps the receive ring at 128 KiB.
inline constexpr size_t kRxSlotSize = 2048;
// Datagrams per recvmmsg call (the kernel's UIO_MAXIOV is 1024; 64 amortizes the syscall well).
inline constexpr size_t kRxBatch = 64;
// With UDP GRO the kernel coalesces a peer's GSO run into one buffer of up to 64 KiB; we then
// receive 16 such buffers per recvmmsg (1 MiB of ring) and split them by the reported segment size.
inline constexpr size_t kGroSlotSize = 65536;
inline constexpr size_t kGroBatch = 16;
// Packets per send call. UDP_SEGMENT allows at most 64 segments (UDP_MAX_SEGMENTS) and 64 KiB.
inline constexpr size_t kMaxBatchPackets = 64;
// Largest packet for an Ethernet-sized path (1500-byte MTU minus IPv4 + UDP headers): the
// default packet size stays below it, and stateless replies (Retry, close) use it.
inline constexpr size_t kMaxPacketSize = 1472;
// Largest UDP payload at all (IPv4: 65535 - 20 - 8). Packets this large need a path that
// carries them without fragmentation, such as loopback (MTU 65536); see
// TransportLimits::max_udp_payload. Also the receive size we advertise when UDP GRO gives us
// 64 KiB receive slots.
inline constexpr size_t kMaxUdpPayload = 65507;
// A GSO run (one sendmsg) carries at most this many bytes: UDP's 64 KiB datagram limit, minus
// headroom for the IPv6 header.
inline constexpr size_t kMaxGsoBytes = 65000;
// Requested SO_SNDBUF/SO_RCVBUF (the kernel caps it at net.core.[rw]mem_max).
inline constexpr int kSocketBufferBytes = 8 << 20;

// I/O counters of one endpoint: its UDP socket and the connections driven through it. For
// benchmarks and diagnostics (packets per system call, timer wakeups per packet...).
struct IoStats {
  uint64_t send_calls = 0;          // sendmsg (GSO) / sendmmsg / sendto calls
  uint64_t packets_sent = 0;        // QUIC packets (UDP datagrams or GSO segments) sent
  uint64_t send_blocked = 0;        // sends that hit EAGAIN (then we wait for writability)
  uint64_t recv_calls = 0;          // recvmmsg calls that returned data
  uint64_t recv_buffers = 0;        // buffers filled (a GRO buffer holds several datagrams)
  uint64_t datagrams_received = 0;  // datagrams after splitting GRO buffers
  uint64_t flushes = 0;             // Connection::Flush runs that wrote at least one packet
  uint64_t timer_sets = 0;          // expiry timer (re)arms: each costs a timerfd update
  uint64_t timer_fires = 0;         // expiry timer wakeups
  uint64_t flush_yields = 0;        // bursts cut by the per-flush cap, resumed via a post
};

struct SockAddr {
  sockaddr_storage storage{};
  socklen_t len = 0;
  sockaddr* get() { return reinterpret_cast<sockaddr*>(&storage); }
  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
  std::string ToString() const;
  static Result<SockAddr> Resolve(const std::string& host, uint16_t port);
  uint16_t port() const;
};

struct RxDatagram {
  uint8_t* data;
  size_t len;
  SockAddr* from;
};

class UdpSocket {
 public:
  ~UdpSocket();
  UdpSocket(const UdpSocket&) = delete;
  UdpSocket& operator=(const UdpSocket&) = delete;

  // Binds to `local`; when `connect_to` is set, also connects (client sockets).
  static Result<std::unique_ptr<UdpSocket>> Open(const SockAddr& local, const SockAddr* connect_to);

  int fd() const { return fd_; }
  const SockAddr& local() const { return local_; }
  bool gso() const { return gso_; }
  bool gro() const { return gro_; }
  int rcvbuf() const { return rcvbuf_; }
  // Largest datagram RecvBatch can take whole (advertised as max_udp_payload_size).
  size_t max_rx_payload() const { return std::min(rx_slot_, kMaxUdpPayload); }
  int sndbuf() const { return sndbuf_; }

  // Receives up to kRxBatch datagrams into the internal ring; returns how many (0 when none are
  // waiting). Datagrams stay valid until the next RecvBatch. Truncated datagrams are dropped.
  size_t RecvBatch(std::vector<RxDatagram>* out);

  // --- transmit: build a batch of packets for ONE destination, then Send. ---
  // Space for the next packet in the batch (at least kMaxUdpPayload bytes).
  uint8_t* NextPacketBuffer();
  // Records the packet just written into NextPacketBuffer(). Returns true when the batch must be
  // sent before another packet is added (full, or a short packet ended a GSO run).
  bool CommitPacket(size_t len);
  size_t batch_packets() const { return batch_count_; }
  // Sends the batch to `to` (nullptr on a connected socket). Returns false when the socket would
  // block: the unsent packets are kept (blocked() is true) and must be retried with
  // FlushPending() once writable. Hard errors other than EAGAIN drop the batch (QUIC recovers).
  bool SendBatch(const SockAddr* to);
  bool blocked() const { return blocked_; }
  // Retries a blocked batch; returns true when nothing is pending any more.
  bool FlushPending();
  // Sends one datagram immediately (stateless replies: Retry, version negotiation, close).
  void SendOne(const SockAddr& to, const uint8_t* data, size_t len);

  // Counters (the connections on this socket add theirs).
  IoStats& stats() { return stats_; }
  const IoStats& stats() const { return stats_; }

 private:
  UdpSocket() = default;
  // Sends packets [first, batch_count_) of the batch; returns false on EAGAIN.
  bool SendFrom(size_t first);

  int fd_ = -1;
  bool connected_ = false;
  bool gso_ = false;
  bool gro_ = false;
  int rcvbuf_ = 0, sndbuf_ = 0;
  SockAddr local_;

  std::unique_ptr<uint8_t[]> rx_ring_;
  size_t rx_slot_ = kRxSlotSize, rx_batch_ = kRxBatch;
  std::vector<SockAddr> rx_addrs_;

  std::unique_ptr<uint8_t[]> tx_buf_;  // kTxBufferBytes, contiguous
  size_t tx_offsets_[kMaxBatchPackets + 1] = {};
  size_t batch_count_ = 0;
  size_t batch_sent_ = 0;  // packets of a blocked batch already sent
  SockAddr batch_to_;
  bool batch_has_to_ = false;
  bool blocked_ = false;

  IoStats stats_;
};

// Deterministic loss/delay injection on received datagrams (tests only).
struct LossShimConfig {
  double drop_fraction = 0;   // 0..1
  double delay_fraction = 0;  // 0..1, of the datagrams not dropped
  uint64_t delay_us = 0;
  uint64_t seed = 1;
  bool enabled() const { return drop_fraction > 0 || delay_fraction > 0; }
};

class LossShim {
 public:
  enum class Verdict { kDeliver, kDrop, kDelay };
  explicit LossShim(const LossShimConfig& config) : config_(config), rng_(config.seed) {}
  Verdict Decide() {
    if (!config_.enabled()) return Verdict::kDeliver;
    double x = std::uniform_real_distribution<double>(0, 1)(rng_);
    if (x < config_.drop_fraction) return Verdict::kDrop;
    double y = std::uniform_real_distribution<double>(0, 1)(rng_);
    return y < config_.delay_fraction ? Verdict::kDelay : Verdict::kDeliver;
  }
  const LossShimConfig& config() const { return config_; }
  uint64_t dropped = 0, delayed = 0;

 private:
  LossShimConfig config_;
  std::mt19937_64 rng_;
};

}  // namespace kvcs::quic

#endif  // KVCS_QUIC_UDP_H_
