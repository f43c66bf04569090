// The only way surge code reads time or waits. Pacing uses the monotonic
// Now(); wall time only labels folders and logs. Every wait goes through a
// Clock (a sleep, or a ClockCondition's wait for a condition with a
// deadline), and every thread that waits is started through one, so a
// simulated clock (tests/testing/simulated_clock.h) runs the same code on
// simulated time with exact timestamps.
#ifndef SURGE_COMMON_CLOCK_H_
#define SURGE_COMMON_CLOCK_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

#include "absl/functional/function_ref.h"

namespace surge {

class ClockCondition;

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

  // The wait behind ClockCondition::WaitUntil and its wake-up (see there).
  // The defaults suit every clock that runs at the real rate: a
  // condition-variable wait of (deadline − Now()) in real time. A simulated
  // clock keeps the waiters itself and wakes them when its time reaches
  // their deadlines or their condition is notified.
  virtual bool Await(ClockCondition& condition, std::unique_lock<std::mutex>& lock,
                     absl::FunctionRef<bool()> done, TimePoint deadline);
  virtual void Notify(ClockCondition& condition);

  // Starts `body` on a new thread, and joins such a thread. A thread that
  // waits on this clock is started through it, and a thread that joins one
  // does so through it, so that a simulated clock knows which threads are
  // running (its time moves only while all of them wait). Defaults:
  // std::thread and std::thread::join.
  virtual std::thread StartThread(std::function<void()> body);
  virtual void Join(std::thread& thread);
};

// A condition variable whose waits end at a deadline on a Clock: the one
// way to wait for another thread (a message arriving, a request finishing)
// with a time limit.
class ClockCondition {
 public:
  explicit ClockCondition(Clock& clock) : clock_(clock) {}
  ClockCondition(const ClockCondition&) = delete;
  ClockCondition& operator=(const ClockCondition&) = delete;

  // With `lock` held (on entry and on return; released while blocked),
  // waits until `done()` is true or the clock reaches `deadline` (a deadline
  // already past only looks); returns done()'s last value. `done` runs with
  // `lock` held. Whoever changes what `done` reads does so holding the same
  // mutex and calls Notify() afterwards. Clock::TimePoint::max() waits for
  // the condition alone.
  bool WaitUntil(std::unique_lock<std::mutex>& lock, absl::FunctionRef<bool()> done,
                 Clock::TimePoint deadline) {
    return clock_.Await(*this, lock, done, deadline);
  }
  // Makes every thread waiting on this condition check it again.
  void Notify() { clock_.Notify(*this); }

  Clock& clock() { return clock_; }
  // For Clock implementations: what the real-rate wait blocks on.
  std::condition_variable& cv() { return cv_; }

 private:
  Clock& clock_;
  std::condition_variable cv_;
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
