// TransportLimits: the per-connection limits of a QUIC server or client (windows, stream
// counts, send buffer and budget, datagrams, timeouts, packet size, congestion control), one
// struct shared by ServerConfig (quic/server.h) and ClientConfig (quic/client.h).
// See docs/protocols/quic-transport.md for what each limit bounds.
#ifndef KVCS_QUIC_TRANSPORT_LIMITS_H_
#define KVCS_QUIC_TRANSPORT_LIMITS_H_

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace kvcs::quic {

// ngtcp2 0.12.1's congestion controllers.
enum class CongestionControl { kReno, kCubic, kBbr, kBbr2 };

// Per-connection limits (both sides). Defaults suit bulk transfer on a LAN.
struct TransportLimits {
  // Streams the PEER may open concurrently (credit returned when a stream is fully done).
  uint64_t max_incoming_bidi_streams = 128;
  uint64_t max_incoming_uni_streams = 128;
  // Initial receive windows; ngtcp2 auto-tunes them up to the max_* values.
  uint64_t initial_stream_window = 1 << 20;
  uint64_t initial_connection_window = 4 << 20;
  uint64_t max_stream_window = 16 << 20;
  uint64_t max_connection_window = 32 << 20;
  // Per-stream send buffer: Write() is refused (CanWrite() false) while this many bytes are
  // buffered and not yet acknowledged. Bounds memory per stream; must exceed the path's
  // bandwidth-delay product for full speed.
  size_t stream_send_buffer = 4 << 20;
  // Connection send budget: CanWrite() is false on every stream while the connection holds this
  // many bytes written but not yet sent (across all streams; bytes of a stream blocked by the
  // peer's stream flow control do not count), and OnCanWrite reaches the waiting streams lowest
  // send order first as packets go out. Without it, N writable streams would each buffer up to
  // stream_send_buffer (MOQT: 64 group streams x 4 MiB = the whole track copied into send
  // buffers at once, ahead of the network and regardless of priority). 4 MiB keeps one stream
  // at full speed (it never binds before stream_send_buffer does) and lets a burst of the
  // largest congestion window we see on loopback (~2-3 MiB) go out at once.
  size_t connection_send_budget = 4 << 20;
  // Largest DATAGRAM frame we accept (transport parameter max_datagram_frame_size); 0 disables.
  uint64_t max_datagram_frame_size = 1200;
  // Datagrams queued for sending before SendOrQueueDatagram refuses more.
  size_t max_queued_datagrams = 256;
  // No packet from the peer for this long: the peer is dead (transport parameter).
  std::chrono::milliseconds idle_timeout{30000};
  // Send a PING when idle for this long to keep the path and the peer's idle timer alive; 0 = off.
  std::chrono::milliseconds keep_alive{0};
  std::chrono::milliseconds handshake_timeout{10000};
  // UDP payload size of our packets (at most kMaxUdpPayload; the peer's advertised
  // max_udp_payload_size also bounds it). Up to 1452, ngtcp2 starts at 1200 and raises the size
  // by path MTU discovery. ABOVE 1452 the size is used as given, without MTU discovery, so the
  // path must carry such datagrams unfragmented: use it only on loopback (MTU 65536) or a
  // jumbo-frame LAN. Big packets cut per-packet work (ngtcp2, AEAD calls, ACKs) on both sides.
  size_t max_udp_payload = 1452;
  // Packet size used instead of max_udp_payload when the peer's address is a loopback address
  // (127.0.0.0/8, ::1), where the path MTU is 65536; 0 = use max_udp_payload there too.
  // 16000 (four packets per 64 KiB GSO send) measured 1.06-1.12 CPU s/GB against 1.75-1.81 for
  // 1452-byte packets (bench/quic, both ends, alternating runs); 32000 or 64000 gained nothing.
  size_t loopback_udp_payload = 16000;
  // Acknowledge after this many ack-eliciting packets (ngtcp2's default is 2). Fewer ACKs cost
  // less CPU on both sides at high rates; the max_ack_delay timer still bounds ACK latency.
  size_t ack_threshold = 2;
  CongestionControl congestion_control = CongestionControl::kCubic;
};

}  // namespace kvcs::quic

#endif  // KVCS_QUIC_TRANSPORT_LIMITS_H_
