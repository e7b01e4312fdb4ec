// KVSP v1 as defined by the project: the Index Service's embedded record store (§7) on SQLite.
#include "index/embedded_store.h"

#include <sqlite3.h>

#include <cstring>
#include <utility>

namespace kvcs::index {
namespace {

// PRAGMA user_version of a kvcs index database; another value is refused.
constexpr int kSchemaVersion = 1;

constexpr const char* kSchema =
    "CREATE TABLE IF NOT EXISTS records ("
    " kind INTEGER NOT NULL, scope_id BLOB NOT NULL, compat_id BLOB NOT NULL, key BLOB NOT NULL,"
    " holder TEXT NOT NULL, tier TEXT NOT NULL, codecs TEXT NOT NULL,"
    " layer_first INTEGER NOT NULL, layer_count INTEGER NOT NULL, expires_ms INTEGER NOT NULL,"
    " PRIMARY KEY (kind, scope_id, compat_id, key, holder)) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS records_by_expiry ON records(expires_ms);";

Status StoreError(sqlite3* db, std::string what) {
  return IndexStatus(IndexError::kStoreFailed,
                     "index store: " + what + ": " + (db ? sqlite3_errmsg(db) : "out of memory"));
}

// A prepared statement, finalized on scope exit.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) { rc_ = sqlite3_prepare_v2(db, sql, -1, &s_, nullptr); }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  bool ok() const { return rc_ == SQLITE_OK; }
  sqlite3_stmt* get() const { return s_; }
  void Blob(int i, const Digest& d) {
    sqlite3_bind_blob(s_, i, d.data(), int(d.size()), SQLITE_STATIC);
  }
  void Text(int i, const std::string& t) {
    sqlite3_bind_text(s_, i, t.data(), int(t.size()), SQLITE_STATIC);
  }
  void Int(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }
  // Runs a statement without results and resets it for the next bindings.
  bool Run() {
    int rc = sqlite3_step(s_);
    sqlite3_reset(s_);
    return rc == SQLITE_DONE;
  }

 private:
  sqlite3_stmt* s_ = nullptr;
  int rc_;
};

bool ColumnDigest(sqlite3_stmt* s, int col, Digest* d) {
  if (sqlite3_column_type(s, col) != SQLITE_BLOB ||
      sqlite3_column_bytes(s, col) != int(d->size())) {
    return false;
  }
  std::memcpy(d->data(), sqlite3_column_blob(s, col), d->size());
  return true;
}

std::string ColumnText(sqlite3_stmt* s, int col) {
  const unsigned char* t = sqlite3_column_text(s, col);
  return t ? std::string(reinterpret_cast<const char*>(t), size_t(sqlite3_column_bytes(s, col)))
           : std::string();
}

}  // namespace

EmbeddedRecordStore::EmbeddedRecordStore(sqlite3* db, RegistryLimits limits)
    : db_(db), registry_(limits) {}

EmbeddedRecordStore::~EmbeddedRecordStore() {
  if (db_) sqlite3_close(db_);
}

Result<std::unique_ptr<EmbeddedRecordStore>> EmbeddedRecordStore::Open(const std::string& path,
                                                                       uint64_t now_ms,
                                                                       RegistryLimits limits) {
  if (path.empty()) {
    return std::unique_ptr<EmbeddedRecordStore>(new EmbeddedRecordStore(nullptr, limits));
  }
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  std::unique_ptr<EmbeddedRecordStore> store(new EmbeddedRecordStore(db, limits));
  if (rc != SQLITE_OK) return StoreError(db, "cannot open " + path);
  sqlite3_busy_timeout(db, 5000);
  // WAL: a commit appends to the log; synchronous=FULL fsyncs the log at every commit, so an
  // acknowledged Register survives a power loss, not only a crash of the process.
  KVCS_RETURN_IF_ERROR(store->Exec("PRAGMA journal_mode=WAL"));
  KVCS_RETURN_IF_ERROR(store->Exec("PRAGMA synchronous=FULL"));
  {
    Stmt v(db, "PRAGMA user_version");
    if (!v.ok() || sqlite3_step(v.get()) != SQLITE_ROW) return StoreError(db, "user_version");
    int version = sqlite3_column_int(v.get(), 0);
    if (version != 0 && version != kSchemaVersion) {
      return IndexStatus(IndexError::kStoreFailed,
                         "index store: " + path + " has schema version " + std::to_string(version) +
                             ", this kvcs reads version " + std::to_string(kSchemaVersion));
    }
  }
  KVCS_RETURN_IF_ERROR(store->Exec(kSchema));
  KVCS_RETURN_IF_ERROR(
      store->Exec(("PRAGMA user_version=" + std::to_string(kSchemaVersion)).c_str()));
  KVCS_RETURN_IF_ERROR(store->Load(now_ms));
  return store;
}

Status EmbeddedRecordStore::Exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    return IndexStatus(IndexError::kStoreFailed, "index store: " + msg);
  }
  return Status::Ok();
}

