// The Index Service's Redis record store (KVSP v1 as defined by the project, spec §7): every
// record lives in Redis, so any number of stateless index nodes on one Redis share them.
//
// Key schema (docs/protocols/kvsp-index.md), hex lowercase, {…} a Redis Cluster hash tag so that
// one (scope, compat) sits in one slot and a registration is one MULTI/EXEC:
//   <p>:b:{<scope_id>:<compat_id>}:<block_key>   HASH holder -> "<expires_ms> <tier> <first>
//                                                 <count> <codec>,<codec>…"
//   <p>:a:{<scope_id>:<compat_id>}:<anchor_key>  HASH, same fields, anchor records
//   <p>:c:{<scope_id>:<compat_id>}               STRING "1": the compat is known in the scope
//   <p>:h:{<scope_id>:<compat_id>}:<sha256(holder)>  ZSET "b<key>"/"a<key>" -> expires_ms: the
//                                                 holder's records, for kMaxRecordsPerHolder
// A registration is one script (checks the bounds of RedisOptions::limits, then writes); a
// withdrawal one MULTI/EXEC.
// Each key's PEXPIREAT is the latest lease of its fields (NX then GT), so Redis deletes a key
// when its last lease ends: expiry needs no sweeper. A field whose lease ended inside a live key
// is ignored by lookups and deleted by them (only if unchanged, so a concurrent renewal wins).
// Lookups send all their commands in one pipeline: one round trip per lookup.
//
// Thread-safe: one mutex guards the connection; a broken connection is reopened at the next call.
#ifndef KVCS_INDEX_REDIS_STORE_H_
#define KVCS_INDEX_REDIS_STORE_H_

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "index/record_store.h"
#include "index/registry.h"

struct redisContext;
struct redisReply;

namespace kvcs::index {

struct RedisOptions {
  std::string unix_socket;  // when set, host and port are not used
  std::string host = "127.0.0.1";
  int port = 6379;
  int timeout_ms = 2000;        // connect and per-command timeout
  std::string prefix = "kvsp";  // first component of every key (several indexes on one Redis)
  // Holders per key, and records per holder — per (scope, compat) here: one Cluster slot.
  RegistryLimits limits;
};

class RedisRecordStore : public RecordStore {
 public:
  // Connects and checks the server with PING. Errors: kUnavailable (kStoreFailed).
  static Result<std::unique_ptr<RedisRecordStore>> Connect(const RedisOptions& options);
  ~RedisRecordStore() override;

  Status Register(const RegisterRequest& r, uint64_t now_ms) override;
  Status Withdraw(const WithdrawRequest& r, uint64_t now_ms) override;
  Result<LookupResponse> Lookup(const LookupRequest& r, uint64_t now_ms) override;
  Result<AnchorsResponse> Anchors(const AnchorsRequest& r, uint64_t now_ms) override;
  Status Expire(uint64_t now_ms) override;  // nothing to do: Redis expires keys itself
  const char* kind() const override { return "redis"; }

  // The field value of a replica ("<expires_ms> <tier> <first> <count> <codecs>"), and back.
  static std::string EncodeValue(const Replica& r);
  static Result<Replica> DecodeValue(std::string_view holder, std::string_view value);

 private:
  struct ReplyDeleter {
    void operator()(redisReply* r) const;
  };
  using Reply = std::unique_ptr<redisReply, ReplyDeleter>;
  using Command = std::vector<std::string>;

  explicit RedisRecordStore(RedisOptions options) : options_(std::move(options)) {}
  Status ConnectLocked();
  // Sends every command, then reads one reply per command (one round trip).
  Result<std::vector<Reply>> Pipeline(const std::vector<Command>& commands);
  // Replicas of the HGETALL reply of `key` whose lease has not ended, at most `max`; appends to
  // `trims` a command that deletes each other field if it still holds the value seen.
  static std::vector<Replica> LiveOf(const redisReply* hash, const std::string& key,
                                     uint64_t now_ms, size_t max, std::vector<Command>* trims);

  std::string BlockKey(const Digest& scope, const Digest& compat, const Digest& key) const;
  std::string AnchorKey(const Digest& scope, const Digest& compat, const Digest& key) const;
  std::string CompatKey(const Digest& scope, const Digest& compat) const;
  std::string HolderKey(const Digest& scope, const Digest& compat, std::string_view holder) const;
  static std::string HolderMember(char kind, const Digest& key);

  RedisOptions options_;
  std::mutex mu_;
  redisContext* ctx_ = nullptr;
};

}  // namespace kvcs::index

#endif  // KVCS_INDEX_REDIS_STORE_H_
