// kvcs keys: descriptor + scope + token ids -> compat_id, scope_id, Block Keys and Anchor Key as
// JSON on stdout. Never prints the scope key or the chain key.
#include <iostream>

#include "cli/cli_util.h"
#include "cli/command.h"
#include "kvsp/block_keys.h"

namespace kvcs::cli {
namespace {

struct KeysArgs {
  std::string descriptor;
  TokenIdOptions tokens;
  ScopeOptions scope;
};

int RunKeys(const KeysArgs& a) {
  const char* kCmd = "keys";
  auto d = LoadDescriptor(a.descriptor);
  if (!d.ok()) {
    return Fail(kCmd, d.status().message(),
                "the descriptor is the KVSP JSON object of shared/specs/kvsp.md §1");
  }
  auto tokens = a.tokens.Load();
  if (!tokens.ok()) return Fail(kCmd, tokens.status().message());
  std::string warning;
  auto scope_key = a.scope.Resolve(&warning);
  if (!scope_key.ok()) {
    return Fail(kCmd, scope_key.status().message(),
                "create a key with: kvcs keygen scope --out scope.key");
  }
  if (!warning.empty()) std::cerr << "kvcs keys: warning: " << warning << "\n";

  Digest compat = kvsp::CompatId(*d);
  Digest chain = kvsp::ChainKey(*scope_key, compat);
  size_t tail = 0;
  std::vector<Digest> keys = kvsp::BlockKeys(chain, d->block_tokens, *tokens, &tail);
  nlohmann::json out;
  out["compat_id"] = Hex(compat);
  out["scope_id"] = Hex(kvsp::ScopeId(*scope_key));
  out["scope"] = a.scope.is_public ? "public" : "private";
  out["block_tokens"] = d->block_tokens;
  out["tokens"] = tokens->size();
  out["blocks"] = keys.size();
  nlohmann::json list = nlohmann::json::array();
  for (auto& k : keys) list.push_back(Hex(k));
  out["block_keys"] = std::move(list);
  out["anchor"] = keys.empty() ? nlohmann::json(nullptr) : nlohmann::json(Hex(keys.back()));
  out["tail_tokens"] = tail;
  std::cout << out.dump(2) << "\n";
  if (keys.empty()) {
    std::cerr << "kvcs keys: note: fewer than " << d->block_tokens
              << " tokens: no full block, so no Block Key and no anchor\n";
  }
  return 0;
}

RunFn Setup(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "keys", "Compute compat_id, scope_id, Block Keys and the Anchor Key of a token prefix");
  auto a = std::make_shared<KeysArgs>();
  cmd->add_option("--descriptor", a->descriptor, "KVSP Compatibility Descriptor (JSON file)")
      ->required();
  a->tokens.Add(cmd);
  a->scope.Add(cmd);
  cmd->footer(
      "Output (stdout, JSON): compat_id, scope_id, scope, block_tokens, tokens, blocks,\n"
      "block_keys (hex, K_1..K_n), anchor (K_n or null), tail_tokens (unkeyed tail).\n"
      "The scope key and the chain key are never printed.\n\n"
      "Example:\n"
      "  seq -s, 1000 1039 | sed 's/.*/[&]/' > tokens.json\n"
      "  kvcs keys --descriptor llama8b.json --tokens tokens.json --public\n"
      "  kvcs keys --descriptor llama8b.json --tokens-file ids.txt --scope-key-file tenant.key");
  return [a] { return RunKeys(*a); };
}

}  // namespace
KVCS_REGISTER_COMMAND(keys, 10, Setup);
}  // namespace kvcs::cli
