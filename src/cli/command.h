// The kvcs command's subcommand registry. Each cmd_<name>.cc registers itself with
// KVCS_REGISTER_COMMAND, so adding a subcommand never touches main.cc.
//
// A Command's Setup() adds a CLI11 subcommand (with a description, an example in its footer, and
// its options) and returns the function that runs it. Run returns the process exit code: 0 on
// success, 1 when the work failed (bad data, verification failure), 2 for usage errors.
#ifndef KVCS_CLI_COMMAND_H_
#define KVCS_CLI_COMMAND_H_

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace kvcs::cli {

using RunFn = std::function<int()>;
using SetupFn = std::function<RunFn(CLI::App& parent)>;

struct CommandEntry {
  std::string name;
  int order;  // position in --help (lower first)
  SetupFn setup;
};

std::vector<CommandEntry>& Registry();

struct Registrar {
  Registrar(std::string name, int order, SetupFn setup) {
    Registry().push_back({std::move(name), order, std::move(setup)});
  }
};

// Prints "kvcs <cmd>: error: <msg>" (and a hint when given) to stderr; returns 1.
int Fail(const std::string& cmd, const std::string& message, const std::string& hint = "");

}  // namespace kvcs::cli

#define KVCS_REGISTER_COMMAND(name, order, setup) \
  static ::kvcs::cli::Registrar kvcs_registrar_##name(#name, order, setup)

#endif  // KVCS_CLI_COMMAND_H_
