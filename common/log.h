// Levelled logging to stderr: one place for the log format. Thread-safe.
#ifndef SURGE_COMMON_LOG_H_
#define SURGE_COMMON_LOG_H_

#include <string_view>

namespace surge {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// Lines below `level` are dropped. Default kInfo; SURGE_LOG_LEVEL=debug lowers it.
void SetLogLevel(LogLevel level);
// Prefix put before every line, e.g. "worker 1". Default "surge".
void SetLogTag(std::string_view tag);
// Writes "[tag] LEVEL message" as one line.
void Log(LogLevel level, std::string_view message);

inline void LogInfo(std::string_view m) { Log(LogLevel::kInfo, m); }
inline void LogWarning(std::string_view m) { Log(LogLevel::kWarning, m); }
inline void LogError(std::string_view m) { Log(LogLevel::kError, m); }
inline void LogDebug(std::string_view m) { Log(LogLevel::kDebug, m); }

}  // namespace surge

#endif  // SURGE_COMMON_LOG_H_
