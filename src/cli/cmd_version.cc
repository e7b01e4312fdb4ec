// kvcs version: prints the version and the KVSP/KVCS profile versions implemented.
#include <iostream>

#include "cli/command.h"

namespace kvcs::cli {
namespace {

RunFn Setup(CLI::App& app) {
  auto* cmd = app.add_subcommand("version", "Print the kvcs version and protocol versions");
  cmd->footer("Example:\n  kvcs version");
  return [] {
    std::cout
        << "kvcs 0.1.0 (KVSP v1 as defined by the project; KVCS profile kvcs-1; MOQT draft-22)\n";
    return 0;
  };
}

}  // namespace
KVCS_REGISTER_COMMAND(version, 1000, Setup);
}  // namespace kvcs::cli
