// The Index Service's embedded record store (KVSP v1 as defined by the project, spec §7): the
// pure Registry answers every lookup from memory; each Register/Withdraw/Expire is written through
// to a local SQLite database (one file, WAL journal, synchronous=FULL) before it is acknowledged,
// so a restart reloads every record whose lease has not ended. With an empty path nothing is
// persisted (tests, throwaway indexes).
//
// Layout (docs/protocols/kvsp-index.md): one table `records`, primary key (kind, scope_id,
// compat_id, key, holder), an index on expires_ms for the expiry sweep.
//
// Thread-safe: one mutex serializes calls.
#ifndef KVCS_INDEX_EMBEDDED_STORE_H_
#define KVCS_INDEX_EMBEDDED_STORE_H_

#include <memory>
#include <mutex>
#include <string>

#include "index/record_store.h"
#include "index/registry.h"

struct sqlite3;

namespace kvcs::index {

class EmbeddedRecordStore : public RecordStore {
 public:
  // Opens (creating if needed) the database at `path`, deletes records expired at now_ms and
  // loads the rest. An empty path keeps records in memory only. Errors: kIoError
  // (kStoreFailed) when the file cannot be opened or is not a kvcs index database.
  static Result<std::unique_ptr<EmbeddedRecordStore>> Open(const std::string& path, uint64_t now_ms,
                                                           RegistryLimits limits = {});
  ~EmbeddedRecordStore() override;

  Status Register(const RegisterRequest& r, uint64_t now_ms) override;
  Status Withdraw(const WithdrawRequest& r, uint64_t now_ms) override;
  Result<LookupResponse> Lookup(const LookupRequest& r, uint64_t now_ms) override;
  Result<AnchorsResponse> Anchors(const AnchorsRequest& r, uint64_t now_ms) override;
  Status Expire(uint64_t now_ms) override;
  const char* kind() const override { return db_ ? "embedded" : "memory"; }

  // Records in memory (live or not yet expired).
  size_t size() const;
  // Rows found unreadable at Open (bad tier, codec, layer range); they were deleted.
  size_t skipped_rows() const { return skipped_rows_; }

 private:
  EmbeddedRecordStore(sqlite3* db, RegistryLimits limits);
  Status Load(uint64_t now_ms);
  // Runs `sql` (no results); kStoreFailed on error.
  Status Exec(const char* sql);

  mutable std::mutex mu_;
  sqlite3* db_;  // null when memory only
  Registry registry_;
  size_t skipped_rows_ = 0;
};

}  // namespace kvcs::index

#endif  // KVCS_INDEX_EMBEDDED_STORE_H_
