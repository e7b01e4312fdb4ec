// kvcs pack: a KV cache in safetensors -> one KVSP container per full block plus index.json
// (docs/formats/safetensors-kv.md). The tail of T mod B tokens is reported, never dropped silently.
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "cli/cli_util.h"
#include "cli/command.h"
#include "kvsp/codec.h"
#include "tensorio/kv_cache.h"

namespace kvcs::cli {
namespace {

constexpr const char* kCmd = "pack";

struct PackArgs {
  std::string input, out, codec = "raw";
  ScopeOptions scope;
};

// In-place progress on a terminal; silent otherwise (logs and tests stay clean).
tensorio::Progress StderrProgress(const char* what) {
  if (!::isatty(2)) return {};
  return [what](uint64_t done, uint64_t total) {
    if (done == total || done % 16 == 0) {
      std::fprintf(stderr, "\r  %s %llu/%llu blocks", what, (unsigned long long)done,
                   (unsigned long long)total);
      if (done == total) std::fprintf(stderr, "\n");
    }
  };
}

int RunPack(const PackArgs& a) {
  auto codec = kvsp::CodecFromName(a.codec);
  if (!codec.ok() || !kvsp::IsImplemented(*codec)) {
    return Fail(kCmd, "codec \"" + a.codec + "\" is not available",
                "use --codec raw, zstd, fp8-e4m3 or int8");
  }
  std::string warning;
  auto scope_key = a.scope.Resolve(&warning);
  if (!scope_key.ok()) {
    return Fail(kCmd, scope_key.status().message(),
                "create a key with: kvcs keygen scope --out tenant.key");
  }
  if (!warning.empty()) std::cerr << "kvcs pack: warning: " << warning << "\n";
  auto file = tensorio::SafetensorsFile::Open(a.input);
  if (!file.ok()) {
    return Fail(kCmd, a.input + ": " + file.status().message(),
                "the input must be a safetensors file (kvcs inspect " + a.input + " says more)");
  }
  auto cache = tensorio::ReadKvCache(file->view());
  if (!cache.ok()) {
    return Fail(kCmd, a.input + ": " + cache.status().message(),
                "see docs/formats/safetensors-kv.md for the tensor names, shapes and metadata");
  }
  auto r = tensorio::PackDirectory(*cache, *scope_key, a.scope.is_public, *codec, a.out,
                                   StderrProgress("packed"));
  if (!r.ok()) {
    return Fail(kCmd, r.status().message(),
                r.status().code() == Code::kAlreadyExists ? "choose an empty --out directory" : "");
  }
  const auto& d = cache->descriptor;
  std::cout << "packed " << a.input << " -> " << a.out << "/\n"
            << "  model       " << d.model << " (" << d.layers << " layers, " << d.kv_heads
            << " KV heads, head_dim " << d.head_dim << ", " << d.kv_dtype << ")\n"
            << "  compat_id   " << ToHex(r->compat_id) << "\n"
            << "  scope_id    " << ToHex(r->scope_id) << (a.scope.is_public ? " (public)" : "")
            << "\n"
            << "  blocks      " << r->blocks << " x " << d.block_tokens << " tokens, codec "
            << a.codec << ", " << r->container_bytes << " bytes in containers (" << r->raw_bytes
            << " bytes of K/V)\n"
            << "  anchor      " << ToHex(r->block_keys.back()) << "\n"
            << "  index       " << a.out << "/index.json\n";
  if (r->tail_tokens > 0) {
    std::cout << "  tail        " << r->tail_tokens << " of " << r->tokens
              << " tokens NOT packed: a partial block has no Block Key and is recomputed\n";
  } else {
    std::cout << "  tail        none (all " << r->tokens << " tokens packed)\n";
  }
  return 0;
}

RunFn Setup(CLI::App& app) {
  auto* cmd = app.add_subcommand("pack", "Cut a safetensors KV cache into KVSP containers");
  auto a = std::make_shared<PackArgs>();
  cmd->add_option("cache", a->input, "KV cache (safetensors, docs/formats/safetensors-kv.md)")
      ->required();
  cmd->add_option("--out", a->out, "directory for <block_key>.kvsp files and index.json")
      ->required();
  cmd->add_option("--codec", a->codec, "raw, zstd, fp8-e4m3 or int8")->capture_default_str();
  a->scope.Add(cmd);
  cmd->footer(
      "One container per FULL block (all layers); a partial tail block is reported, not packed.\n\n"
      "Example:\n"
      "  kvcs pack cache.safetensors --out packed/ --codec zstd --public\n"
      "  kvcs pack cache.safetensors --out packed/ --scope-key-file tenant.key");
  return [a] { return RunPack(*a); };
}

}  // namespace
KVCS_REGISTER_COMMAND(pack, 30, Setup);
}  // namespace kvcs::cli
