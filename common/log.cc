#include "common/log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace surge {
namespace {

std::atomic<int> g_level{[] {
  const char* env = std::getenv("SURGE_LOG_LEVEL");
  return (env != nullptr && std::strcmp(env, "debug") == 0) ? 0 : 1;
}()};
std::mutex g_mu;
std::string& Tag() {
  static std::string* tag = new std::string("surge");
  return *tag;
}

}  // namespace

void SetLogLevel(LogLevel level) { g_level = static_cast<int>(level); }

void SetLogTag(std::string_view tag) {
  std::lock_guard<std::mutex> lock(g_mu);
  Tag() = std::string(tag);
}

void Log(LogLevel level, std::string_view message) {
  if (static_cast<int>(level) < g_level.load()) return;
  static constexpr const char* kNames[] = {"DEBUG", "INFO", "WARNING", "ERROR"};
  std::lock_guard<std::mutex> lock(g_mu);
  std::fprintf(stderr, "[%s] %s %.*s\n", Tag().c_str(), kNames[static_cast<int>(level)],
               static_cast<int>(message.size()), message.data());
}

}  // namespace surge
