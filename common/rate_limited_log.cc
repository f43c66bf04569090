#include "common/rate_limited_log.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace surge {

RateLimitedLog::RateLimitedLog(Clock& clock, std::chrono::nanoseconds interval, Writer writer)
    : clock_(clock), interval_(interval), writer_(std::move(writer)) {}

RateLimitedLog::~RateLimitedLog() { Flush(); }

void RateLimitedLog::WriteLine(Kind& k, std::string_view message, Clock::TimePoint now) {
  std::string line(message);
  if (k.pending > 0) {
    const double since_s = std::chrono::duration<double>(now - k.last_line).count();
    absl::StrAppend(&line, " (and ", k.pending, " more like this in the last ",
                    absl::StrFormat("%.1f", since_s), " s)");
  }
  k.pending = 0;
  k.last_line = now;
  ++k.lines;
  writer_(k.level, line);
}

void RateLimitedLog::Write(LogLevel level, std::string_view kind, std::string_view message) {
  const Clock::TimePoint now = clock_.Now();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = kinds_.find(kind);
  if (it == kinds_.end()) it = kinds_.emplace(std::string(kind), Kind{}).first;
  Kind& k = it->second;
  ++k.total;
  k.level = level;
  if (k.lines > 0 && now - k.last_line < interval_) {
    ++k.pending;
    k.last_message = std::string(message);
    return;
  }
  WriteLine(k, message, now);
}

void RateLimitedLog::Flush() {
  const Clock::TimePoint now = clock_.Now();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [name, k] : kinds_) {
    if (k.pending == 0) continue;
    // The last of the counted ones speaks for them all.
    --k.pending;
    WriteLine(k, k.last_message, now);
  }
}

uint64_t RateLimitedLog::total(std::string_view kind) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = kinds_.find(kind);
  return it == kinds_.end() ? 0 : it->second.total;
}

uint64_t RateLimitedLog::lines(std::string_view kind) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = kinds_.find(kind);
  return it == kinds_.end() ? 0 : it->second.lines;
}

}  // namespace surge
