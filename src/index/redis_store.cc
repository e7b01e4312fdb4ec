// KVSP v1 as defined by the project: the Index Service's Redis record store (§7).
#include "index/redis_store.h"

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <charconv>
#include <utility>

#include "common/hex.h"

namespace kvcs::index {
namespace {

// Deletes a hash field only if it still holds the value a lookup saw expire, so that a renewal
// written meanwhile by another index node is kept.
constexpr const char* kTrimScript =
    "if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then "
    "return redis.call('HDEL', KEYS[1], ARGV[1]) end return 0";

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
  std::string value = EncodeValue(rep), at = std::to_string(rep.expires_ms);
  std::vector<Command> cmds;
  cmds.reserve(3 * r.block_keys.size() + 8);
  cmds.push_back({"MULTI"});
  auto put = [&](const std::string& key) {
    cmds.push_back({"HSET", key, r.replica.holder, value});
    cmds.push_back({"PEXPIREAT", key, at, "NX"});
    cmds.push_back({"PEXPIREAT", key, at, "GT"});
  };
  for (const Digest& k : r.block_keys) put(BlockKey(r.scope_id, r.compat_id, k));
  if (r.anchor_key) put(AnchorKey(r.scope_id, r.compat_id, *r.anchor_key));
  std::string ck = CompatKey(r.scope_id, r.compat_id);
  cmds.push_back({"SET", ck, "1", "KEEPTTL"});
  cmds.push_back({"PEXPIREAT", ck, at, "NX"});
  cmds.push_back({"PEXPIREAT", ck, at, "GT"});
  cmds.push_back({"EXEC"});
  std::lock_guard<std::mutex> lock(mu_);
  KVCS_ASSIGN_OR_RETURN(auto replies, Pipeline(cmds));
  const redisReply* exec = replies.back().get();
  if (exec->type != REDIS_REPLY_ARRAY) return Unavailable("MULTI/EXEC aborted");
  for (size_t i = 0; i < exec->elements; ++i) {
    if (exec->element[i]->type == REDIS_REPLY_ERROR) {
      return Unavailable("server error: " + std::string(exec->element[i]->str));
    }
  }
  return Status::Ok();
}

Status RedisRecordStore::Withdraw(const WithdrawRequest& r, uint64_t) {
  std::vector<Command> cmds;
  cmds.push_back({"MULTI"});
  for (const Digest& k : r.block_keys) {
    cmds.push_back({"HDEL", BlockKey(r.scope_id, r.compat_id, k), r.holder});
    cmds.push_back({"HDEL", AnchorKey(r.scope_id, r.compat_id, k), r.holder});
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
