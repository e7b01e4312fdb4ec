// kvcs demo: the main job end to end on a synthetic cache of a realistic layout
// (Llama-3.1-8B: 32 layers, 8 KV heads x 128, bf16, 16-token blocks, 4K tokens): build it,
// compute Block Keys, pack one container per block, verify and decode every container, and report
// what was done and how fast, each figure next to a baseline measured in the same run. Then store
// the cache in a local store and retrieve a prefix with one aggregated request (RunStoreDemo,
// store_demo.h), and publish its first blocks live over MOQT through an in-process relay to two
// consumers, one joining mid-production and one after the end (RunMoqtDemo, moqt_demo.h).
#include <malloc.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <iostream>

#include "cli/cli_util.h"
#include "cli/command.h"
#include "cli/moqt_demo.h"
#include "cli/secure_relay_demo.h"
#include "cli/store_demo.h"
#include "kvsp/block_keys.h"
#include "kvsp/codec.h"
#include "kvsp/container.h"
#include "tensorio/kv_cache.h"
#include "tensorio/synthetic.h"

namespace kvcs::cli {
namespace {

constexpr const char* kCmd = "demo";
// 1M tokens of Llama-3.1-8B is 128 GiB of KV; 256K (32 GiB in memory twice) is the demo's limit.
constexpr uint64_t kMaxDemoTokens = 256 * 1024;

// Throughput figures use this thread's CPU time, so that they measure the code and not how busy
// a shared machine is; the total at the end is wall-clock time.
struct Clock {
  using time_point = double;
  static double now() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
  }
};
double Since(double t) { return Clock::now() - t; }
using Wall = std::chrono::steady_clock;

std::string Mib(uint64_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f MiB", double(bytes) / (1 << 20));
  return b;
}
std::string Gbps(uint64_t bytes, double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f GB/s", s > 0 ? double(bytes) / s / 1e9 : 0.0);
  return b;
}
std::string Fixed(double v, int prec) {
  char b[32];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

struct DemoArgs {
  uint64_t tokens = 4096;
  std::string codec = "raw", save, out;
  bool no_store = false;
  bool encrypt = false;  // the secure-relay part (secure_relay_demo.h)
  uint64_t prefix_tokens = 0;
  bool no_moqt = false;
  uint64_t moqt_blocks = 256, moqt_layer_ms = 20;  // the whole 4K cache
};

// Repeats f until at least min_s seconds have passed; returns seconds per call.
template <typename F>
double TimePerCall(F&& f, double min_s = 0.05) {
  int n = 0;
  auto t = Clock::now();
  do {
    f();
    ++n;
  } while (Since(t) < min_s);
  return Since(t) / n;
}

float Bf16ToFloat(const uint8_t* p) {
  uint32_t u = uint32_t(p[0]) << 16 | uint32_t(p[1]) << 24;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

int RunDemo(const DemoArgs& a) {
  auto codec = kvsp::CodecFromName(a.codec);
  if (!codec.ok() || !kvsp::IsImplemented(*codec)) {
    return Fail(kCmd, "codec \"" + a.codec + "\" is not available",
                "use raw, zstd, fp8-e4m3 or int8");
  }
  if (a.tokens == 0 || a.tokens > kMaxDemoTokens) {
    return Fail(kCmd, "--tokens must be 1.." + std::to_string(kMaxDemoTokens));
  }
  kvsp::Descriptor d = tensorio::Llama31_8BDescriptor();
  const uint64_t B = d.block_tokens;
  if (a.tokens < B)
    return Fail(kCmd, "--tokens must be at least one block (" + std::to_string(B) + ")");
  const uint64_t block_bytes = d.layers * (kvsp::KSectionBytes(d) + kvsp::VSectionBytes(d));

  std::printf("kvcs demo: a synthetic KV cache of %s\n", d.model.c_str());
  std::printf("  layout      %u layers x %u KV heads x head_dim %u, %s, %u-token blocks\n",
              d.layers, d.kv_heads, d.head_dim, d.kv_dtype.c_str(), d.block_tokens);
  std::printf("  tokens      %llu (%llu full blocks, %llu tail tokens)\n",
              (unsigned long long)a.tokens, (unsigned long long)(a.tokens / B),
              (unsigned long long)(a.tokens % B));
  std::printf("  K/V         %s (%s per block, %s per block-layer section)\n",
              Mib(a.tokens / B * block_bytes + a.tokens % B * block_bytes / B).c_str(),
              Mib(block_bytes).c_str(),
              (std::to_string(kvsp::KSectionBytes(d) / 1024) + " KiB").c_str());
  std::printf("  compat_id   %s\n\n", ToHex(kvsp::CompatId(d)).c_str());

  // 1. The cache.
  auto wall0 = Wall::now();
  auto syn = tensorio::MakeSyntheticKv(d, a.tokens, /*seed=*/1);
  if (!syn.ok()) return Fail(kCmd, syn.status().message());
  tensorio::KvCacheView cache = syn->View();
  const uint64_t n = cache.full_blocks();
  const uint64_t packed_bytes = n * block_bytes;
  std::printf(
      "[1/5] build     synthetic cache in %.2f s: per-channel normal values, ~2%% outlier "
      "key channels, Llama-3 token ids\n",
      std::chrono::duration<double>(Wall::now() - wall0).count());
  if (!a.save.empty()) {
    auto w0 = Wall::now();
    Status s = syn->Save(a.save);
    if (!s.ok()) return Fail(kCmd, s.message(), "check that --save's directory is writable");
    std::printf("            saved to %s in %.2f s (kvcs pack %s --out DIR --public)\n",
                a.save.c_str(), std::chrono::duration<double>(Wall::now() - w0).count(),
                a.save.c_str());
  }

  // 2. Block Keys (public scope), against plain SHA-256 of the same token bytes.
  kvsp::ScopeKey scope = kvsp::PublicScopeKey();
  Digest compat = kvsp::CompatId(d);
  Digest chain = kvsp::ChainKey(scope, compat);
  std::vector<Digest> keys;
  double keys_s =
      TimePerCall([&] { keys = kvsp::BlockKeys(chain, d.block_tokens, cache.token_ids); });
  Bytes tok_bytes(n * B * 4);
  for (size_t i = 0; i < n * B; ++i) StoreBe32(tok_bytes.data() + 4 * i, cache.token_ids[i]);
  double sha_tok_s = TimePerCall([&] {
    for (uint64_t i = 0; i < n; ++i) Sha256::Hash(ByteSpan(tok_bytes.data() + i * B * 4, B * 4));
  });
  double ns_per_token = keys_s * 1e9 / double(n * B);
  std::printf(
      "[2/5] keys      %llu Block Keys in %.1f us = %.1f ns/token (one SHA-256 per block of "
      "the same bytes: %.1f ns/token, %.2fx; vLLM's block hashing: ~100-200 ns/token)\n",
      (unsigned long long)n, keys_s * 1e6, ns_per_token, sha_tok_s * 1e9 / double(n * B),
      keys_s > 0 ? sha_tok_s / keys_s : 0.0);
  std::printf("            anchor %s (public scope %s)\n", ToHex(keys.back()).c_str(),
              ToHex(kvsp::ScopeId(scope)).substr(0, 16).c_str());

  // Baselines over the same bytes: memcpy and plain SHA-256.
  Bytes scratch(block_bytes);
  auto copy_all = [&] {
    for (uint64_t i = 1; i <= n; ++i) {
      uint8_t* p = scratch.data();
      for (uint32_t l = 0; l < d.layers; ++l) {
        auto k = cache.KSection(l, i), v = cache.VSection(l, i);
        std::memcpy(p, k.data(), k.size());
        std::memcpy(p + k.size(), v.data(), v.size());
        p += k.size() + v.size();
      }
    }
  };
  double memcpy_s = TimePerCall(copy_all, 0.2);
  double sha_s = TimePerCall(
      [&] {
        for (uint32_t l = 0; l < d.layers; ++l)
          Sha256::Hash(cache.k[l].subspan(0, n * kvsp::KSectionBytes(d)));
        for (uint32_t l = 0; l < d.layers; ++l)
          Sha256::Hash(cache.v[l].subspan(0, n * kvsp::VSectionBytes(d)));
      },
      0.2);

  // 3-5. Streamed block by block, as a packer that writes each container out would: encode the
  // container (pack), verify it as a reader would (structure, compat_id, block key, index, layers,
  // section sizes, every layer digest), and decode every section back to the descriptor dtype.
  // Each step has its own timer; the container buffer is reused by the allocator, so page faults
  // of fresh memory do not dominate the figures.
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  auto ks = kvsp::KShape(d), vs = kvsp::VShape(d);
  Bytes raw(ks.raw_bytes());
  bool exact = true;
  double err2 = 0, ref2 = 0;
  double pack_s = 0, verify_s = 0, decode_s = 0;
  uint64_t container_bytes = 0;
  for (uint64_t i = 1; i <= n; ++i) {
    auto t1 = Clock::now();
    auto c = tensorio::EncodeBlockContainer(cache, i, compat, keys[i - 1], *codec);
    pack_s += Since(t1);
    if (!c.ok()) {
      return Fail(kCmd, "packing block " + std::to_string(i) + ": " + c.status().message());
    }
    container_bytes += c->size();
    t1 = Clock::now();
    auto want = kvsp::ExpectFor(d, compat, keys[i - 1], uint32_t(i), *codec, 0, uint16_t(d.layers));
    auto view = kvsp::VerifyContainer(*c, want);
    verify_s += Since(t1);
    if (!view.ok()) {
      return Fail(kCmd,
                  "container of block " + std::to_string(i) + " failed: " + view.status().message(),
                  "this is a bug: please report it");
    }
    for (uint32_t l = 0; l < d.layers; ++l) {
      auto sec = kvsp::LayerBytes(*view, *c, l);
      if (!sec.ok()) return Fail(kCmd, sec.status().message());
      for (int kv = 0; kv < 2; ++kv) {
        t1 = Clock::now();
        Status st = kvsp::DecodeSection(*codec, kv ? vs : ks, kv ? sec->v : sec->k, raw);
        decode_s += Since(t1);
        if (!st.ok()) return Fail(kCmd, "decode block " + std::to_string(i) + ": " + st.message());
        ByteSpan src = kv ? cache.VSection(l, i) : cache.KSection(l, i);
        if (std::memcmp(src.data(), raw.data(), raw.size()) != 0) exact = false;
        if (*codec != kvsp::Codec::kRaw && *codec != kvsp::Codec::kZstd && i <= 8) {
          for (size_t j = 0; j < raw.size(); j += 2) {
            float x = Bf16ToFloat(src.data() + j), y = Bf16ToFloat(raw.data() + j);
            err2 += double(x - y) * (x - y);
            ref2 += double(x) * x;
          }
        }
      }
    }
  }
  std::printf(
      "[3/5] pack      %llu containers (%s), %s -> %s in %.3f s = %s (memcpy of the same "
      "bytes %s: %.2fx)\n",
      (unsigned long long)n, a.codec.c_str(), Mib(packed_bytes).c_str(),
      Mib(container_bytes).c_str(), pack_s, Gbps(packed_bytes, pack_s).c_str(),
      Gbps(packed_bytes, memcpy_s).c_str(), pack_s > 0 ? memcpy_s / pack_s : 0.0);
  std::printf(
      "[4/5] verify    all %llu containers: structure, keys, %llu layer digests ok in %.3f s "
      "= %s (plain SHA-256 of the K/V: %s, %.2fx)\n",
      (unsigned long long)n, (unsigned long long)(n * d.layers), verify_s,
      Gbps(container_bytes, verify_s).c_str(), Gbps(packed_bytes, sha_s).c_str(),
      verify_s > 0 ? (double(container_bytes) / verify_s) / (double(packed_bytes) / sha_s) : 0.0);
  std::string fidelity = exact ? "bit-exact"
                               : "RMS error " +
                                     Fixed(100.0 * std::sqrt(err2 / std::max(ref2, 1e-30)), 2) +
                                     "% of RMS value (first 8 blocks)";
  std::printf("[5/5] decode    every section back to %s in %.3f s = %s: %s\n", d.kv_dtype.c_str(),
              decode_s, Gbps(packed_bytes, decode_s).c_str(), fidelity.c_str());

  if (!a.out.empty()) {
    auto r = tensorio::PackDirectory(cache, scope, true, *codec, a.out);
    if (!r.ok()) return Fail(kCmd, r.status().message(), "choose an empty --out directory");
    std::printf("            wrote %llu containers and index.json to %s/\n", (unsigned long long)n,
                a.out.c_str());
  }

  std::string store_line;
  if (!a.no_store) {
    std::printf("\n[store] local store + S3 server with the aggregated extension (objcache):\n");
    std::fflush(stdout);
    StoreDemoOptions o;
    o.blocks = uint32_t(n);
    o.layers = d.layers;
    o.prefix_blocks = uint32_t(std::min<uint64_t>(n, a.prefix_tokens / B));
    Status s = RunStoreDemo(o, std::cout);
    std::cout.flush();
    if (!s.ok()) return Fail(kCmd, "store part: " + s.message());
    store_line =
        "  store       stored with one aggregated PUT, retrieved with one aggregated request over "
        "HTTP and\n              one into a shared buffer (above)\n";
  }

  std::string moqt_line;
  if (!a.no_moqt) {
    std::printf("\n[moqt] KVCS over MOQT, live through an in-process relay to two consumers:\n");
    std::fflush(stdout);
    MoqtDemoOptions o;
    o.blocks = a.moqt_blocks;
    o.layer_ms = a.moqt_layer_ms;
    Status s = RunMoqtDemo(cache, scope, o, std::cout);
    std::cout.flush();
    if (!s.ok()) return Fail(kCmd, "MOQT part: " + s.message(), "--no-moqt skips it");
    moqt_line =
        "  moqt        published live through a relay (PUBLISH_NAMESPACE); a consumer joining "
        "mid-production\n              and one after the end each verified every layer "
        "bit-exact, exactly once;\n              a relay that corrupted one object: "
        "detected, recovered from the store over KVSP HTTP within the bound (above)\n";
  }

  std::printf("\nSummary\n");
  std::printf(
      "  cache       %s, %llu tokens = %llu blocks + %llu tail tokens (tail not packed: no "
      "key, always recomputed)\n",
      d.model.c_str(), (unsigned long long)a.tokens, (unsigned long long)n,
      (unsigned long long)cache.tail_tokens());
  std::printf("  keys        %.1f ns/token\n", ns_per_token);
  std::printf("  pack        %s (%s codec, %.2fx of memcpy), %s -> %s\n",
              Gbps(packed_bytes, pack_s).c_str(), a.codec.c_str(),
              pack_s > 0 ? memcpy_s / pack_s : 0.0, Mib(packed_bytes).c_str(),
              Mib(container_bytes).c_str());
  std::printf(
      "  verify      %s (%.2fx of plain SHA-256), every container and digest ok\n",
      Gbps(container_bytes, verify_s).c_str(),
      verify_s > 0 ? (double(container_bytes) / verify_s) / (double(packed_bytes) / sha_s) : 0.0);
  std::printf("  round trip  %s\n", fidelity.c_str());
  std::printf("%s", store_line.c_str());
  std::printf("%s", moqt_line.c_str());
  if (a.encrypt) {
    std::fflush(stdout);
    Status s = RunSecureRelayDemo(SecureRelayDemoOptions{}, std::cout);
    std::cout.flush();
    if (!s.ok()) return Fail(kCmd, "secure relay: " + s.message());
  }
  std::printf("  (throughputs are single-thread CPU time; the whole demo took %.1f s wall-clock)\n",
              std::chrono::duration<double>(Wall::now() - wall0).count());
  return 0;
}

RunFn Setup(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "demo", "Build, key, pack, verify (and store/retrieve) a synthetic Llama-3.1-8B KV cache");
  auto a = std::make_shared<DemoArgs>();
  cmd->add_option("--tokens", a->tokens, "context length in tokens")->capture_default_str();
  cmd->add_option("--codec", a->codec, "raw, zstd, fp8-e4m3 or int8")->capture_default_str();
  cmd->add_option("--save", a->save, "also write the synthetic cache as safetensors to this file");
  cmd->add_option("--out", a->out, "also write the packed directory (containers + index.json)");
  cmd->add_option("--prefix-tokens", a->prefix_tokens,
                  "store part: tokens of the prefix to retrieve (default: all)");
  cmd->add_flag("--no-store", a->no_store, "skip the local store / aggregated retrieval part");
  cmd->add_flag("--no-moqt", a->no_moqt, "skip the MOQT part (publisher, relay, two consumers)");
  cmd->add_option("--moqt-blocks", a->moqt_blocks, "MOQT part: the first N blocks are published")
      ->check(CLI::Range(uint64_t{1}, uint64_t{4096}))
      ->capture_default_str();
  cmd->add_option("--moqt-layer-ms", a->moqt_layer_ms,
                  "MOQT part: modeled compute time per layer (the production pace)")
      ->check(CLI::Range(uint64_t{0}, uint64_t{1000}))
      ->capture_default_str();
  cmd->add_flag("--encrypt", a->encrypt,
                "also publish over MOQT with secure objects (AES-128-GCM) through an in-process "
                "relay, and show that its cache holds only ciphertext");
  cmd->footer(
      "Example:\n"
      "  kvcs demo\n"
      "  kvcs demo --tokens 8192 --codec zstd\n"
      "  kvcs demo --tokens 1000 --save cache.safetensors --no-store\n"
      "  kvcs demo --no-store --no-moqt --encrypt");
  return [a] { return RunDemo(*a); };
}

}  // namespace
KVCS_REGISTER_COMMAND(demo, 5, Setup);
}  // namespace kvcs::cli
