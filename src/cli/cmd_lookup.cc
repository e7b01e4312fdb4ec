// kvcs lookup: descriptor + scope + token ids -> Block Keys (as kvcs keys computes them) -> ask a
// KVSP Index Service (spec §7) for the longest held prefix; prints the matched tokens and the
// holders of each matched block as JSON.
#include "common/asio.h"  // first: fixes the Boost 1.74 + GCC 12 trap (shared/style.md §0)

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <iostream>

#include "cli/cli_util.h"
#include "cli/command.h"
#include "common/strings.h"
#include "index/index_wire.h"
#include "kvsp/block_keys.h"

namespace kvcs::cli {
namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

struct LookupArgs {
  std::string index = "http://127.0.0.1:7070";
  std::string descriptor;
  TokenIdOptions tokens;
  std::string token, token_file;
  ScopeOptions scope;
  uint32_t max_replicas = index::kDefaultMaxReplicas;
  int timeout_s = 10;
};

// One POST to the index; returns (status, body).
Result<std::pair<unsigned, std::string>> Post(const std::string& host, const std::string& port,
                                              const std::string& target, const std::string& bearer,
                                              std::string body, int timeout_s) {
  try {
    boost::asio::io_context ioc;
    boost::asio::ip::tcp::resolver resolver(ioc);
    beast::tcp_stream stream(ioc);
    stream.expires_after(std::chrono::seconds(timeout_s));
    stream.connect(resolver.resolve(host, port));
    bhttp::request<bhttp::string_body> req{bhttp::verb::post, target, 11};
    req.set(bhttp::field::host, host + ":" + port);
    req.set(bhttp::field::content_type, "application/json");
    if (!bearer.empty()) req.set(bhttp::field::authorization, "Bearer " + bearer);
    req.body() = std::move(body);
    req.prepare_payload();
    bhttp::write(stream, req);
    beast::flat_buffer buffer;
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(64u << 20);  // 4,096 keys × 16 replicas of 512-byte holders, with room
    bhttp::read(stream, buffer, parser);
    beast::error_code ec;
    stream.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
    return std::make_pair(parser.get().result_int(), std::move(parser.get().body()));
  } catch (const std::exception& e) {
    return Status(Code::kUnavailable, e.what());
  }
}

int RunLookup(const LookupArgs& a) {
  const char* kCmd = "lookup";
  std::string url = a.index;
  if (url.rfind("http://", 0) != 0) {
    return Fail(kCmd, "--index must be http://HOST:PORT", "e.g. --index http://127.0.0.1:7070");
  }
  auto hp = ParseListen(url.substr(
      7, url.find('/', 7) == std::string::npos ? std::string::npos : url.find('/', 7) - 7));
  if (!hp.ok() || hp->port == 0) return Fail(kCmd, "--index must be http://HOST:PORT");
  auto d = LoadDescriptor(a.descriptor);
  if (!d.ok()) return Fail(kCmd, d.status().message());
  auto tokens = a.tokens.Load();
  if (!tokens.ok()) return Fail(kCmd, tokens.status().message());
  std::string warning;
  auto scope_key = a.scope.Resolve(&warning);
  if (!scope_key.ok()) return Fail(kCmd, scope_key.status().message());
  if (!warning.empty()) std::cerr << "kvcs lookup: warning: " << warning << "\n";
  std::string bearer = a.token;
  if (!a.token_file.empty()) {
    auto b = ReadSmallFile(a.token_file, 16 * 1024);
    if (!b.ok()) return Fail(kCmd, b.status().message());
    bearer = std::string(Trim(*b, " \t\r\n"));
  }

  Digest compat = kvsp::CompatId(*d);
  Digest scope_id = kvsp::ScopeId(*scope_key);
  size_t tail = 0;
  std::vector<Digest> keys =
      kvsp::BlockKeys(kvsp::ChainKey(*scope_key, compat), d->block_tokens, *tokens, &tail);
  if (keys.empty()) return Fail(kCmd, "fewer tokens than one block: nothing to look up");

  // Ask in chunks of kMaxKeysPerRequest while every key of the chunk is held.
  nlohmann::json entries = nlohmann::json::array();
  size_t matched = 0;
  for (size_t off = 0; off < keys.size();) {
    index::LookupRequest req;
    req.compat_id = compat;
    req.scope_id = scope_id;
    req.max_replicas = a.max_replicas;
    size_t n = std::min(index::kMaxKeysPerRequest, keys.size() - off);
    req.block_keys.assign(keys.begin() + off, keys.begin() + off + n);
    auto r = Post(hp->host, std::to_string(hp->port), "/kvsp/v1/lookup", bearer, index::ToJson(req),
                  a.timeout_s);
    if (!r.ok()) return Fail(kCmd, "index " + a.index + ": " + r.status().message());
    if (r->first == 404 && off > 0) break;  // the compat vanished between chunks: keep what we have
    if (r->first != 200) {
      auto e = index::ParseErrorBody(r->second);
      return Fail(kCmd, "index answered " + std::to_string(r->first) + ": " +
                            (e.ok() ? e->error + ": " + e->message : r->second));
    }
    auto resp = index::ParseLookupResponse(r->second);
    if (!resp.ok()) return Fail(kCmd, "bad index response: " + resp.status().message());
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
    if (resp->matched < n) break;
    off += n;
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
  cmd->add_option("--index", a->index, "the index, http://HOST:PORT")->capture_default_str();
  cmd->add_option("--descriptor", a->descriptor, "KVSP Compatibility Descriptor (JSON file)")
      ->required();
  a->tokens.Add(cmd);
  a->scope.Add(cmd);
  auto* tok = cmd->add_option("--token", a->token, "bearer token (kvcs token) granting lookup");
  auto* tokf = cmd->add_option("--token-file", a->token_file, "file holding the bearer token");
  tok->excludes(tokf);
  cmd->add_option("--max-replicas", a->max_replicas, "replicas per block (1..16)")
      ->check(CLI::Range(1u, index::kMaxReplicasPerKey))
      ->capture_default_str();
  cmd->add_option("--timeout", a->timeout_s, "seconds per request")->capture_default_str();
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
