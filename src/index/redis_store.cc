// KVSP v1 as defined by the project: the Index Service's Redis record store (§7).
#include "index/redis_store.h"

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <algorithm>
#include <charconv>
#include <utility>

#include "common/crypto.h"
#include "common/hex.h"

namespace kvcs::index {
namespace {

// Deletes a hash field only if it still holds the value a lookup saw expire, so that a renewal
// written meanwhile by another index node is kept.
constexpr const char* kTrimScript =
    "if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then "
    "return redis.call('HDEL', KEYS[1], ARGV[1]) end return 0";

// A registration, atomically: checks kMaxHoldersPerKey on every record key and
// kMaxRecordsPerHolder on the holder's record set (a ZSET of its records scored by expiry; ended
// ones are dropped first), then writes every record, the compat marker and the set, each key's
// expiry raised to the new lease (NX, then GT). KEYS: n record keys, the compat marker, the
// holder's set. ARGV: holder, value, lease end, now, max holders, max records, then the n set
// members. Returns 0, or 1 (a key is full), 2 (the holder is full).
constexpr const char* kRegisterScript = R"lua(
local holder, value, at, now = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local max_holders, max_records = tonumber(ARGV[5]), tonumber(ARGV[6])
local n = #KEYS - 2
local hz = KEYS[n + 2]
redis.call('ZREMRANGEBYSCORE', hz, '-inf', now)
local added = 0
for i = 1, n do
  local k = KEYS[i]
  if redis.call('HEXISTS', k, holder) == 0 and redis.call('HLEN', k) >= max_holders then
    local live = 0
    local all = redis.call('HGETALL', k)
    for j = 2, #all, 2 do
      local e = tonumber(string.match(all[j], '^%d+'))
      if e and e > now then live = live + 1 end
    end
    if live >= max_holders then return 1 end
  end
  if not redis.call('ZSCORE', hz, ARGV[6 + i]) then added = added + 1 end
end
if redis.call('ZCARD', hz) + added > max_records then return 2 end
for i = 1, n do
  local k = KEYS[i]
  redis.call('HSET', k, holder, value)
  redis.call('PEXPIREAT', k, at, 'NX')
  redis.call('PEXPIREAT', k, at, 'GT')
  redis.call('ZADD', hz, at, ARGV[6 + i])
end
redis.call('SET', KEYS[n + 1], '1', 'KEEPTTL')
for _, k in ipairs({KEYS[n + 1], hz}) do
  redis.call('PEXPIREAT', k, at, 'NX')
  redis.call('PEXPIREAT', k, at, 'GT')
end
return 0
)lua";

Status Unavailable(std::string msg) {
  return IndexStatus(IndexError::kStoreFailed, "index store (redis): " + std::move(msg));
}

timeval Timeval(int ms) { return timeval{ms / 1000, (ms % 1000) * 1000}; }

bool ParseU64(std::string_view s, uint64_t* v) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

void RedisRecordStore::ReplyDeleter::operator()(redisReply* r) const { freeReplyObject(r); }

RedisRecordStore::~RedisRecordStore() {
  if (ctx_) redisFree(ctx_);
}

Result<std::unique_ptr<RedisRecordStore>> RedisRecordStore::Connect(const RedisOptions& options) {
  std::unique_ptr<RedisRecordStore> store(new RedisRecordStore(options));
  std::lock_guard<std::mutex> lock(store->mu_);
  KVCS_RETURN_IF_ERROR(store->ConnectLocked());
  KVCS_ASSIGN_OR_RETURN(auto replies, store->Pipeline({{"PING"}}));
  if (replies[0]->type != REDIS_REPLY_STATUS) return Unavailable("PING was not answered PONG");
  return store;
}

Status RedisRecordStore::ConnectLocked() {
  if (ctx_ && ctx_->err == 0) return Status::Ok();
  if (ctx_) redisFree(ctx_);
  timeval tv = Timeval(options_.timeout_ms);
  ctx_ = options_.unix_socket.empty()
             ? redisConnectWithTimeout(options_.host.c_str(), options_.port, tv)
             : redisConnectUnixWithTimeout(options_.unix_socket.c_str(), tv);
  if (!ctx_ || ctx_->err) {
    std::string where = options_.unix_socket.empty()
                            ? options_.host + ":" + std::to_string(options_.port)
                            : options_.unix_socket;
    std::string why = ctx_ ? ctx_->errstr : "out of memory";
    if (ctx_) redisFree(ctx_);
    ctx_ = nullptr;
    return Unavailable("cannot connect to " + where + ": " + why);
  }
  redisSetTimeout(ctx_, tv);
  return Status::Ok();
}

Result<std::vector<RedisRecordStore::Reply>> RedisRecordStore::Pipeline(
    const std::vector<Command>& commands) {
  KVCS_RETURN_IF_ERROR(ConnectLocked());
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const Command& c : commands) {
    argv.clear();
    lens.clear();
    for (const std::string& a : c) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    if (redisAppendCommandArgv(ctx_, int(argv.size()), argv.data(), lens.data()) != REDIS_OK) {
      return Unavailable(std::string("cannot queue a command: ") + ctx_->errstr);
    }
  }
  std::vector<Reply> replies;
  replies.reserve(commands.size());
  for (size_t i = 0; i < commands.size(); ++i) {
    void* r = nullptr;
    if (redisGetReply(ctx_, &r) != REDIS_OK || !r) {
      // The connection is out of step now: drop it; the next call reconnects.
      std::string why = ctx_->errstr;
      redisFree(ctx_);
      ctx_ = nullptr;
      return Unavailable("no reply: " + why);
    }
    replies.emplace_back(static_cast<redisReply*>(r));
  }
  for (const Reply& r : replies) {
    if (r->type == REDIS_REPLY_ERROR) {
      return Unavailable("server error: " + std::string(r->str, r->len));
    }
  }
  return replies;
}

