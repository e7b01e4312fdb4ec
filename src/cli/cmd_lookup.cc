// kvcs lookup: descriptor + scope + token ids -> Block Keys (as kvcs keys computes them) -> ask a
// KVSP Index Service (spec §7) for the longest held prefix; prints the matched tokens and the
// holders of each matched block as JSON.
#include <iostream>

#include "cli/cli_util.h"
#include "cli/command.h"
#include "cli/index_options.h"
#include "index/index_client.h"
#include "index/index_wire.h"
#include "kvsp/block_keys.h"

namespace kvcs::cli {
namespace {

struct LookupArgs {
  IndexOptions index;
  std::string descriptor;
  TokenIdOptions tokens;
  ScopeOptions scope;
  uint32_t max_replicas = index::kDefaultMaxReplicas;
};

int RunLookup(const LookupArgs& a) {
  const char* kCmd = "lookup";
  auto client = a.index.Client();
  if (!client.ok())
    return Fail(kCmd, client.status().message(), "e.g. --index http://127.0.0.1:7070");
  auto d = LoadDescriptor(a.descriptor);
  if (!d.ok()) return Fail(kCmd, d.status().message());
  auto tokens = a.tokens.Load();
  if (!tokens.ok()) return Fail(kCmd, tokens.status().message());
  std::string warning;
  auto scope_key = a.scope.Resolve(&warning);
  if (!scope_key.ok()) return Fail(kCmd, scope_key.status().message());
  if (!warning.empty()) std::cerr << "kvcs lookup: warning: " << warning << "\n";

  Digest compat = kvsp::CompatId(*d);
  Digest scope_id = kvsp::ScopeId(*scope_key);
  size_t tail = 0;
  std::vector<Digest> keys =
      kvsp::BlockKeys(kvsp::ChainKey(*scope_key, compat), d->block_tokens, *tokens, &tail);
  if (keys.empty()) return Fail(kCmd, "fewer tokens than one block: nothing to look up");

  auto resp = client->LookupPrefix(compat, scope_id, keys, a.max_replicas);
  if (!resp.ok()) return Fail(kCmd, resp.status().message());
  nlohmann::json entries = nlohmann::json::array();
  size_t matched = 0;
  for (const index::LookupEntry& e : resp->entries) {
    nlohmann::json reps = nlohmann::json::array();
    for (const index::Replica& rep : e.replicas) {
      reps.push_back({{"holder", rep.info.holder},
                      {"tier", std::string(index::TierName(rep.info.tier))},
                      {"codecs", index::CodecListText(rep.info.codecs)},
                      {"layer_first", rep.info.layer_first},
                      {"layer_count", rep.info.layer_count},
                      {"expires_ms", rep.expires_ms}});
    }
    entries.push_back(
        {{"block", matched + 1}, {"block_key", Hex(e.block_key)}, {"replicas", std::move(reps)}});
    matched++;
  }
  nlohmann::json out;
  out["compat_id"] = Hex(compat);
  out["scope_id"] = Hex(scope_id);
  out["tokens"] = tokens->size();
  out["blocks"] = keys.size();
  out["matched_blocks"] = matched;
  out["matched_tokens"] = matched * d->block_tokens;
  out["entries"] = std::move(entries);
  std::cout << out.dump(2) << "\n";
  return 0;
}

RunFn Setup(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "lookup", "Ask a KVSP Index Service which prefix of a prompt is held, and by whom");
  auto a = std::make_shared<LookupArgs>();
  a->index.url = "http://127.0.0.1:7070";
  a->index.timeout_s = 10;
  a->index.Add(cmd, "the index, http[s]://HOST:PORT", /*plain_token=*/true);
  cmd->get_option("--index")->capture_default_str();
  cmd->add_option("--descriptor", a->descriptor, "KVSP Compatibility Descriptor (JSON file)")
      ->required();
  a->tokens.Add(cmd);
  a->scope.Add(cmd);
  cmd->add_option("--max-replicas", a->max_replicas, "replicas per block (1..16)")
      ->check(CLI::Range(1u, index::kMaxReplicasPerKey))
      ->capture_default_str();
  cmd->footer(
      "Output (stdout, JSON): compat_id, scope_id, tokens, blocks, matched_blocks,\n"
      "matched_tokens (matched_blocks × block_tokens), entries (per matched block: block_key,\n"
      "replicas with holder, tier, codecs, layers, lease end).\n\n"
      "Example:\n"
      "  kvcs token --key signer.pem --sub me --scope-id $(kvcs keys ... | jq -r .scope_id) \\\n"
      "      --allow lookup > lookup.jwt\n"
      "  kvcs lookup --index http://127.0.0.1:7070 --descriptor llama8b.json \\\n"
      "      --tokens tokens.json --scope-key-file tenant.key --token-file lookup.jwt");
  return [a] { return RunLookup(*a); };
}

}  // namespace

KVCS_REGISTER_COMMAND(lookup, 63, Setup);

}  // namespace kvcs::cli
