// Small helpers shared by the kvcs subcommands: reading bounded files, loading descriptors, token
// lists and scope keys, and the --scope-key-file/--public option pair. Header-only (the CLI's
// CMakeLists globs cmd_*.cc). Everything returns Status; nothing here prints or exits.
#ifndef KVCS_CLI_CLI_UTIL_H_
#define KVCS_CLI_CLI_UTIL_H_

#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/crypto.h"
#include "common/hex.h"
#include "common/status.h"
#include "kvsp/descriptor.h"
#include "kvsp/ids.h"

namespace kvcs::cli {

// A token list is at most 16 Mi tokens: above the longest context windows in use (10 M).
inline constexpr size_t kMaxTokens = size_t{16} << 20;
// A JSON or text token file of kMaxTokens ids is at most ~11 bytes per id.
inline constexpr size_t kMaxTokenFileBytes = kMaxTokens * 12;
// A scope key file is 64 hex characters plus whitespace.
inline constexpr size_t kMaxScopeKeyFileBytes = 256;

// Reads a whole file of at most max_bytes.
inline Result<std::string> ReadSmallFile(const std::string& path, size_t max_bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return Status(Code::kNotFound, "cannot read " + path + ": " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) return InvalidArgument(path + " is not a regular file");
  if (uint64_t(st.st_size) > max_bytes) {
    return ResourceExhausted(path + " has " + std::to_string(st.st_size) +
                             " bytes, more than the limit of " + std::to_string(max_bytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError("cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline Result<kvsp::Descriptor> LoadDescriptor(const std::string& path) {
  KVCS_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(path, kvsp::kMaxDescriptorJsonBytes));
  auto d = kvsp::ParseDescriptor(text);
  if (!d.ok()) return d.status().WithContext("descriptor " + path);
  return d;
}

inline Status TokenRangeError(size_t i) {
  return InvalidArgument("token " + std::to_string(i) + " is not an integer in 0..4294967295");
}

// A JSON array of token ids, or an object with a "token_ids" (or "tokens") array.
inline Result<std::vector<uint32_t>> ParseTokensJson(std::string_view text) {
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument("not valid JSON");
  if (j.is_object()) {
    auto it = j.find("token_ids");
    if (it == j.end()) it = j.find("tokens");
    if (it == j.end()) return InvalidArgument("JSON object without a \"token_ids\" array");
    j = *it;
  }
  if (!j.is_array()) return InvalidArgument("expected a JSON array of token ids");
  if (j.size() > kMaxTokens)
    return ResourceExhausted("more than " + std::to_string(kMaxTokens) + " tokens");
  std::vector<uint32_t> out;
  out.reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_number_unsigned() || j[i].get<uint64_t>() > UINT32_MAX) return TokenRangeError(i);
    out.push_back(uint32_t(j[i].get<uint64_t>()));
  }
  return out;
}

// Integers separated by whitespace and/or commas.
inline Result<std::vector<uint32_t>> ParseTokensText(std::string_view text) {
  std::vector<uint32_t> out;
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c == ',' || std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (c < '0' || c > '9') {
      return InvalidArgument(std::string("unexpected character '") + c + "' at byte " +
                             std::to_string(i) +
                             " (expected token ids separated by spaces or commas)");
    }
    uint64_t v = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      v = v * 10 + uint64_t(text[i++] - '0');
      if (v > UINT32_MAX) return TokenRangeError(out.size());
    }
    if (out.size() == kMaxTokens)
      return ResourceExhausted("more than " + std::to_string(kMaxTokens) + " tokens");
    out.push_back(uint32_t(v));
  }
  return out;
}

// Parses a scope key: 64 hex characters, surrounding whitespace ignored.
inline Result<kvsp::ScopeKey> ParseScopeKey(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  auto k = FromHexFixed<32>(text);
  if (!k.ok())
    return InvalidArgument("a scope key file holds 64 hex characters (32 bytes): " +
                           k.status().message());
  return *k;
}

// The --tokens / --tokens-file pair (token ids as JSON or as text) of commands that key a prompt.
struct TokenIdOptions {
  std::string json_file, text_file;

