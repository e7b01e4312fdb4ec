// The raw QUIC baseline benches compare against: a QuicServer on a BenchThread writes N bytes on
// one stream (asked for by a u64 on a client-opened bidi stream, answered with N bytes + FIN) to
// a QuicClientSession run on the calling thread. Back-pressured by the stream's flow control.
// The sender writes copies of one 256 KiB buffer, or (shared_chunk > 0) references to immutable
// shared buffers of shared_chunk bytes (Stream::WriteShared), as a relay sends cached objects.
#ifndef KVCS_BENCH_SUPPORT_RAW_QUIC_STREAM_H_
#define KVCS_BENCH_SUPPORT_RAW_QUIC_STREAM_H_

#include <cstdint>
#include <string>

#include "bench/support/bench_util.h"

namespace kvcs::bench {

struct RawStreamRun {
  double secs = 0;
  uint64_t bytes = 0;
  double client_cpu = 0;  // the calling (receiving) thread
  double server_cpu = 0;  // the server (sending) thread
  bool ok = false;
};

// Sends `total` bytes server -> client over 127.0.0.1; the server lives on `server` for the run.
RawStreamRun RunRawQuicStream(BenchThread& server, const std::string& cert_file,
                              const std::string& key_file, uint64_t total, size_t shared_chunk = 0);

}  // namespace kvcs::bench

#endif  // KVCS_BENCH_SUPPORT_RAW_QUIC_STREAM_H_
