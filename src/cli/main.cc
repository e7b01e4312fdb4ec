// kvcs: one binary, one subcommand per capability. Thin: parsing and dispatch only.
#include <algorithm>
#include <cstdio>
#include <iostream>

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
