// Structured, quiet-by-default logging on spdlog. Levels come from KVCS_LOG (off, error, warn,
// info, debug, trace; default warn) or SetLogLevel(). Secrets are never passed to these macros.
#ifndef KVCS_COMMON_LOG_H_
#define KVCS_COMMON_LOG_H_

#include <spdlog/spdlog.h>

#include <string_view>

namespace kvcs {
// Reads KVCS_LOG once and configures the default logger (stderr, "ts level [component] msg").
void InitLogging();
void SetLogLevel(std::string_view level);
}  // namespace kvcs

#define KVCS_LOG_DEBUG(...) SPDLOG_DEBUG(__VA_ARGS__)
#define KVCS_LOG_INFO(...) SPDLOG_INFO(__VA_ARGS__)
#define KVCS_LOG_WARN(...) SPDLOG_WARN(__VA_ARGS__)
#define KVCS_LOG_ERROR(...) SPDLOG_ERROR(__VA_ARGS__)

#endif  // KVCS_COMMON_LOG_H_
