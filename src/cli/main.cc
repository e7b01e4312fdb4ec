// kvcs: one binary, one subcommand per capability. Thin: parsing and dispatch only.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string_view>

#include "cli/command.h"
#include "common/log.h"

namespace kvcs::cli {

std::vector<CommandEntry>& Registry() {
  static std::vector<CommandEntry> registry;
  return registry;
}

int Fail(const std::string& cmd, const std::string& message, const std::string& hint) {
  std::cerr << "kvcs " << cmd << ": error: " << message << "\n";
  if (!hint.empty()) std::cerr << "  hint: " << hint << "\n";
  return 1;
}

namespace {

// The first argument that names a command: skips the top-level options (--log takes a value).
// Returns null when there is none (then CLI11 prints the usage).
const char* CommandArgument(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--log") {
      ++i;
    } else if (a.empty() || a.front() != '-') {
      return argv[i];
    }
  }
  return nullptr;
}

// An unknown command, with or without --help, names itself and exits 2 (usage error) so that a
// script can tell; CLI11 alone would print the top-level help and exit 0 for `kvcs nope --help`.
int UnknownCommand(const std::string& name, const std::vector<CLI::App*>& commands) {
  std::cerr << "kvcs: error: unknown command '" << name << "'\ncommands:";
  for (const CLI::App* c : commands) std::cerr << " " << c->get_name();
  std::cerr << "\n  hint: kvcs --help lists them with a line each; kvcs <command> --help "
               "shows one\n";
  return 2;
}

}  // namespace
}  // namespace kvcs::cli

int main(int argc, char** argv) {
  kvcs::InitLogging();
  CLI::App app{"kvcs: LLM KV caches as a shared, verified, network-delivered asset"};
  app.footer(
      "Example:\n  kvcs demo                 # build, pack, verify and serve a synthetic cache\n"
      "  kvcs <command> --help     # every command has its own help and example");
  app.require_subcommand(1);
  std::string log_level;
  app.add_option("--log", log_level, "log level: off, error, warn (default), info, debug, trace");
  auto& reg = kvcs::cli::Registry();
  std::sort(reg.begin(), reg.end(), [](auto& a, auto& b) { return a.order < b.order; });
  std::vector<std::pair<CLI::App*, kvcs::cli::RunFn>> runs;
  for (auto& entry : reg) {
    size_t before = app.get_subcommands({}).size();
    kvcs::cli::RunFn run = entry.setup(app);
    auto subs = app.get_subcommands({});
    if (subs.size() > before) runs.emplace_back(subs.back(), std::move(run));
  }
  if (const char* name = kvcs::cli::CommandArgument(argc, argv)) {
    auto commands = app.get_subcommands({});
    bool known = std::any_of(commands.begin(), commands.end(),
                             [&](const CLI::App* c) { return c->check_name(name); });
    if (!known) return kvcs::cli::UnknownCommand(name, commands);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (!log_level.empty()) kvcs::SetLogLevel(log_level);
  for (auto& [sub, run] : runs) {
    if (sub->parsed()) {
      try {
        return run();
      } catch (const std::exception& e) {
        return kvcs::cli::Fail(sub->get_name(), e.what());
      }
    }
  }
  return 2;
}
