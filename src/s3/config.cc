#include "s3/config.h"

#include <fstream>
#include <set>
#include <sstream>

#include "common/strings.h"

namespace kvcs::s3 {
namespace {

// Config lines may end in CRLF.
std::string_view TrimLine(std::string_view s) { return Trim(s, kLineWhitespace); }

}  // namespace

Status ParseConfig(std::string_view text, ServerConfig* config) {
  std::string current_key;
  bool cleared_hosts = false;
  int line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    size_t hash = line.find('#');
    if (hash != std::string_view::npos) line = line.substr(0, hash);
    line = TrimLine(line);
    if (line.empty()) continue;
    auto where = [&] { return "config line " + std::to_string(line_no) + ": "; };
    if (line.front() == '[') {
      if (line.back() != ']') return InvalidArgument(where() + "unterminated section");
      std::string_view sec = TrimLine(line.substr(1, line.size() - 2));
      if (sec.substr(0, 4) != "key ") {
        return InvalidArgument(where() + "sections are [key <access-key-id>]");
      }
      current_key = std::string(TrimLine(sec.substr(4)));
      if (current_key.empty() || current_key.size() > 128) {
        return InvalidArgument(where() + "access key id must be 1..128 characters");
      }
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) return InvalidArgument(where() + "expected name = value");
    std::string name(TrimLine(line.substr(0, eq)));
    std::string value(TrimLine(line.substr(eq + 1)));
    if (!current_key.empty()) {
      if (name == "user") {
        if (value.empty() || value.size() > 128) {
          return InvalidArgument(where() + "user id must be 1..128 characters");
        }
        config->users[current_key].id = value;
        continue;
      }
      if (name == "display_name") {
        if (value.empty()) return InvalidArgument(where() + "empty display_name");
        config->users[current_key].display_name = value;
        continue;
      }
      if (name != "secret") {
        return InvalidArgument(where() + "a [key] section holds secret =, user =, display_name =");
      }
      if (value.empty()) return InvalidArgument(where() + "empty secret");
      config->secrets[current_key] = value;
    } else if (name == "region") {
      config->region = value;
    } else if (name == "virtual_host") {
      if (!cleared_hosts) config->virtual_hosts.clear();
      cleared_hosts = true;
      if (!value.empty()) config->virtual_hosts.push_back(value);
    } else if (name == "io_threads") {
      int n = std::atoi(value.c_str());
      if (n < 1 || n > 256) return InvalidArgument(where() + "io_threads must be 1..256");
      config->io_threads = n;
    } else {
      return InvalidArgument(where() + "unknown setting '" + name + "'");
    }
  }
  return Status::Ok();
}

User UserOf(const ServerConfig& config, std::string_view access_key) {
  User u;
  if (auto it = config.users.find(std::string(access_key)); it != config.users.end())
    u = it->second;
  if (u.id.empty()) u.id = std::string(access_key);  // no user =: the key is its own user
  if (u.display_name.empty()) u.display_name = u.id;
  return u;
}

bool IsKnownUser(const ServerConfig& config, std::string_view id) {
  for (const auto& [key, secret] : config.secrets) {
    if (UserOf(config, key).id == id) return true;
  }
  return false;
}

User UserById(const ServerConfig& config, std::string_view id) {
  for (const auto& [key, secret] : config.secrets) {
    if (User u = UserOf(config, key); u.id == id) return u;
  }
  return User{std::string(id), std::string(id)};
}

size_t CountUsers(const ServerConfig& config) {
  std::set<std::string> ids;
  for (const auto& [key, secret] : config.secrets) ids.insert(UserOf(config, key).id);
  return ids.size();
}

Status LoadConfigFile(const std::string& path, ServerConfig* config) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status(Code::kNotFound, "cannot open config file " + path);
  std::string text(kMaxConfigFileBytes + 1, '\0');
  f.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(f.gcount()));
  if (text.size() > kMaxConfigFileBytes) return InvalidArgument("config file over 1 MiB");
  return ParseConfig(text, config).WithContext(path);
}

}  // namespace kvcs::s3
