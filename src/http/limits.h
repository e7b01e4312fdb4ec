// http::Limits: the bounds and timeouts of an http::Server (sizes, deadlines, and the admission
// limits on connections and requests, in total and per client address). The defaults are what
// `kvcs store` serves with; the reasons are in docs/protocols/http.md.
#ifndef KVCS_HTTP_LIMITS_H_
#define KVCS_HTTP_LIMITS_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace kvcs::http {

// Concurrent connections in total: fds and memory (a socket, a receive buffer and a coroutine
// frame each; 1024 × 64 KiB buffers = 64 MiB), and within the common default fd limit (1024 soft
// is raised by systemd services; 4096+ is usual for servers).
inline constexpr size_t kDefaultMaxConnections = 1024;
// Connections from one client address: a quarter of the total, so one client (or one NAT) can
// never hold the server alone, yet well above what a kvcs client pool opens (64 by default).
inline constexpr size_t kDefaultMaxConnectionsPerAddress = 256;
// Requests being served at once for one client address: bounds the handler work (store reads,
// CPU) one client can cause; half of its connections may be busy at once.
inline constexpr size_t kDefaultMaxRequestsPerAddress = 128;
// A request head (and an idle keep-alive connection) must arrive within this. 10 s is ample for
// any real client on any network and short enough that slow heads do not pile up.
inline constexpr std::chrono::milliseconds kDefaultHeaderTimeout = std::chrono::seconds(10);
// ... and within this once the server holds kDefaultPressurePercent of max_connections: a
// legitimate client sends its head in one round trip; a slowloris client is cut off fast.
inline constexpr std::chrono::milliseconds kDefaultHeaderTimeoutUnderPressure =
    std::chrono::seconds(2);
inline constexpr uint32_t kDefaultPressurePercent = 75;
// A connection younger than this is evicted for a newcomer only when no idle connection can go
// instead: a real client sends its head about one round trip after connecting (500 ms is a
// satellite path), so without this grace a stream of newcomers would evict each other before
// any sent its head, and a flood would starve well-behaved newcomers.
inline constexpr std::chrono::milliseconds kDefaultEvictionGrace = std::chrono::seconds(1);
// An idle keep-alive connection idle for less than this is evicted for a newcomer only like a
// young head-pending one (from the address holding the most young connections, for a newcomer
// of an address holding fewer): a client pool sends its next request on a connection well
// within a second, so a hog reopening its connections fast no longer evicts well-behaved
// connections between their requests; one idle longer is the cheapest to lose (the client
// reconnects).
inline constexpr std::chrono::milliseconds kDefaultMinIdleAge = std::chrono::seconds(1);

struct Limits {
  // Request line + headers. Presigned URLs with 1 KiB keys and a few dozen headers fit in
  // 16 KiB; 64 KiB leaves room for long x-amz-meta-* sets.
  uint32_t max_header_bytes = 64 * 1024;
  // Concurrent connections. At the cap a newcomer is still served: the oldest connection that
  // has not completed a request head is closed to make room, else the oldest idle keep-alive
  // one; only when every connection is serving a request is the newcomer closed.
  size_t max_connections = kDefaultMaxConnections;
  // Connections from one client address; past it that address's new connections are closed.
  size_t max_connections_per_address = kDefaultMaxConnectionsPerAddress;
  // Requests in flight from one client address; past it a request is answered 503 and its
  // connection closed.
  size_t max_requests_per_address = kDefaultMaxRequestsPerAddress;
  // Idle keep-alive connections and slow request heads are closed after this...
  std::chrono::milliseconds header_timeout = kDefaultHeaderTimeout;
  // ... or after this (when shorter) while at least pressure_percent of max_connections are open.
  std::chrono::milliseconds header_timeout_under_pressure = kDefaultHeaderTimeoutUnderPressure;
  uint32_t pressure_percent = kDefaultPressurePercent;
  // Eviction order at the cap: head-pending connections older than this, then idle ones idle
  // longer than min_idle_age, then the younger head-pending ones (oldest first in each group).
  std::chrono::milliseconds eviction_grace = kDefaultEvictionGrace;
  // ... and idle connections idle for less than this go after the head-pending ones (see
  // ConnectionAdmission).
  std::chrono::milliseconds min_idle_age = kDefaultMinIdleAge;
  // Each body read and each response write must make progress within this.
  std::chrono::milliseconds io_timeout = std::chrono::seconds(120);
  // TLS handshake deadline.
  std::chrono::milliseconds handshake_timeout = std::chrono::seconds(30);
  // Request bodies longer than this are refused (413 for a declared length, a failing Read for
  // a chunked body). Unbounded by default: S3 objects stream through bounded buffers anyway.
  uint64_t max_body_bytes = std::numeric_limits<uint64_t>::max();
  // Unread request bodies up to this size are drained to keep the connection; larger ones close
  // it.
  uint64_t max_drain_bytes = 256 * 1024;
  // Receive buffer of a connection reading a request body (at most the body's length). Beast
  // reads at most its free capacity at a time. A connection waiting for a head (slow, or idle
  // keep-alive) holds 4 KiB instead: 1024 slow heads held 64 MiB of buffers (issue 19).
  size_t receive_buffer_bytes = 64 * 1024;
  // On shutdown, in-flight requests get this long before the event loop stops.
  std::chrono::milliseconds shutdown_grace = std::chrono::seconds(5);
};

}  // namespace kvcs::http

#endif  // KVCS_HTTP_LIMITS_H_