std::string RedisRecordStore::BlockKey(const Digest& scope, const Digest& compat,
                                       const Digest& key) const {
  return options_.prefix + ":b:{" + ToHex(scope) + ":" + ToHex(compat) + "}:" + ToHex(key);
}
std::string RedisRecordStore::AnchorKey(const Digest& scope, const Digest& compat,
                                        const Digest& key) const {
  return options_.prefix + ":a:{" + ToHex(scope) + ":" + ToHex(compat) + "}:" + ToHex(key);
}
std::string RedisRecordStore::HolderKey(const Digest& scope, const Digest& compat,
                                        std::string_view holder) const {
  return options_.prefix + ":h:{" + ToHex(scope) + ":" + ToHex(compat) +
         "}:" + ToHex(Sha256::Hash(holder));
}
std::string RedisRecordStore::HolderMember(char kind, const Digest& key) {
  return std::string(1, kind) + ToHex(key);
}
std::string RedisRecordStore::CompatKey(const Digest& scope, const Digest& compat) const {
  return options_.prefix + ":c:{" + ToHex(scope) + ":" + ToHex(compat) + "}";
}

std::string RedisRecordStore::EncodeValue(const Replica& r) {
  std::string v = std::to_string(r.expires_ms) + " " + std::string(TierName(r.info.tier)) + " " +
                  std::to_string(r.info.layer_first) + " " + std::to_string(r.info.layer_count) +
                  " " + CodecListText(r.info.codecs);
  return v;
}