  void Add(CLI::App* cmd) {
    auto* tj = cmd->add_option("--tokens", json_file,
                               "token ids as JSON: [1, 2, ...] or {\"token_ids\": [...]}");
    auto* tt = cmd->add_option("--tokens-file", text_file,
                               "token ids as text, separated by spaces, newlines or commas");
    tj->excludes(tt);
  }
  // The token ids; the message of a failure names the file and says what the option takes.
  Result<std::vector<uint32_t>> Load() const {
    if (json_file.empty() && text_file.empty()) {
      return InvalidArgument("no tokens given: pass --tokens FILE.json or --tokens-file FILE.txt");
    }
    bool json = !json_file.empty();
    const std::string& path = json ? json_file : text_file;
    auto t = ReadSmallFile(path, kMaxTokenFileBytes);
    if (!t.ok()) return t.status().WithContext("check the --tokens/--tokens-file path");
    auto tokens = json ? ParseTokensJson(*t) : ParseTokensText(*t);
    if (!tokens.ok()) {
      return InvalidArgument(path + ": " + tokens.status().message() +
                             (json ? " (--tokens takes a JSON array such as [1000, 1001, 1002])"
                                   : " (--tokens-file takes integers separated by spaces or "
                                     "commas)"));
    }
    return tokens;
  }
};

// The --scope-key-file / --public pair every keyed command takes.
struct ScopeOptions {
  std::string key_file;
  bool is_public = false;

  void Add(CLI::App* cmd) {
    auto* f =
        cmd->add_option("--scope-key-file", key_file,
                        "file with the tenant's 32-byte scope key in hex (kvcs keygen scope)");
    auto* p = cmd->add_flag("--public", is_public,
                            "use the public scope (32 zero bytes): anyone can compute the keys");
    f->excludes(p);
  }
  // The key; fails when neither or an unreadable file was given. `warning` gets a note when the
  // key file is readable by group or others.
  Result<kvsp::ScopeKey> Resolve(std::string* warning = nullptr) const {
    if (is_public) return kvsp::PublicScopeKey();
    if (key_file.empty()) {
      return InvalidArgument("no scope given: pass --scope-key-file FILE or --public");
    }
    KVCS_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(key_file, kMaxScopeKeyFileBytes));
    struct stat st {};
    if (warning && ::stat(key_file.c_str(), &st) == 0 && (st.st_mode & 077) != 0) {
      *warning = key_file + " is readable by other users; chmod 600 it";
    }
    auto k = ParseScopeKey(text);
    if (!k.ok()) return k.status().WithContext(key_file);
    return k;
  }
};

// HOST:PORT of a --listen option ("[::1]:0" for IPv6; port 0 picks a free one).
struct ListenAddress {
  std::string host;
  uint16_t port = 0;
};
inline Result<ListenAddress> ParseListen(const std::string& text) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return InvalidArgument("--listen must be HOST:PORT");
  ListenAddress a;
  a.host = text.substr(0, colon);
  if (a.host.size() > 2 && a.host.front() == '[') a.host = a.host.substr(1, a.host.size() - 2);
  char* end = nullptr;
  long port = std::strtol(text.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || port < 0 || port > 65535) return InvalidArgument("bad port in --listen");
  a.port = static_cast<uint16_t>(port);
  return a;
}

inline std::string Hex(const Digest& d) { return ToHex(d); }

// A producer key file as kvcs keygen writes it: an optional "kid: <kid>" line, then the PEM.
// Default kid (no such line): 16 hex characters of SHA-256 of the PEM text.
inline constexpr size_t kMaxKeyFileBytes = 64 * 1024;  // a PEM key is < 1 KiB

inline std::string ProducerKid(std::string_view pem) {
  return ToHex(Sha256::Hash(pem)).substr(0, 16);
}

struct KeyFile {
  std::string kid;
  std::string pem;
};

inline Result<KeyFile> LoadKeyFile(const std::string& path) {
  KVCS_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(path, kMaxKeyFileBytes));
  KeyFile f;
  std::string_view rest = text;
  if (rest.substr(0, 5) == "kid: ") {
    size_t nl = rest.find('\n');
    if (nl == std::string_view::npos) return InvalidArgument(path + ": no PEM after the kid line");
    f.kid = std::string(rest.substr(5, nl - 5));
    if (!f.kid.empty() && f.kid.back() == '\r') f.kid.pop_back();
    rest.remove_prefix(nl + 1);
  }
  if (rest.find("-----BEGIN ") == std::string_view::npos) {
    return InvalidArgument(path + " holds no PEM block (-----BEGIN ...)");
  }
  f.pem = std::string(rest);
  if (f.kid.empty()) f.kid = ProducerKid(f.pem);
  return f;
}

inline Bytes KidBytes(const std::string& kid) { return Bytes(kid.begin(), kid.end()); }

}  // namespace kvcs::cli

#endif  // KVCS_CLI_CLI_UTIL_H_
