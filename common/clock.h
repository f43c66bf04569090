// The only way surge code reads time or waits (ARCHITECTURE.md example 2).
// Pacing uses the monotonic Now(); wall time only labels folders and logs.
#ifndef SURGE_COMMON_CLOCK_H_
#define SURGE_COMMON_CLOCK_H_

#include <chrono>
#include <cstdint>

namespace surge {

// A source of time. Implementations are thread-safe.
class Clock {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  virtual ~Clock() = default;

  // Monotonic now; all pacing and intervals are measured on it.
  virtual TimePoint Now() = 0;
  // Wall-clock now; for labels (run folder names) and logs only.
  virtual std::chrono::system_clock::time_point WallNow() = 0;
  // Returns once Now() >= deadline (at once when it already is). Absolute
  // deadlines keep errors from accumulating (wrk2, Nighthawk).
  virtual void SleepUntil(TimePoint deadline) = 0;
  // Like SleepUntil but may return up to ~0.1 ms late and never spins: for
  // waits that only poll (a pacer waiting in slices, a worker loop).
  virtual void SleepUntilCoarse(TimePoint deadline) = 0;
};

// The process-wide real clock: steady_clock (CLOCK_MONOTONIC on Linux, shared
// by every process on one host), sleeping with an absolute-deadline
// clock_nanosleep and spinning for the last `spin window` for precision.
Clock& RealClock();

// Nanoseconds since the steady clock's epoch. Same-host processes agree on it
// (CLOCK_MONOTONIC), which is what lets local workers share the coordinator's
// clock without probes (R-DIST-4).
inline int64_t ToNanos(Clock::TimePoint t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}
inline Clock::TimePoint FromNanos(int64_t ns) {
  return Clock::TimePoint(std::chrono::nanoseconds(ns));
}

}  // namespace surge

#endif  // SURGE_COMMON_CLOCK_H_