Result<Replica> RedisRecordStore::DecodeValue(std::string_view holder, std::string_view value) {
  std::string_view parts[5];
  for (int i = 0; i < 5; ++i) {
    size_t sp = i < 4 ? value.find(' ') : value.size();
    if (sp == std::string_view::npos) return Unavailable("malformed record value");
    parts[i] = value.substr(0, sp);
    value = i < 4 ? value.substr(sp + 1) : std::string_view();
  }
  Replica r;
  r.info.holder = std::string(holder);
  uint64_t first = 0, count = 0;
  auto tier = TierFromName(parts[1]);
  if (!ParseU64(parts[0], &r.expires_ms) || !tier.ok() || !ParseU64(parts[2], &first) ||
      !ParseU64(parts[3], &count) || first >= kMaxLayerEnd || count > kMaxLayerEnd) {
    return Unavailable("malformed record value");
  }
  r.info.tier = *tier;
  r.info.layer_first = uint32_t(first);
  r.info.layer_count = uint32_t(count);
  auto codecs = ParseCodecListText(parts[4]);
  if (!codecs.ok()) return Unavailable("malformed record value");
  r.info.codecs = std::move(*codecs);
  KVCS_RETURN_IF_ERROR(ValidateReplicaInfo(r.info));
  return r;
}

Status RedisRecordStore::Register(const RegisterRequest& r, uint64_t now_ms) {
  KVCS_RETURN_IF_ERROR(ValidateReplicaInfo(r.replica));
  if (r.block_keys.empty() || r.block_keys.size() > kMaxKeysPerRequest || r.ttl_ms == 0 ||
      r.ttl_ms > kMaxTtlMs) {
    return IndexStatus(IndexError::kOutOfRange, "index: registration outside the bounds");
  }
  Replica rep{r.replica, now_ms + r.ttl_ms};
  // Repeated keys count once.
  std::vector<Digest> keys = r.block_keys;
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  const size_t n = keys.size() + (r.anchor_key ? 1 : 0);
  Command eval;
  eval.reserve(3 + 2 * n + 2 + 6);
  eval.push_back("EVAL");
  eval.push_back(kRegisterScript);
  eval.push_back(std::to_string(n + 2));
  for (const Digest& k : keys) eval.push_back(BlockKey(r.scope_id, r.compat_id, k));
  if (r.anchor_key) eval.push_back(AnchorKey(r.scope_id, r.compat_id, *r.anchor_key));
  eval.push_back(CompatKey(r.scope_id, r.compat_id));
  eval.push_back(HolderKey(r.scope_id, r.compat_id, r.replica.holder));
  eval.push_back(r.replica.holder);
  eval.push_back(EncodeValue(rep));
  eval.push_back(std::to_string(rep.expires_ms));
  eval.push_back(std::to_string(now_ms));
  eval.push_back(std::to_string(options_.limits.max_holders_per_key));
  eval.push_back(std::to_string(options_.limits.max_records_per_holder));
  for (const Digest& k : keys) eval.push_back(HolderMember('b', k));
  if (r.anchor_key) eval.push_back(HolderMember('a', *r.anchor_key));
  std::lock_guard<std::mutex> lock(mu_);
  KVCS_ASSIGN_OR_RETURN(auto replies, Pipeline({eval}));
  const redisReply* res = replies[0].get();
  if (res->type != REDIS_REPLY_INTEGER) return Unavailable("the registration script failed");
  if (res->integer == 1) {
    return IndexStatus(IndexError::kKeyFull,
                       "index: a key already has " +
                           std::to_string(options_.limits.max_holders_per_key) +
                           " holders (the limit)");
  }
  if (res->integer == 2) {
    return IndexStatus(IndexError::kHolderFull,
                       "index: the holder would have more than " +
                           std::to_string(options_.limits.max_records_per_holder) +
                           " records under this scope and compat_id; withdraw some or let "
                           "them expire");
  }
  return Status::Ok();
}

