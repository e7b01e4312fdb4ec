// index_bench: KVSP Index Service lookup latency and lookups per second per core, for 256 and
// 4,096 keys, against a raw pipelined Redis GET of the same keys in the same run.
//
//   raw redis GET     one hiredis pipeline of N GETs (values the size of a record), the floor
//                     for anything that keeps records in Redis
//   embedded store    EmbeddedRecordStore::Lookup in process (the in-memory registry)
//   redis store       RedisRecordStore::Lookup in process (one pipeline of HGETALLs)
//   http + embedded   IndexClient::Lookup -> kvcs index's IndexService on http::Server (the
//   http + redis      client's keep-alive connection, as holders and consumers use it), embedded
//                     or Redis
//
// Latency: median and p99 wall time per lookup. Lookups/s per core: lookups per CPU second,
// counting this process (client, server and workers) and, for Redis, redis-server's own CPU
// (INFO cpu), so the figure does not depend on how many cores the machine lends us.
// Every key has 2 replicas (an object store and a publisher), so a lookup matches all N.
//
// Usage: index_bench [iterations_at_256_keys=400]   (4,096 keys: a tenth as many)
#include <hiredis/hiredis.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/hex.h"
#include "index/embedded_store.h"
#include "index/index_client.h"
#include "index/index_service.h"
#include "index/redis_store.h"
#include "index/test_tools/live_index.h"
#include "index/test_tools/redis_server.h"

