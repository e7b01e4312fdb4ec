#include "common/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>
#include <string>

namespace kvcs {

void SetLogLevel(std::string_view level) {
  spdlog::set_level(spdlog::level::from_str(std::string(level)));
}

void InitLogging() {
  static bool done = false;
  if (done) return;
  done = true;
  auto logger = spdlog::stderr_color_mt("kvcs");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %l %v");
  const char* env = std::getenv("KVCS_LOG");
  SetLogLevel(env ? env : "warn");
}

}  // namespace kvcs