Status EmbeddedRecordStore::Load(uint64_t now_ms) {
  {
    Stmt del(db_, "DELETE FROM records WHERE expires_ms <= ?1");
    if (!del.ok()) return StoreError(db_, "prepare");
    del.Int(1, int64_t(now_ms));
    if (!del.Run()) return StoreError(db_, "deleting expired records");
  }
  Stmt sel(db_,
           "SELECT kind, scope_id, compat_id, key, holder, tier, codecs, layer_first, layer_count,"
           " expires_ms FROM records");
  if (!sel.ok()) return StoreError(db_, "prepare");
  std::vector<Record> bad;
  int rc;
  while ((rc = sqlite3_step(sel.get())) == SQLITE_ROW) {
    sqlite3_stmt* s = sel.get();
    Record rec;
    int64_t kind = sqlite3_column_int64(s, 0);
    rec.kind = kind == 1 ? RecordKind::kAnchor : RecordKind::kBlock;
    bool ok = (kind == 0 || kind == 1) && ColumnDigest(s, 1, &rec.scope_id) &&
              ColumnDigest(s, 2, &rec.compat_id) && ColumnDigest(s, 3, &rec.key);
    rec.replica.info.holder = ColumnText(s, 4);
    auto tier = TierFromName(ColumnText(s, 5));
    auto codecs = ParseCodecListText(ColumnText(s, 6));
    int64_t first = sqlite3_column_int64(s, 7), count = sqlite3_column_int64(s, 8);
    int64_t expires = sqlite3_column_int64(s, 9);
    ok = ok && tier.ok() && codecs.ok() && first >= 0 && count > 0 &&
         first + count <= int64_t(kMaxLayerEnd) && expires > 0;
    if (ok) {
      rec.replica.info.tier = *tier;
      rec.replica.info.codecs = *codecs;
      rec.replica.info.layer_first = uint32_t(first);
      rec.replica.info.layer_count = uint32_t(count);
      rec.replica.expires_ms = uint64_t(expires);
      ok = registry_.Restore(rec, now_ms).ok();
    }
    if (!ok) bad.push_back(rec);
  }
  if (rc != SQLITE_DONE) return StoreError(db_, "reading records");
  // Unreadable rows would fail again at every start: delete them (by primary key).
  Stmt del(db_,
           "DELETE FROM records WHERE kind=?1 AND scope_id=?2 AND compat_id=?3 AND key=?4 AND "
           "holder=?5");
  if (!del.ok()) return StoreError(db_, "prepare");
  for (const Record& r : bad) {
    del.Int(1, r.kind == RecordKind::kAnchor ? 1 : 0);
    del.Blob(2, r.scope_id);
    del.Blob(3, r.compat_id);
    del.Blob(4, r.key);
    del.Text(5, r.replica.info.holder);
    if (!del.Run()) return StoreError(db_, "deleting an unreadable record");
  }
  skipped_rows_ = bad.size();
  return Status::Ok();
}

Status EmbeddedRecordStore::Register(const RegisterRequest& r, uint64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  KVCS_RETURN_IF_ERROR(registry_.CheckRegister(r, now_ms));
  if (db_) {
    KVCS_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
    Stmt up(db_,
            "INSERT OR REPLACE INTO records (kind, scope_id, compat_id, key, holder, tier, codecs,"
            " layer_first, layer_count, expires_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, "
            "?10)");
    bool ok = up.ok();
    std::string tier(TierName(r.replica.tier)), codecs = CodecListText(r.replica.codecs);
    for (const Record& rec : Registry::RecordsOf(r, now_ms)) {
      if (!ok) break;
      up.Int(1, rec.kind == RecordKind::kAnchor ? 1 : 0);
      up.Blob(2, rec.scope_id);
      up.Blob(3, rec.compat_id);
      up.Blob(4, rec.key);
      up.Text(5, rec.replica.info.holder);
      up.Text(6, tier);
      up.Text(7, codecs);
      up.Int(8, rec.replica.info.layer_first);
      up.Int(9, rec.replica.info.layer_count);
      up.Int(10, int64_t(rec.replica.expires_ms));
      ok = up.Run();
    }
    if (!ok) {
      Status s = StoreError(db_, "writing records");
      Exec("ROLLBACK").ok();
      return s;
    }
    KVCS_RETURN_IF_ERROR(Exec("COMMIT"));
  }
  return registry_.Register(r, now_ms);
}

Status EmbeddedRecordStore::Withdraw(const WithdrawRequest& r, uint64_t) {
  std::lock_guard<std::mutex> lock(mu_);
  if (db_) {
    KVCS_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
    Stmt del(db_,
             "DELETE FROM records WHERE scope_id=?1 AND compat_id=?2 AND key=?3 AND holder=?4 "
             "AND kind IN (0, 1)");
    bool ok = del.ok();
    for (const Digest& k : r.block_keys) {
      if (!ok) break;
      del.Blob(1, r.scope_id);
      del.Blob(2, r.compat_id);
      del.Blob(3, k);
      del.Text(4, r.holder);
      ok = del.Run();
    }
    if (!ok) {
      Status s = StoreError(db_, "withdrawing records");
      Exec("ROLLBACK").ok();
      return s;
    }
    KVCS_RETURN_IF_ERROR(Exec("COMMIT"));
  }
  registry_.Withdraw(r);
  return Status::Ok();
}

Result<LookupResponse> EmbeddedRecordStore::Lookup(const LookupRequest& r, uint64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  return registry_.Lookup(r, now_ms);
}

Result<AnchorsResponse> EmbeddedRecordStore::Anchors(const AnchorsRequest& r, uint64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  return registry_.Anchors(r, now_ms);
}

Status EmbeddedRecordStore::Expire(uint64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  registry_.Expire(now_ms);
  if (!db_) return Status::Ok();
  Stmt del(db_, "DELETE FROM records WHERE expires_ms <= ?1");
  if (!del.ok()) return StoreError(db_, "prepare");
  del.Int(1, int64_t(now_ms));
  if (!del.Run()) return StoreError(db_, "deleting expired records");
  return Status::Ok();
}

size_t EmbeddedRecordStore::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return registry_.size();
}

}  // namespace kvcs::index