namespace kvcs::index {
namespace {

double ProcessCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// redis-server's CPU seconds so far (INFO cpu: used_cpu_sys + used_cpu_user).
double RedisCpuSeconds(redisContext* c) {
  auto* r = static_cast<redisReply*>(redisCommand(c, "INFO cpu"));
  double total = 0;
  if (r && r->type == REDIS_REPLY_STRING) {
    std::string s(r->str, r->len);
    for (const char* name : {"used_cpu_sys:", "used_cpu_user:"}) {
      size_t at = s.find(name);
      if (at != std::string::npos) total += std::atof(s.c_str() + at + std::strlen(name));
    }
  }
  if (r) freeReplyObject(r);
  return total;
}

struct Figures {
  double median_us = 0, p99_us = 0, per_core = 0;  // per_core: lookups per CPU second
};

Figures Measure(int iters, const std::function<void()>& op, redisContext* redis_info) {
  for (int i = 0; i < std::max(3, iters / 20); ++i) op();  // warm up
  std::vector<double> us;
  us.reserve(iters);
  double cpu0 = ProcessCpuSeconds(), r0 = redis_info ? RedisCpuSeconds(redis_info) : 0;
  for (int i = 0; i < iters; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    op();
    us.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  double cpu = ProcessCpuSeconds() - cpu0 + (redis_info ? RedisCpuSeconds(redis_info) - r0 : 0);
  std::sort(us.begin(), us.end());
  Figures f;
  f.median_us = us[us.size() / 2];
  f.p99_us = us[std::min(us.size() - 1, us.size() * 99 / 100)];
  f.per_core = cpu > 0 ? iters / cpu : 0;
  return f;
}

Digest RandomDigest(std::mt19937_64& rng) {
  Digest d;
  for (auto& b : d) b = uint8_t(rng());
  return d;
}

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "index_bench: %s\n", what.c_str());
  std::exit(1);
}

void Print(const char* name, size_t n, const Figures& f, const Figures& base) {
  std::printf(
      "  %-16s %5zu keys  median %9.1f us  p99 %9.1f us  %8.0f lookups/s/core   "
      "latency x%.2f, per-core x%.2f of raw GET\n",
      name, n, f.median_us, f.p99_us, f.per_core, f.median_us / base.median_us,
      f.per_core / base.per_core);
}

int Main(int argc, char** argv) {
  const int iters256 = argc > 1 ? std::max(20, std::atoi(argv[1])) : 400;
  testing::RedisServer redis;
  if (!redis.ok()) Die(redis.error());
  redisContext* raw = redisConnectUnix(redis.socket().c_str());
  redisContext* info = redisConnectUnix(redis.socket().c_str());
  if (!raw || raw->err || !info || info->err) Die("cannot connect to redis-server");
  RedisOptions ro;
  ro.unix_socket = redis.socket();
  auto rstore = RedisRecordStore::Connect(ro);
  if (!rstore.ok()) Die(rstore.status().message());
  auto estore = EmbeddedRecordStore::Open("", 0);
  if (!estore.ok()) Die(estore.status().message());

  std::mt19937_64 rng(42);
  const uint64_t now = uint64_t(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count());
  Digest compat = RandomDigest(rng), scope = RandomDigest(rng);
  std::vector<Digest> keys(4096);
  for (Digest& k : keys) k = RandomDigest(rng);
  for (const char* holder :
       {"https://store-1.example:9000/_kvsp",
        "moqt://relay.example:4443/?ns=kvcs-1/"
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "aaaaaaaaaa/bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb/cccccccccccc"
        "cccccccccccccccccccccccccccccccccccccccccccccccccccc/dddddddddddddddddddddddddddddddd"}) {
    RegisterRequest r;
    r.compat_id = compat;
    r.scope_id = scope;
    r.replica = {
        holder, holder[0] == 'h' ? Tier::kObjectStore : Tier::kCpu, {kvsp::Codec::kRaw}, 0, 32};
    r.block_keys = keys;
    r.ttl_ms = kMaxTtlMs;
    for (RecordStore* s :
         {static_cast<RecordStore*>(rstore->get()), static_cast<RecordStore*>(estore->get())}) {
      Status st = s->Register(r, now);
      if (!st.ok()) Die(st.message());
    }
  }
  // The baseline's keys: one string per block key, the size of one record's value.
  std::string value(RedisRecordStore::EncodeValue(
      {{"https://store-1.example:9000/_kvsp", Tier::kObjectStore, {kvsp::Codec::kRaw}, 0, 32},
       now + kMaxTtlMs}));
  std::vector<std::string> raw_keys;
  for (const Digest& k : keys) {
    raw_keys.push_back("raw:" + ToHex(k));
    redisReply* r =
        static_cast<redisReply*>(redisCommand(raw, "SET %b %b", raw_keys.back().data(),
                                              raw_keys.back().size(), value.data(), value.size()));
    if (!r) Die("SET failed");
    freeReplyObject(r);
  }

  testing::LiveIndex live_embedded(**estore), live_redis(**rstore);
  if (!live_embedded.ok() || !live_redis.ok()) Die("the index service did not start");
  IndexClient http_embedded = live_embedded.Client(), http_redis = live_redis.Client();
  std::printf("index_bench: lookup of N keys, every key held by 2 replicas; redis-server %s\n",
              "on a unix socket");
  for (size_t n : {size_t{256}, size_t{4096}}) {
    const int iters = n == 256 ? iters256 : std::max(10, iters256 / 10);
    std::vector<Digest> ask(keys.begin(), keys.begin() + n);
    LookupRequest q{compat, scope, ask, kDefaultMaxReplicas};
    auto check = [&](const Result<LookupResponse>& r) {
      if (!r.ok() || r->matched != n) Die("lookup did not match every key");
    };
    Figures base = Measure(
        iters,
        [&] {
          for (size_t i = 0; i < n; ++i) {
            redisAppendCommand(raw, "GET %b", raw_keys[i].data(), raw_keys[i].size());
          }
          for (size_t i = 0; i < n; ++i) {
            void* reply = nullptr;
            if (redisGetReply(raw, &reply) != REDIS_OK || !reply) Die("GET failed");
            freeReplyObject(reply);
          }
        },
        info);
    Figures emb = Measure(
        iters, [&] { check((*estore)->Lookup(q, now)); }, nullptr);
    Figures red = Measure(
        iters, [&] { check((*rstore)->Lookup(q, now)); }, info);
    Figures he = Measure(
        iters, [&] { check(http_embedded.Lookup(q)); }, nullptr);
    Figures hr = Measure(
        iters, [&] { check(http_redis.Lookup(q)); }, info);
    Print("raw redis GET", n, base, base);
    Print("embedded store", n, emb, base);
    Print("redis store", n, red, base);
    Print("http + embedded", n, he, base);
    Print("http + redis", n, hr, base);
  }
  redisFree(raw);
  redisFree(info);
  return 0;
}

}  // namespace
}  // namespace kvcs::index

int main(int argc, char** argv) { return kvcs::index::Main(argc, argv); }
