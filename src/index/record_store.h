// Where the Index Service keeps its records (KVSP v1 as defined by the project, spec §7): the
// interface the service talks to, with two implementations:
//
//   EmbeddedRecordStore (embedded_store.h)  the pure Registry in memory, written through to a
//       local SQLite file so that a restart keeps live records (or memory only, for tests);
//   RedisRecordStore (redis_store.h)        every record in Redis, so that any number of
//       stateless index nodes share them; Redis expires them by itself.
//
// Every call takes the time (`now_ms`, milliseconds since the Unix epoch) so tests control it.
// Errors carry IndexError details: request checks (400), kUnknownCompat (404), kStoreFailed
// (503) when the disk or Redis fails. Implementations are thread-safe.
#ifndef KVCS_INDEX_RECORD_STORE_H_
#define KVCS_INDEX_RECORD_STORE_H_

#include <cstdint>

#include "common/status.h"
#include "index/index_wire.h"

namespace kvcs::index {

class RecordStore {
 public:
  virtual ~RecordStore() = default;

  // Adds or renews the records of `r` (lease now_ms + ttl_ms). Acknowledged means durable for the
  // store's definition (docs/protocols/kvsp-index.md).
  virtual Status Register(const RegisterRequest& r, uint64_t now_ms) = 0;
  virtual Status Withdraw(const WithdrawRequest& r, uint64_t now_ms) = 0;
  virtual Result<LookupResponse> Lookup(const LookupRequest& r, uint64_t now_ms) = 0;
  virtual Result<AnchorsResponse> Anchors(const AnchorsRequest& r, uint64_t now_ms) = 0;
  // Drops records whose lease ended (the service calls it periodically); a store that expires
  // records by itself may do nothing.
  virtual Status Expire(uint64_t now_ms) = 0;
  // "embedded", "memory" or "redis", for logs and metrics.
  virtual const char* kind() const = 0;
};

}  // namespace kvcs::index

#endif  // KVCS_INDEX_RECORD_STORE_H_