Status RedisRecordStore::Withdraw(const WithdrawRequest& r, uint64_t) {
  std::vector<Command> cmds;
  cmds.push_back({"MULTI"});
  const std::string hz = HolderKey(r.scope_id, r.compat_id, r.holder);
  for (const Digest& k : r.block_keys) {
    cmds.push_back({"HDEL", BlockKey(r.scope_id, r.compat_id, k), r.holder});
    cmds.push_back({"HDEL", AnchorKey(r.scope_id, r.compat_id, k), r.holder});
    cmds.push_back({"ZREM", hz, HolderMember('b', k), HolderMember('a', k)});
  }
  cmds.push_back({"EXEC"});
  std::lock_guard<std::mutex> lock(mu_);
  KVCS_ASSIGN_OR_RETURN(auto replies, Pipeline(cmds));
  if (replies.back()->type != REDIS_REPLY_ARRAY) return Unavailable("MULTI/EXEC aborted");
  return Status::Ok();
}

std::vector<Replica> RedisRecordStore::LiveOf(const redisReply* hash, const std::string& key,
                                              uint64_t now_ms, size_t max,
                                              std::vector<Command>* trims) {
  std::vector<Replica> out;
  if (hash->type != REDIS_REPLY_ARRAY) return out;
  for (size_t i = 0; i + 1 < hash->elements; i += 2) {
    std::string_view holder(hash->element[i]->str, hash->element[i]->len);
    std::string_view value(hash->element[i + 1]->str, hash->element[i + 1]->len);
    auto rep = DecodeValue(holder, value);
    if (rep.ok() && rep->expires_ms > now_ms) {
      out.push_back(std::move(*rep));
    } else {
      trims->push_back({"EVAL", kTrimScript, "1", key, std::string(holder), std::string(value)});
    }
  }
  SortReplicas(&out, max);
  return out;
}

Result<LookupResponse> RedisRecordStore::Lookup(const LookupRequest& r, uint64_t now_ms) {
  std::vector<Command> cmds;
  std::vector<std::string> keys;
  cmds.reserve(r.block_keys.size() + 1);
  cmds.push_back({"EXISTS", CompatKey(r.scope_id, r.compat_id)});
  for (const Digest& k : r.block_keys) {
    keys.push_back(BlockKey(r.scope_id, r.compat_id, k));
    cmds.push_back({"HGETALL", keys.back()});
  }
  std::lock_guard<std::mutex> lock(mu_);
  KVCS_ASSIGN_OR_RETURN(auto replies, Pipeline(cmds));
  if (replies[0]->type != REDIS_REPLY_INTEGER || replies[0]->integer == 0) {
    return IndexStatus(IndexError::kUnknownCompat, "index: no record under this compat_id");
  }
  LookupResponse out;
  std::vector<Command> trims;
  size_t max = std::clamp<size_t>(r.max_replicas, 1, kMaxReplicasPerKey);
  for (size_t i = 0; i < r.block_keys.size(); ++i) {
    std::vector<Replica> live = LiveOf(replies[i + 1].get(), keys[i], now_ms, max, &trims);
    if (live.empty()) break;
    out.entries.push_back({r.block_keys[i], std::move(live)});
  }
  out.matched = uint32_t(out.entries.size());
  if (!trims.empty()) Pipeline(trims).ok();  // best effort: a later lookup trims again
  return out;
}

Result<AnchorsResponse> RedisRecordStore::Anchors(const AnchorsRequest& r, uint64_t now_ms) {
  std::string key = AnchorKey(r.scope_id, r.compat_id, r.anchor_key);
  std::lock_guard<std::mutex> lock(mu_);
  KVCS_ASSIGN_OR_RETURN(
      auto replies, Pipeline({{"EXISTS", CompatKey(r.scope_id, r.compat_id)}, {"HGETALL", key}}));
  if (replies[0]->type != REDIS_REPLY_INTEGER || replies[0]->integer == 0) {
    return IndexStatus(IndexError::kUnknownCompat, "index: no record under this compat_id");
  }
  AnchorsResponse out;
  std::vector<Command> trims;
  out.replicas = LiveOf(replies[1].get(), key, now_ms, kMaxReplicasPerKey, &trims);
  if (!trims.empty()) Pipeline(trims).ok();
  return out;
}

Status RedisRecordStore::Expire(uint64_t) { return Status::Ok(); }

}  // namespace kvcs::index
