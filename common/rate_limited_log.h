// Repeated warnings, counted instead of repeated: one line per kind per
// interval with a count, never thousands of lines. The first
// message of a kind is written at once; later ones of that kind within
// `interval` of the last written line are only counted; the next one after
// the interval is written with the count of those it stood for
// ("… (and 5,213 more like this in the last 10.0 s)"), and so is every
// pending count at Flush() or destruction. So a kind writes at most one line
// per interval, whatever the rate. Thread-safe.
#ifndef SURGE_COMMON_RATE_LIMITED_LOG_H_
#define SURGE_COMMON_RATE_LIMITED_LOG_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/log.h"

namespace surge {

class RateLimitedLog {
 public:
  // Where lines go; default: Log (stderr).
  using Writer = std::function<void(LogLevel, std::string_view)>;

  // `clock`: read for every message (Now()); `interval` > 0.
  RateLimitedLog(Clock& clock, std::chrono::nanoseconds interval, Writer writer = Log);
  ~RateLimitedLog();
  RateLimitedLog(const RateLimitedLog&) = delete;
  RateLimitedLog& operator=(const RateLimitedLog&) = delete;

  // One occurrence of `kind` (a short fixed key such as "accept") with its
  // text; written or counted as above.
  void Write(LogLevel level, std::string_view kind, std::string_view message);
  // Writes one line per kind with occurrences counted since its last line.
  void Flush();
  // Occurrences of `kind` so far (written or not).
  uint64_t total(std::string_view kind) const;
  // Lines written so far for `kind`.
  uint64_t lines(std::string_view kind) const;

 private:
  struct Kind {
    LogLevel level = LogLevel::kWarning;
    Clock::TimePoint last_line{};
    std::string last_message;
    uint64_t pending = 0;  // counted since the last line
    uint64_t total = 0;
    uint64_t lines = 0;
  };
  void WriteLine(Kind& k, std::string_view message, Clock::TimePoint now);

  Clock& clock_;
  const std::chrono::nanoseconds interval_;
  Writer writer_;
  mutable std::mutex mu_;
  std::map<std::string, Kind, std::less<>> kinds_;
};

}  // namespace surge

#endif  // SURGE_COMMON_RATE_LIMITED_LOG_H_
