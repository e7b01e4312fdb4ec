// kvcs unpack: a packed directory (containers + index.json) -> a safetensors KV cache. Every
// container is decoded and verified before it is used; the first failure names the file.
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "cli/cli_util.h"
#include "cli/command.h"
#include "tensorio/kv_cache.h"

namespace kvcs::cli {
namespace {

constexpr const char* kCmd = "unpack";

struct UnpackArgs {
  std::string dir, out, scope_key_file;
};

int RunUnpack(const UnpackArgs& a) {
  std::optional<kvsp::ScopeKey> key;
  if (!a.scope_key_file.empty()) {
    ScopeOptions s;
    s.key_file = a.scope_key_file;
    auto k = s.Resolve();
    if (!k.ok())
      return Fail(kCmd, k.status().message(), "pass the key the directory was packed with");
    key = *k;
  }
  tensorio::Progress progress;
  if (::isatty(2)) {
    progress = [](uint64_t done, uint64_t total) {
      if (done == total || done % 16 == 0) {
        std::fprintf(stderr, "\r  verified %llu/%llu containers", (unsigned long long)done,
                     (unsigned long long)total);
        if (done == total) std::fprintf(stderr, "\n");
      }
    };
  }
  auto r = tensorio::UnpackDirectory(a.dir, a.out, key, progress);
  if (!r.ok()) {
    std::string hint = "nothing was written; ";
    if (r.status().Is(tensorio::KvCacheError::kBadIndex) || r.status().code() == Code::kNotFound) {
      hint += "is " + a.dir + " a directory written by kvcs pack?";
    } else {
      hint += "the named container is damaged or not the block the index lists; re-pack it";
    }
    return Fail(kCmd, r.status().message(), hint);
  }
  std::cout << "unpacked " << a.dir << "/ -> " << a.out << "\n"
            << "  verified    " << r->blocks << " containers (" << r->container_bytes
            << " bytes): compat_id, block keys, layer digests\n"
            << "  tokens      " << r->tokens << " (" << r->tail_tokens_not_packed
            << " tail tokens were never packed)\n"
            << "  block keys  "
            << (r->keys_rederived ? "re-derived from token_ids: match"
                                  : "not re-derived (private scope: pass --scope-key-file)")
            << "\n";
  return 0;
}

RunFn Setup(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("unpack", "Verify packed containers and write a safetensors KV cache");
  auto a = std::make_shared<UnpackArgs>();
  cmd->add_option("dir", a->dir, "directory written by kvcs pack")->required();
  cmd->add_option("--out", a->out, "safetensors file to write")->required();
  cmd->add_option("--scope-key-file", a->scope_key_file,
                  "scope key, to re-derive the Block Keys of a private scope from token_ids");
  cmd->footer(
      "Every container is decoded and verified first; on any failure nothing is written.\n\n"
      "Example:\n"
      "  kvcs unpack packed/ --out cache.safetensors\n"
      "  kvcs unpack packed/ --out cache.safetensors --scope-key-file tenant.key");
  return [a] { return RunUnpack(*a); };
}

}  // namespace
KVCS_REGISTER_COMMAND(unpack, 40, Setup);
}  // namespace kvcs::cli
