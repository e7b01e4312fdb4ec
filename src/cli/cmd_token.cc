// kvcs token: mints a signed bearer token (ES256 compact JWS, src/auth/token.h) that the KVSP
// Index Service and the relay accept: grants of actions on namespace prefixes, a subject and a
// lifetime, signed with an EC P-256 key from `kvcs keygen producer --alg es256`.
#include <chrono>
#include <iostream>

#include "auth/token.h"
#include "cli/cli_util.h"
#include "cli/command.h"
#include "common/hex.h"

namespace kvcs::cli {
namespace {

constexpr const char* kCmd = "token";
// A token lives at most 30 days: long-lived secrets should be keys, not tokens.
constexpr int64_t kMaxTtlSeconds = 30 * 24 * 3600;

struct TokenArgs {
  std::string key_file, kid, sub;
  std::vector<std::string> grants, scope_ids;
  std::vector<std::string> allow = {"lookup"};
  int64_t ttl_s = 3600;
};

// "ACTIONS@PREFIX": actions comma-separated, prefix fields '/'-separated, e.g.
// "lookup,register@kvcs-1/<scope_id hex>".
Result<auth::Grant> ParseGrantArg(const std::string& arg) {
  size_t at = arg.find('@');
  if (at == std::string::npos) return InvalidArgument("--grant \"" + arg + "\" has no '@'");
  auth::Grant g;
  std::string_view actions(arg.data(), at), prefix(arg.data() + at + 1, arg.size() - at - 1);
  while (!actions.empty()) {
    size_t comma = actions.find(',');
    KVCS_ASSIGN_OR_RETURN(auth::Action a, auth::ActionFromName(actions.substr(0, comma)));
    g.actions.push_back(a);
    actions = comma == std::string_view::npos ? "" : actions.substr(comma + 1);
  }
  auth::Namespace ns;
  while (!prefix.empty()) {
    size_t slash = prefix.find('/');
    ns.emplace_back(prefix.substr(0, slash));
    prefix = slash == std::string_view::npos ? "" : prefix.substr(slash + 1);
  }
  g.prefixes.push_back(std::move(ns));
  return g;
}

int Run(const TokenArgs& a) {
  auto key = LoadKeyFile(a.key_file);
  if (!key.ok()) return Fail(kCmd, key.status().message(), "pass --key producer.pem");
  std::string kid = a.kid.empty() ? key->kid : a.kid;
  if (a.ttl_s <= 0 || a.ttl_s > kMaxTtlSeconds) {
    return Fail(kCmd, "--ttl must be 1.." + std::to_string(kMaxTtlSeconds) + " seconds");
  }
  auth::Claims c;
  c.sub = a.sub;
  int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  c.iat = now;
  c.nbf = now;
  c.exp = now + a.ttl_s;
  for (const std::string& g : a.grants) {
    auto grant = ParseGrantArg(g);
    if (!grant.ok())
      return Fail(kCmd, grant.status().message(), "e.g. --grant lookup@kvcs-1/<hex>");
    c.grants.push_back(std::move(*grant));
  }
  if (!a.scope_ids.empty()) {
    auth::Grant g;
    for (const std::string& name : a.allow) {
      auto act = auth::ActionFromName(name);
      if (!act.ok()) return Fail(kCmd, act.status().message());
      g.actions.push_back(*act);
    }
    for (const std::string& s : a.scope_ids) {
      if (!IsLowerHex(s, 64)) {
        return Fail(kCmd, "--scope-id \"" + s + "\" is not 64 lowercase hex characters",
                    "kvcs keys --scope-key-file tenant.key prints it");
      }
      g.prefixes.push_back({"kvcs-1", s});
    }
    c.grants.push_back(std::move(g));
  }
  if (c.grants.empty()) return Fail(kCmd, "nothing granted", "pass --scope-id or --grant");
  auto token = auth::Mint(c, kid, key->pem);
  if (!token.ok()) return Fail(kCmd, token.status().message());
  std::cout << *token << "\n";
  return 0;
}

RunFn Setup(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("token", "Mint a signed bearer token (ES256 JWT) for kvcs services");
  auto a = std::make_shared<TokenArgs>();
  cmd->add_option("--key", a->key_file,
                  "EC P-256 private key file (kvcs keygen producer --alg es256)")
      ->required();
  cmd->add_option("--kid", a->kid, "key id for the header (default: the key file's kid line)");
  cmd->add_option("--sub", a->sub, "who the token is for (logged by services)")->required();
  cmd->add_option("--scope-id", a->scope_ids, "grant --allow on this scope (64 hex; repeatable)");
  cmd->add_option("--allow", a->allow,
                  "actions for --scope-id: lookup, register, publish, subscribe")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--grant", a->grants,
                  "ACTIONS@PREFIX, e.g. lookup,register@kvcs-1/<scope_id hex> (repeatable)");
  cmd->add_option("--ttl", a->ttl_s, "lifetime in seconds (at most 30 days)")
      ->capture_default_str();
  cmd->footer(
      "The index and the relay verify the token with the public key file (kvcs keygen writes\n"
      "both). Send it as \"Authorization: Bearer <token>\".\n"
      "Example:\n"
      "  kvcs keygen producer --alg es256 --out-key index-signer.pem --out-pub "
      "index-signer.pub.pem\n"
      "  kvcs token --key index-signer.pem --sub store-1 --scope-id <scope_id hex> \\\n"
      "      --allow lookup,register --ttl 86400");
  return [a] { return Run(*a); };
}

}  // namespace
KVCS_REGISTER_COMMAND(token, 25, Setup);
}  // namespace kvcs::cli
